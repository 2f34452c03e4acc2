"""Comparisons of ZSC algorithms beyond the reference: probability of improvement, performance
profiles and rank uncertainty, each with two-level (seeds x partners) bootstrap uncertainty.

Axis convention (as :mod:`zsceval.stats.metrics`):
    One algorithm's BR-Prox units on one layout are ``float[num_seeds, num_partners, num_seats]``
    (:func:`~zsceval.stats.metrics.unit_array`); NaN marks a unit not played. Algorithms compared
    on a layout share the partner axis (same partners, same order) and may have different numbers of
    seeds.

Joint bootstrap (:func:`joint_bootstrap`):
    Each replicate draws one resample of axis 1, shared by every algorithm (they met the same
    partners: a crossed design, as :func:`~zsceval.stats.metrics.bootstrap_ci`'s default), and
    resamples each algorithm's seeds independently (different training runs). The report's arrays
    (:func:`layout_unit_arrays`) have candidates on axis 1, so a resampled candidate brings both its
    checkpoints and all their seats. Intervals are percentile intervals of the replicates.

Estimators follow rliable (Agarwal et al. 2021, ``rliable.metrics``) with BR-Prox units as scores and
(partner, seat) pairs as tasks:
    * probability of improvement ``P(X > Y)``: per (partner, seat), the Mann-Whitney probability that
      a unit of X beats a unit of Y (ties count 1/2) over all seed pairs, averaged over (partner, seat)
      (rliable's ``probability_of_improvement`` on ``[seeds, partners * seats]``);
    * performance profile: the fraction of units whose BR-Prox is strictly above each threshold
      (rliable's score distribution, ``mean(scores > tau)``);
    * rank distribution: the probability of each rank (1 = best IQM) over bootstrap replicates.
rliable's own bootstrap resamples runs within tasks only, which does not fit the seeds x partners
design, so the uncertainty here is ours.

Source: ZSC-Eval Sec. 4.3 recommends IQM with 95% CIs after Agarwal et al. 2021; the reference code
computes neither these statistics nor CIs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.stats

from .metrics import ConfidenceInterval, candidate_array, iqm

DEFAULT_THRESHOLDS = np.linspace(0.0, 1.0, 21)
"""BR-Prox thresholds of the performance profiles: 0, 0.05, ..., 1."""


def joint_bootstrap(arrays: Sequence[np.ndarray], *, reps: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Bootstrap replicates of several algorithms' unit arrays on one layout (module docstring).

    Args:
        arrays: per algorithm ``float[num_seeds_a, num_partners, ...]``; the partner axis and trailing
            axes are shared.
        reps: number of replicates (>= 1).
        rng: source of randomness (partners are drawn first, then each algorithm's seeds in order).

    Returns:
        Per algorithm ``float64[reps, num_seeds_a, num_partners, ...]``.

    Raises:
        ValueError: no arrays, fewer than 2 dimensions, an empty axis, mismatched partner or trailing
            axes, or ``reps < 1``.
    """
    xs = [np.asarray(a, dtype=np.float64) for a in arrays]
    if not xs:
        raise ValueError("need at least one unit array")
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    for x in xs:
        if x.ndim < 2 or x.shape[0] == 0 or x.shape[1] == 0:
            raise ValueError(f"unit arrays must be [num_seeds, num_partners, ...], got shape {x.shape}")
        if x.shape[1:] != xs[0].shape[1:]:
            raise ValueError(f"unit arrays must share partner and seat axes: {x.shape} vs {xs[0].shape}")
    partner_idx = rng.integers(0, xs[0].shape[1], size=(reps, 1, xs[0].shape[1]))
    out = []
    for x in xs:
        seed_idx = rng.integers(0, x.shape[0], size=(reps, x.shape[0]))
        out.append(x[seed_idx[:, :, None], partner_idx])
    return out


