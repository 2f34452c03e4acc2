"""PolicyPool and MixtureAgent: batched acting equals member-by-member acting, growth, artifacts."""

import json

import pytest
import torch

from zsceval.rl.agent import agent_class, sample_actions
from zsceval.rl.policy import Policy, network_spec
from zsceval.rl.population import MixtureAgent, PolicyPool, PoolError
from zsceval.rl.population.pool import POOL_JSON, POOL_WEIGHTS

OBS = (3, 4, 5)
A = 6


def make_spec(kind="mlp", recurrent=False, bf16=False):
    model = dict(
        kind=kind,
        hidden_size=16,
        mlp_layers=2 if kind == "mlp" else 1,
        cnn_channels=[4, 8, 4],
        recurrent=recurrent,
        chunk_length=4,
        critic_obs="own",
        bf16=bf16,
        obs_scale=1.0,
    )
    return network_spec(model, OBS, OBS, A)


def make_policies(spec, n, seed=0):
    """Distinct members with large logits (the default head gain 0.01 makes every policy near
    uniform, so acting with the wrong member would hardly change the sampled actions)."""
    torch.manual_seed(seed)
    policies = []
    for _ in range(n):
        p = Policy(spec).eval()
        with torch.no_grad():
            p.actor.head.weight.mul_(300.0)
            p.actor.head.bias.normal_()
            p.critic.head.bias.normal_()
            p.value_norm.update(torch.randn(50) * 3 + torch.randn(()))
        policies.append(p)
    return policies


def batch(n, hidden, seed=1, start_prob=0.3):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randint(0, 3, (n, *OBS), dtype=torch.uint8, generator=g)
    avail = torch.rand(n, A, generator=g) < 0.8
    avail[:, 0] = True
    h = torch.randn(n, hidden, generator=g)
    starts = torch.rand(n, generator=g) < start_prob
    return obs, avail, h, starts


def reference_logits(policies, obs, h, starts, member):
    """Each member's ``Policy.logits`` on its own rows, assembled in row order."""
    logits = torch.zeros(obs.shape[0], A)
    h_new = torch.zeros_like(h)
    for m, policy in enumerate(policies):
        rows = member == m
        if rows.any():
            logits[rows], h_new[rows] = policy.logits(obs[rows], h[rows], starts[rows])
    return logits, h_new


def _skewed(n, M, g):
    return torch.where(torch.rand(n, generator=g) < 0.9, 1, torch.randint(0, M, (n,), generator=g))


def _member_zero_absent(n, M, g):
    return torch.cat([torch.arange(1, M), torch.full((n - M + 1,), M - 1)])


ASSIGNMENTS = {
    "uniform": lambda n, M, g: torch.randint(0, M, (n,), generator=g),
    "skewed": _skewed,
    "member_zero_absent_others_skewed": _member_zero_absent,
    "last_member_absent": lambda n, M, g: torch.randint(0, M - 1, (n,), generator=g),
}
MODELS = {
    "mlp": dict(kind="mlp"),
    "mlp_gru": dict(kind="mlp", recurrent=True),
    "cnn_gru": dict(kind="cnn", recurrent=True),
}


@pytest.mark.parametrize("strategy", ["auto", "vmap", "loop", "static"])
@pytest.mark.parametrize("assignment", sorted(ASSIGNMENTS))
@pytest.mark.parametrize("model", sorted(MODELS))
def test_pool_acts_like_members_one_by_one(model, assignment, strategy):
    spec = make_spec(**MODELS[model])
    policies = make_policies(spec, 4)
    pool = PolicyPool.from_policies(policies)
    pool.strategy = strategy
    n = 40
    obs, avail, h, starts = batch(n, pool.hidden_size)
    member = ASSIGNMENTS[assignment](n, 4, torch.Generator().manual_seed(2))

    ref_logits, ref_h = reference_logits(policies, obs, h, starts, member)
    ref_actions, ref_logp = sample_actions(ref_logits, avail, torch.Generator().manual_seed(7))
    out = pool.act(obs, avail, h, starts, member, torch.Generator().manual_seed(7))

    torch.testing.assert_close(out.extras["logits"], ref_logits, rtol=1e-5, atol=1e-5)
    assert torch.equal(out.actions, ref_actions)
    torch.testing.assert_close(out.log_probs, ref_logp, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out.state, ref_h, rtol=1e-5, atol=1e-5)
    assert out.actions.dtype == torch.int64 and out.log_probs.dtype == torch.float32
    assert bool(avail.gather(1, out.actions.unsqueeze(1)).all())


