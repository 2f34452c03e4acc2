"""Self-tuning spectral clustering (TBS Sec. 3.2, Eq. 6) and the clustering figures."""

import numpy as np
import pytest

from zsceval.algorithms.tbs import stsc
from zsceval.algorithms.tbs.figures import cluster_blocks, cluster_order, plot_costs, plot_similarity
from zsceval.algorithms.tbs.similarity import clustering_affinity
from zsceval.algorithms.tbs.stsc import (
    alignment_cost,
    alignment_cost_grad,
    givens_rotation,
    minimize_alignment,
    normalized_affinity,
    relabel_by_first_member,
    select_k,
    self_tuning_spectral_clustering,
)


def block_similarity(sizes, seed, within=(0.8, 1.0), between=(0.05, 0.2)):
    """Symmetric block similarity with uniform noise, diagonal 1, plus TBS's 1e-4 offset."""
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(len(sizes)), sizes)
    n = truth.size
    same = truth[:, None] == truth[None, :]
    S = np.where(same, rng.uniform(*within, (n, n)), rng.uniform(*between, (n, n)))
    S = (S + S.T) / 2
    np.fill_diagonal(S, 1.0)
    return S + 1e-4, truth


# --------------------------------------------------------------------------- building blocks


def test_normalized_affinity_hand_computed():
    S = np.array([[1.0, 1.0, 0.5], [1.0, 1.0, 0.5], [0.5, 0.5, 1.0]])
    # default: A = S (s(A, A) = 1 kept); degrees 2.5, 2.5, 2.0
    d = np.array([2.5, 2.5, 2.0])
    np.testing.assert_allclose(normalized_affinity(S), S / np.sqrt(d[:, None] * d[None, :]), rtol=1e-12)
    # zero_diagonal: A = S with zero diagonal; degrees 1.5, 1.5, 1.0
    L = normalized_affinity(S, zero_diagonal=True)
    expected = np.array(
        [
            [0.0, 1 / 1.5, 0.5 / np.sqrt(1.5)],
            [1 / 1.5, 0.0, 0.5 / np.sqrt(1.5)],
            [0.5 / np.sqrt(1.5), 0.5 / np.sqrt(1.5), 0.0],
        ]
    )
    np.testing.assert_allclose(L, expected, rtol=1e-12)


@pytest.mark.parametrize(
    ("S", "match"),
    [
        (np.array([[1.0, 0.2], [0.3, 1.0]]), "symmetric"),
        (np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.0], [0.5, 0.0, 1.0]]), "isolated"),
        (np.array([[1.0, -0.1], [-0.1, 1.0]]), ">= 0"),
        (np.array([[1.0, np.nan], [np.nan, 1.0]]), "NaN"),
        (np.ones((2, 3)), "square"),
    ],
)
def test_invalid_similarity_raises(S, match):
    with pytest.raises(ValueError, match=match):
        self_tuning_spectral_clustering(S, zero_diagonal=match == "isolated")


_LONERS_J = np.array([
    [200, 0, 200, 160, 0, 0], [0, 200, 0, 0, 40, 0], [160, 0, 160, 20, 20, 0],
    [140, 0, 140, 140, 0, 0], [0, 0, 0, 0, 220, 0], [0, 20, 0, 0, 0, 180],
], dtype=float)  # fmt: skip
"""Cross-play returns of a measured coordination_ring pool of 6 pairs: 0, 2 and 3 cross-play well,
1, 4 and 5 only with themselves."""


@pytest.mark.parametrize("k_rule", ["paper", "normalized"])
def test_pairs_that_cooperate_with_nobody_are_clusters_of_their_own(k_rule):
    """Keeping s(A, A) = 1 finds the four blocks (under either rule of k); the zero-diagonal affinity
    merges the three loners into one cluster (their only edges are the 1e-4 offsets, scaled up by
    D^-1/2)."""
    c = self_tuning_spectral_clustering(clustering_affinity(_LONERS_J), k_rule=k_rule)
    assert c.k == 4 and c.labels.tolist() == [0, 1, 0, 0, 2, 3]
    merged = self_tuning_spectral_clustering(
        clustering_affinity(_LONERS_J), zero_diagonal=True, k_rule=k_rule
    )
    assert merged.k == 2 and merged.labels.tolist() == [0, 1, 0, 0, 1, 1]


