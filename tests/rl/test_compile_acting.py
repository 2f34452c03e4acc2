"""Acting of the remaining agent kinds as compiled graphs: CNN policies, policy
pools, mixtures of pool members and epsilon-greedy Q-networks each trace to one graph with no
break, give the eager results through ``aot_eager`` (randomness as an input: the draws the eager
path takes from its generator), and act with no data-dependent op."""

import pytest
import torch

from tests.compile_helpers import aot_eager, graph_breaks
from zsceval.execution.dispatch import forbid_host_sync
from zsceval.rl.agent import sample_actions
from zsceval.rl.config import ModelConfig
from zsceval.rl.policy import Policy, network_spec
from zsceval.rl.population import MixtureAgent, PolicyPool, StackedPolicies
from zsceval.rl.qpolicy import QPolicy, epsilon_noise

OBS = (4, 3, 5)
A = 6
N = 10
MEMBER = torch.tensor([2, 0, 2, 2, 1, 2, 0, 2, 2, 2])  # uneven groups: member 2 has 7 rows


def _spec(kind: str, recurrent: bool = False, layer_norm: bool = False) -> dict:
    model = ModelConfig(kind=kind, hidden_size=8, mlp_layers=1, cnn_channels=(4,), recurrent=recurrent,
                        layer_norm=layer_norm, bf16=False)  # fmt: skip
    return network_spec(model, OBS, OBS, A)


def _members(kind: str, recurrent: bool) -> list[Policy]:
    """Three members with large logits, so that acting with the wrong member changes actions."""
    torch.manual_seed(0)
    members = []
    for _ in range(3):
        p = Policy(_spec(kind, recurrent))
        with torch.no_grad():
            p.actor.head.weight.mul_(300.0)
            p.actor.head.bias.normal_()
        members.append(p)
    return members


def _pool(kind: str, recurrent: bool) -> PolicyPool:
    return PolicyPool.from_policies(_members(kind, recurrent))


