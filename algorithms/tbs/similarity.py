"""Cross-play similarity of agent pairs (TBS Eq. 5).

TBS clusters its partner pool by how well the pool's self-play pairs coordinate with each other.
For two pairs ``A = (pi_A^1, pi_A^2)`` and ``B = (pi_B^1, pi_B^2)`` the similarity is the cross-play
return relative to the self-play return (TBS Sec. 3.2, Eq. 5):

    s(A, B) = (J(A1, B2) + J(B1, A2)) / (J(A1, A2) + J(B1, B2))

Practical rules from the TBS paper, App. B.1:

* ``s`` is clamped to ``[0, 1]``: cross-play can beat self-play.
* ``0 / 0`` (both pairs fail in self-play *and* in cross-play) is ``1``: the pairs are alike in that
  both fail. A positive numerator over a zero denominator (both self-plays fail but cross-play
  scores) is ``+inf`` before the clamp and therefore ``1`` too.
* Before clustering, ``1e-4`` is added to every entry so that the affinity graph has no zero row
  (:data:`CLUSTERING_OFFSET`, :func:`clustering_affinity`).

The similarity is symmetric by construction, and its diagonal is ``1`` (``2 J(A1, A2) / 2 J(A1, A2)``,
or ``0 / 0``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["CLUSTERING_OFFSET", "clustering_affinity", "cross_play_similarity"]

CLUSTERING_OFFSET: float = 1e-4
"""Added to every similarity before spectral clustering (TBS Appendix B)."""


def _check_returns(J: np.ndarray) -> np.ndarray:
    J = np.asarray(J)
    if J.ndim != 2 or J.shape[0] != J.shape[1]:
        raise ValueError(f"cross-play returns must be a square [P, P] matrix, got shape {J.shape}")
    if J.shape[0] == 0:
        raise ValueError("cross-play returns are empty (P = 0 pairs)")
    if not (np.issubdtype(J.dtype, np.floating) or np.issubdtype(J.dtype, np.integer)):
        raise ValueError(f"cross-play returns must be real numbers, got dtype {J.dtype}")
    J = J.astype(np.float64)
    if np.isnan(J).any():
        a, b = (int(x[0]) for x in np.nonzero(np.isnan(J)))
        raise ValueError(f"cross-play returns contain NaN at (seat-0 pair, seat-1 pair) = ({a}, {b})")
    if np.isinf(J).any():
        raise ValueError("cross-play returns contain an infinite value")
    if (J < 0).any():
        a, b = (int(x[0]) for x in np.nonzero(J < 0))
        raise ValueError(
            "cross-play returns must be >= 0 (Overcooked sparse returns are), got a negative return "
            f"{J[a, b]} at (seat-0 pair, seat-1 pair) = ({a}, {b})"
        )
    return J


def cross_play_similarity(J: np.ndarray, *, offset: float = 0.0) -> np.ndarray:
    """Similarity of every two agent pairs from their cross-play returns (TBS Eq. 5).

    Args:
        J: ``float [P, P]``; ``J[a, b]`` is the mean return when agent 1 of pair ``a`` (seat 0) plays
            with agent 2 of pair ``b`` (seat 1); the diagonal holds the pairs' self-play returns.
            Returns are team sparse returns (20 per delivered soup), so ``>= 0``.
        offset: added to every entry after the clamp; use :data:`CLUSTERING_OFFSET` (``1e-4``, TBS
            Appendix B) for the clustering input, or :func:`clustering_affinity`.

    Returns:
        ``float64 [P, P]`` symmetric matrix ``S`` with ``S[a, b] = clamp(s(a, b), 0, 1) + offset``;
        the diagonal is ``1 + offset``. ``0 / 0`` gives ``1`` (both pairs fail everywhere), and a
        positive numerator over a zero denominator gives ``1`` (the clamp of ``+inf``).

    Raises:
        ValueError: ``J`` is not a non-empty square matrix, is not real, or contains a NaN, an
            infinite value or a negative return (the message names the problem and the entry);
            ``offset`` is negative or not finite.
    """
    if not np.isfinite(offset) or offset < 0:
        raise ValueError(f"offset must be a finite number >= 0, got {offset}")
    J = _check_returns(J)
    numerator = J + J.T  # J(A1, B2) + J(B1, A2)
    self_play = np.diag(J)
    denominator = self_play[:, None] + self_play[None, :]  # J(A1, A2) + J(B1, B2)
    S = np.ones_like(J)  # 0 / 0 and x / 0 (x > 0) are both 1 after the clamp
    positive = denominator > 0
    S[positive] = np.clip(numerator[positive] / denominator[positive], 0.0, 1.0)
    return S + offset


def clustering_affinity(J: np.ndarray) -> np.ndarray:
    """The clustering input of TBS: :func:`cross_play_similarity` with ``offset = 1e-4``.

    Args:
        J: ``float [P, P]`` cross-play returns, as in :func:`cross_play_similarity`.

    Returns:
        ``float64 [P, P]`` symmetric, entries in ``[1e-4, 1 + 1e-4]``.

    Raises:
        ValueError: as :func:`cross_play_similarity`.
    """
    return cross_play_similarity(J, offset=CLUSTERING_OFFSET)
