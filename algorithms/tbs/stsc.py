"""Self-tuning spectral clustering of the partner pool (TBS Sec. 3.2, Eq. 6).

TBS groups the agent pairs of its training pool into strategy clusters and trains one best response
per cluster. The number of clusters is not a hyperparameter: it is chosen by self-tuning spectral
clustering (STSC; Zelnik-Manor & Perona 2004, "Self-Tuning Spectral Clustering", NIPS) applied to the
cross-play similarity matrix ``S`` of :mod:`zsceval.algorithms.tbs.similarity` (TBS Eq. 5).

Method, as implemented here:

1. **Affinity.** ``S`` (symmetric, entries >= 0; TBS adds ``1e-4`` to every entry) is the affinity
   matrix ``A``, **diagonal kept**: TBS builds "the graph Laplacian of S" (Sec. 3.2), and Eq. 5 makes
   every pair's self-similarity ``s(A, A) = 1`` (``1 + 1e-4`` after the offset), so each node has a
   self loop of weight about 1. STSC's own affinity (Gaussian kernel of distances) has a zero
   diagonal; that is the option ``zero_diagonal=True``. The default keeps the diagonal because it
   decides pools with pairs that cooperate with nobody else (:func:`normalized_affinity`: with a
   zero diagonal their only edges are the ``1e-4`` offsets, which the normalization blows up, and
   the loners merge into one spurious cluster). ``docs/differences.md``, "TBS clustering".
2. **Spectrum.** ``L = D^-1/2 A D^-1/2`` with ``D = diag(sum_j A_ij)``; eigenvectors from
   ``scipy.linalg.eigh``, ordered by decreasing eigenvalue (not by magnitude, as the SVD in
   Zelnik-Manor's code does: with ``zero_diagonal`` a cluster of two pairs has eigenvalue ``-1``,
   which the SVD would rank among the top). For a block-diagonal ``A`` with ``k``
   blocks the top ``k`` eigenvectors span the block indicators (scaled by ``sqrt(D)``), so the rows
   of ``X = [x_1 .. x_k]`` become ``k`` orthogonal directions.
3. **Alignment (Eq. 6).** For each candidate ``k``, find the rotation ``R`` of the top-``k``
   eigenvectors that aligns the rows of ``Z = X R`` with the coordinate axes, minimizing

       J(R, k) = sum_i sum_j Z_ij^2 / M_i^2,   M_i = max_j |Z_ij|.

   Each row contributes at least 1 (its largest entry), so ``J >= n``, with equality exactly when
   every row has a single non-zero entry. ``R`` is parameterized by its ``k(k-1)/2`` Givens angles
   (:func:`givens_rotation`). As in STSC the search is incremental: the rotated solution for ``k - 1``
   plus the next eigenvector initializes ``k``.
4. **Choice of k** (``k_rule``, :func:`select_k`). ``"paper"`` (the default): the ``k`` of the lowest
   raw cost ``J(R*, k)``, as TBS Sec. 3.2 says ("selecting the k that yields the lowest alignment
   cost") and Sec. 4.3.2 ("minimizing the cost function from Eq. 6"), and as widely used Python ports
   of STSC do (the first ``k`` of a sort by cost, the smallest ``k`` on ties). Ties are costs
   within :data:`PAPER_TIE_TOLERANCE` (``1e-9``) of the minimum on the scale ``J / n``, i.e. equal up
   to numerical error: the optimizer reaches a perfect alignment to within ``1e-12`` of ``J = n``, and
   two ``k`` that share one alignment (e.g. the same clusters plus perfectly aligned null-space
   vectors) differ by about ``1e-12`` in ``J``; both far below the tolerance. Any difference the data
   make counts (on a measured counter_circuit pool, ``k = 3`` and ``k = 5`` had ``J / n - 1`` of
   ``8.49e-7`` and ``8.38e-7``, and the rule takes 5), so the rule is the paper's arg-min.
   ``"normalized"``: Zelnik-Manor's MATLAB rule (``cluster_rotate``), the *largest* ``k`` whose
   normalized cost ``(J / n - 1) / k`` (``1 - quality`` of her ``evrot``; ``0`` = perfect) is within
   :data:`SELECTION_TOLERANCE` (``1e-3``) of the best. On the same costs it never picks fewer clusters
   than the paper's rule: every ``k`` below the paper's choice has a larger excess ``J / n - 1``,
   divided by a smaller ``k``. ``docs/differences.md``, "TBS clustering".
5. **Labels.** Agent ``i`` joins cluster ``argmax_j |Z_ij|``; labels are renumbered so that clusters
   appear in order of their first member.

Candidate ``k``: by default ``2 .. min(n - 1, 10)``, and never more than the number of eigenvalues of
``L`` at least :data:`MIN_EIGENVALUE` (``0.05``). An eigenvector of (near) zero eigenvalue carries no
affinity: for a block of identical pairs (similarity 1 within, e.g. pairs that never score, which
Eq. 5's 0/0 rule makes identical) ``L`` has rank one on the block, and its null space together with
the block's indicator spans every coordinate of the block. Eq. 6 ignores eigenvalues, so a rotation
then aligns each member of the block with an axis of its own at no extra cost: every ``k`` past the
number of blocks ties with it, and the ``"normalized"`` rule, which takes the largest ``k`` on ties,
splits identical pairs (measured on a counter_circuit pool: four pairs with similarity 1 to each other
became four clusters, k = 9 instead of 6). The ``"paper"`` rule takes the smallest ``k`` on ties and
does not split them (k = 5 on that pool with or without the floor); for it the floor is a guard, not a
fix. Two pairs of similarity ``s`` to each other and none to the rest give eigenvalues 1 and
``(1 - s) / (1 + s)``, so the floor ``0.05`` keeps any two pairs more similar than about 0.9 together.
When a single eigenvalue passes the floor (every pair alike) the pool is one cluster.

``k = 1`` is never a candidate (as in STSC's ``cluster_rotate``): a single eigenvector is trivially
aligned (``J = n``), so it would always tie for the minimum. ``k = n`` is excluded too: ``n``
orthonormal eigenvectors form an orthogonal matrix that a rotation turns into the identity, so
``k = n`` would always be perfectly aligned. Consequently a pool of ``n <= 2`` pairs is one cluster
unless ``fixed_k`` says otherwise, and a larger pool is one cluster only through the eigenvalue floor
(all pairs alike); otherwise STSC returns the best ``k >= 2``.

``fixed_k`` gives vanilla spectral clustering with a preset number of clusters (TBS Sec. 4.3.4 ablation,
"TBS (fixed)"): either the STSC rotation for that ``k`` alone (``assign="rotation"``) or k-means on
the unit-normalized rows of the top-``k`` eigenvectors (Ng, Jordan & Weiss 2002;
``assign="kmeans"``, :func:`scipy.cluster.vq.kmeans2` with ``k-means++`` seeding from a seeded
generator, best of ``kmeans_restarts`` runs by distortion).

Optimizer (a deviation from STSC's coordinate-wise gradient steps, see
``docs/differences.md``, "TBS clustering"): BFGS from :func:`scipy.optimize.minimize` with the analytic
gradient of Eq. 6, from two deterministic starts, the STSC (incremental) initialization and a greedy
"most orthogonal rows" rotation (Yu & Shi 2003), plus optional random restarts from a generator seeded
with ``seed``; the lowest cost wins. Everything is deterministic for a given input and seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import scipy.linalg
import scipy.optimize
from scipy.cluster.vq import ClusterError, kmeans2

__all__ = [
    "Clustering",
    "K_RULES",
    "PAPER_TIE_TOLERANCE",
    "SELECTION_TOLERANCE",
    "MIN_EIGENVALUE",
    "alignment_cost",
    "alignment_cost_grad",
    "givens_pairs",
    "givens_rotation",
    "greedy_alignment_start",
    "minimize_alignment",
    "normalized_affinity",
    "normalized_cost",
    "relabel_by_first_member",
    "select_k",
    "self_tuning_spectral_clustering",
    "top_eigenvectors",
]

K_RULES: tuple[str, ...] = ("paper", "normalized")
"""Valid ``k_rule`` values of :func:`select_k` (module docstring, item 4); the first is the default."""

PAPER_TIE_TOLERANCE: float = 1e-9
"""Tolerance of the ``"paper"`` rule on ``J / n``: costs this close to the minimum tie, and the smallest
``k`` among them wins (module docstring, item 4)."""

SELECTION_TOLERANCE: float = 1e-3
"""Tolerance of the ``"normalized"`` rule on ``(J / n - 1) / k``, within which the largest ``k`` wins
(Zelnik-Manor's ``cluster_rotate``: ``max(Quality) - Quality <= 0.001``)."""

MIN_EIGENVALUE: float = 0.05
"""Smallest eigenvalue of ``L`` whose eigenvector may add a cluster (see the module docstring)."""

DEFAULT_MAX_K: int = 10
"""Largest candidate number of clusters by default (TBS pools have 10 training pairs)."""


@dataclass(frozen=True, eq=False)
class Clustering:
    """Result of :func:`self_tuning_spectral_clustering`.

    Attributes:
        labels: ``int64 [n]``, cluster of each agent pair in ``0 .. k-1``, numbered in order of each
            cluster's first member (``labels[0] == 0``).
        k: number of clusters, ``labels.max() + 1`` (the chosen or fixed ``k``; fewer only if the
            rotation left an axis without members, possible only for a ``k`` the data do not support).
        costs: alignment cost ``J(R*, k)`` of Eq. 6 at the optimized rotation for every evaluated ``k``
            (``n <= J <= n k``; ``n`` is perfect alignment).
    """

    labels: np.ndarray
    k: int
    costs: dict[int, float] = field(default_factory=dict)


# --------------------------------------------------------------------------- spectrum


def normalized_affinity(S: np.ndarray, zero_diagonal: bool = False) -> np.ndarray:
    """``L = D^-1/2 A D^-1/2`` of the affinity ``A`` = ``S`` (TBS Sec. 3.2: the graph of ``S`` itself,
    whose diagonal is ``s(A, A) = 1`` by Eq. 5), or of ``S`` with its diagonal set to zero
    (``zero_diagonal``: the STSC paper's affinity, built from distances without self-loops).

    Keeping the self-similarity matters for pools with pairs that cooperate with nobody else: with a
    zero diagonal such a pair's only edges are the ``1e-4`` offsets, the normalization scales those
    up to the size of real edges, and the isolated pairs merge into one spurious cluster; with
    ``s(A, A) = 1`` each is its own block.

    Args:
        S: ``float [n, n]`` symmetric similarity, entries ``>= 0``, finite.
        zero_diagonal: ignore the diagonal of ``S``.

    Returns:
        ``float64 [n, n]`` symmetric, eigenvalues in ``[-1, 1]``.

    Raises:
        ValueError: ``S`` is not square, not finite, negative, or not symmetric; a pair has zero
            similarity to every other pair (isolated node; TBS's ``+1e-4`` offset prevents it).
    """
    S = np.asarray(S, dtype=np.float64)
    if S.ndim != 2 or S.shape[0] != S.shape[1] or S.shape[0] == 0:
        raise ValueError(f"similarity must be a non-empty square [n, n] matrix, got shape {S.shape}")
    if not np.isfinite(S).all():
        raise ValueError("similarity contains NaN or infinite values")
    if (S < 0).any():
        raise ValueError("similarity must be >= 0 (an affinity matrix)")
    if not np.allclose(S, S.T, rtol=1e-9, atol=1e-12):
        raise ValueError("similarity must be symmetric")
    A = (S + S.T) / 2.0
    if zero_diagonal:
        np.fill_diagonal(A, 0.0)
    degree = A.sum(axis=1)
    if S.shape[0] > 1 and (degree <= 0).any():
        raise ValueError(
            f"pair {int(np.argmin(degree))} has zero similarity to every other pair (isolated node); "
            "add an offset to the similarity (zsceval.algorithms.tbs.similarity.clustering_affinity)"
        )
    inv_sqrt = np.zeros_like(degree)
    inv_sqrt[degree > 0] = 1.0 / np.sqrt(degree[degree > 0])
    return inv_sqrt[:, None] * A * inv_sqrt[None, :]


def top_eigenvectors(S: np.ndarray, k: int, zero_diagonal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` eigenpairs of :func:`normalized_affinity` ``(S)`` by decreasing eigenvalue.

    Signs are fixed so that each eigenvector's entry of largest magnitude is positive (the first such
    entry on ties); a degenerate eigenspace keeps ``eigh``'s (deterministic) basis.

    Args:
        S: ``float [n, n]`` similarity, as in :func:`normalized_affinity`.
        k: number of eigenvectors, ``1 <= k <= n``.
        zero_diagonal: as :func:`normalized_affinity`.

    Returns:
        ``(X float64 [n, k], eigenvalues float64 [k])``.

    Raises:
        ValueError: as :func:`normalized_affinity`; ``k`` out of range.
    """
    L = normalized_affinity(S, zero_diagonal)
    n = L.shape[0]
    if not 1 <= k <= n:
        raise ValueError(f"k must be in 1..{n}, got {k}")
    values, vectors = scipy.linalg.eigh(L)
    order = np.arange(n - 1, n - 1 - k, -1)
    X = vectors[:, order]
    pivots = np.argmax(np.abs(X), axis=0)
    X = X * np.sign(X[pivots, np.arange(k)])[None, :]
    return X, values[order]


# --------------------------------------------------------------------------- rotations


def givens_pairs(k: int) -> list[tuple[int, int]]:
    """Axis pairs ``(i, j)``, ``i < j``, of the ``k(k-1)/2`` Givens angles, in lexicographic order."""
    return [(i, j) for i in range(k) for j in range(i + 1, k)]


def _givens(i: int, j: int, theta: float, k: int) -> np.ndarray:
    G = np.eye(k)
    c, s = np.cos(theta), np.sin(theta)
    G[i, i] = c
    G[j, j] = c
    G[i, j] = -s
    G[j, i] = s
    return G


def givens_rotation(theta: np.ndarray, k: int) -> np.ndarray:
    """Rotation ``R = G_1 G_2 ... G_K`` from ``K = k(k-1)/2`` Givens angles.

    ``G_m`` rotates the plane of axes ``givens_pairs(k)[m] = (i, j)`` by ``theta[m]`` radians: it is
    the identity except ``G[i, i] = G[j, j] = cos``, ``G[i, j] = -sin``, ``G[j, i] = sin``.

    Args:
        theta: ``float [k(k-1)/2]`` angles in radians.
        k: dimension.

    Returns:
        ``float64 [k, k]`` orthogonal matrix with determinant 1.

    Raises:
        ValueError: ``theta`` has the wrong length.
    """
    theta = np.asarray(theta, dtype=np.float64).reshape(-1)
    pairs = givens_pairs(k)
    if theta.shape[0] != len(pairs):
        raise ValueError(f"k = {k} needs {len(pairs)} Givens angles, got {theta.shape[0]}")
    R = np.eye(k)
    for (i, j), t in zip(pairs, theta):
        R = R @ _givens(i, j, t, k)
    return R


def alignment_cost(Z: np.ndarray) -> float:
    """Alignment cost of TBS Eq. 6 / STSC for rotated eigenvectors ``Z = X R``.

    ``J = sum_i sum_j Z_ij^2 / M_i^2`` with ``M_i = max_j |Z_ij|``; a row of zeros contributes 0.

    Args:
        Z: ``float [n, k]``.

    Returns:
        ``J``, between ``n`` (every row has one non-zero entry) and ``n k`` (all entries of a row equal
        in magnitude), for rows that are not all zero.
    """
    Z = np.asarray(Z, dtype=np.float64)
    sq = Z**2
    m2 = sq.max(axis=1)
    nonzero = m2 > 0
    return float((sq[nonzero] / m2[nonzero, None]).sum())


def normalized_cost(cost: float, n: int, k: int) -> float:
    """``(J / n - 1) / k``: the cost on the scale that STSC compares across ``k`` (``0`` = perfect)."""
    return (cost / n - 1.0) / k


def _cost_grad_wrt_Z(Z: np.ndarray) -> tuple[float, np.ndarray]:
    """``J(Z)`` and ``dJ/dZ`` (the max entry of each row fixed, as in STSC's gradient)."""
    sq = Z**2
    rows = np.arange(Z.shape[0])
    c = np.argmax(sq, axis=1)
    m = Z[rows, c]
    nonzero = m != 0
    m_safe = np.where(nonzero, m, 1.0)
    ratio = np.where(nonzero[:, None], sq / m_safe[:, None] ** 2, 0.0)
    grad = np.where(nonzero[:, None], 2.0 * Z / m_safe[:, None] ** 2, 0.0)
    # d/dZ_ic of sum_j Z_ij^2 / Z_ic^2 = -2 sum_{j != c} Z_ij^2 / Z_ic^3
    grad[rows, c] = np.where(nonzero, -2.0 * (ratio.sum(axis=1) - 1.0) / m_safe, 0.0)
    return float(ratio.sum()), grad


def alignment_cost_grad(X: np.ndarray, theta: np.ndarray) -> tuple[float, np.ndarray]:
    """Cost ``J(R(theta), k)`` of ``X R(theta)`` and its gradient with respect to the Givens angles.

    ``dJ/dtheta_m = <dJ/dZ, X P_m G_m' S_m>`` with ``P_m = G_1 .. G_{m-1}``, ``S_m = G_{m+1} .. G_K``
    (STSC Sec. 4); only the 2x2 block of ``G_m'`` at axes ``(i, j)`` is non-zero.

    Args:
        X: ``float [n, k]`` eigenvectors.
        theta: ``float [k(k-1)/2]`` Givens angles (:func:`givens_rotation`).

    Returns:
        ``(J, dJ/dtheta float64 [k(k-1)/2])``.
    """
    X = np.asarray(X, dtype=np.float64)
    theta = np.asarray(theta, dtype=np.float64).reshape(-1)
    k = X.shape[1]
    pairs = givens_pairs(k)
    num = len(pairs)
    cos, sin = np.cos(theta), np.sin(theta)
    prefix = np.empty((num + 1, k, k))  # prefix[m] = G_0 .. G_{m-1} (0-based)
    prefix[0] = np.eye(k)
    for m, (i, j) in enumerate(pairs):  # right-multiplying by G_m mixes columns i and j
        P = prefix[m + 1]
        P[:] = prefix[m]
        P[:, i] = cos[m] * prefix[m][:, i] + sin[m] * prefix[m][:, j]
        P[:, j] = -sin[m] * prefix[m][:, i] + cos[m] * prefix[m][:, j]
    suffix = np.empty((num + 1, k, k))  # suffix[m] = G_m .. G_{K-1}, suffix[K] = I
    suffix[num] = np.eye(k)
    for m in range(num - 1, -1, -1):  # left-multiplying by G_m mixes rows i and j
        i, j = pairs[m]
        Q = suffix[m]
        Q[:] = suffix[m + 1]
        Q[i] = cos[m] * suffix[m + 1][i] - sin[m] * suffix[m + 1][j]
        Q[j] = sin[m] * suffix[m + 1][i] + cos[m] * suffix[m + 1][j]
    cost, dZ = _cost_grad_wrt_Z(X @ prefix[num])
    W = X.T @ dZ  # [k, k]; dJ = sum(W * dR)
    if num == 0:
        return cost, np.zeros(0)
    ii = np.array([p[0] for p in pairs])
    jj = np.array([p[1] for p in pairs])
    idx = np.stack([ii, jj], axis=1)  # [K, 2]
    left = np.take_along_axis(prefix[:num], idx[:, None, :], axis=2)  # [K, k, 2] = P_m[:, (i, j)]
    right = np.take_along_axis(suffix[1:], idx[:, :, None], axis=1)  # [K, 2, k] = S_{m+1}[(i, j), :]
    blocks = np.einsum("mpa,pq,mbq->mab", left, W, right)  # [K, 2, 2]
    dG = np.stack([np.stack([-sin, -cos], axis=1), np.stack([cos, -sin], axis=1)], axis=1)  # [K, 2, 2]
    grad = (blocks * dG).sum(axis=(1, 2))
    return cost, grad


def greedy_alignment_start(X: np.ndarray) -> np.ndarray:
    """Orthogonal ``R0 [k, k]`` that maps ``k`` mutually most orthogonal rows of ``X`` near the axes.

    Rows are picked greedily (Yu & Shi 2003, "Multiclass spectral clustering"): first the row of largest
    norm, then repeatedly the row whose largest ``|cos|`` with the rows already picked is smallest.
    ``R0`` is the orthogonal matrix nearest to ``B^T`` (polar factor), where ``B [k, k]`` stacks the
    picked rows normalized to unit length; so ``(X R0)`` has the picked rows close to distinct axes.

    Args:
        X: ``float [n, k]``, ``n >= k``.

    Returns:
        ``float64 [k, k]`` orthogonal.
    """
    X = np.asarray(X, dtype=np.float64)
    k = X.shape[1]
    norms = np.linalg.norm(X, axis=1)
    unit = X / np.where(norms > 0, norms, 1.0)[:, None]
    picked = [int(np.argmax(norms))]
    worst = np.abs(unit @ unit[picked[0]])
    for _ in range(1, k):
        candidate = worst.copy()
        candidate[picked] = np.inf
        picked.append(int(np.argmin(candidate)))
        worst = np.maximum(worst, np.abs(unit @ unit[picked[-1]]))
    U, _, Vt = np.linalg.svd(unit[picked].T)
    return U @ Vt


def minimize_alignment(X: np.ndarray, *, restarts: int = 0, seed: int = 0) -> tuple[float, np.ndarray]:
    """Minimize the alignment cost of Eq. 6 over rotations of ``X``.

    BFGS over the ``k(k-1)/2`` Givens angles with the analytic gradient (:func:`alignment_cost_grad`),
    from two deterministic starts: ``R = I`` (the given ``X``, e.g. STSC's incremental
    initialization) and ``R = R0`` of :func:`greedy_alignment_start` (the angles then parameterize
    ``R0 R(theta)``); plus ``restarts`` angle vectors uniform in ``[-pi, pi)`` from
    ``np.random.default_rng(seed)``. The lowest cost wins (the earliest start on ties).

    Args:
        X: ``float [n, k]``.
        restarts: extra random starts, ``>= 0`` (each costs about as much as the two fixed ones; at
            large ``k`` from random angles, more).
        seed: seed of the restarts' generator.

    Returns:
        ``(J at the optimum, R float64 [k, k] orthogonal)``; ``k = 1`` gives ``(J(X), [[1]])``.

    Raises:
        ValueError: ``restarts < 0``.
    """
    if restarts < 0:
        raise ValueError(f"restarts must be >= 0, got {restarts}")
    X = np.asarray(X, dtype=np.float64)
    k = X.shape[1]
    if k == 1:
        return alignment_cost(X), np.eye(1)
    num_angles = k * (k - 1) // 2
    rng = np.random.default_rng(seed)
    starts = [(np.eye(k), np.zeros(num_angles)), (greedy_alignment_start(X), np.zeros(num_angles))]
    starts += [(np.eye(k), rng.uniform(-np.pi, np.pi, num_angles)) for _ in range(restarts)]
    best_cost, best_R = np.inf, np.eye(k)
    for R0, theta0 in starts:
        X0 = X @ R0
        result = scipy.optimize.minimize(
            lambda t, X0=X0: alignment_cost_grad(X0, t), theta0, jac=True, method="BFGS"
        )
        R = R0 @ givens_rotation(result.x, k)
        cost = alignment_cost(X @ R)
        if cost < best_cost - 1e-12:
            best_cost, best_R = cost, R
    return best_cost, best_R


# --------------------------------------------------------------------------- clustering


def relabel_by_first_member(labels: np.ndarray) -> np.ndarray:
    """Renumber cluster labels ``0, 1, ...`` in order of each cluster's first member.

    Args:
        labels: ``int [n]`` arbitrary cluster ids.

    Returns:
        ``int64 [n]`` with the same partition; ``[2, 2, 0, 1, 0]`` becomes ``[0, 0, 1, 2, 1]``.
    """
    labels = np.asarray(labels).reshape(-1)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)].astype(np.int64)


def _axis_labels(Z: np.ndarray) -> np.ndarray:
    return relabel_by_first_member(np.argmax(Z**2, axis=1))


def _kmeans_labels(X: np.ndarray, k: int, seed: int, restarts: int) -> np.ndarray:
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    Y = X / np.where(norms > 0, norms, 1.0)
    rng = np.random.default_rng(seed)
    best, best_distortion = None, np.inf
    for _ in range(max(1, restarts)):
        try:
            centroids, labels = kmeans2(Y, k, minit="++", seed=rng, missing="raise")
        except ClusterError:  # a run that left a cluster empty does not count
            continue
        distortion = float(((Y - centroids[labels]) ** 2).sum())
        if distortion < best_distortion - 1e-12:
            best, best_distortion = labels, distortion
    if best is None:
        raise ValueError(f"k-means left a cluster empty in all {max(1, restarts)} runs: k = {k} is too large")
    return relabel_by_first_member(best)


def _candidate_ks(n: int, k_range: tuple[int, int] | None) -> list[int]:
    """Candidate ``k`` before the eigenvalue floor."""
    if k_range is None:
        return list(range(2, min(n - 1, DEFAULT_MAX_K) + 1))
    lo, hi = int(k_range[0]), int(k_range[1])
    if not 2 <= lo <= hi <= n - 1:
        raise ValueError(
            f"k_range must satisfy 2 <= low <= high <= n - 1 = {n - 1} (k = 1 and k = n are always "
            f"perfectly aligned, so they cannot be chosen automatically), got {k_range}"
        )
    return list(range(lo, hi + 1))


def select_k(costs: dict[int, float], n: int, *, rule: str = K_RULES[0], tol: float | None = None) -> int:
    """The number of clusters from the alignment costs of Eq. 6 (module docstring, item 4).

    ``rule="paper"`` (TBS Sec. 3.2): the smallest ``k`` whose ``J / n`` is within ``tol`` (default
    :data:`PAPER_TIE_TOLERANCE`) of the minimum, i.e. the arg-min of the raw cost ``J``, fewer
    clusters on ties. ``rule="normalized"`` (Zelnik-Manor's ``cluster_rotate``): the largest ``k``
    whose normalized cost ``(J / n - 1) / k`` is within ``tol`` (default :data:`SELECTION_TOLERANCE`)
    of the minimum.

    Example: ``n = 10``, ``costs = {2: 12.0, 3: 11.0, 4: 11.0, 5: 12.5}``: ``"paper"`` gives 3 (the
    minimum ``J = 11`` ties between 3 and 4; the smaller wins); ``"normalized"`` gives 4 (normalized
    costs 0.1, 0.0333, 0.025, 0.05).

    Args:
        costs: ``{k: J}`` alignment costs of Eq. 6 (``n <= J <= n k``).
        n: number of points (agent pairs), ``>= 1``.
        rule: one of :data:`K_RULES`.
        tol: tie tolerance on the rule's scale (``>= 0``); None: the rule's default.

    Returns:
        The chosen ``k``.

    Raises:
        ValueError: ``costs`` is empty; an unknown ``rule`` (the valid ones listed); ``n < 1``;
            ``tol < 0``.
    """
    if rule not in K_RULES:
        raise ValueError(f"unknown k rule {rule!r}; valid rules: {', '.join(K_RULES)}")
    if not costs:
        raise ValueError("no candidate k to choose from")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if rule == "paper":
        tol = PAPER_TIE_TOLERANCE if tol is None else float(tol)
        scaled = {k: c / n for k, c in costs.items()}
        pick = min
    else:
        tol = SELECTION_TOLERANCE if tol is None else float(tol)
        scaled = {k: normalized_cost(c, n, k) for k, c in costs.items()}
        pick = max
    if tol < 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    best = min(scaled.values())
    return pick(k for k, c in scaled.items() if c <= best + tol)


def self_tuning_spectral_clustering(
    S: np.ndarray,
    *,
    k_range: tuple[int, int] | None = None,
    fixed_k: int | None = None,
    assign: Literal["rotation", "kmeans"] = "rotation",
    k_rule: str = K_RULES[0],
    tol: float | None = None,
    restarts: int = 0,
    seed: int = 0,
    kmeans_restarts: int = 10,
    zero_diagonal: bool = False,
    min_eigenvalue: float | None = MIN_EIGENVALUE,
) -> Clustering:
    """Cluster agent pairs from their similarity matrix (TBS Sec. 3.2, Eq. 6; STSC).

    Args:
        S: ``float [n, n]`` symmetric similarity, entries ``>= 0``, e.g.
            :func:`zsceval.algorithms.tbs.similarity.clustering_affinity` ``(J)`` (diagonal ``s(A, A) = 1``).
        k_range: inclusive ``(low, high)`` candidate numbers of clusters, ``2 <= low <= high <= n - 1``;
            default ``(2, min(n - 1, 10))``. Ignored when ``fixed_k`` is given.
        fixed_k: preset number of clusters, ``1 <= fixed_k <= n`` (vanilla spectral clustering, the
            "TBS (fixed)" ablation); ``None`` chooses ``k`` automatically.
        assign: with ``fixed_k``: ``"rotation"`` (argmax of the aligned eigenvectors) or ``"kmeans"``
            (k-means on unit-normalized eigenvector rows).
        k_rule: how ``k`` is chosen from the costs, one of :data:`K_RULES`: ``"paper"`` (arg-min of
            ``J``, TBS Sec. 3.2) or ``"normalized"`` (Zelnik-Manor's rule); :func:`select_k`.
            Ignored with ``fixed_k``.
        tol: tie tolerance of the choice of ``k`` on the rule's scale (None: the rule's default;
            :func:`select_k`).
        restarts: extra random starts of the rotation search (:func:`minimize_alignment`).
        seed: seed of the random starts and of k-means.
        kmeans_restarts: k-means runs with ``assign="kmeans"``; the lowest distortion wins.
        zero_diagonal: drop the self-similarities (the STSC paper's affinity; :func:`normalized_affinity`).
            Default False: the diagonal of ``S`` (``s(A, A) = 1`` by Eq. 5) is kept.
        min_eigenvalue: candidate ``k`` are at most the number of eigenvalues of ``L`` that are
            ``>= min_eigenvalue`` (module docstring; a ``k_range`` wholly above that count is cut
            down to it); ``None`` turns the floor off. Ignored with ``fixed_k``.

    Returns:
        :class:`Clustering`; ``costs`` has the alignment cost of every evaluated ``k`` (with ``fixed_k``
        only that ``k``). ``n <= 2`` without ``fixed_k``, and a pool with a single eigenvalue above
        ``min_eigenvalue``, are one cluster (``costs = {1: n}``).

    Raises:
        ValueError: invalid ``S`` (see :func:`normalized_affinity`), ``k_range``, ``fixed_k``, ``assign`` or
            ``k_rule`` (the valid rules listed);
            with ``assign="kmeans"``, every k-means run left a cluster empty.
    """
    if assign not in ("rotation", "kmeans"):
        raise ValueError(f"assign must be 'rotation' or 'kmeans', got {assign!r}")
    if k_rule not in K_RULES:
        raise ValueError(f"unknown k rule {k_rule!r}; valid rules: {', '.join(K_RULES)}")
    L = normalized_affinity(S, zero_diagonal)  # validates S
    n = L.shape[0]
    if fixed_k is not None:
        if not 1 <= int(fixed_k) <= n:
            raise ValueError(f"fixed_k must be in 1..{n}, got {fixed_k}")
        k = int(fixed_k)
        X, _ = top_eigenvectors(S, k, zero_diagonal)
        cost, R = minimize_alignment(X, restarts=restarts, seed=seed)
        labels = _axis_labels(X @ R) if assign == "rotation" else _kmeans_labels(X, k, seed, kmeans_restarts)
        return Clustering(labels=labels, k=int(labels.max()) + 1, costs={k: cost})
    if n <= 2:
        return Clustering(labels=np.zeros(n, dtype=np.int64), k=1, costs={1: float(n)})

    ks = _candidate_ks(n, k_range)
    V, values = top_eigenvectors(S, n, zero_diagonal)  # one eigendecomposition: the floor and the k's
    if min_eigenvalue is not None:
        supported = int((values >= float(min_eigenvalue)).sum())
        if supported < 2:
            return Clustering(labels=np.zeros(n, dtype=np.int64), k=1, costs={1: float(n)})
        ks = [k for k in ks if k <= supported] or [supported]
    costs: dict[int, float] = {}
    rotated: dict[int, np.ndarray] = {}
    current = V[:, : ks[0]]
    for k in ks:
        if k > ks[0]:  # STSC's incremental start: previous aligned solution + the next eigenvector
            current = np.concatenate([rotated[k - 1], V[:, k - 1 : k]], axis=1)
        cost, R = minimize_alignment(current, restarts=restarts, seed=seed)
        costs[k] = cost
        rotated[k] = current @ R
    k = select_k(costs, n, rule=k_rule, tol=tol)
    labels = _axis_labels(rotated[k])
    return Clustering(labels=labels, k=int(labels.max()) + 1, costs=costs)
