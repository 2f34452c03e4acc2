"""ZSC metrics: BR-Prox, the interquartile mean (IQM), bootstrap confidence intervals and rank agreement.

Axis convention (all array functions):
    A score array is ``float[num_seeds, num_partners, ...]``: axis 0 indexes ego-agent training seeds,
    axis 1 evaluation partners; optional trailing axes (e.g. seats) belong to the partner level. One
    entry is one BR-Prox *unit*. NaN marks a missing or excluded unit and is ignored by :func:`iqm`.

Results tables (:func:`br_prox_summary`):
    ``results``, one row per evaluation episode:

    - ``layout`` (str): layout name.
    - ``algorithm`` (str): ZSC algorithm of the ego agent (e.g. ``"mep"``).
    - ``ego_seed`` (int): training seed of the ego agent.
    - ``partner`` (str): evaluation partner id (e.g. ``"hsp3_final"``).
    - ``partner_level`` (str): ``"moderate"`` (``mid`` checkpoint) or ``"expert"`` (``final``).
    - ``seat`` (int): the seat (player index) the ego agent occupies, 0 or 1.
    - ``episode`` (int): episode number within (ego, partner, seat).
    - ``sparse_return`` (float): the episode's team sparse return (20 per delivered soup).

    ``br_returns``, the reference: the return of the partner's approximate best response (BR) with the
    partner, keyed by ``layout``, ``partner``, ``seat`` (the seat the BR occupies, matching the ego's
    ``seat``) with column ``br_return`` (float, team sparse return). Several rows per key (episodes) are
    averaged. Without a ``seat`` column the same BR return serves both seats.

Sources: ZSC-Eval paper Sec. 4.3 (BR-Prox, IQM, 95% CIs), Sec. 5.2 / Fig. 6 (moderate vs expert partners),
docs/reference-protocol.md "Pipeline" item 9 (the reference's per-(seed, partner, seat) unit and its rules).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, NamedTuple

import numpy as np
import pandas as pd
import scipy.stats

NonpositiveBR = Literal["one", "nan"]
PartnerResampling = Literal["crossed", "nested"]
LevelRule = Literal["checkpoint", "median"]

LEVEL_RULES: tuple[str, ...] = ("checkpoint", "median")
"""How partners are split into moderate and expert (see :func:`assign_levels`)."""

RESULTS_COLUMNS: tuple[str, ...] = (
    "layout",
    "algorithm",
    "ego_seed",
    "partner",
    "partner_level",
    "seat",
    "episode",
    "sparse_return",
)
"""Required columns of a results frame (see the module docstring)."""

BR_RETURNS_COLUMNS: tuple[str, ...] = ("layout", "partner", "br_return")
"""Required columns of a BR-returns frame; ``seat`` is optional."""

PARTNER_LEVELS: tuple[str, ...] = ("moderate", "expert")
"""Partner skill levels: ``moderate`` = ``mid`` checkpoints, ``expert`` = ``final`` (ZSC-Eval Fig. 6)."""

ALL_LEVELS = "all"
"""The ``partner_level`` value of summary rows pooled over both levels."""

MIN_INFORMATIVE_CANDIDATES = 5
"""Candidates a level needs for its interval to inform (with 3, a bootstrap over candidates draws all
three alike often enough to reach [0, 1] or [1, 1] whatever the agent does)."""

RESAMPLING = "candidates (a candidate's mid and final checkpoints together, both seats), then ego seeds"
"""What every interval of the report resamples, as the report says it."""


class ConfidenceInterval(NamedTuple):
    """A point estimate with its bootstrap percentile interval."""

    estimate: float
    low: float
    high: float


def br_prox(
    ego_returns: np.ndarray,
    br_returns: np.ndarray,
    *,
    nonpositive_br: NonpositiveBR = "one",
    clip: bool = True,
) -> np.ndarray:
    """Best-Response Proximity of each unit: ``min(1, R(ego, partner) / R(BR, partner))``.

    Source: ZSC-Eval Sec. 4.3, Eq. BR-Prox; the clip at 1 and the ``R_BR <= 0`` rule are those of the
    ZSC-Eval reference code (docs/reference-protocol.md "Pipeline" item 9). The paper's equation has no clip;
    pass ``clip=False`` for the raw ratio.

    Args:
        ego_returns: float[...] mean sparse return of the ego agent with each partner (any shape, e.g.
            ``[num_seeds, num_partners]``).
        br_returns: float[...] the BR's return with the same partner, broadcastable to ``ego_returns``
            (e.g. ``[num_partners]`` against ``[num_seeds, num_partners]``).
        nonpositive_br: what a unit whose BR return is <= 0 scores: ``"one"`` (ZSC-Eval's rule: a
            partner no one can score with is matched perfectly) or ``"nan"`` (excluded from aggregates).
        clip: clip the ratio at 1 (the reference); ``False`` keeps ratios above 1.

    Returns:
        float64 array of ``ego_returns``' shape.

    Raises:
        ValueError: shapes that do not broadcast to ``ego_returns``' shape, or an unknown
            ``nonpositive_br``.
    """
    ego = np.asarray(ego_returns, dtype=np.float64)
    br = np.asarray(br_returns, dtype=np.float64)
    if nonpositive_br not in ("one", "nan"):
        raise ValueError(f"nonpositive_br must be 'one' or 'nan', got {nonpositive_br!r}")
    try:
        br = np.broadcast_to(br, ego.shape)
    except ValueError as exc:
        raise ValueError(
            f"br_returns of shape {br.shape} do not broadcast to ego_returns {ego.shape}"
        ) from exc
    positive = br > 0
    ratio = np.divide(ego, br, out=np.full_like(ego, np.nan), where=positive)
    if clip:
        ratio = np.minimum(ratio, 1.0)
    fill = 1.0 if nonpositive_br == "one" else np.nan
    return np.where(br <= 0, fill, ratio)  # a NaN BR return stays NaN


def iqm(scores: np.ndarray, axis: int | None = None) -> float | np.ndarray:
    """Interquartile mean: ``scipy.stats.trim_mean(x, 0.25)`` over the non-NaN entries.

    Trims ``floor(0.25 * n)`` values from each end and averages the rest: scipy's rule, which
    rliable's ``aggregate_iqm`` (rliable 1.2) uses too, so the two agree for every ``n``.
    Source: ZSC-Eval Sec. 4.3 ("inter-quartile mean"), Agarwal et al. 2021.

    Args:
        scores: float[...] scores; NaN entries are ignored.
        axis: axis to reduce; ``None`` pools every entry.

    Returns:
        A float (``axis=None``) or an array with ``axis`` removed; NaN where no entry is left.

    Raises:
        ValueError: if ``scores`` is 0-D or ``axis`` is out of range.
    """
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim == 0:
        raise ValueError("scores must have at least one dimension")
    if axis is None:
        x = x[~np.isnan(x)]
        return float(scipy.stats.trim_mean(x, 0.25)) if x.size else float("nan")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis {axis} out of range for scores of shape {x.shape}")
    if not np.isnan(x).any():
        return scipy.stats.trim_mean(x, 0.25, axis=axis)
    return np.apply_along_axis(lambda v: iqm(v), axis, x)


def bootstrap_ci(
    scores: np.ndarray,
    statistic: Callable[..., float | np.ndarray] = iqm,
    *,
    reps: int = 2000,
    level: float = 0.95,
    rng: np.random.Generator,
    partner_resampling: PartnerResampling = "crossed",
) -> ConfidenceInterval:
    """Stratified two-level (seeds x partners) bootstrap percentile confidence interval of a statistic.

    Each replicate resamples, with replacement, the ego seeds (axis 0) and the partners (axis 1), each
    within its own level (never one flat resample of all units, which would ignore that units sharing
    a seed or a partner are correlated), and evaluates ``statistic`` on all units of the resampled
    array; the interval is the ``(1 - level) / 2`` and ``(1 + level) / 2`` percentiles of the replicates
    (percentile bootstrap, Helwig's notes cited by ZSC-Eval Sec. 4.3). Trailing axes (seats) travel
    with their partner.

    ``partner_resampling="crossed"`` (default) draws one partner resample per replicate and applies it
    to every drawn seed, matching the crossed design (every seed meets the same partners), so
    partner-to-partner variance is kept in full. ``"nested"`` draws partners independently for each
    drawn seed (the classic hierarchical bootstrap), which averages part of the partner variance away
    and gives narrower intervals when partners differ a lot.

    Args:
        scores: float[num_seeds, num_partners, ...] units (see the module's axis convention).
        statistic: ``f(x, axis=1) -> float[reps]`` applied to replicates flattened to ``[reps, units]``;
            also called as ``f(x)`` on the flattened data for the estimate (``iqm``, ``np.nanmean``...).
        reps: number of bootstrap replicates (>= 1).
        level: coverage of the interval, in (0, 1).
        rng: source of randomness; the same generator state gives the same interval.
        partner_resampling: ``"crossed"`` or ``"nested"`` (see above).

    Returns:
        ``ConfidenceInterval(estimate, low, high)``; ``estimate`` is ``statistic`` on the original data.

    Raises:
        ValueError: ``scores`` with fewer than 2 dimensions or an empty axis; bad ``reps``, ``level`` or
            ``partner_resampling``.
    """
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim < 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"scores must be [num_seeds, num_partners, ...] with both > 0, got shape {x.shape}")
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    num_seeds, num_partners = x.shape[:2]
    seed_idx = rng.integers(0, num_seeds, size=(reps, num_seeds))
    if partner_resampling == "crossed":
        partner_idx = rng.integers(0, num_partners, size=(reps, 1, num_partners))
    elif partner_resampling == "nested":
        partner_idx = rng.integers(0, num_partners, size=(reps, num_seeds, num_partners))
    else:
        raise ValueError(f"partner_resampling must be 'crossed' or 'nested', got {partner_resampling!r}")
    replicates = x[seed_idx[:, :, None], partner_idx].reshape(reps, -1)
    values = np.asarray(statistic(replicates, axis=1), dtype=np.float64)
    alpha = (1.0 - level) / 2.0
    low, high = np.nanquantile(values, [alpha, 1.0 - alpha])
    return ConfidenceInterval(float(statistic(x.reshape(-1))), float(low), float(high))


def runs_bootstrap_ci(
    runs: Sequence[np.ndarray],
    statistic: Callable[[np.ndarray], float] = np.nanmean,
    *,
    reps: int = 2000,
    level: float = 0.95,
    rng: np.random.Generator,
) -> ConfidenceInterval:
    """Three-level bootstrap percentile interval over independent training runs: each replicate
    draws runs with replacement, then within each drawn run its partners (axis 1) and its episodes
    (axis 0) with replacement, and evaluates ``statistic`` on every cell drawn.

    For results pooled over training runs that each have their own partners (TBS's held-out pools,
    one per run): a run's partners and episodes share that run's training, so the run is the level
    that varies first; an interval that resamples only the pooled partners and episodes leaves the
    run-to-run variance out.

    Args:
        runs: per run ``float[episodes, partners, ...]`` (trailing axes, e.g. seats, travel with their
            partner); NaN cells are ignored by the default statistic.
        statistic: ``f(cells) -> float`` on the flattened cells of one replicate.
        reps: replicates (>= 1).
        level: coverage, in (0, 1).
        rng: source of randomness.

    Returns:
        ``ConfidenceInterval(estimate over all runs' cells, low, high)``.

    Raises:
        ValueError: no runs, a run with an empty axis, or a bad ``reps`` / ``level``.
    """
    xs = [np.asarray(r, dtype=np.float64) for r in runs]
    if not xs or any(x.ndim < 2 or x.shape[0] == 0 or x.shape[1] == 0 for x in xs):
        raise ValueError("runs must be non-empty [episodes, partners, ...] arrays")
    if reps < 1 or not 0.0 < level < 1.0:
        raise ValueError(f"need reps >= 1 and level in (0, 1), got {reps}, {level}")
    values = np.empty(reps)
    for i in range(reps):
        cells = []
        for r in rng.integers(0, len(xs), size=len(xs)):
            x = xs[r]
            pick = x[rng.integers(0, x.shape[0], size=x.shape[0])][
                :, rng.integers(0, x.shape[1], size=x.shape[1])
            ]
            cells.append(pick.reshape(-1))
        values[i] = statistic(np.concatenate(cells))
    alpha = (1.0 - level) / 2.0
    low, high = np.nanquantile(values, [alpha, 1.0 - alpha])
    return ConfidenceInterval(
        float(statistic(np.concatenate([x.reshape(-1) for x in xs]))), float(low), float(high)
    )


def spearman(
    ranking_a: Sequence[float] | Mapping[str, float], ranking_b: Sequence[float] | Mapping[str, float]
) -> float:
    """Spearman rank correlation of two rankings (or score lists) of the same items.

    Source: ZSC-Eval Sec. 5.1 / Table 2 (agreement of BR-Prox ranks with human ranks), via
    ``scipy.stats.spearmanr``.

    Args:
        ranking_a: scores or ranks, as a sequence (aligned by position) or a mapping item -> value.
        ranking_b: the same items, in the same form.

    Returns:
        rho in [-1, 1] (NaN if a ranking is constant).

    Raises:
        ValueError: different lengths or item sets, or fewer than 2 items.
    """
    if isinstance(ranking_a, Mapping) or isinstance(ranking_b, Mapping):
        if not (isinstance(ranking_a, Mapping) and isinstance(ranking_b, Mapping)):
            raise ValueError("pass two mappings or two sequences, not one of each")
        if set(ranking_a) != set(ranking_b):
            raise ValueError(f"rankings name different items: {sorted(set(ranking_a) ^ set(ranking_b))}")
        keys = sorted(ranking_a)
        a = np.array([ranking_a[k] for k in keys], dtype=np.float64)
        b = np.array([ranking_b[k] for k in keys], dtype=np.float64)
    else:
        a, b = np.asarray(ranking_a, dtype=np.float64), np.asarray(ranking_b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape or len(a) < 2:
        raise ValueError(f"rankings must be 1-D of equal length >= 2, got shapes {a.shape} and {b.shape}")
    return float(scipy.stats.spearmanr(a, b).statistic)


def rank_table(
    summary: pd.DataFrame,
    *,
    score: str = "iqm",
    item: str = "algorithm",
    group_by: Sequence[str] = ("layout",),
) -> pd.DataFrame:
    """Rank items (algorithms) by a score within each group (layout), 1 = best.

    Ties share the best rank (``method="min"``). Output: one row per group, one column per item, and a
    final ``mean`` row with each item's mean rank over groups.

    Args:
        summary: a frame with columns ``item``, ``score`` and ``group_by`` (e.g. from
            :func:`br_prox_summary` filtered to one ``partner_level``), one row per (group, item).
        score: column to rank by (higher is better).
        item: column naming the ranked items.
        group_by: columns defining the groups.

    Returns:
        DataFrame of ranks indexed by group, columns = items.

    Raises:
        ValueError: missing columns or several rows per (group, item).
    """
    missing = [c for c in (score, item, *group_by) if c not in summary.columns]
    if missing:
        raise ValueError(f"summary lacks columns {missing}; it has {list(summary.columns)}")
    keys = [*group_by, item]
    if summary.duplicated(keys).any():
        raise ValueError(f"several rows per {keys}; filter the summary first (e.g. one partner_level)")
    table = summary.pivot_table(index=list(group_by), columns=item, values=score, aggfunc="first")
    ranks = table.rank(axis=1, ascending=False, method="min")
    ranks.loc["mean" if len(group_by) == 1 else ("mean",) * len(group_by)] = ranks.mean(axis=0)
    return ranks


def mean_returns(results: pd.DataFrame) -> pd.DataFrame:
    """Average episodes into BR-Prox units: one row per (layout, algorithm, ego_seed, partner, seat).

    Args:
        results: a results frame (see the module docstring).

    Returns:
        Frame with the key columns, ``partner_level``, ``ego_return`` (mean sparse return) and
        ``episodes`` (count).

    Raises:
        ValueError: missing columns, an unknown ``partner_level``, or a partner with two levels.
    """
    _check_columns(results, RESULTS_COLUMNS, "results")
    bad = sorted(set(results["partner_level"]) - set(PARTNER_LEVELS))
    if bad:
        raise ValueError(f"unknown partner_level values {bad}; valid: {list(PARTNER_LEVELS)}")
    levels = results.groupby(["layout", "partner"])["partner_level"].nunique()
    if (levels > 1).any():
        raise ValueError(f"partners with more than one partner_level: {list(levels[levels > 1].index)}")
    keys = ["layout", "algorithm", "ego_seed", "partner", "partner_level", "seat"]
    grouped = results.groupby(keys, sort=True)["sparse_return"]
    return grouped.agg(ego_return="mean", episodes="size").reset_index()


def br_prox_units(
    results: pd.DataFrame, br_returns: pd.DataFrame, *, nonpositive_br: NonpositiveBR = "one"
) -> pd.DataFrame:
    """BR-Prox of every unit (ego seed, partner, seat) from per-episode results.

    Source: ZSC-Eval Sec. 4.3; unit and rules of docs/reference-protocol.md "Pipeline" item 9.

    Args:
        results: per-episode results frame (module docstring).
        br_returns: BR reference returns keyed by (layout, partner[, seat]) (module docstring).
        nonpositive_br: see :func:`br_prox`.

    Returns:
        :func:`mean_returns`' frame plus ``br_return`` and ``br_prox`` columns.

    Raises:
        ValueError: schema errors, or units without a BR return (the missing keys are listed).
    """
    _check_columns(br_returns, BR_RETURNS_COLUMNS, "br_returns")
    units = mean_returns(results)
    br_keys = ["layout", "partner", "seat"] if "seat" in br_returns.columns else ["layout", "partner"]
    br = br_returns.groupby(br_keys, sort=False)["br_return"].mean().reset_index()
    merged = units.merge(br, on=br_keys, how="left", validate="many_to_one")
    lacking = merged[merged["br_return"].isna()][br_keys].drop_duplicates()
    if len(lacking):
        rows = [tuple(r) for r in lacking.itertuples(index=False)][:10]
        raise ValueError(f"no BR return for {len(lacking)} {tuple(br_keys)} key(s), e.g. {rows}")
    merged["br_prox"] = br_prox(
        merged["ego_return"].to_numpy(), merged["br_return"].to_numpy(), nonpositive_br=nonpositive_br
    )
    return merged


def unit_array(units: pd.DataFrame, partners: Sequence[str] | None = None) -> np.ndarray:
    """Arrange one group's BR-Prox units as ``float64[num_seeds, num_partners, num_seats]``.

    Axis 0 is ego seeds in sorted order, axis 1 partners (sorted, or in the order of ``partners``),
    axis 2 seats in sorted order; a (seed, partner, seat) the group did not play is NaN. Seats are a
    trailing axis of their partner, so :func:`bootstrap_ci` resamples a partner with all its seats.

    Args:
        units: rows of :func:`br_prox_units` for one group, columns ``ego_seed, partner, seat,
            br_prox``.
        partners: the partner axis to use (e.g. every partner of the layout, so that arrays of several
            algorithms share it); partners absent from ``units`` get NaN slices.

    Returns:
        float64[num_seeds, num_partners, num_seats].

    Raises:
        ValueError: ``units`` names a partner missing from ``partners``.
    """
    table = units.pivot_table(
        index="ego_seed", columns=["partner", "seat"], values="br_prox", aggfunc="first", dropna=False
    ).sort_index(axis=0)
    seeds = table.index
    seats = sorted(units["seat"].unique())
    order = sorted(units["partner"].unique()) if partners is None else list(partners)
    unknown = sorted(set(units["partner"]) - set(order))
    if unknown:
        raise ValueError(f"units name partners {unknown} outside the partner axis {order}")
    columns = pd.MultiIndex.from_product([order, seats], names=["partner", "seat"])
    table = table.reindex(columns=columns)
    return table.to_numpy(dtype=np.float64).reshape(len(seeds), len(order), len(seats))


_CHECKPOINT_SUFFIX = re.compile(r"^(?P<candidate>.+)_(?P<slot>final|mid)$")


def candidate_of(partner: str) -> tuple[str, str]:
    """``(candidate, slot)`` of a partner id: ``c006_final`` -> ``("c006", "final")``,
    ``c006_mid`` -> ``("c006", "mid")``; any other id (a combination ``a+b``, a named partner) is a
    candidate of its own, slot ``""``."""
    match = _CHECKPOINT_SUFFIX.match(str(partner))
    if match is None or "+" in str(partner):
        return str(partner), ""
    return match["candidate"], match["slot"]


def candidate_array(units: pd.DataFrame, partners: Sequence[str] | None = None) -> np.ndarray:
    """One group's BR-Prox units as ``float64[num_seeds, num_candidates, num_slots, num_seats]``.

    The partners of one candidate (its ``mid`` and ``final`` checkpoints: one biased-agent training
    run, ZSC-Eval Alg. 1 line 7) are one entry of axis 1, their checkpoints axis 2 and the seats
    axis 3, so :func:`bootstrap_ci` and :func:`zsceval.stats.statistics.joint_bootstrap` resample
    candidates, the level that varies independently, with both checkpoints and both seats (the
    partners of a candidate share its training run; resampling them separately would count 2K
    correlated partners as independent and give too narrow intervals). Unplayed entries are NaN.

    Args:
        units: rows of :func:`br_prox_units` for one group, columns ``ego_seed, partner, seat,
            br_prox``.
        partners: every partner of the layout (so that arrays of several algorithms share the
            candidate axis); default: those in ``units``.

    Returns:
        float64[num_seeds, num_candidates, num_slots, num_seats]; candidates and slots sorted.

    Raises:
        ValueError: ``units`` names a partner missing from ``partners``.
    """
    order = sorted(units["partner"].unique()) if partners is None else list(partners)
    unknown = sorted(set(units["partner"]) - set(order))
    if unknown:
        raise ValueError(f"units name partners {unknown} outside the partner axis {order}")
    keys = {p: candidate_of(p) for p in order}
    candidates = sorted({c for c, _ in keys.values()})
    slots = sorted({s for _, s in keys.values()})
    frame = units.assign(
        candidate=units["partner"].map(lambda p: keys[p][0]), slot=units["partner"].map(lambda p: keys[p][1])
    )
    table = frame.pivot_table(
        index="ego_seed",
        columns=["candidate", "slot", "seat"],
        values="br_prox",
        aggfunc="first",
        dropna=False,
    ).sort_index(axis=0)
    seats = sorted(units["seat"].unique())
    columns = pd.MultiIndex.from_product([candidates, slots, seats], names=["candidate", "slot", "seat"])
    table = table.reindex(columns=columns)
    return table.to_numpy(dtype=np.float64).reshape(len(table.index), len(candidates), len(slots), len(seats))


def unit_matrix(units: pd.DataFrame) -> np.ndarray:
    """:func:`unit_array` flattened to ``float64[num_seeds, num_partners * num_seats]``.

    Columns are (partner, seat) pairs in sorted order. For display only: do not bootstrap this
    matrix, whose columns :func:`bootstrap_ci` would resample as separate partners.
    """
    array = unit_array(units)
    return array.reshape(array.shape[0], -1)


def br_prox_summary(
    results: pd.DataFrame,
    br_returns: pd.DataFrame,
    *,
    rng: np.random.Generator,
    reps: int = 2000,
    level: float = 0.95,
    nonpositive_br: NonpositiveBR = "one",
    split_levels: bool = True,
    levels: LevelRule = "checkpoint",
) -> pd.DataFrame:
    """IQM BR-Prox with bootstrap CIs per (layout, algorithm[, partner level]).

    Units are (ego seed, partner, seat) with returns averaged over episodes (ZSC-Eval Sec. 4.3;
    docs/reference-protocol.md "Pipeline" item 9); they are pooled with :func:`iqm` and given a
    :func:`bootstrap_ci` over the ``[seeds, candidates, checkpoints, seats]`` array of
    :func:`candidate_array`: the interval resamples candidates (a candidate's mid and final checkpoints
    together, both seats), then ego seeds. A level with fewer than :data:`MIN_INFORMATIVE_CANDIDATES`
    candidates is marked ``informative = False``: its interval spans most of [0, 1] whatever the agent does.
    Groups are processed in sorted order of (layout, algorithm, partner_level) with ``partner_level`` ordered
    ``all, moderate, expert``; group ``i`` uses ``rng.spawn(num_groups)[i]``, so every group's interval is
    reproducible from ``rng`` alone.

    The moderate/expert split follows ``levels`` (:func:`assign_levels`): ``"checkpoint"`` keeps the
    ``partner_level`` column (``mid`` -> moderate, ``final`` -> expert: the ZSC-Eval protocol and the
    pipeline); ``"median"`` is the paper's text (Sec. 5.2, Fig. 6): moderate iff the partner's return is at
    most the median over the layout's partners.

    Args:
        results: per-episode results frame (module docstring).
        br_returns: BR reference returns (module docstring).
        rng: source of randomness for the bootstrap.
        reps: bootstrap replicates per group.
        level: CI coverage.
        nonpositive_br: see :func:`br_prox`.
        split_levels: also report ``moderate`` and ``expert`` rows besides ``all``.
        levels: ``"checkpoint"`` or ``"median"`` (see above).

    Returns:
        One row per group with columns ``layout, algorithm, partner_level, iqm, ci_low, ci_high,
        num_seeds, num_partners, num_candidates, num_units, informative`` (``partner_level`` is
        ``"all"``, ``"moderate"`` or ``"expert"``; ``num_units`` counts non-NaN units).
    """
    results = assign_levels(results, br_returns, levels)
    units = br_prox_units(results, br_returns, nonpositive_br=nonpositive_br)
    groups: list[tuple[str, str, str, pd.DataFrame]] = []
    for (layout, algorithm), frame in units.groupby(["layout", "algorithm"], sort=True):
        groups.append((layout, algorithm, ALL_LEVELS, frame))
        if split_levels:
            for partner_level in PARTNER_LEVELS:
                sub = frame[frame["partner_level"] == partner_level]
                if len(sub):
                    groups.append((layout, algorithm, partner_level, sub))
    rows = []
    for (layout, algorithm, partner_level, frame), child in zip(groups, rng.spawn(len(groups))):
        matrix = candidate_array(frame)
        ci = bootstrap_ci(matrix, iqm, reps=reps, level=level, rng=child)
        rows.append(
            {
                "layout": layout,
                "algorithm": algorithm,
                "partner_level": partner_level,
                "iqm": ci.estimate,
                "ci_low": ci.low,
                "ci_high": ci.high,
                "num_seeds": matrix.shape[0],
                "num_partners": frame["partner"].nunique(),
                "num_candidates": matrix.shape[1],
                "num_units": int(np.count_nonzero(~np.isnan(matrix))),
                "informative": matrix.shape[1] >= MIN_INFORMATIVE_CANDIDATES,
            }
        )
    return pd.DataFrame(rows)


def levels_by_median(partner_returns: Mapping[str, float]) -> dict[str, str]:
    """The paper's moderate/expert split: moderate iff the partner's return is <= the median.

    Source: ZSC-Eval Sec. 5.2 ("Performance Degradation with Expert Evaluation Partners"), where the
    return is the partner's self-play return ``J(pi^P)``, here typically its BR return.

    Args:
        partner_returns: partner id -> return.

    Returns:
        partner id -> ``"moderate"`` or ``"expert"``.
    """
    if not partner_returns:
        raise ValueError("partner_returns is empty")
    median = float(np.median(np.fromiter(partner_returns.values(), dtype=np.float64)))
    return {p: ("moderate" if r <= median else "expert") for p, r in partner_returns.items()}


def assign_levels(results: pd.DataFrame, br_returns: pd.DataFrame, rule: LevelRule) -> pd.DataFrame:
    """Results with ``partner_level`` set by ``rule``.

    ``"checkpoint"``: unchanged (``mid`` checkpoints moderate, ``final`` expert; the ZSC-Eval protocol,
    docs/reference-protocol.md "Pipeline" item 7). ``"median"``: per layout, :func:`levels_by_median` of each
    partner's mean BR return (its return with its approximate best response, the stand-in for the paper's
    self-play return ``J(pi^P)``, which the pipeline does not measure; ZSC-Eval Sec. 5.2).

    Args:
        results: per-episode results frame (module docstring).
        br_returns: BR reference returns (module docstring).
        rule: ``"checkpoint"`` or ``"median"``.

    Returns:
        A results frame (a copy when relabelled).

    Raises:
        ValueError: an unknown rule (lists the valid ones), or a partner without a BR return.
    """
    if rule not in LEVEL_RULES:
        raise ValueError(f"unknown levels rule {rule!r}; valid: {', '.join(LEVEL_RULES)}")
    if rule == "checkpoint":
        return results
    _check_columns(br_returns, BR_RETURNS_COLUMNS, "br_returns")
    mean_br = br_returns.groupby(["layout", "partner"])["br_return"].mean()
    labels: dict[tuple[str, str], str] = {}
    for layout, per_partner in mean_br.groupby(level="layout"):
        split = levels_by_median(dict(zip(per_partner.index.get_level_values("partner"), per_partner)))
        labels.update({(layout, p): level for p, level in split.items()})
    keys = list(zip(results["layout"], results["partner"]))
    lacking = sorted({k for k in keys if k not in labels})
    if lacking:
        raise ValueError(f"no BR return for (layout, partner) {lacking[:10]}: cannot split by median")
    return results.assign(partner_level=[labels[k] for k in keys])


def _check_columns(frame: pd.DataFrame, required: Sequence[str], name: str) -> None:
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(f"{name} frame lacks columns {missing}; it has {list(frame.columns)}")
    if frame.empty:
        raise ValueError(f"{name} frame is empty")