def _tasks(x: np.ndarray) -> np.ndarray:
    """``float[reps, seeds, partners, ...]`` -> ``float[reps, seeds, tasks]`` (a task: partner x seat)."""
    return x.reshape(x.shape[0], x.shape[1], -1)


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> float:
    """``P(X > Y)``: probability that a unit of algorithm X beats a unit of Y on the same (partner, seat).

    Per (partner, seat) task, over all pairs (seed of X, seed of Y) where both units exist, a win
    counts 1 and a tie 1/2; tasks are averaged (rliable ``probability_of_improvement``).

    Args:
        x: float[num_seeds_x, num_partners, ...] BR-Prox units of X (NaN = not played).
        y: float[num_seeds_y, num_partners, ...] units of Y on the same partners and seats.

    Returns:
        A probability in [0, 1]; 0.5 for identical arrays; NaN if no task has units of both.

    Raises:
        ValueError: shapes that do not share the partner and seat axes.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim < 2 or x.shape[1:] != y.shape[1:]:
        raise ValueError(
            f"x and y must be [seeds, partners, ...] with the same partners: {x.shape}, {y.shape}"
        )
    return float(_poi_batched(x.reshape(1, x.shape[0], -1), y.reshape(1, y.shape[0], -1))[0])


def _poi_batched(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x``: float[reps, sx, tasks], ``y``: float[reps, sy, tasks] -> float64[reps]."""
    a, b = x[:, :, None, :], y[:, None, :, :]
    valid = ~(np.isnan(a) | np.isnan(b))
    score = np.where(valid, (a > b) + 0.5 * (a == b), 0.0).sum(axis=(1, 2))
    count = valid.sum(axis=(1, 2))
    per_task = np.divide(score, count, out=np.full(score.shape, np.nan), where=count > 0)
    with np.errstate(all="ignore"):
        return np.nanmean(np.where(count > 0, per_task, np.nan), axis=1) if per_task.size else per_task


def probability_of_improvement_ci(
    x: np.ndarray, y: np.ndarray, *, reps: int = 2000, level: float = 0.95, rng: np.random.Generator
) -> ConfidenceInterval:
    """:func:`probability_of_improvement` with a joint-bootstrap percentile interval.

    Args:
        x, y: unit arrays of two algorithms (see :func:`probability_of_improvement`).
        reps: bootstrap replicates.
        level: coverage in (0, 1).
        rng: source of randomness.

    Returns:
        ``ConfidenceInterval(estimate, low, high)``.
    """
    _check_level(level)
    rx, ry = joint_bootstrap([x, y], reps=reps, rng=rng)
    values = _poi_batched(_tasks(rx), _tasks(ry))
    low, high = _quantiles(values, level)
    return ConfidenceInterval(probability_of_improvement(x, y), low, high)


def performance_profile(scores: np.ndarray, thresholds: np.ndarray = DEFAULT_THRESHOLDS) -> np.ndarray:
    """Fraction of units whose score is strictly above each threshold (NaN units ignored).

    Args:
        scores: float[...] BR-Prox units.
        thresholds: float[T].

    Returns:
        float64[T] (NaN if there is no unit).
    """
    x = np.asarray(scores, dtype=np.float64).reshape(1, -1)
    return _profile_batched(x, np.asarray(thresholds, dtype=np.float64))[0]