def test_givens_rotation_hand_computed():
    t = 0.3
    c, s = np.cos(t), np.sin(t)
    np.testing.assert_allclose(givens_rotation([t], 2), [[c, -s], [s, c]])
    # k = 3: angles for axis pairs (0, 1), (0, 2), (1, 2); only the (0, 2) angle set
    R = givens_rotation([0.0, t, 0.0], 3)
    np.testing.assert_allclose(R, [[c, 0, -s], [0, 1, 0], [s, 0, c]])
    R = givens_rotation([0.1, 0.7, -1.3], 3)
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-12)
    assert np.linalg.det(R) == pytest.approx(1.0)


def test_alignment_cost_hand_computed_at_identity():
    X = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]])
    # rows: 1/4 + 4/4 = 1.25; 9/9 + 1/9 = 10/9; 1 + 1 = 2  -> 157/36
    assert alignment_cost(X) == pytest.approx(157 / 36)
    cost, _ = alignment_cost_grad(X, np.zeros(1))
    assert cost == pytest.approx(157 / 36)
    # (a, b) R(t) = (a cos t + b sin t, -a sin t + b cos t): t = pi/4 maps (0.5, 0.5) to (sqrt(0.5), 0)
    Z = X @ givens_rotation([np.pi / 4], 2)
    np.testing.assert_allclose(Z[2], [np.sqrt(0.5), 0.0], atol=1e-12)
    assert alignment_cost(Z[2:]) == pytest.approx(1.0)


def test_alignment_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    for k in (2, 3, 5):
        X = rng.normal(size=(11, k))
        theta = rng.uniform(-np.pi, np.pi, k * (k - 1) // 2)
        _, grad = alignment_cost_grad(X, theta)
        h = 1e-6
        numeric = [
            (
                alignment_cost(X @ givens_rotation(theta + h * e, k))
                - alignment_cost(X @ givens_rotation(theta - h * e, k))
            )
            / (2 * h)
            for e in np.eye(theta.size)
        ]
        np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("k", "seed"), [(2, 0), (3, 1), (4, 2), (5, 3)])
def test_rotated_indicator_reaches_cost_n(k, seed):
    from scipy.stats import special_ortho_group

    rng = np.random.default_rng(seed)
    n = 12
    truth = np.concatenate([np.arange(k), rng.integers(0, k, n - k)])
    E = np.zeros((n, k))
    E[np.arange(n), truth] = rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n)
    X = E @ special_ortho_group.rvs(k, random_state=seed).T
    assert alignment_cost(X) > n + 0.5  # not aligned before the search
    cost, R = minimize_alignment(X)
    assert cost == pytest.approx(n, abs=1e-6)
    np.testing.assert_allclose(R @ R.T, np.eye(k), atol=1e-10)
    labels = relabel_by_first_member(np.argmax((X @ R) ** 2, axis=1))
    np.testing.assert_array_equal(labels, relabel_by_first_member(truth))


def test_relabel_by_first_member():
    np.testing.assert_array_equal(relabel_by_first_member([2, 2, 0, 1, 0]), [0, 0, 1, 2, 1])
    assert relabel_by_first_member(np.array([5, 3])).dtype == np.int64


def test_select_k_normalized_rule_takes_the_largest_k_within_tolerance():
    n = 10
    # normalized (J/n - 1)/k: k=2 -> 0, k=3 -> 0.002/3 = 0.000667, k=4 -> 0.1/4 = 0.025
    costs = {2: 10.0, 3: 10.02, 4: 11.0}
    assert stsc.normalized_cost(costs[3], n, 3) == pytest.approx(0.002 / 3)
    assert stsc.normalized_cost(costs[4], n, 4) == pytest.approx(0.025)
    assert select_k(costs, n, rule="normalized", tol=1e-3) == 3
    assert select_k(costs, n, rule="normalized") == 3  # the default tolerance is Zelnik-Manor's 1e-3
    assert select_k(costs, n, rule="normalized", tol=1e-4) == 2
    assert select_k({2: 12.0, 3: 10.0}, n, rule="normalized", tol=1e-3) == 3
    # the paper's rule on the same costs: the arg-min of J
    assert select_k(costs, n) == 2 and select_k({2: 12.0, 3: 10.0}, n) == 3


