"""The PQN/VDN update as compiled graphs: the Q(lambda) targets, the minibatch
loss, the per-learner gradient clipping and the optimizer step each trace to one graph with no
break and give the eager results through ``aot_eager``; a gradient step dispatches no
data-dependent op; the static-shape masking keeps the VDN sum and the optimizer's view of a
learner without seats as they were."""

from types import SimpleNamespace

import pytest
import torch

from tests.compile_helpers import aot_eager, graph_breaks
from zsceval.execution.dispatch import forbid_host_sync
from zsceval.rl.config import ModelConfig, resolve_config
from zsceval.rl.policy import network_spec
from zsceval.rl.pqn import PQNCore, lambda_returns
from zsceval.rl.qpolicy import QPolicy

OBS = (3, 3, 6)
T, B, n = 4, 3, 2
S = 6  # samples per minibatch


def _core(L: int, seed: int = 0) -> PQNCore:
    model = ModelConfig(kind="mlp", hidden_size=8, mlp_layers=1, layer_norm=True, recurrent=False, bf16=False)
    spec = network_spec(model, OBS, OBS, 6)
    cfg = resolve_config(preset="quick", overrides=[
        "run.algo=vdn", f"pqn.rollout_length={T}", f"env.num_envs={B}", "pqn.num_minibatches=2",
        "pqn.max_grad_norm=0.05",  # small: the clipping acts
    ])  # fmt: skip
    torch.manual_seed(seed)
    learners = {f"q{i}": QPolicy(spec) for i in range(L)}
    return PQNCore(learners, cfg, SimpleNamespace(num_envs=B, num_agents=n, obs_shape=OBS), "cpu", None)


def _minibatch(L: int, seed: int = 1):
    """S samples; actor L is a frozen partner's seat (every sample keeps a learner seat)."""
    g = torch.Generator().manual_seed(seed)
    obs = torch.randint(0, 3, (S, n, *OBS), generator=g).to(torch.uint8)
    actions = torch.randint(0, 6, (S, n), generator=g)
    actor = torch.randint(0, L, (S, n), generator=g)
    actor[:2, 1] = L
    return obs, actions, actor, torch.randn(S, generator=g)


def _grads(core: PQNCore) -> list[torch.Tensor]:
    return [w.grad.clone() for p in core.policies for w in p.actor.parameters()]


def test_the_q_lambda_targets_are_one_graph_equal_to_eager():
    g = torch.Generator().manual_seed(0)
    args = (torch.randn(6, 4, generator=g), torch.randn(6, 4, generator=g),
            torch.rand(6, 4, generator=g) < 0.1, torch.rand(6, 4, generator=g) < 0.2,
            torch.randn(6, 4, generator=g))  # fmt: skip
    assert graph_breaks(lambda_returns, *args, 0.99, 0.9) == (1, [])
    torch.testing.assert_close(aot_eager(lambda_returns)(*args, 0.99, 0.9), lambda_returns(*args, 0.99, 0.9))


@pytest.mark.parametrize("L", [1, 2])
def test_the_minibatch_loss_is_one_graph_with_the_eager_loss_and_gradients(L):
    core = _core(L)
    mb = _minibatch(L)
    assert graph_breaks(core.minibatch_loss, *mb) == (1, [])
    loss, qt = core.minibatch_loss(*mb)
    loss.backward()
    eager = _grads(core)
    core.optimizer.zero_grad(set_to_none=True)
    c_loss, c_qt = aot_eager(core.minibatch_loss)(*mb)
    c_loss.backward()
    torch.testing.assert_close(c_loss, loss)
    torch.testing.assert_close(c_qt, qt)
    for a, b in zip(_grads(core), eager):
        torch.testing.assert_close(a, b)
    # the VDN sum over the learner seats only, as each learner's network on its own seats
    obs, actions, actor, _ = mb
    with torch.no_grad():
        expect = torch.zeros(S)
        for s in range(S):
            for i in range(n):
                if actor[s, i] < L:
                    expect[s] += core.policies[actor[s, i]].q_values(obs[s, i : i + 1])[0, actions[s, i]]
    torch.testing.assert_close(qt.detach(), expect)


def _stepped_cores(count: int) -> list[PQNCore]:
    """Cores with the same weights and the gradients of the same minibatch."""
    cores = [_core(2) for _ in range(count)]
    for core in cores:
        core.minibatch_loss(*_minibatch(2))[0].backward()
    return cores


def test_per_learner_clipping_is_one_graph_equal_to_eager():
    traced, compiled, eager = _stepped_cores(3)
    assert graph_breaks(traced.clip_gradients) == (1, [])
    aot_eager(compiled.clip_gradients)()
    eager.clip_gradients()
    for a, b in zip(_grads(compiled), _grads(eager)):
        torch.testing.assert_close(a, b)


def test_the_optimizer_step_is_one_graph_equal_to_eager():
    traced, compiled, eager = _stepped_cores(3)
    # one graph; torch's optimizers mark graph breaks at the step's edges (no op outside it), so
    # the step compiles without fullgraph (as torch documents its compiled optimizers)
    assert graph_breaks(traced.optimizer.step) == (1, [])
    torch.compile(compiled.optimizer.step, dynamic=False, backend="aot_eager")()
    eager.optimizer.step()
    for a, b in zip(*[[w for p in c.policies for w in p.actor.parameters()] for c in (compiled, eager)]):
        torch.testing.assert_close(a, b)
    assert not torch.equal(eager.policies[0].actor.head.weight, _core(2).policies[0].actor.head.weight)


def test_a_gradient_step_and_the_collection_targets_dispatch_no_data_dependent_op():
    core = _core(2)
    obs, actions, actor, g = _minibatch(2)
    avail = torch.rand(B * n, 6) < 0.7
    with forbid_host_sync():
        loss, _ = core.minibatch_loss(obs, actions, actor, g, capacity=S * n)
        loss.backward()
        core.clip_gradients()
        learner = actor[:B].reshape(-1) < 2  # the collection's greedy sums M over learner seats
        q = core.q_rows(obs[:B].reshape(B * n, *OBS), actor[:B].reshape(-1), capacity=B * n)
        summed = core._sum_max(learner, q, avail)
        core.targets()
    assert summed.shape == (B,)
    assert all(w.grad is not None for p in core.policies for w in p.actor.parameters())


def test_a_learner_without_seats_in_the_rollout_is_not_stepped():
    core = _core(2)
    g = torch.Generator().manual_seed(3)
    core.obs.copy_(torch.randint(0, 3, core.obs.shape, generator=g).to(torch.uint8))
    core.actions.copy_(torch.randint(0, 6, core.actions.shape, generator=g))
    core.actor.fill_(0)
    core.actor[:, :, 1] = 2  # learner 0 with a frozen partner; learner 1 sits nowhere
    core.rewards.copy_(torch.randn(T, B, generator=g))
    before = [[w.detach().clone() for w in p.actor.parameters()] for p in core.policies]
    core.update(0, torch.Generator().manual_seed(0))
    after = [[w.detach() for w in p.actor.parameters()] for p in core.policies]
    assert not all(torch.equal(a, b) for a, b in zip(before[0], after[0]))
    assert all(torch.equal(a, b) for a, b in zip(before[1], after[1]))
    assert not any(w in core.optimizer.state for w in core.policies[1].actor.parameters())
