"""``ppo.skip_forced``: samples with one available action (Yōkai's waiting player) cost no actor work
and change nothing in the update."""

from __future__ import annotations

import pytest
import torch
from click.testing import CliRunner

from zsceval.cli import main
from zsceval.envs.yokai import YokaiEnv
from zsceval.rl.checkpoint import load_agent
from zsceval.rl.config import ModelConfig, PPOConfig
from zsceval.rl.loss import minibatch_loss
from zsceval.rl.policy import Policy, network_spec


def _minibatch(env, policy: Policy, L: int = 8) -> dict:
    """A recorded minibatch ``[L, N]`` of Yōkai play by ``policy`` (half the samples forced)."""
    N = env.num_envs * env.num_agents
    g = torch.Generator().manual_seed(0)
    s, h = env.reset(), policy.initial_state(N, "cpu")
    keys = ("obs", "critic_obs", "avail", "actions", "old_log_probs", "old_values", "starts")
    rec = {k: [] for k in keys}
    h0 = h
    for t in range(L):
        obs, avail = s.obs.reshape(N, *env.obs_shape), s.avail_actions.reshape(N, -1)
        starts = torch.full((N,), t == 0)
        out = policy.act(obs, avail, h, starts, g)
        h = out.state
        for k, v in zip(keys, (obs, s.critic_obs.reshape(N, *env.critic_obs_shape), avail, out.actions,
                               out.log_probs, torch.randn(N, generator=g), starts)):  # fmt: skip
            rec[k].append(v)
        s = env.step(out.actions.view(env.num_envs, env.num_agents))
    mb = {k: torch.stack(v) for k, v in rec.items()}
    mb["advantages"] = torch.randn(L, N, generator=g)
    mb["targets"] = torch.randn(L, N, generator=g)
    mb["h_actor"], mb["h_critic"], mb["weight"] = h0, h0, None
    return mb


@pytest.mark.parametrize(
    ("kind", "recurrent"),
    [("mlp", False), ("mlp", True), ("yokai-relational", False), ("yokai-relational", True)],
)
def test_skipping_forced_samples_keeps_the_loss_and_the_actor_gradient(kind, recurrent):
    env = YokaiEnv(num_envs=16, num_agents=2, seed=2)
    torch.manual_seed(0)
    cfg = ModelConfig(kind=kind, hidden_size=16, recurrent=recurrent)
    policy = Policy(network_spec(cfg, env.obs_shape, env.critic_obs_shape, env.num_actions))
    mb = _minibatch(env, policy)
    forced = mb["avail"].sum(-1) == 1
    assert 0.3 < forced.float().mean() < 0.7  # the waiting player's NOOPs
    assert (mb["old_log_probs"][forced] == 0).all()
    ppo = PPOConfig()
    grads, results = [], []
    for active in (None, ~forced):
        policy.zero_grad(set_to_none=True)
        total, stats, outputs = minibatch_loss(policy, {**mb, "active": active}, 0.01, ppo)
        total.backward()
        grads.append({n: p.grad.clone() for n, p in policy.named_parameters()})
        results.append((total.detach(), stats, outputs))
    (total0, stats0, out0), (total1, stats1, out1) = results
    torch.testing.assert_close(total1, total0, rtol=1e-6, atol=1e-7)
    for key in stats0:
        torch.testing.assert_close(stats1[key], stats0[key], rtol=1e-5, atol=1e-7)
    assert (out1["log_probs"][forced] == 0).all() and (out1["entropy"][forced] == 0).all()
    assert (out0["log_probs"][forced] == 0).all() and (out0["entropy"][forced].abs() == 0).all()
    torch.testing.assert_close(out1["log_probs"], out0["log_probs"], rtol=1e-5, atol=1e-6)
    for name, g0 in grads[0].items():
        torch.testing.assert_close(grads[1][name], g0, rtol=1e-4, atol=1e-7, msg=name)
    assert any(g.abs().sum() > 0 for n, g in grads[0].items() if n.startswith("actor."))


def test_training_with_and_without_the_skip_gives_the_same_policy(tmp_path, monkeypatch):
    calls = []
    original = Policy._active_logits

    def counting(self, obs, h_actor, starts, columns, rows):
        calls.append((obs.shape[0] * obs.shape[1], rows.numel()))
        return original(self, obs, h_actor, starts, columns, rows)

    monkeypatch.setattr(Policy, "_active_logits", counting)
    weights = []
    for skip in (False, True):
        out = tmp_path / f"skip_{skip}"
        sets = ["env.num_envs=8", "ppo.rollout_length=16", "ppo.epochs=2", "ppo.num_minibatches=2",
                "run.eval_episodes=0", "run.num_threads=1",
                f"ppo.skip_forced={str(skip).lower()}"]  # fmt: skip
        args = [
            "train",
            "--algo",
            "sp",
            "--env",
            "yokai",
            "--steps",
            "256",
            "--out",
            str(out),
            "--no-progress",
        ]
        res = CliRunner().invoke(main, [*args, *(x for key in sets for x in ("--set", key))])
        assert res.exit_code == 0, res.output
        agent, _ = load_agent(out)
        weights.append(agent.state_dict())
        assert bool(calls) == skip
    # every minibatch ran the actor on its unforced samples only (the waiting seat's half skipped)
    assert all(0 < rows < 0.75 * samples for samples, rows in calls)
    for name, w in weights[0].items():
        torch.testing.assert_close(weights[1][name], w, rtol=1e-4, atol=1e-6, msg=name)
