"""The ``yokai-relational`` model plug-in: shapes, masking, permutation equivariance, GRU, training."""

from __future__ import annotations

import pytest
import torch
from click.testing import CliRunner

from zsceval.cli import main
from zsceval.envs.yokai import YokaiEnv
from zsceval.envs.yokai.observe import channel_names
from zsceval.rl.checkpoint import load_agent
from zsceval.rl.config import ConfigError, ModelConfig, resolve_config
from zsceval.rl.networks import UnknownModelError, model_class, model_kinds
from zsceval.rl.policy import Policy, network_spec


def _policy(env, **model) -> Policy:
    torch.manual_seed(0)
    cfg = ModelConfig(kind="yokai-relational", hidden_size=model.pop("hidden_size", 16), **model)
    return Policy(network_spec(cfg, env.obs_shape, env.critic_obs_shape, env.num_actions))


def _played(env, steps: int, seed: int = 0):
    """The env after ``steps`` random available actions (a mix of phases and positions)."""
    g = torch.Generator().manual_seed(seed)
    s = env.reset()
    for _ in range(steps):
        noise = torch.rand(s.avail_actions.shape, generator=g)
        s = env.step((noise * s.avail_actions).argmax(-1))
    return s


def test_the_plug_in_is_a_registered_model_kind():
    assert "yokai-relational" in model_kinds()
    assert model_class("yokai-relational").__name__ == "YokaiRelational"
    with pytest.raises(UnknownModelError, match="yokai-relational"):
        model_class("yokai-relation")
    with pytest.raises(ConfigError, match="Did you mean 'yokai-relational'"):
        resolve_config(preset="quick", overrides=["env.name=yokai", "model.kind=yokai-relatoinal"])


@pytest.mark.parametrize(("version", "players"), [("3x3", 2), ("4x4", 3)])
def test_logits_have_the_action_layout_and_actions_respect_the_mask(version, players):
    env = YokaiEnv(num_envs=16, num_agents=players, version=version, seed=1)
    policy = _policy(env)
    s = _played(env, 7)
    N = 16 * players
    obs, avail = s.obs.reshape(N, *env.obs_shape), s.avail_actions.reshape(N, -1)
    logits, _ = policy.logits(obs, policy.initial_state(N, "cpu"), torch.ones(N, dtype=torch.bool))
    assert logits.shape == (N, env.num_actions) and logits.dtype == torch.float32
    assert torch.isfinite(logits).all()
    for seed in range(5):
        out = policy.act(obs, avail, policy.initial_state(N, "cpu"), torch.ones(N, dtype=torch.bool),
                         torch.Generator().manual_seed(seed))  # fmt: skip
        assert out.actions.dtype == torch.int64
        assert avail.gather(1, out.actions[:, None]).all()
    _, _, values = policy.evaluate(
        obs[None], s.critic_obs.reshape(N, *env.critic_obs_shape)[None], avail[None], out.actions[None],
        policy.initial_state(N, "cpu"), policy.initial_state(N, "cpu"), torch.ones(1, N, dtype=torch.bool),
    )  # fmt: skip
    assert values.shape == (1, N)


def _relabel_cards(obs: torch.Tensor, env, sigma: torch.Tensor) -> torch.Tensor:
    """``obs`` with card y renamed sigma[y] (the ``card_id`` channel of cards and placed hints)."""
    k = channel_names(env.rules).index("card_id")
    ids = obs[..., k].long()
    mapped = torch.where(ids > 0, sigma[(ids - 1).clamp(min=0)] + 1, 0)
    out = obs.clone()
    out[..., k] = mapped.to(obs.dtype)
    return out


