"""The PPO minibatch step as compiled graphs: the loss of a minibatch
(:func:`minibatch_loss`: re-evaluation, clipped losses, entropy) traces as one graph, and so does
clipping plus the Adam step (:func:`clip_and_step` with ``raw_step``; ``Optimizer.step``'s wrapper
breaks the graph on purpose). ``backward()`` runs between the two (dynamo does not trace it; the
loss graph's backward is compiled by AOT autograd). Through ``aot_eager`` the steps give the eager
ones' losses, gradient norms and weights within float tolerance (the compiled Adam reorders a few
float operations); a ``fullgraph=True`` compile fails at any graph break, so each compile
here also checks the one graph."""

import copy

import pytest
import torch
import torch._dynamo as dynamo

from zsceval.rl.config import ModelConfig, PPOConfig
from zsceval.rl.loss import clip_and_step, minibatch_loss
from zsceval.rl.policy import Policy, network_spec
from zsceval.rl.trainer import Trainer

OBS = (5, 4, 20)
CFG = PPOConfig()


def _policy(recurrent: bool) -> Policy:
    torch.manual_seed(0)
    model = ModelConfig(kind="mlp", hidden_size=16, mlp_layers=2, recurrent=recurrent, bf16=False)
    return Policy(network_spec(model, OBS, OBS, 6))


def _minibatch(policy: Policy, L: int, S: int, seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    obs = torch.randint(0, 3, (L, S, *OBS), generator=g, dtype=torch.uint8)
    avail = torch.rand(L, S, 6, generator=g) < 0.7
    avail[..., 4] = True
    actions = torch.multinomial(avail.reshape(-1, 6).float(), 1, generator=g).view(L, S)
    h = torch.zeros(S, policy.hidden_size) if policy.recurrent else torch.zeros(S, 0)
    f = lambda: torch.randn(L, S, generator=g)  # noqa: E731
    return {"obs": obs, "critic_obs": obs, "avail": avail, "actions": actions,
            "old_log_probs": -1.7 + 0.1 * f(), "old_values": f(), "advantages": f(), "targets": f(),
            "starts": torch.rand(L, S, generator=g) < 0.1, "h_actor": h, "h_critic": h.clone(),
            "weight": None}  # fmt: skip


def _optimizers(p: Policy) -> list[torch.optim.Optimizer]:
    return [torch.optim.Adam(m.parameters(), lr=1e-3, eps=1e-5) for m in (p.actor, p.critic)]


def _groups(p: Policy):
    return list(p.actor.parameters()), list(p.critic.parameters())


def _graphs(fn, *args, **kwargs):
    dynamo.reset()
    e = dynamo.explain(fn)(*args, **kwargs)
    return e.graph_count, [b.reason for b in e.break_reasons]


def test_the_clip_and_adam_step_is_one_graph_only_without_the_optimizer_step_wrapper():
    """(The loss's one graph is checked by the ``fullgraph=True`` compiles below.)"""
    p = _policy(False)
    opts = _optimizers(p)
    minibatch_loss(p, _minibatch(p, 1, 12, seed=1), 0.01, CFG)[0].backward()
    assert _graphs(clip_and_step, _groups(p), opts, 0.5, raw_step=True) == (1, [])
    count, _ = _graphs(clip_and_step, _groups(p), opts, 0.5)  # through Optimizer.step's wrapper
    assert count > 1


@pytest.mark.parametrize("recurrent", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_compiled_minibatch_steps_equal_eager_ones(recurrent):
    L = 4 if recurrent else 1
    eager = _policy(recurrent)
    comp = copy.deepcopy(eager)
    eager_opts, comp_opts = _optimizers(eager), _optimizers(comp)
    dynamo.reset()
    loss_fn = torch.compile(lambda mb, c: minibatch_loss(comp, mb, c, CFG), fullgraph=True, dynamic=False,
                            backend="aot_eager")  # fmt: skip
    step_fn = torch.compile(lambda: clip_and_step(_groups(comp), comp_opts, 0.5, raw_step=True),
                            fullgraph=True, dynamic=False, backend="aot_eager")  # fmt: skip
    for step in range(3):
        mb = _minibatch(eager, L, 12, seed=step)
        total, stats, _ = minibatch_loss(eager, mb, 0.01, CFG)
        total.backward()
        norms = clip_and_step(_groups(eager), eager_opts, 0.5)
        c_total, c_stats, _ = loss_fn(mb, torch.tensor(0.01))
        c_total.backward()
        c_norms = step_fn()
        close = dict(rtol=1e-4, atol=1e-6)  # compiled and eager sum the gradients in other orders
        torch.testing.assert_close(c_total, total, **close)
        for key in stats:
            torch.testing.assert_close(c_stats[key], stats[key], **close)
        torch.testing.assert_close(torch.stack(c_norms), torch.stack(norms), **close)
        for a, b in zip(comp.parameters(), eager.parameters()):
            torch.testing.assert_close(a, b, **close)
        for opt in (*eager_opts, *comp_opts):
            opt.zero_grad(set_to_none=True)
    assert int(comp_opts[0].state_dict()["state"][0]["step"]) == 3  # Adam's state moved on


def test_a_compiled_ppo_core_updates_like_the_eager_one(toy_config, tmp_path):
    """``PPOCore.compile`` (values, minibatch steps) on the toy env: one iteration's statistics and
    weights equal the eager core's for the same seed."""
    out = []
    for name, compiled in (("eager", False), ("compiled", True)):
        # float32: bf16 autocast (on by default where native) would round the two cores apart
        tr = Trainer(toy_config("ppo.obs_columns=false", "model.bf16=false"), tmp_path / name, progress=False)
        if compiled:
            dynamo.reset()
            assert tr.core.compile(backend="aot_eager") == []
        out.append((tr._iteration(), tr.learners))
        tr.close()
    (row_e, learners_e), (row_c, learners_c) = out
    for key in ("policy_loss", "value_loss", "entropy", "approx_kl", "actor_grad_norm", "critic_grad_norm"):
        assert abs(row_c[key] - row_e[key]) <= 1e-4 * (1 + abs(row_e[key])), key
    (p_c,), (p_e,) = learners_c.values(), learners_e.values()
    for a, b in zip(p_c.parameters(), p_e.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
