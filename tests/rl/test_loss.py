"""The PPO loss's groups (:func:`zsceval.rl.loss.ppo_loss`): each group's terms are its own weighted
means and the total is the sum of the groups' losses, so one backward gives each group the gradient
of its loss alone (the stacked update's learners, :mod:`zsceval.rl.stacked_update`)."""

import torch

from zsceval.rl.loss import ppo_loss

KW = {"clip": 0.2, "entropy_coef": 0.01, "value_coef": 1.0, "huber_delta": 10.0, "clip_value_loss": True}


def _samples(L, S, seed):
    g = torch.Generator().manual_seed(seed)
    x = {k: torch.randn(L, S, generator=g) for k in ("logp", "old", "adv", "ent", "v", "old_v", "t")}
    x["logp"].requires_grad_(True)
    x["v"].requires_grad_(True)
    w = (torch.rand(L, S, generator=g) > 0.2).float()
    return x, w


def _loss(x, w, **kw):
    return ppo_loss(x["logp"], x["old"], x["adv"], x["ent"], x["v"], x["old_v"], x["t"], weight=w, **KW, **kw)


def test_grouped_terms_are_each_groups_own_and_the_total_their_sum():
    parts = [_samples(4, 3, 0), _samples(4, 5, 1)]
    alone = [_loss(x, w) for x, w in parts]
    grads_alone = [torch.autograd.grad(a.total, (x["logp"], x["v"])) for a, (x, _) in zip(alone, parts)]
    joint = {k: torch.cat([x[k].detach() for x, _ in parts], 1).requires_grad_(k in ("logp", "v"))
             for k in parts[0][0]}  # fmt: skip
    weight = torch.cat([w for _, w in parts], 1)
    group = torch.tensor([0, 0, 0, 1, 1, 1, 1, 1])
    grouped = _loss(joint, weight, groups=(group, 2))
    for field in ("policy", "value", "entropy", "approx_kl", "clip_fraction"):
        got = getattr(grouped, field)
        assert got.shape == (2,)
        torch.testing.assert_close(got, torch.stack([getattr(a, field) for a in alone]))
    torch.testing.assert_close(grouped.total, alone[0].total + alone[1].total)
    g_logp, g_v = torch.autograd.grad(grouped.total, (joint["logp"], joint["v"]))
    torch.testing.assert_close(g_logp, torch.cat([g[0] for g in grads_alone], 1))
    torch.testing.assert_close(g_v, torch.cat([g[1] for g in grads_alone], 1))
    # a pooled mean over both groups is another loss: the groups are not a relabelling of it
    pooled = _loss(joint, weight)
    assert not torch.allclose(pooled.policy, grouped.policy.mean())