def test_select_k_paper_rule_is_the_argmin_of_the_raw_cost_smallest_k_on_ties():
    """TBS Sec. 3.2: "selecting the k that yields the lowest alignment cost" (Eq. 6's raw J)."""
    n = 10
    # raw J: the minimum 11.0 ties between k = 3 and 4: the smaller wins
    costs = {2: 12.0, 3: 11.0, 4: 11.0, 5: 12.5}
    assert select_k(costs, n) == 3 and select_k(costs, n, rule="paper") == 3
    # normalized (J/n - 1)/k = 0.1, 0.0333, 0.025, 0.05: the minimum is k = 4 alone
    assert select_k(costs, n, rule="normalized") == 4
    # J rising with k: the paper takes the fewest clusters, the normalization (J/n - 1)/k =
    # 0.025, 0.02, 0.0175 the most
    rising = {2: 10.5, 3: 10.6, 4: 10.7}
    assert select_k(rising, n) == 2 and select_k(rising, n, rule="normalized") == 4
    # ties are J/n within PAPER_TIE_TOLERANCE = 1e-9 of the minimum: 5e-9 / 10 ties, 2e-8 / 10 does not
    assert stsc.PAPER_TIE_TOLERANCE == 1e-9
    assert select_k({2: 10.0 + 5e-9, 3: 10.0}, n) == 2
    assert select_k({2: 10.0 + 2e-8, 3: 10.0}, n) == 3
    assert select_k({2: 10.0 + 2e-8, 3: 10.0}, n, tol=1e-8) == 2  # a looser tolerance on J / n
    assert select_k({4: 10.0, 2: 10.0, 3: 10.0}, n) == 2  # exact ties, in any dict order
    assert select_k({7: 30.0}, n) == 7


def test_select_k_refuses_bad_input_with_the_valid_rules():
    with pytest.raises(ValueError, match="unknown k rule 'largest'; valid rules: paper, normalized"):
        select_k({2: 10.0}, 10, rule="largest")
    with pytest.raises(ValueError, match="no candidate k"):
        select_k({}, 10)
    with pytest.raises(ValueError, match="tol must be >= 0"):
        select_k({2: 10.0}, 10, tol=-1.0)
    S, _ = block_similarity((3, 4, 3), 0)
    with pytest.raises(ValueError, match="valid rules: paper, normalized"):
        self_tuning_spectral_clustering(S, k_rule="Paper")


def test_normalized_rule_never_picks_fewer_clusters_than_the_paper_rule():
    """Module docstring item 4: every k below the paper's choice has a larger excess J/n - 1, divided
    by a smaller k, so its normalized cost is larger too."""
    rng = np.random.default_rng(0)
    n = 10
    for _ in range(500):
        ks = range(2, int(rng.integers(3, 10)))
        costs = {k: float(n * rng.uniform(1.0, 1.0 + 0.3 * k)) for k in ks}
        assert select_k(costs, n, rule="normalized") >= select_k(costs, n, rule="paper")


# --------------------------------------------------------------------------- clustering


@pytest.mark.parametrize(
    ("sizes", "seed"),
    [((3, 4, 3), 0), ((3, 4, 3), 1), ((5, 5), 0), ((2, 3, 3, 2), 0)],
)
def test_chooses_k_and_recovers_blocks(sizes, seed):
    S, truth = block_similarity(sizes, seed)
    result = self_tuning_spectral_clustering(S)
    assert result.k == len(sizes)
    np.testing.assert_array_equal(
        result.labels, truth
    )  # blocks are contiguous: already in first-member order
    assert result.labels.dtype == np.int64
    eigenvalues = np.linalg.eigvalsh(normalized_affinity(S))
    supported = int((eigenvalues >= stsc.MIN_EIGENVALUE).sum())  # the floor on candidate k
    assert len(sizes) <= supported < S.shape[0]
    assert sorted(result.costs) == list(range(2, min(supported, 10) + 1))
    assert min(result.costs.values()) >= S.shape[0] - 1e-9  # J >= n
    assert result.costs[len(sizes)] < S.shape[0] * 1.01  # nearly perfect at the true k


def test_recovers_shuffled_large_room_example_from_cross_play():
    """TBS Appendix B Large Room: 3 clusters of 3, 4, 3 pairs, agents in shuffled order, from returns."""
    rng = np.random.default_rng(7)
    truth = np.repeat([0, 1, 2], [3, 4, 3])
    perm = rng.permutation(10)
    truth = truth[perm]
    same = truth[:, None] == truth[None, :]
    J = np.where(same, rng.uniform(160, 200, (10, 10)), rng.uniform(5, 40, (10, 10)))
    result = self_tuning_spectral_clustering(clustering_affinity(J))
    assert result.k == 3
    np.testing.assert_array_equal(result.labels, relabel_by_first_member(truth))
    assert np.bincount(result.labels).tolist() == np.bincount(relabel_by_first_member(truth)).tolist()


