"""The TBS table of ``zsceval report``: scaled reward against the held-out pool per layout and agent
(TBS paper, Sec. 4; written by the ``tbs.evaluate`` jobs as ``tbs_eval/results.parquet``).

:class:`TBSSection` is the report section (entry-point group ``zsceval.report_sections``, name
``tbs``): the per-run and pooled tables beside the bench tables, or alone in a folder of TBS results
only (a ``zsceval train --algo tbs`` run)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from zsceval.algorithms.tbs.results import AGENTS, cube_ci, result_cube, summarize
from zsceval.plugins import ReportOptions, ReportSection
from zsceval.stats.records import frame_records

__all__ = [
    "TBS_RESULTS",
    "TBSSection",
    "chain_k",
    "chain_variant",
    "find_tbs_results",
    "format_tbs",
    "plot_pooled",
    "tbs_pooled",
    "tbs_summary",
]

TBS_RESULTS = "tbs_eval/results.parquet"
"""Where a ``tbs.evaluate`` job leaves its episodes, relative to the ego job's folder."""


def find_tbs_results(directory: str | Path) -> list[Path]:
    """Every ``tbs_eval/results.parquet`` under ``directory`` (a bench or a ``train --algo tbs`` run)."""
    return sorted(Path(directory).rglob(TBS_RESULTS))


PAIRED = ("TBS", "Hypothesis")
"""Agents whose paired difference with the single BR each run's table adds (``"TBS - BR"``)."""


def paired_with_br(frame: pd.DataFrame, *, reps: int = 2000, seed: int = 0) -> pd.DataFrame:
    """One run's paired differences ``A - BR`` for A in :data:`PAIRED` (where both played): the mean
    over cells (episode, held-out pair, seat) of A's scaled reward and return minus the single BR's
    in the same cell, with the two-level bootstrap CI of :func:`~.results.summarize` (held-out pairs
    without a scale are left out of ``scaled``). Columns as :func:`~.results.summarize`'s."""
    rows = []
    agents = set(frame["agent"])
    for agent in [a for a in PAIRED if a in agents and "BR" in agents]:
        row: dict = {"agent": f"{agent} - BR"}
        for col in ("scaled", "sparse_return"):
            x = result_cube(frame[frame["agent"] == agent], col)
            row.update(
                cube_ci(x - result_cube(frame[frame["agent"] == "BR"], col), col, reps=reps, seed=seed)
            )
        rows.append(row)
    return pd.DataFrame(rows)


def tbs_summary(paths: list[Path], *, reps: int = 2000, seed: int = 0) -> pd.DataFrame:
    """One row per (layout, run, agent): scaled reward and return with bootstrap CIs
    (:func:`~.results.summarize`), then the run's paired differences with the single BR
    (:func:`paired_with_br`: rows ``TBS - BR``, ``Hypothesis - BR``); ``run`` is the ego job's folder
    relative to the common root."""
    rows = []
    root = Path(*Path(paths[0]).parts[:-3]) if len(paths) == 1 else Path(_common(paths))
    for path in paths:
        frame = pd.read_parquet(path)
        table = summarize(frame, reps=reps, seed=seed)
        paired = paired_with_br(frame, reps=reps, seed=seed)
        table = pd.concat([table, paired], ignore_index=True) if len(paired) else table
        table.insert(
            0, "run", str(path.parent.parent.relative_to(root)) if path.parent.parent != root else "."
        )
        table.insert(0, "layout", str(frame["layout"].iloc[0]))
        table["heldout_pairs"] = int(frame["heldout"].nunique())
        table["scaled_pairs"] = scaled_pairs(frame)
        rows.append(table)
    return pd.concat(rows, ignore_index=True)


def scaled_pairs(frame: pd.DataFrame) -> int:
    """How many held-out pairs of one run have a scale (a positive self-play return: the Oracle's),
    i.e. enter the scaled reward; the sparse return counts every pair. ``frame``: the rows of
    :func:`~.results.scaled_rewards` (columns ``heldout``, ``scaled``)."""
    return int(frame.groupby("heldout")["scaled"].apply(lambda s: s.notna().any()).sum())