def test_relabelling_cards_permutes_the_peek_and_move_logits():
    env = YokaiEnv(num_envs=8, num_agents=2, seed=3, perfect_memory=True)
    policy = _policy(env)
    s = _played(env, 21)  # some hints placed: hint nodes point at cards
    N, Y, cells = 16, env.rules.num_cards, env.rules.grid**2
    obs = s.obs.reshape(N, *env.obs_shape)
    sigma = torch.randperm(Y, generator=torch.Generator().manual_seed(0))
    h, starts = policy.initial_state(N, "cpu"), torch.ones(N, dtype=torch.bool)
    before, _ = policy.logits(obs, h, starts)
    after, _ = policy.logits(_relabel_cards(obs, env, sigma), h, starts)
    layout = env.rules.actions
    peek_b, peek_a = before[:, layout.peek : layout.move], after[:, layout.peek : layout.move]
    torch.testing.assert_close(peek_a[:, sigma], peek_b, rtol=1e-4, atol=1e-5)
    move_b = before[:, layout.move : layout.reveal].view(N, Y, cells)
    move_a = after[:, layout.move : layout.reveal].view(N, Y, cells)
    torch.testing.assert_close(move_a[:, sigma], move_b, rtol=1e-4, atol=1e-5)
    rest = torch.cat([before[:, :1], before[:, layout.reveal :]], 1)
    torch.testing.assert_close(
        torch.cat([after[:, :1], after[:, layout.reveal :]], 1), rest, rtol=1e-4, atol=1e-5
    )
    assert not torch.allclose(peek_a, peek_b, atol=1e-6)  # the permutation did change the order


def test_the_same_weights_score_every_hint():
    env = YokaiEnv(num_envs=8, num_agents=2, seed=4)
    policy = _policy(env)
    N, H, g = 16, env.rules.num_hints, env.rules.grid
    obs = _played(env, 13).obs.reshape(N, *env.obs_shape)
    pi = torch.tensor([2, 0, 3, 1])
    swapped = obs.clone()
    swapped[:, :H, g] = obs[:, pi, g]  # hint row i now shows hint pi[i]
    h, starts = policy.initial_state(N, "cpu"), torch.ones(N, dtype=torch.bool)
    (before, _), (after, _) = policy.logits(obs, h, starts), policy.logits(swapped, h, starts)
    layout = env.rules.actions
    torch.testing.assert_close(
        after[:, layout.reveal : layout.place], before[:, layout.reveal + pi], atol=1e-5, rtol=1e-4
    )
    place_b = before[:, layout.place : layout.end].view(N, H, g * g)
    place_a = after[:, layout.place : layout.end].view(N, H, g * g)
    torch.testing.assert_close(place_a, place_b[:, pi], atol=1e-5, rtol=1e-4)


def test_the_gru_carries_state_and_a_chunk_equals_its_steps():
    env = YokaiEnv(num_envs=4, num_agents=2, seed=5)
    policy = _policy(env, recurrent=True)
    assert policy.recurrent and policy.hidden_size == 16
    N, L = 8, 6
    g = torch.Generator().manual_seed(0)
    s, obs, starts = env.reset(), [], []
    for t in range(L):
        obs.append(s.obs.reshape(N, *env.obs_shape))
        starts.append(torch.full((N,), t == 0))
        noise = torch.rand(s.avail_actions.shape, generator=g)
        s = env.step((noise * s.avail_actions).argmax(-1))
    h, step_logits = policy.initial_state(N, "cpu"), []
    for t in range(L):
        logits, h = policy.logits(obs[t], h, starts[t])
        step_logits.append(logits)
    assert h.abs().sum() > 0
    fresh, _ = policy.logits(obs[-1], policy.initial_state(N, "cpu"), torch.zeros(N, dtype=torch.bool))
    assert not torch.allclose(fresh, step_logits[-1])  # the state changed the last step's logits
    reset, _ = policy.logits(obs[-1], h, torch.ones(N, dtype=torch.bool))
    torch.testing.assert_close(reset, fresh)  # an episode start zeroes it
    with torch.no_grad():
        chunk = policy.actor.out(policy.actor.trunk.sequence(torch.stack(obs), policy.initial_state(N, "cpu"),
                                                             torch.stack(starts)))  # fmt: skip
    torch.testing.assert_close(chunk, torch.stack(step_logits), atol=1e-5, rtol=1e-4)


def test_a_tiny_recurrent_training_run_saves_a_loadable_policy(tmp_path):
    out = tmp_path / "sp"
    sets = ["model.kind=yokai-relational", "model.hidden_size=16", "model.recurrent=true",
            "model.chunk_length=8", "env.num_envs=8", "ppo.rollout_length=16", "ppo.epochs=1",
            "run.eval_episodes=2", "env.options.perfect_memory=true"]  # fmt: skip
    args = ["train", "--algo", "sp", "--env", "yokai", "--steps", "256", "--out", str(out), "--no-progress"]
    res = CliRunner().invoke(main, [*args, *(x for key in sets for x in ("--set", key))])
    assert res.exit_code == 0, res.output
    agent, _ = load_agent(out)
    assert agent.spec["model"]["kind"] == "yokai-relational" and agent.recurrent