def _profile_batched(x: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """``x``: float[reps, units] -> float64[reps, T]."""
    valid = ~np.isnan(x)
    above = (x[:, :, None] > thresholds[None, None, :]) & valid[:, :, None]
    count = valid.sum(axis=1)[:, None]
    return np.divide(
        above.sum(axis=1), count, out=np.full((len(x), len(thresholds)), np.nan), where=count > 0
    )


def performance_profile_ci(
    scores: np.ndarray,
    thresholds: np.ndarray = DEFAULT_THRESHOLDS,
    *,
    reps: int = 2000,
    level: float = 0.95,
    rng: np.random.Generator,
) -> pd.DataFrame:
    """:func:`performance_profile` with pointwise two-level bootstrap percentile bands.

    Args:
        scores: float[num_seeds, num_partners, ...] one algorithm's units.
        thresholds: float[T].
        reps: bootstrap replicates.
        level: coverage in (0, 1).
        rng: source of randomness.

    Returns:
        Frame with ``T`` rows and columns ``threshold, fraction, ci_low, ci_high``.
    """
    _check_level(level)
    taus = np.asarray(thresholds, dtype=np.float64)
    (rep,) = joint_bootstrap([scores], reps=reps, rng=rng)
    values = _profile_batched(rep.reshape(reps, -1), taus)
    alpha = (1.0 - level) / 2.0
    low, high = np.nanquantile(values, [alpha, 1.0 - alpha], axis=0)
    return pd.DataFrame(
        {"threshold": taus, "fraction": performance_profile(scores, taus), "ci_low": low, "ci_high": high}
    )


def rank_distribution(
    arrays: Mapping[str, np.ndarray], *, reps: int = 2000, rng: np.random.Generator
) -> pd.DataFrame:
    """Rank of each algorithm by IQM BR-Prox (1 = best) and its bootstrap distribution.

    Ranks are computed on the data and on each joint-bootstrap replicate; ties share the best rank
    (``scipy.stats.rankdata(method="min")`` on ``-IQM``).

    Args:
        arrays: algorithm -> float[num_seeds, num_partners, ...] units on one layout.
        reps: bootstrap replicates.
        rng: source of randomness.

    Returns:
        One row per algorithm (sorted by name) with ``algorithm, iqm, rank, mean_rank`` and
        ``p_rank_1 .. p_rank_A`` (probability of each rank; each row sums to 1).
    """
    names = sorted(arrays)
    reps_arrays = joint_bootstrap([arrays[a] for a in names], reps=reps, rng=rng)
    point = np.array([iqm(arrays[a]) for a in names])
    boot = np.stack([iqm(r.reshape(reps, -1), axis=1) for r in reps_arrays], axis=1)  # [reps, A]
    boot_ranks = scipy.stats.rankdata(-boot, method="min", axis=1)
    frame = pd.DataFrame(
        {
            "algorithm": names,
            "iqm": point,
            "rank": scipy.stats.rankdata(-point, method="min").astype(int),
            "mean_rank": boot_ranks.mean(axis=0),
        }
    )
    for r in range(1, len(names) + 1):
        frame[f"p_rank_{r}"] = (boot_ranks == r).mean(axis=0)
    return frame


def layout_unit_arrays(units: pd.DataFrame) -> dict[str, dict[str, np.ndarray]]:
    """Per layout, per algorithm, the unit array on the layout's shared partner axis.

    Args:
        units: :func:`~zsceval.stats.metrics.br_prox_units` output.

    Returns:
        ``{layout: {algorithm: float64[num_seeds, num_candidates, num_checkpoints, num_seats]}}``
        (:func:`~zsceval.stats.metrics.candidate_array`: the bootstrap resamples candidates).
    """
    out: dict[str, dict[str, np.ndarray]] = {}
    for layout, frame in units.groupby("layout", sort=True):
        partners = sorted(frame["partner"].unique())
        out[str(layout)] = {
            str(algo): candidate_array(sub, partners) for algo, sub in frame.groupby("algorithm", sort=True)
        }
    return out


def comparison_tables(
    units: pd.DataFrame,
    *,
    rng: np.random.Generator,
    reps: int = 2000,
    level: float = 0.95,
    thresholds: np.ndarray = DEFAULT_THRESHOLDS,
) -> dict[str, pd.DataFrame]:
    """Probability of improvement, performance profiles and rank distributions of every layout.

    Layouts are processed in sorted order; layout ``i`` uses ``rng.spawn(num_layouts)[i]``, spawned
    again into (ranks, one child per algorithm's profile, one per ordered pair) in that order.

    Args:
        units: :func:`~zsceval.stats.metrics.br_prox_units` output (all partner levels).
        rng: source of randomness.
        reps: bootstrap replicates.
        level: CI coverage.
        thresholds: float[T] performance-profile thresholds.

    Returns:
        ``{"poi": layout, algorithm_x, algorithm_y, poi, ci_low, ci_high, num_candidates`` (every
        ordered pair x != y; the candidates its bootstrap resamples),
        ``"profiles": layout, algorithm, threshold, fraction, ci_low, ci_high``,
        ``"ranks": layout`` + :func:`rank_distribution` columns``}``.
    """
    arrays = layout_unit_arrays(units)
    poi_rows, profiles, ranks = [], [], []
    for (layout, by_algo), child in zip(arrays.items(), rng.spawn(len(arrays))):
        names = sorted(by_algo)
        pairs = [(a, b) for a in names for b in names if a != b]
        streams = iter(child.spawn(1 + len(names) + len(pairs)))
        ranks.append(rank_distribution(by_algo, reps=reps, rng=next(streams)).assign(layout=layout))
        for name in names:
            prof = performance_profile_ci(
                by_algo[name], thresholds, reps=reps, level=level, rng=next(streams)
            )
            profiles.append(prof.assign(layout=layout, algorithm=name))
        for a, b in pairs:
            ci = probability_of_improvement_ci(
                by_algo[a], by_algo[b], reps=reps, level=level, rng=next(streams)
            )
            poi_rows.append(
                {"layout": layout, "algorithm_x": a, "algorithm_y": b, "poi": ci.estimate}
                | {"ci_low": ci.low, "ci_high": ci.high, "num_candidates": by_algo[a].shape[1]}
            )
    lead = ["layout", "algorithm"]
    profile_frame = pd.concat(profiles, ignore_index=True) if profiles else pd.DataFrame()
    rank_frame = pd.concat(ranks, ignore_index=True) if ranks else pd.DataFrame()
    return {
        "poi": pd.DataFrame(
            poi_rows,
            columns=["layout", "algorithm_x", "algorithm_y", "poi", "ci_low", "ci_high", "num_candidates"],
        ),
        "profiles": profile_frame[lead + [c for c in profile_frame.columns if c not in lead]],
        "ranks": rank_frame[lead + [c for c in rank_frame.columns if c not in lead]],
    }


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")


def _quantiles(values: np.ndarray, level: float) -> tuple[float, float]:
    alpha = (1.0 - level) / 2.0
    low, high = np.nanquantile(values, [alpha, 1.0 - alpha])
    return float(low), float(high)