def chain_variant(path: str | Path) -> tuple[str, int | None]:
    """The settings and seed of the TBS chain that wrote ``path`` (``<chain>/ego/tbs_eval/results.parquet``).

    The settings are the chain's ``chain.json``: its ``algo.*`` and other overrides (``run.*``, such as
    the thread count, left out: they do not change what is trained), its preset when not ``quick`` and
    its ``--steps``, sorted and joined (``"algo.fixed_k=2, algo.pool_size=10"``). Runs pool only with
    runs of the same settings. A chain whose ego job (``<chain>/ego/DONE.json``) trained its ToM
    models with the prior bias (``tom_prior_bias``, the default since 2026-11-28) adds
    ``algo.tom_prior_bias=true``: a chain re-run with it on an older chain's stages (``--resume``
    keeps the older ``chain.json``) is another method, not another seed of the same one.

    Returns:
        ``(settings, seed)``; ``("", None)`` where there is no ``chain.json`` (a bench's TBS egos).
    """
    import json

    record = Path(path).parents[2] / "chain.json"
    try:
        chain = json.loads(record.read_text())
    except (OSError, ValueError):
        return "", None
    parts = [o.strip() for o in chain.get("overrides", []) if not o.strip().startswith("run.")]
    if chain.get("preset") not in (None, "quick"):
        parts.append(f"preset={chain['preset']}")
    if chain.get("steps") is not None:
        parts.append(f"steps={chain['steps']}")
    try:
        ego = json.loads((Path(path).parents[1] / "DONE.json").read_text())["job"]["params"]
    except (OSError, ValueError, KeyError, TypeError):
        ego = {}
    if ego.get("tom_prior_bias") is True and not any(p.startswith("algo.tom_prior_bias=") for p in parts):
        parts.append("algo.tom_prior_bias=true")
    return ", ".join(sorted(parts)), chain.get("seed")


