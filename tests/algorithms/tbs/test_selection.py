"""Selection rules of TBS (Eq. 8/9), CBPR and CEM on hand-computed values."""

import math

import pytest
import torch

from zsceval.algorithms.tbs.selection import (
    accumulate_distances,
    argmax_random_ties,
    bernoulli_kl,
    cbpr_integrate,
    cbpr_likelihood,
    cbpr_update,
    cem_scores,
    cluster_distances,
    kl_select,
    push_ring,
)


def test_bernoulli_kl_hand_values():
    p = torch.tensor([0.5, 0.2, 0.9, 0.1])
    q = torch.tensor([0.25, 0.2, 0.1, 0.9])
    expected = [
        0.5 * math.log(2) + 0.5 * math.log(0.5 / 0.75),  # 0.143841
        0.0,
        0.8 * math.log(9),  # 0.9 ln 9 + 0.1 ln(1/9)
        0.8 * math.log(9),
    ]
    assert bernoulli_kl(p, q).tolist() == pytest.approx(expected, abs=1e-5)
    assert bernoulli_kl(p, q)[0].item() == pytest.approx(0.143841, abs=1e-6)
    # clamped: finite at the boundary, = KL(Bern(1-1e-6) || Bern(1e-6))
    edge = bernoulli_kl(torch.tensor([1.0]), torch.tensor([0.0])).item()
    e = 1e-6
    assert math.isfinite(edge)
    assert edge == pytest.approx((1 - e) * math.log((1 - e) / e) + e * math.log(e / (1 - e)), rel=1e-4)


def test_cluster_distances_sum_over_concepts():
    c_g = torch.tensor([[0.5, 0.2]])
    c_i = torch.tensor([[[0.5, 0.2], [0.25, 0.2], [0.25, 0.5]]])  # [1, 3, 2]
    d = cluster_distances(c_i, c_g)
    kl_a = 0.25 * math.log(0.5) + 0.75 * math.log(1.5)  # KL(0.25 || 0.5)
    kl_b = 0.5 * math.log(0.5 / 0.2) + 0.5 * math.log(0.5 / 0.8)  # KL(0.5 || 0.2)
    assert d.shape == (1, 3)
    assert d[0].tolist() == pytest.approx([0.0, kl_a, kl_a + kl_b], abs=1e-5)


# per-step distances of 2 clusters, one row: cumulative D = [1,0] [2,0] [2,1] [2,2] [2,3]
STEPS = [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0]]


def _run(window, reselect_every=1, first_step_random=True, random_choice=0):
    k = 2
    total, ring = torch.zeros(1, k), torch.zeros(1, window or 0, k)
    choice = torch.zeros(1, dtype=torch.int64)
    choices, Ds = [], []
    for t, d in enumerate(STEPS):
        tt = torch.tensor([t])
        total, ring, D = accumulate_distances(total, ring, torch.tensor([d]), tt, window)
        choice = kl_select(D, tt, choice, torch.tensor([random_choice]), reselect_every, first_step_random)
        choices.append(int(choice))
        Ds.append(D[0].tolist())
    return choices, Ds


def test_kl_rule_whole_episode():
    choices, Ds = _run(None)
    assert Ds == [[1, 0], [2, 0], [2, 1], [2, 2], [2, 3]]
    assert choices == [0, 1, 1, 0, 0]  # t=0 random (drawn 0), tie at t=3 -> first index
    assert _run(None, random_choice=1)[0] == [1, 1, 1, 0, 0]
    assert _run(None, first_step_random=False, random_choice=0)[0][0] == 1  # KL rule already at t=0


def test_kl_rule_window_changes_choice():
    choices, Ds = _run(2)
    assert Ds == [[1, 0], [2, 0], [1, 1], [0, 2], [0, 2]]
    assert choices == [0, 1, 0, 0, 0]  # differs from the whole episode at t=2
    assert _run(1)[0] == [0, 1, 0, 0, 0]


def test_kl_rule_reselect_every():
    assert _run(None, reselect_every=2, random_choice=0)[0] == [0, 0, 1, 1, 0]
    assert _run(None, reselect_every=2, random_choice=1)[0] == [1, 1, 1, 1, 0]
    assert _run(None, reselect_every=10, random_choice=1)[0] == [1] * 5  # = random selection


