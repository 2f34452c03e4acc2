"""The core's hot paths as compiled graphs: acting (MLP and GRU policies,
with the sampling noise as an input), the critic's value, GAE and the PPO loss each trace to one
graph with no break, give the eager results through ``aot_eager``, and a step of acting, GAE,
loss and backward dispatches no data-dependent op."""

import pytest
import torch

from tests.compile_helpers import aot_eager, graph_breaks
from zsceval.execution.dispatch import forbid_host_sync
from zsceval.rl.config import ModelConfig
from zsceval.rl.gae import compute_gae
from zsceval.rl.loss import ppo_loss
from zsceval.rl.policy import Policy, network_spec

OBS = (5, 4, 20)


def _policy(recurrent: bool) -> Policy:
    torch.manual_seed(0)
    model = ModelConfig(kind="mlp", hidden_size=16, mlp_layers=2, recurrent=recurrent, bf16=False)
    return Policy(network_spec(model, OBS, OBS, 6))


def _inputs(N=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randint(0, 3, (N, *OBS), generator=g, dtype=torch.uint8)
    avail = torch.rand(N, 6, generator=g) < 0.7
    avail[:, 4] = True
    starts = torch.rand(N, generator=g) < 0.3
    return obs, avail, starts


@pytest.mark.parametrize("recurrent", [False, True])
def test_acting_traces_as_one_graph_and_equals_eager_acting(recurrent):
    p = _policy(recurrent)
    obs, avail, starts = _inputs()
    h = torch.randn(12, p.hidden_size if recurrent else 0)
    noise = torch.rand(12, 6, generator=torch.Generator().manual_seed(5))
    assert graph_breaks(p.act, obs, avail, h, starts, noise=noise) == (1, [])
    assert graph_breaks(p.value, obs, h, starts) == (1, [])
    compiled = aot_eager(p.act)
    out = compiled(obs, avail, h, starts, noise=noise)
    eager = p.act(obs, avail, h, starts, generator=torch.Generator().manual_seed(5))  # same draws
    assert torch.equal(out.actions, eager.actions)
    torch.testing.assert_close(out.log_probs, eager.log_probs)
    torch.testing.assert_close(out.state, eager.state)
    assert bool(avail.gather(1, out.actions[:, None]).all())  # sampled among the available actions


def _gae_inputs(T=10, N=6):
    g = torch.Generator().manual_seed(1)
    return (torch.randn(T, N, generator=g), torch.randn(T + 1, N, generator=g),
            torch.rand(T, N, generator=g) < 0.05, torch.rand(T, N, generator=g) < 0.1,
            torch.randn(T, N, generator=g))  # fmt: skip


def _loss(logp, old_logp, adv, ent, values, old_values, targets):
    return ppo_loss(logp, old_logp, adv, ent, values, old_values, targets, clip=0.2, entropy_coef=0.01,
                    value_coef=1.0, huber_delta=10.0, clip_value_loss=True).total  # fmt: skip


def test_gae_and_the_ppo_loss_trace_as_one_graph_and_equal_eager():
    args = _gae_inputs()
    assert graph_breaks(compute_gae, *args, 0.99, 0.95) == (1, [])
    compiled = aot_eager(compute_gae)
    for a, b in zip(compiled(*args, 0.99, 0.95), compute_gae(*args, 0.99, 0.95)):
        torch.testing.assert_close(a, b)
    gens = [torch.Generator().manual_seed(k) for k in range(7)]
    leaves = [torch.randn(10, 6, generator=g).requires_grad_() for g in gens]
    assert graph_breaks(_loss, *leaves) == (1, [])
    eager = _loss(*leaves)
    grads = torch.autograd.grad(eager, leaves)
    lc = aot_eager(_loss)(*leaves)
    torch.testing.assert_close(lc, eager)
    for a, b in zip(torch.autograd.grad(lc, leaves), grads):
        torch.testing.assert_close(a, b)


def test_acting_gae_and_a_gradient_step_dispatch_no_data_dependent_op():
    p = _policy(True)
    obs, avail, starts = _inputs()
    h = p.initial_state(12, obs.device)
    noise = torch.rand(12, 6)
    with forbid_host_sync():
        out = p.act(obs, avail, h, starts, noise=noise)
        compute_gae(*_gae_inputs(), 0.99, 0.95)
        logp, entropy, values = p.evaluate(
            obs[None], obs[None], avail[None], out.actions[None], h, h, starts[None]
        )
        loss = _loss(logp, logp.detach(), torch.randn_like(logp), entropy, values, values.detach(),
                     torch.randn_like(values))  # fmt: skip
        loss.backward()
        torch.nn.utils.clip_grad_norm_(p.parameters(), 1.0)
    assert any(param.grad is not None for param in p.parameters())
