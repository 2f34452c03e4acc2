"""StackedPolicies: one forward/backward for all members equals each member's Policy alone."""

import pytest
import torch

from zsceval.rl.policy import Policy
from zsceval.rl.population.stacked import StackedPolicies

from .test_pool import OBS, A, make_policies, make_spec


def minibatch(L, N, hidden, seed=0):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randint(0, 3, (L, N, *OBS), dtype=torch.uint8, generator=g)
    critic_obs = torch.randint(0, 3, (L, N, *OBS), dtype=torch.uint8, generator=g)
    avail = torch.rand(L, N, A, generator=g) < 0.8
    avail[..., 0] = True
    actions = torch.multinomial(avail.float().view(-1, A), 1, generator=g).view(L, N)
    h_a = torch.randn(N, hidden, generator=g)
    h_c = torch.randn(N, hidden, generator=g)
    starts = torch.rand(L, N, generator=g) < 0.3
    weights = torch.randn(3, L, N, generator=g)
    return (obs, critic_obs, avail, actions, h_a, h_c, starts), weights


def loss_of(out, weights):
    return sum((o * w).sum() for o, w in zip(out, weights))


@pytest.mark.parametrize("strategy", ["vmap", "loop"])
@pytest.mark.parametrize(
    "model", [dict(kind="mlp"), dict(kind="mlp", recurrent=True), dict(kind="cnn", recurrent=True)]
)
def test_gradients_of_each_member_equal_its_policy_alone(model, strategy):
    spec = make_spec(**model)
    policies = make_policies(spec, 4)
    stacked = StackedPolicies.from_policies(policies)
    stacked.strategy = strategy
    L, N = 3, 10
    batch, weights = minibatch(L, N, stacked.hidden_size)
    member = torch.tensor([2, 0, 2, 1, 0, 2, 2, 0, 1, 2])  # member 3 absent
    out = stacked.evaluate(*batch, member)
    loss_of(out, weights).backward()
    for i, policy in enumerate(policies):
        cols = member == i
        grads = {
            k: getattr(stacked, "stack__" + k.replace(".", "__")).grad[i]
            for k, _ in policy.named_parameters()
        }
        if not cols.any():
            assert all(bool((g == 0).all()) for g in grads.values())
            continue
        obs, critic_obs, avail, actions, h_a, h_c, starts = batch
        ref = policy.evaluate(
            obs[:, cols],
            critic_obs[:, cols],
            avail[:, cols],
            actions[:, cols],
            h_a[cols],
            h_c[cols],
            starts[:, cols],
        )
        for got, want in zip(out, ref):
            torch.testing.assert_close(got[:, cols].detach(), want.detach(), rtol=1e-5, atol=1e-5)
        policy.zero_grad()
        loss_of(ref, weights[:, :, cols]).backward()
        for k, p in policy.named_parameters():
            torch.testing.assert_close(grads[k], p.grad, rtol=1e-4, atol=1e-6, msg=f"member {i} {k}")


def test_to_policies_round_trips_and_from_policies_checks_specs():
    policies = make_policies(make_spec(recurrent=True), 3)
    back = StackedPolicies.from_policies(policies).to_policies()
    for a, b in zip(policies, back):
        sa, sb = a.state_dict(), b.state_dict()
        assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
    with pytest.raises(ValueError):
        StackedPolicies.from_policies([policies[0], make_policies(make_spec(), 1)[0]])


def test_clip_grad_norm_per_member_matches_clipping_each_policy():
    policies = make_policies(make_spec(recurrent=True), 3)
    stacked = StackedPolicies.from_policies(policies)
    g = torch.Generator().manual_seed(3)
    scales = [0.01, 5.0, 50.0]
    for p in stacked.parameters():
        p.grad = torch.randn(p.shape, generator=g) * torch.tensor(scales).view(-1, *([1] * (p.dim() - 1)))
    singles = StackedPolicies.from_policies(policies).to_policies()
    for i, policy in enumerate(singles):
        for k, p in policy.named_parameters():
            p.grad = getattr(stacked, "stack__" + k.replace(".", "__")).grad[i].clone()
    norms = stacked.clip_grad_norm_per_member(1.0, "actor.")
    for i, policy in enumerate(singles):
        want = torch.nn.utils.clip_grad_norm_(policy.actor.parameters(), 1.0)
        torch.testing.assert_close(norms[i], want)
        for k, p in policy.named_parameters():
            torch.testing.assert_close(getattr(stacked, "stack__" + k.replace(".", "__")).grad[i], p.grad)
    assert norms[0] < 1.0 < norms[1]  # member 0 kept its gradient, the others were scaled down


def test_value_norm_update_per_member():
    policies = make_policies(make_spec(), 2)
    stacked = StackedPolicies.from_policies(policies)
    targets = torch.randn(4, 6) * 10
    member = torch.tensor([0, 1, 1, 0, 1, 1])
    stacked.value_norm_update(targets, member)
    for i, policy in enumerate(policies):
        policy.value_norm.update(targets[:, member == i])
        torch.testing.assert_close(stacked.to_value_norm(i).mean_var(), policy.value_norm.mean_var())
    assert isinstance(stacked.to_policies()[0], Policy)


@pytest.mark.parametrize("strategy", ["vmap", "loop"])
@pytest.mark.parametrize("recurrent", [False, True])
def test_column_compressed_evaluation_equals_the_dense_one_with_gradients(strategy, recurrent):
    """``ppo.obs_columns`` for stacked learners: the members' first layers on the varying entries
    only (the constant non-zero ones folded into the bias) give the dense outputs and gradients."""
    from zsceval.rl.networks import compress_observation, observation_columns

    spec = make_spec(kind="mlp", recurrent=recurrent)
    stacked = StackedPolicies.from_policies(make_policies(spec, 3))
    stacked.strategy = strategy
    L, N = 3, 8
    (obs, _, avail, actions, h_a, h_c, starts), weights = minibatch(L, N, stacked.hidden_size, seed=2)
    flat = obs.reshape(L, N, -1).clone()
    flat[..., 10:40] = 0  # most entries zero or one constant value in every row, as Overcooked's
    flat[..., 3] = 2
    obs = flat.view_as(obs)
    columns = observation_columns(flat.reshape(L * N, -1))
    assert columns.constant.numel() >= 1 and columns.varying.numel() < flat.shape[-1] // 2
    x = compress_observation(flat, columns)
    member = torch.tensor([2, 0, 2, 1, 0, 2, 1, 0])

    def run(o, cols):
        stacked.zero_grad()
        out = stacked.evaluate(o, o, avail, actions, h_a, h_c, starts, member, columns=cols)
        loss_of(out, weights).backward()
        return [t.detach() for t in out], {k: p.grad.clone() for k, p in stacked.named_parameters()}

    dense_out, dense_grads = run(obs, None)
    out, grads = run(x, columns)
    for got, want in zip(out, dense_out, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    for k, g in grads.items():
        torch.testing.assert_close(g, dense_grads[k], rtol=1e-4, atol=1e-6, msg=k)