def test_push_ring_masked_and_wrapping():
    ring = torch.zeros(2, 3, 1)
    ring = push_ring(ring, torch.tensor([[1.0], [2.0]]), torch.tensor([0, 4]), torch.tensor([True, False]))
    assert ring[:, :, 0].tolist() == [[1, 0, 0], [0, 0, 0]]
    ring = push_ring(ring, torch.tensor([[5.0], [6.0]]), torch.tensor([3, 4]))
    assert ring[:, :, 0].tolist() == [[5, 0, 0], [0, 6, 0]]  # slot = t mod w


def test_cbpr_two_types_by_hand():
    eps = 1e-7
    xi = torch.tensor([[0.5, 0.5]])
    q1 = torch.log(torch.tensor([[[0.8, 0.2]]]))  # one queued pair [1, L=1, K=2]
    p = cbpr_likelihood(q1, eps)
    assert p[0].tolist() == pytest.approx([0.8, 0.2], abs=1e-6)
    xi = cbpr_update(xi, p, eps)
    assert xi[0].tolist() == pytest.approx([0.8, 0.2], abs=1e-6)
    beta = torch.tensor([[0.5, 0.5]])
    zeta = cbpr_integrate(xi, beta, torch.tensor([1]), rho=0.1)
    assert zeta[0].tolist() == pytest.approx([0.77, 0.23], abs=1e-6)  # 0.1*0.5 + 0.9*xi
    q2 = torch.log(torch.tensor([[[0.8, 0.2], [0.6, 0.4]]]))  # lambda = [0.48, 0.08]
    p = cbpr_likelihood(q2, eps)
    assert p[0].tolist() == pytest.approx([0.48 / 0.56, 0.08 / 0.56], abs=1e-6)
    xi = cbpr_update(zeta, p, eps)  # [0.66, 0.0328571] normalized
    assert xi[0].tolist() == pytest.approx([0.952577, 0.047423], abs=1e-5)
    assert cbpr_integrate(xi, beta, torch.tensor([0]))[0].tolist() == pytest.approx([0.5, 0.5])
    z2 = cbpr_integrate(xi, beta, torch.tensor([2]), rho=0.1)[0]
    assert z2.tolist() == pytest.approx(
        [0.01 * 0.5 + 0.99 * 0.952577, 0.01 * 0.5 + 0.99 * 0.047423], abs=1e-5
    )


def test_cbpr_clip_and_empty_queue():
    eps = 1e-7
    xi = cbpr_update(torch.tensor([[0.5, 0.5]]), torch.tensor([[1.0, 0.0]]), eps)
    assert xi[0].tolist() == pytest.approx([0.9999, 1e-4])  # clipped both ways
    empty = cbpr_likelihood(torch.zeros(1, 20, 3), eps)  # lambda = 1 for every type
    assert empty[0].tolist() == pytest.approx([1 / 3] * 3)


def test_cem_choice_on_hand_sequence():
    # partner-action probabilities under pairs 0, 1, 2 at four observed steps
    probs = torch.tensor([[0.5, 0.9, 0.2], [0.5, 0.1, 0.2], [0.5, 0.9, 0.9], [0.5, 0.9, 0.9]])
    nll = -probs.log()
    total = torch.zeros(1, 3)
    choices = []
    for t in range(4):
        total = total + nll[t : t + 1]
        choices.append(int(cem_scores(total, torch.tensor([t + 1])).argmin(-1)))
    # CE after 1: [.693 .105 1.609]; 2: [.693 1.204 1.609]; 3: [.693 .838 1.108]; 4: [.693 .655 .831]
    assert choices == [1, 0, 0, 1]
    assert cem_scores(total, torch.tensor([4]))[0].tolist() == pytest.approx(
        [math.log(2), (3 * -math.log(0.9) - math.log(0.1)) / 4, (2 * -math.log(0.2) - 2 * math.log(0.9)) / 4],
        abs=1e-5,
    )
    assert torch.isinf(cem_scores(total, torch.tensor([0]))).all()


def test_argmax_random_ties_uniform_over_ties_only():
    g = torch.Generator().manual_seed(0)
    x = torch.tensor([[0.3, 0.3, 0.1, 0.3]]).repeat(3000, 1)
    picks = argmax_random_ties(x, g)
    counts = torch.bincount(picks, minlength=4).float() / 3000
    assert counts[2] == 0
    assert counts[[0, 1, 3]].tolist() == pytest.approx([1 / 3] * 3, abs=0.04)  # ~5 sigma
    assert argmax_random_ties(torch.tensor([[0.1, 0.7, 0.2]]), g).item() == 1