@pytest.mark.parametrize("model", ["mlp_gru", "cnn_gru"])
def test_recurrent_state_carried_and_reset_at_starts(model):
    spec = make_spec(**MODELS[model])
    policies = make_policies(spec, 3)
    pool = PolicyPool.from_policies(policies)
    n = 24
    member = torch.arange(n) % 3
    h_pool = pool.initial_state(n, "cpu")
    h_ref = torch.zeros_like(h_pool)
    for t in range(4):
        obs, _, _, starts = batch(n, pool.hidden_size, seed=10 + t, start_prob=0.0 if t == 0 else 0.4)
        logits, h_pool = pool.logits(obs, h_pool, starts | (t == 0), member)
        ref, h_ref = reference_logits(policies, obs, h_ref, starts | (t == 0), member)
        torch.testing.assert_close(logits, ref, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(h_pool, h_ref, rtol=1e-5, atol=1e-5)
    # A start zeroes the incoming state: same output as from a zero state.
    obs, _, h, _ = batch(n, pool.hidden_size, seed=20)
    ones = torch.ones(n, dtype=torch.bool)
    a, _ = pool.logits(obs, h, ones, member)
    b, _ = pool.logits(obs, torch.zeros_like(h), ones, member)
    c, _ = pool.logits(obs, h, ~ones, member)
    torch.testing.assert_close(a, b)
    assert not torch.allclose(a, c)


def test_bf16_pool_matches_members_within_bf16_tolerance():
    spec = make_spec(bf16=True)
    policies = make_policies(spec, 3)
    pool = PolicyPool.from_policies(policies)
    obs, _, h, starts = batch(30, 0)
    member = torch.arange(30) % 3
    logits, _ = pool.logits(obs, h, starts, member)
    ref, _ = reference_logits(policies, obs, h, starts, member)
    torch.testing.assert_close(logits, ref, rtol=2e-2, atol=2e-2)
    wrong, _ = reference_logits(policies, obs, h, starts, (member + 1) % 3)
    assert not torch.allclose(logits, wrong, rtol=2e-2, atol=2e-2)


def test_values_match_member_critics():
    spec = make_spec(recurrent=True)
    policies = make_policies(spec, 3)
    pool = PolicyPool.from_policies(policies)
    obs, _, h, starts = batch(30, pool.hidden_size)
    member = torch.tensor([2] * 20 + [0] * 10)
    values, h_new = pool.values(obs, h, starts, member)
    for m in (0, 2):
        rows = member == m
        v, hm = policies[m].value(obs[rows], h[rows], starts[rows])
        torch.testing.assert_close(values[rows], v, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(h_new[rows], hm, rtol=1e-5, atol=1e-5)
    assert values.shape == (30,)


def test_add_grows_the_pool_and_the_new_member_acts_like_its_policy():
    spec = make_spec()
    policies = make_policies(spec, 3)
    pool = PolicyPool(spec, policies[:2], names=["a", "b"])
    assert len(pool) == 2
    assert pool.add(policies[2], "c") == 2
    assert len(pool) == 3 and pool.names == ["a", "b", "c"]
    obs, _, h, starts = batch(12, 0)
    member = torch.full((12,), 2)
    logits, _ = pool.logits(obs, h, starts, member)
    torch.testing.assert_close(logits, policies[2].logits(obs, h, starts)[0], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="already"):
        pool.add(policies[0], "a")
    with pytest.raises(ValueError, match="spec"):
        pool.add(make_policies(make_spec(recurrent=True), 1)[0])
    with pytest.raises(IndexError):
        pool.logits(obs, h, starts, torch.full((12,), 3))


def test_empty_pool_grows_from_nothing():
    spec = make_spec(recurrent=True)
    policies = make_policies(spec, 2)
    pool = PolicyPool(spec)
    assert len(pool) == 0
    for p in policies:
        pool.add(p)
    assert pool.names == ["member_0", "member_1"]
    obs, _, h, starts = batch(8, pool.hidden_size)
    member = torch.tensor([1, 0] * 4)
    torch.testing.assert_close(
        pool.logits(obs, h, starts, member)[0], reference_logits(policies, obs, h, starts, member)[0]
    )


def test_member_round_trips_weights_and_value_normalizer():
    spec = make_spec(kind="cnn", recurrent=True)
    policies = make_policies(spec, 3)
    pool = PolicyPool.from_policies(policies)
    for i, p in enumerate(policies):
        got = pool.member(i).state_dict()
        want = p.state_dict()
        assert got.keys() == want.keys()
        for k in want:
            assert torch.equal(got[k], want[k]), k
    assert not torch.equal(pool.member(0).value_norm.running_mean, pool.member(1).value_norm.running_mean)
    with pytest.raises(IndexError):
        pool.member(3)


def test_save_load_round_trip(tmp_path):
    spec = make_spec(recurrent=True)
    policies = make_policies(spec, 3)
    pool = PolicyPool.from_policies(policies, names=["x", "y", "z"])
    digest = pool.save(tmp_path / "pool")
    assert pool.sha256 == digest
    meta = json.loads((tmp_path / "pool" / POOL_JSON).read_text())
    assert meta["sha256"] == digest and meta["names"] == ["x", "y", "z"] and meta["spec"] == spec
    loaded = PolicyPool.load(tmp_path / "pool")
    assert loaded.sha256 == digest and loaded.names == ["x", "y", "z"] and loaded.spec == spec
    for k, v in pool.stacked.items():
        assert torch.equal(loaded.stacked[k], v), k
    obs, avail, h, starts = batch(20, pool.hidden_size)
    member = torch.arange(20) % 3
    a = pool.act(obs, avail, h, starts, member, torch.Generator().manual_seed(3))
    b = loaded.act(obs, avail, h, starts, member, torch.Generator().manual_seed(3))
    assert torch.equal(a.actions, b.actions) and torch.equal(a.log_probs, b.log_probs)
    # Same weights -> same checksum; saving over an existing pool replaces it.
    assert loaded.save(tmp_path / "pool") == digest
    loaded.add(policies[0], "w")
    assert loaded.sha256 is None
    assert loaded.save(tmp_path / "pool") != digest
    assert len(PolicyPool.load(tmp_path / "pool")) == 4


def test_load_refuses_corrupt_missing_or_mismatched_artifacts(tmp_path):
    spec = make_spec()
    pool = PolicyPool.from_policies(make_policies(spec, 2))
    root = tmp_path / "pool"
    pool.save(root)
    weights = root / POOL_WEIGHTS
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(PoolError, match=POOL_WEIGHTS):
        PolicyPool.load(root)

    pool.save(root)
    meta = json.loads((root / POOL_JSON).read_text())
    meta["spec"]["model"]["hidden_size"] = 8
    (root / POOL_JSON).write_text(json.dumps(meta))
    with pytest.raises(PoolError, match="does not match the member spec"):
        PolicyPool.load(root)

    pool.save(root)
    weights.unlink()
    with pytest.raises(PoolError, match=POOL_WEIGHTS):
        PolicyPool.load(root)
    (root / POOL_JSON).unlink()
    with pytest.raises(PoolError, match=POOL_JSON):
        PolicyPool.load(root)
    (root / POOL_JSON).write_text('{"format": "something-else"}')
    with pytest.raises(PoolError, match="not a zsceval policy pool"):
        PolicyPool.load(root)
    assert issubclass(PoolError, RuntimeError)


# -- mixture ------------------------------------------------------------------------------------
def test_mixture_keeps_a_member_for_the_episode_and_redraws_at_starts():
    M, n = 4, 4000
    agent = MixtureAgent(PolicyPool.from_policies(make_policies(make_spec(recurrent=True), M)))
    g = torch.Generator().manual_seed(0)
    obs, avail, _, _ = batch(n, 0)
    state = agent.initial_state(n, "cpu")
    assert state.shape == (n, 1 + agent.pool.hidden_size)
    # First call: no row is marked as starting, yet every row draws (member -1 in the initial state).
    out = agent.act(obs, avail, state, torch.zeros(n, dtype=torch.bool), g)
    first = out.extras["member"]
    counts = torch.bincount(first, minlength=M)
    assert bool((counts - n / M).abs().lt(5 * (n * 0.25 * 0.75) ** 0.5).all()), counts
    assert torch.equal(out.state[:, 0].long(), first)
    for _ in range(3):
        out = agent.act(obs, avail, out.state, torch.zeros(n, dtype=torch.bool), g)
        assert torch.equal(out.extras["member"], first)
    starts = torch.arange(n) % 2 == 0
    out = agent.act(obs, avail, out.state, starts, g)
    second = out.extras["member"]
    assert torch.equal(second[~starts], first[~starts])
    changed = (second[starts] != first[starts]).float().mean().item()
    assert abs(changed - 0.75) < 0.05  # a fresh uniform draw differs from the old member 3/4 of the time


@pytest.mark.parametrize("probs, only", [([1.0, 0.0, 0.0], 0), ([0.0, 0.0, 2.0], 2), ([0.0, 1.0, 0.0], 1)])
def test_mixture_never_draws_members_with_probability_zero(probs, only):
    agent = MixtureAgent(PolicyPool.from_policies(make_policies(make_spec(), 3)), probs)
    g = torch.Generator().manual_seed(1)
    obs, avail, _, _ = batch(500, 0)
    state = agent.initial_state(500, "cpu")
    for _ in range(5):
        out = agent.act(obs, avail, state, torch.ones(500, dtype=torch.bool), g)
        assert bool((out.extras["member"] == only).all())
        state = out.state


def test_mixture_acts_with_the_drawn_members_policy():
    spec = make_spec(recurrent=True)
    policies = make_policies(spec, 3)
    pool = PolicyPool.from_policies(policies)
    agent = MixtureAgent(pool, [0.2, 0.3, 0.5])
    obs, avail, _, starts = batch(64, pool.hidden_size)
    out = agent.act(obs, avail, agent.initial_state(64, "cpu"), starts, torch.Generator().manual_seed(5))
    g = torch.Generator().manual_seed(5)
    member = agent.draw(64, g)
    ref_logits, ref_h = reference_logits(policies, obs, torch.zeros(64, pool.hidden_size), starts, member)
    ref_actions, ref_logp = sample_actions(ref_logits, avail, g)
    assert torch.equal(out.extras["member"], member)
    assert torch.equal(out.actions, ref_actions)
    torch.testing.assert_close(out.log_probs, ref_logp, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out.state[:, 1:], ref_h, rtol=1e-5, atol=1e-5)


def test_mixture_spec_and_state_dict_round_trip():
    spec = make_spec(kind="cnn", recurrent=True)
    agent = MixtureAgent(PolicyPool.from_policies(make_policies(spec, 3), names=["p", "q", "r"]), [1, 2, 1])
    saved = json.loads(json.dumps(agent.spec))
    assert saved["members"] == 3 and saved["names"] == ["p", "q", "r"] and saved["member_spec"] == spec
    assert saved["probs"] == [0.25, 0.5, 0.25]
    rebuilt = agent_class("mixture").from_spec(saved)
    assert isinstance(rebuilt, MixtureAgent)
    rebuilt.load_state_dict(agent.state_dict())
    n = 32
    obs, avail, _, _ = batch(n, 0)
    states = [agent.initial_state(n, "cpu"), rebuilt.initial_state(n, "cpu")]
    gens = [torch.Generator().manual_seed(9), torch.Generator().manual_seed(9)]
    for t in range(3):
        starts = torch.rand(n, generator=torch.Generator().manual_seed(t)) < 0.3
        a, b = (x.act(obs, avail, s, starts, g) for x, s, g in zip((agent, rebuilt), states, gens))
        assert torch.equal(a.actions, b.actions)
        assert torch.equal(a.log_probs, b.log_probs)
        assert torch.equal(a.state, b.state)
        states = [a.state, b.state]
    # An untrained agent from the same spec acts differently: the weights came from state_dict.
    fresh = MixtureAgent.from_spec(saved)
    c = fresh.act(obs, avail, fresh.initial_state(n, "cpu"), starts, torch.Generator().manual_seed(9))
    d = agent.act(obs, avail, agent.initial_state(n, "cpu"), starts, torch.Generator().manual_seed(9))
    assert not torch.equal(c.log_probs, d.log_probs)


def test_mixture_rejects_bad_probabilities():
    pool = PolicyPool.from_policies(make_policies(make_spec(), 2))
    for probs in ([0.5], [-1.0, 2.0], [0.0, 0.0], [float("nan"), 1.0]):
        with pytest.raises(ValueError):
            MixtureAgent(pool, probs)
    with pytest.raises(ValueError):
        MixtureAgent(PolicyPool(make_spec()))