def _identical_blocks_pool():
    """The similarity of a measured counter_circuit pool (cross-play returns from a run of the TBS
    chain): pairs 2, 5, 6 and 8 never score, alone or together, so Eq. 5's 0/0 rule makes them
    identical (similarity 1); 3 and 4 score 180 in every combination; 0, 1, 7 and 9 score only
    with themselves (1 and 3: 20 of 220, similarity 0.05 after the clamp)."""
    J = np.zeros((10, 10))
    for i, r in [(0, 240), (1, 220), (7, 180), (9, 180)]:
        J[i, i] = r
    J[1, 3] = 20
    J[np.ix_([3, 4], [3, 4])] = 180
    return clustering_affinity(J)


def test_identical_pairs_are_never_split():
    """A block of identical pairs makes L rank one on the block; the null space then lets Eq. 6 align
    each member with an axis of its own at no extra cost, so without the eigenvalue floor the
    normalized (largest-k) rule splits the four never-scoring pairs (k = 9). With the floor the
    candidates stop at the six eigenvalues near 1. The paper's rule (arg-min of J, fewer clusters on
    ties) keeps them together with or without the floor; it takes k = 5 (J/n - 1 = 8.4e-7) over
    k = 3 (8.5e-7) and k = 6 (1.3e-4), merging pair 1 (similarity 0.05 to pair 3) into the cluster of
    3 and 4."""
    S = _identical_blocks_pool()
    eigenvalues = np.sort(np.linalg.eigvalsh(normalized_affinity(S)))[::-1]
    assert (eigenvalues[:6] > 0.9).all() and (np.abs(eigenvalues[6:]) < 1e-3).all()
    result = self_tuning_spectral_clustering(S)  # the paper's rule
    assert max(result.costs) == 6  # the floor
    assert result.k == 5 and result.labels.tolist() == [0, 1, 2, 1, 1, 2, 2, 3, 2, 4]
    assert min(result.costs, key=result.costs.get) == 5
    unfloored = self_tuning_spectral_clustering(S, min_eigenvalue=None)
    assert max(unfloored.costs) == 9 and unfloored.labels.tolist() == result.labels.tolist()
    normalized = self_tuning_spectral_clustering(S, k_rule="normalized")
    assert normalized.k == 6
    assert normalized.labels.tolist() == [0, 1, 2, 3, 3, 2, 2, 4, 2, 5]
    assert normalized.costs == result.costs  # the same search; only the choice differs
    cut = self_tuning_spectral_clustering(S, k_range=(7, 8))  # above the floor: k = 6 only
    assert list(cut.costs) == [6] and cut.labels.tolist() == normalized.labels.tolist()
    unfloored = self_tuning_spectral_clustering(S, min_eigenvalue=None, k_rule="normalized")
    assert unfloored.k > 6  # the split the floor prevents
    assert len({int(unfloored.labels[i]) for i in (2, 5, 6, 8)}) > 1


def test_default_affinity_keeps_the_diagonal_of_the_similarity():
    """Module docstring item 1: the affinity is S itself, self-similarity s(A, A) = 1 + 1e-4 included
    (the degree counts it); ``zero_diagonal=True`` is exactly S with its diagonal set to 0. On the
    measured coordination_ring pool (``_LONERS_J``) the choice decides the
    clusters."""
    S = clustering_affinity(_LONERS_J)
    assert np.diag(S).tolist() == [1 + 1e-4] * 6
    L = normalized_affinity(S)
    np.testing.assert_allclose(np.diag(L), np.diag(S) / S.sum(1), rtol=1e-12)  # self loops kept
    zeroed = S.copy()
    np.fill_diagonal(zeroed, 0.0)
    np.testing.assert_allclose(normalized_affinity(S, zero_diagonal=True), normalized_affinity(zeroed))
    assert np.diag(normalized_affinity(S, zero_diagonal=True)).tolist() == [0.0] * 6
    default = self_tuning_spectral_clustering(S)
    assert default.labels.tolist() == self_tuning_spectral_clustering(S, zero_diagonal=False).labels.tolist()
    assert default.labels.tolist() == [0, 1, 0, 0, 2, 3]
    zero = self_tuning_spectral_clustering(S, zero_diagonal=True)
    assert (
        zero.labels.tolist() == self_tuning_spectral_clustering(zeroed).labels.tolist() == [0, 1, 0, 0, 1, 1]
    )
    # a larger self-similarity changes the default's affinity, never the zero-diagonal one
    heavier = S + np.eye(6)
    assert not np.allclose(normalized_affinity(heavier), L)
    np.testing.assert_allclose(
        normalized_affinity(heavier, zero_diagonal=True), normalized_affinity(S, zero_diagonal=True)
    )