def chain_k(path: str | Path) -> int | None:
    """The number of clusters k of the TBS chain that wrote ``path`` (``<chain>/ego/tbs_eval/
    results.parquet``): ``k`` of the chain's one ``<layout>/tbs/cluster_*/clustering.json``.

    Returns:
        k, or None where the chain has no clustering record or several (a bench folder).
    """
    import json

    records = sorted((Path(path).parents[2]).glob("*/tbs/cluster_*/clustering.json"))
    if len(records) != 1:
        return None
    try:
        return int(json.loads(records[0].read_text())["k"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def tbs_pooled(paths: list[Path], *, reps: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Scaled reward pooled over the runs (seeds) of each layout and settings (:func:`chain_variant`)
    that has two or more, with bootstrap CIs, and the paired differences TBS - BR and Hypothesis - BR.

    Runs pool only with runs of the same chain settings (a fixed-k chain is not pooled with the
    paper's k rule), and only over different seeds: two chains of one seed share their held-out pool,
    so such a group is not pooled (a warning names it; e.g. copies that retrain only the ToM models).

    Each run has its own training pool, clusters, best responses and held-out pool, so the interval
    resamples the training runs first, then each drawn run's held-out pairs, then its episodes
    (:func:`zsceval.stats.metrics.runs_bootstrap_ci`): retraining moves a run's results by more than
    its pairs and episodes vary (docs/tbs.md). The row ``TBS - BR`` is the mean over cells
    (episode, held-out pair, seat) of TBS's scaled reward minus the single BR's in the same cell,
    resampled the same way; an interval above 0 says TBS is better over training runs. With 3 runs
    the interval rests on 3 draws: state it at two bootstrap seeds (``seed``). Held-out pairs
    without a scale (their own pair never scores) are left out.

    Args:
        paths: ``tbs_eval/results.parquet`` files (:func:`find_tbs_results`).

    Returns:
        Columns ``layout, variant, runs, k, heldout_pairs, agent, scaled, scaled_low, scaled_high``
        (``variant``: the settings of :func:`chain_variant`; ``k``: each run's number of clusters,
        :func:`chain_k`, in the order of ``paths``, e.g. ``"5, 7"``, ``"?"`` where unknown); no rows
        for a group with a single run.
    """
    import warnings

    from zsceval.stats.metrics import runs_bootstrap_ci

    frames: dict[tuple[str, str], list[tuple[int | None, pd.DataFrame, int | None]]] = {}
    for path in paths:
        frame = pd.read_parquet(path)
        variant, run_seed = chain_variant(path)
        frames.setdefault((str(frame["layout"].iloc[0]), variant), []).append(
            (run_seed, frame, chain_k(path))
        )
    rows = []
    for (layout, variant), group in sorted(frames.items()):
        if len(group) < 2:
            continue
        seeds = [s for s, _, _ in group if s is not None]
        if len(set(seeds)) < len(seeds):
            warnings.warn(
                f"TBS runs of {layout} ({variant or 'default settings'}) repeat a seed ({sorted(seeds)}): "
                "they share one held-out pool, so they are not pooled",
                stacklevel=2,
            )
            continue
        runs = [f for _, f, _ in group]
        ks = ", ".join("?" if k is None else str(k) for _, _, k in group)
        agents = [a for a in AGENTS if all(a in set(f["agent"]) for f in runs)]
        if not agents:  # runs written by different versions share no agent: nothing to pool
            continue
        data = {a: _run_cubes(runs, a) for a in agents}
        for agent in PAIRED:
            if agent in data and "BR" in data:
                data[f"{agent} - BR"] = [x - y for x, y in zip(data[agent], data["BR"], strict=True)]
        keeps = [~np.isnan(x).all(axis=(0, 2)) for x in data[agents[0]]]
        for agent, xs in data.items():
            kept = [x[:, k] for x, k in zip(xs, keeps, strict=True) if k.any()]
            ci = runs_bootstrap_ci(kept, np.nanmean, reps=reps, rng=np.random.default_rng(seed))
            pairs = int(sum(k.sum() for k in keeps))
            rows.append({"layout": layout, "variant": variant, "runs": len(runs), "k": ks,
                         "heldout_pairs": pairs, "agent": agent, "scaled": ci.estimate,
                         "scaled_low": ci.low, "scaled_high": ci.high})  # fmt: skip
    columns = [
        "layout",
        "variant",
        "runs",
        "k",
        "heldout_pairs",
        "agent",
        "scaled",
        "scaled_low",
        "scaled_high",
    ]
    return pd.DataFrame(rows, columns=columns)


def plot_pooled(pooled: pd.DataFrame, folder: str | Path) -> list[Path]:
    """One bar chart per layout and chain settings of :func:`tbs_pooled` (scaled reward per agent with
    its CI; the paired difference TBS - BR in the title), saved atomically as
    ``folder/tbs_pooled_<layout>.png``, or ``tbs_pooled_<layout>_<settings>.png`` for chains with
    settings (``folder`` is created).

    Args:
        pooled: the table of :func:`tbs_pooled`.
        folder: output folder.

    Returns:
        The written paths, one per layout; none for an empty table.
    """
    import re

    from zsceval.algorithms.tbs.results import plot_tbs

    written = []
    if len(pooled):
        Path(folder).mkdir(parents=True, exist_ok=True)
    if "variant" not in pooled:
        pooled = pooled.assign(variant="")
    for (layout, variant), g in pooled.groupby(["layout", "variant"], sort=True):
        diff = g[g["agent"] == "TBS - BR"]
        runs, pairs = int(g["runs"].iloc[0]), int(g["heldout_pairs"].iloc[0])
        title = f"{layout}: {runs} runs pooled ({pairs} held-out pairs)"
        if variant:
            title = f"{layout} ({variant}): {runs} runs pooled ({pairs} held-out pairs)"
        if len(diff):
            d = diff.iloc[0]
            title += f"; TBS - BR {d.scaled:+.3f} [{d.scaled_low:+.3f}, {d.scaled_high:+.3f}]"
        slug = re.sub(r"[^A-Za-z0-9.]+", "-", variant).strip("-")
        path = Path(folder) / (f"tbs_pooled_{layout}_{slug}.png" if slug else f"tbs_pooled_{layout}.png")
        written.append(plot_tbs(g[~g["agent"].str.endswith(" - BR")], path, title=title))
    return written


def _run_cubes(runs: list[pd.DataFrame], agent: str) -> list[np.ndarray]:
    """Per run, ``float64 [episodes, held-out pairs, 2]`` of ``agent``'s scaled reward (NaN where a
    pair has no scale)."""
    return [result_cube(f[f["agent"] == agent], "scaled") for f in runs]


def _common(paths: list[Path]) -> str:
    import os

    return os.path.commonpath([str(p) for p in paths])


def format_tbs(summary: pd.DataFrame, level: float = 0.95, pooled: pd.DataFrame | None = None) -> str:
    """Text table of :func:`tbs_summary`: scaled reward (return / the held-out pair's self-play
    return; the Oracle is 1 by construction) and mean sparse return, with CIs; then the runs of a
    layout pooled (:func:`tbs_pooled`), where given and not empty."""
    lines = [f"TBS protocol: held-out pool, both seats; scaled reward and sparse return [{level:.0%} CI]"]
    for (lay, run), g in summary.groupby(["layout", "run"], sort=True):
        pairs = f"{int(g['heldout_pairs'].iloc[0])} held-out pairs"
        if "scaled_pairs" in g:  # the scaled reward's mean is over these; the return's over all
            pairs += f", {int(g['scaled_pairs'].iloc[0])} with a scale"
        lines.append(f"\n{lay}  ({run}, {pairs})")
        lines.append(f"  {'agent':<15}  {'scaled reward':>24}  {'sparse return':>26}")
        for r in g.itertuples():
            scaled = f"{r.scaled:6.3f} [{r.scaled_low:6.3f}, {r.scaled_high:6.3f}]"
            ret = f"{r.sparse_return:7.1f} [{r.sparse_return_low:6.1f}, {r.sparse_return_high:6.1f}]"
            lines.append(f"  {r.agent:<15}  {scaled:>24}  {ret:>26}")
    if pooled is not None and len(pooled) and "variant" not in pooled:
        pooled = pooled.assign(variant="")
    groups = pooled.groupby(["layout", "variant"], sort=True) if pooled is not None and len(pooled) else ()
    for (lay, variant), g in groups:
        runs, pairs = int(g["runs"].iloc[0]), int(g["heldout_pairs"].iloc[0])
        settings = f"; {variant}" if variant else ""
        lines.append(f"\n{lay}  (pooled over {runs} runs{settings}: {pairs} held-out pairs with a scale)")
        lines.append(f"  {'agent':<15}  {'scaled reward':>24}")
        for r in g.itertuples():
            lines.append(f"  {r.agent:<15}  {r.scaled:6.3f} [{r.scaled_low:6.3f}, {r.scaled_high:6.3f}]")
    if pooled is not None and len(pooled):
        lines.extend(_settings_overview(pooled))
    return "\n".join(lines)


def _settings_overview(pooled: pd.DataFrame) -> list[str]:
    """Per layout with two or more pooled chain settings (e.g. the paper's k rule and fixed k = 2, 3, 4),
    one line per settings: runs, each run's k, TBS, the single BR and TBS - BR with its CI."""
    lines = []
    for lay, g in pooled.groupby("layout", sort=True):
        variants = list(dict.fromkeys(g["variant"]))
        if len(variants) < 2:
            continue
        common = set.intersection(*(set(v.split(", ")) for v in variants)) - {""}
        lines.append(f"\n{lay}: TBS against the single BR by chain settings (pooled over seeds)")
        lines.append(f"  {'settings':<26} {'runs':>4}  {'k':<10} {'TBS':>6} {'BR':>6}  {'TBS - BR [CI]':>26}")
        for variant in variants:
            v = g[g["variant"] == variant].set_index("agent")
            if not {"TBS", "BR", "TBS - BR"} <= set(v.index):
                continue
            own = ", ".join(p for p in variant.split(", ") if p and p not in common) or "defaults"
            d = v.loc["TBS - BR"]
            diff = f"{d.scaled:+.3f} [{d.scaled_low:+.3f}, {d.scaled_high:+.3f}]"
            lines.append(
                f"  {own:<26} {int(v['runs'].iloc[0]):>4}  {v['k'].iloc[0]:<10} "
                f"{v.loc['TBS', 'scaled']:6.3f} {v.loc['BR', 'scaled']:6.3f}  {diff:>26}"
            )
        if common:
            lines.append(f"  (every row: {', '.join(sorted(common))})")
    return lines


@dataclass(frozen=True)
class TBSTables:
    """What :class:`TBSSection` gathers: per-run (:func:`tbs_summary`) and pooled (:func:`tbs_pooled`)."""

    summary: pd.DataFrame
    pooled: pd.DataFrame


class TBSSection(ReportSection):
    """TBS evaluations (tbs_eval/results.parquet of a bench or of `zsceval train --algo tbs`, any
    depth) add the TBS table: scaled reward against the held-out pool per agent, per run and pooled
    over the runs of a layout (DIR may hold only those); figures/tbs_pooled_<layout>.png holds the
    pooled bars."""

    def gather(self, directory: Path, options: ReportOptions) -> TBSTables | None:
        """:func:`tbs_summary` and :func:`tbs_pooled` of the folder's TBS results; None without any."""
        paths = find_tbs_results(directory)
        if not paths:
            return None
        return TBSTables(
            tbs_summary(paths, reps=options.reps, seed=options.seed),
            tbs_pooled(paths, reps=options.reps, seed=options.seed),
        )

    def to_json(self, data: TBSTables) -> dict[str, Any]:
        """``{"tbs": per-run records, "tbs_pooled": pooled records}``."""
        return {"tbs": frame_records(data.summary), "tbs_pooled": frame_records(data.pooled)}

    def to_text(self, data: TBSTables, options: ReportOptions) -> str:
        """:func:`format_tbs` at the report's CI level."""
        return format_tbs(data.summary, options.level, data.pooled)

    def figures(self, data: TBSTables, folder: Path) -> list[Path]:
        """:func:`plot_pooled` (none without pooled rows)."""
        return plot_pooled(data.pooled, folder) if len(data.pooled) else []