def _inputs(hidden: int, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randint(0, 3, (N, *OBS), generator=g, dtype=torch.uint8)
    avail = torch.rand(N, A, generator=g) < 0.7
    avail[:, 4] = True
    h = torch.randn(N, hidden, generator=g)
    starts = torch.rand(N, generator=g) < 0.3
    return obs, avail, h, starts


def _same_acting(out, eager):
    assert torch.equal(out.actions, eager.actions)
    torch.testing.assert_close(out.log_probs, eager.log_probs)
    torch.testing.assert_close(out.state, eager.state)


def test_cnn_policy_acting_is_one_graph_equal_to_eager_acting_and_sync_free():
    torch.manual_seed(0)
    p = Policy(_spec("cnn"))
    obs, avail, h, starts = _inputs(0)
    noise = torch.rand(N, A, generator=torch.Generator().manual_seed(5))
    assert graph_breaks(p.act, obs, avail, h, starts, noise=noise) == (1, [])
    out = aot_eager(p.act)(obs, avail, h, starts, noise=noise)
    _same_acting(out, p.act(obs, avail, h, starts, generator=torch.Generator().manual_seed(5)))
    with forbid_host_sync():
        p.act(obs, avail, h, starts, noise=noise)
        p.value(obs, h, starts)


@pytest.mark.parametrize(("kind", "recurrent"), [("mlp", True), ("cnn", False)])
def test_pool_acting_is_one_graph_equal_to_eager_acting_and_sync_free(kind, recurrent):
    pool = _pool(kind, recurrent)
    obs, avail, h, starts = _inputs(pool.hidden_size)
    noise = torch.rand(N, A, generator=torch.Generator().manual_seed(5))
    assert graph_breaks(pool.act, obs, avail, h, starts, MEMBER, noise=noise) == (1, [])
    out = aot_eager(pool.act)(obs, avail, h, starts, MEMBER, noise=noise)
    # the eager default (rows grouped by member on the host) from the same generator state
    eager = pool.act(obs, avail, h, starts, MEMBER, generator=torch.Generator().manual_seed(5))
    _same_acting(out, eager)
    with forbid_host_sync():  # all rows per member (the default capacity), or the largest group
        outs = [pool.act(obs, avail, h, starts, MEMBER, noise=noise, capacity=c) for c in (N, 7)]
        v, _ = pool.values(obs, h, starts, MEMBER, capacity=7)
    for o in outs:
        _same_acting(o, eager)
    torch.testing.assert_close(v, pool.values(obs, h, starts, MEMBER)[0])


def test_mixture_acting_is_one_graph_equal_to_eager_acting_and_sync_free():
    mix = MixtureAgent(_pool("mlp", True), [0.2, 0.5, 0.3])
    obs, avail, h, starts = _inputs(mix.pool.hidden_size)
    state = torch.cat([MEMBER.float().unsqueeze(1), h], 1)
    state[:3, 0] = -1  # no member drawn yet
    g = torch.Generator().manual_seed(5)
    member_noise = torch.rand(N, generator=g, dtype=torch.float64)  # the eager path's draws, in order
    noise = torch.rand(N, A, generator=g)
    assert graph_breaks(mix.act, obs, avail, state, starts, noise=noise, member_noise=member_noise) == (1, [])
    out = aot_eager(mix.act)(obs, avail, state, starts, noise=noise, member_noise=member_noise)
    eager = mix.act(obs, avail, state, starts, generator=torch.Generator().manual_seed(5))
    _same_acting(out, eager)
    assert torch.equal(out.extras["member"], eager.extras["member"])
    assert not torch.equal(eager.extras["member"], MEMBER)  # some rows drew a new member
    mix.pool.strategy = "static"
    with forbid_host_sync():
        out = mix.act(obs, avail, state, starts, noise=noise, member_noise=member_noise)
    _same_acting(out, eager)


def test_epsilon_greedy_acting_is_one_graph_equal_to_eager_acting_and_sync_free():
    torch.manual_seed(0)
    q = QPolicy(_spec("mlp", layer_norm=True))
    with torch.no_grad():
        q.actor.head.weight.mul_(300.0)
    q.epsilon = 0.4
    obs, avail, h, starts = _inputs(0)
    noise = epsilon_noise(N, A, torch.Generator().manual_seed(5))
    eps = torch.tensor(0.4)
    assert graph_breaks(q.act, obs, avail, h, starts, noise=noise, epsilon=eps) == (1, [])
    compiled = aot_eager(q.act)
    out = compiled(obs, avail, h, starts, noise=noise, epsilon=eps)
    eager = q.act(obs, avail, h, starts, generator=torch.Generator().manual_seed(5))
    _same_acting(out, eager)
    greedy = q.act(obs, avail, h, starts, deterministic=True).actions
    assert not torch.equal(eager.actions, greedy)  # some rows explored
    # a new epsilon is a new input, not a new graph; epsilon 0 is the greedy policy
    zero = compiled(obs, avail, h, starts, noise=noise, epsilon=torch.tensor(0.0))
    assert torch.equal(zero.actions, greedy) and torch.equal(zero.log_probs, torch.zeros(N))
    with forbid_host_sync():
        out = q.act(obs, avail, h, starts, noise=noise, epsilon=eps)
    _same_acting(out, eager)


def test_stacked_learners_act_as_one_graph_like_each_member_alone_and_sync_free():
    members = _members("mlp", True)
    stacked = StackedPolicies.from_policies(members)
    obs, avail, h, starts = _inputs(stacked.hidden_size)
    noise = torch.rand(N, A, generator=torch.Generator().manual_seed(5))
    assert graph_breaks(stacked.act, obs, avail, h, starts, MEMBER, noise=noise) == (1, [])
    out = aot_eager(stacked.act)(obs, avail, h, starts, MEMBER, noise=noise)
    logits, h_ref = torch.zeros(N, A), torch.zeros_like(h)  # each member's actor on its own rows
    for m, policy in enumerate(members):
        rows = MEMBER == m
        logits[rows], h_ref[rows] = policy.logits(obs[rows], h[rows], starts[rows])
    actions, logp = sample_actions(logits, avail, noise=noise)
    assert torch.equal(out.actions, actions)
    torch.testing.assert_close(out.log_probs, logp)
    torch.testing.assert_close(out.state, h_ref)
    with forbid_host_sync():
        eager = stacked.act(obs, avail, h, starts, MEMBER, noise=noise, capacity=7)
    _same_acting(eager, out)