def test_a_pool_of_alike_pairs_is_one_cluster():
    """Every pair alike (here: none ever scores, all similarities 1 by the 0/0 rule): one eigenvalue
    above the floor, so one cluster, which STSC's candidates (k >= 2) could not answer."""
    result = self_tuning_spectral_clustering(clustering_affinity(np.zeros((6, 6))))
    assert result.k == 1 and result.labels.tolist() == [0] * 6


@pytest.mark.parametrize(("s", "largest_candidate"), [(0.95, 3), (0.5, 4)])
def test_eigenvalue_floor_on_similar_pairs(s, largest_candidate):
    """Pairs 0-1 and 2-3 with similarity s within, a loner 4: L's eigenvalues are 1, 1, 1 and twice
    (1 - s) / (1 + s) (0.026 for s = 0.95, 1/3 for s = 0.5; the floor is 0.05). So for s = 0.95 the
    candidates stop at k = 3 and the three blocks are the answer; for s = 0.5 k = 4 (a split of one
    pair) is a candidate too (k = n = 5 never is)."""
    S = np.eye(5)
    S[0, 1] = S[1, 0] = S[2, 3] = S[3, 2] = s
    eigenvalues = np.sort(np.linalg.eigvalsh(normalized_affinity(S)))
    r = (1 - s) / (1 + s)
    np.testing.assert_allclose(eigenvalues, [r, r, 1, 1, 1], atol=1e-12)
    result = self_tuning_spectral_clustering(S + 1e-4)
    assert max(result.costs) == largest_candidate
    if s > 0.9:
        assert result.k == 3 and result.labels.tolist() == [0, 0, 1, 1, 2]


def test_deterministic():
    S, _ = block_similarity((3, 4, 3), 2)
    a = self_tuning_spectral_clustering(S)
    b = self_tuning_spectral_clustering(S.copy())
    np.testing.assert_array_equal(a.labels, b.labels)
    assert a.costs == b.costs


@pytest.mark.parametrize("assign", ["rotation", "kmeans"])
def test_fixed_k(assign):
    S, truth = block_similarity((3, 4, 3), 0)
    exact = self_tuning_spectral_clustering(S, fixed_k=3, assign=assign)
    assert exact.k == 3
    np.testing.assert_array_equal(exact.labels, truth)
    assert list(exact.costs) == [3]
    for k in (2, 4):
        result = self_tuning_spectral_clustering(S, fixed_k=k, assign=assign)
        assert result.k == k
        assert set(result.labels.tolist()) == set(range(k))
    one = self_tuning_spectral_clustering(S, fixed_k=1)
    assert one.k == 1 and not one.labels.any()


def test_small_pools_and_k_range():
    S, _ = block_similarity((3, 4, 3), 0)
    result = self_tuning_spectral_clustering(S, k_range=(2, 4))
    assert sorted(result.costs) == [2, 3, 4] and result.k == 3
    with pytest.raises(ValueError, match="k_range"):
        self_tuning_spectral_clustering(S, k_range=(1, 4))  # k = 1 always perfectly aligned
    with pytest.raises(ValueError, match="k_range"):
        self_tuning_spectral_clustering(S, k_range=(2, 10))  # k = n always perfectly aligned
    with pytest.raises(ValueError, match="fixed_k"):
        self_tuning_spectral_clustering(S, fixed_k=11)
    two = self_tuning_spectral_clustering(np.array([[1.0, 0.1], [0.1, 1.0]]))
    assert two.k == 1 and two.labels.tolist() == [0, 0]
    single = self_tuning_spectral_clustering(np.ones((1, 1)))
    assert single.k == 1 and single.labels.tolist() == [0]


# --------------------------------------------------------------------------- figures


def test_cluster_order_groups_members():
    labels = np.array([1, 0, 1, 2, 0])
    order = cluster_order(labels)
    np.testing.assert_array_equal(order, [0, 2, 1, 4, 3])
    assert cluster_blocks(labels) == [(0, 2), (2, 4), (4, 5)]
    shuffled = np.array([2, 0, 1, 0, 2, 1, 1])
    grouped = shuffled[cluster_order(shuffled)]
    assert grouped.tolist() == [2, 2, 0, 0, 1, 1, 1]


def test_plots_write_png(tmp_path):
    S, truth = block_similarity((2, 3), 0)
    path = plot_similarity(S, truth[::-1].copy(), tmp_path / "figs" / "similarity.png", title="Large Room")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
    costs_path = plot_costs({2: 5.0, 3: 5.8}, tmp_path / "costs.png", chosen=2)
    assert costs_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["costs.png", "similarity.png"]
    with pytest.raises(ValueError, match="labels"):
        plot_similarity(S, truth[:3], tmp_path / "bad.png")
