"""BR-Prox reports: tables (text / JSON) and seaborn figures from a results folder.

Inputs (a folder ``DIR``):
    * ``results.parquet``: per-episode results, schema of :mod:`zsceval.stats.metrics`.
    * ``br_returns.parquet``: BR reference returns, schema of :mod:`zsceval.stats.metrics`.
    * ``features.parquet`` (optional): one row per partner candidate with columns ``layout``,
      ``candidate_id``, optionally ``selected`` (bool), and one numeric column per behavior feature.
      Partner-set manifests (:mod:`zsceval.evaluation.manifest`) can mark the selected candidates instead.
    * ``unhelpful.parquet`` (optional): every ego's games with the unhelpful partners
      (:func:`zsceval.evaluation.strata.unhelpful_results`), for the partner strata.

Partner strata (after Hypothetical Minds): :func:`strata_rows` and :func:`format_strata`
show per algorithm the skilled stratum (ZSC-Eval's *expert* partners, final checkpoints) and the
semi-skilled one (ZSC-Eval's *moderate* partners, mid checkpoints) by IQM BR-Prox, and the unhelpful
partners by mean sparse return (they have no best response, so no BR-Prox).

Figures (PNG, written atomically into ``DIR/figures``):
    * ``br_prox.png``: IQM BR-Prox per algorithm with 95% CI error bars, one panel per layout.
    * ``br_prox_levels.png``: the same split into moderate and expert partners (ZSC-Eval Fig. 6).
    * ``probability_of_improvement.png``: ``P(X > Y)`` with 95% CIs for every pair, one panel per layout.
    * ``performance_profiles.png``: fraction of units above each BR-Prox threshold with CI bands.
    * ``ranks.png``: bootstrap distribution of each algorithm's rank, one panel per layout.
    * ``compare_<reference>.png``: our IQM BR-Prox against a reference table's (``--compare``).
    * ``partners_pca_<layout>.png``: first two principal components of the candidates' normalized
      behavior features, selected partners highlighted (ZSC-Eval Fig. 3).
    * ``partners_features_<layout>.png``: heatmap of the selected partners' normalized features.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from zsceval.bench.br_notes import folder_notes  # noqa: E402
from zsceval.evaluation.manifest import PartnerSetManifest  # noqa: E402
from zsceval.generation.selection import normalize_features  # noqa: E402
from zsceval.io import atomic_path
from zsceval.stats.metrics import (  # noqa: E402
    ALL_LEVELS,
    MIN_INFORMATIVE_CANDIDATES,
    PARTNER_LEVELS,
    RESAMPLING,
    br_prox_summary,
    br_prox_units,
)
from zsceval.stats.records import frame_records as records  # noqa: E402, F401 (re-exported)
from zsceval.stats.statistics import comparison_tables  # noqa: E402

RESULTS_FILE = "results.parquet"
BR_RETURNS_FILE = "br_returns.parquet"
FEATURES_FILE = "features.parquet"
FIGURES_DIR = "figures"
FEATURE_KEY_COLUMNS: tuple[str, ...] = ("layout", "candidate_id", "selected")

STRATA: tuple[tuple[str, str], ...] = (("skilled", "expert"), ("semi-skilled", "moderate"))
"""The strata with best responses and the ZSC-Eval partner level each one is."""

STRATA_COLUMNS: tuple[str, ...] = (
    "layout", "algorithm", "stratum", "partners", "metric", "estimate", "ci_low", "ci_high", "num_seeds",
)  # fmt: skip
"""Columns of :func:`strata_rows`."""


def read_tables(directory: str | Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
    """Read ``results.parquet``, ``br_returns.parquet`` and (if present) ``features.parquet``.

    Raises:
        FileNotFoundError: a required file is missing (named).
    """
    directory = Path(directory)
    for name in (RESULTS_FILE, BR_RETURNS_FILE):
        if not (directory / name).is_file():
            raise FileNotFoundError(
                f"{directory / name} not found: a report needs {RESULTS_FILE} and {BR_RETURNS_FILE}"
            )
    features_path = directory / FEATURES_FILE
    features = pd.read_parquet(features_path) if features_path.is_file() else None
    return pd.read_parquet(directory / RESULTS_FILE), pd.read_parquet(directory / BR_RETURNS_FILE), features


def summarize(
    results: pd.DataFrame,
    br_returns: pd.DataFrame,
    *,
    seed: int = 0,
    reps: int = 2000,
    level: float = 0.95,
    nonpositive_br: str = "one",
    levels: str = "checkpoint",
) -> pd.DataFrame:
    """:func:`~zsceval.stats.metrics.br_prox_summary` with ``rng = np.random.default_rng(seed)``."""
    return br_prox_summary(
        results,
        br_returns,
        rng=np.random.default_rng(seed),
        reps=reps,
        level=level,
        nonpositive_br=nonpositive_br,
        levels=levels,
    )


def compare_algorithms(
    results: pd.DataFrame,
    br_returns: pd.DataFrame,
    *,
    seed: int = 0,
    reps: int = 2000,
    level: float = 0.95,
    nonpositive_br: str = "one",
) -> dict[str, pd.DataFrame]:
    """:func:`~zsceval.stats.statistics.comparison_tables` over all partners, with
    ``rng = np.random.default_rng([seed, 1])`` (a stream apart from :func:`summarize`'s)."""
    units = br_prox_units(results, br_returns, nonpositive_br=nonpositive_br)
    return comparison_tables(units, rng=np.random.default_rng([seed, 1]), reps=reps, level=level)


def format_poi(poi: pd.DataFrame, *, level: float = 0.95) -> str:
    """Per layout, a matrix of ``P(row > column)`` with its CI (3 decimals)."""
    lines = [
        f"Probability of improvement P(row > column) [{level:.0%} CI], over (partner, seat) tasks; the "
        f"intervals resample {RESAMPLING}"
    ]
    for layout, frame in poi.groupby("layout", sort=True):
        names = sorted(set(frame["algorithm_x"]) | set(frame["algorithm_y"]))
        few = int(frame["num_candidates"].min()) if "num_candidates" in frame else MIN_INFORMATIVE_CANDIDATES
        cells = {
            (r.algorithm_x, r.algorithm_y): format_cell(r.poi, r.ci_low, r.ci_high)
            if few >= MIN_INFORMATIVE_CANDIDATES
            else f"{r.poi:.3f} [n/i]"
            for r in frame.itertuples()
        }
        rows = [[a, *(cells.get((a, b), "-") for b in names)] for a in names]
        lines += ["", f"layout: {layout}", *_table(["algorithm", *names], rows)]
        if few < MIN_INFORMATIVE_CANDIDATES:
            lines.append(
                f"[n/i]: not informative, the set has {few} candidates (an interval needs at least "
                f"{MIN_INFORMATIVE_CANDIDATES})"
            )
    return "\n".join(lines)


def format_ranks(ranks: pd.DataFrame) -> str:
    """Per layout: IQM, rank, bootstrap mean rank and the probability of each rank."""
    lines = ["Ranks by IQM BR-Prox (1 = best) and their bootstrap distribution"]
    for layout, frame in ranks.groupby("layout", sort=True):
        probs = sorted((c for c in frame.columns if c.startswith("p_rank_")), key=lambda c: int(c[7:]))
        probs = [c for c in probs if frame[c].notna().any()]
        header = ["algorithm", "iqm", "rank", "mean rank", *(f"P(rank {c[7:]})" for c in probs)]
        rows = [
            [r.algorithm, f"{r.iqm:.3f}", str(int(r.rank)), f"{r.mean_rank:.2f}"]
            + [f"{getattr(r, c):.2f}" for c in probs]
            for r in frame.sort_values(["rank", "algorithm"]).itertuples()
        ]
        lines += ["", f"layout: {layout}", *_table(header, rows)]
    return "\n".join(lines)


def format_profiles(
    profiles: pd.DataFrame, *, thresholds: Sequence[float] = (0.25, 0.5, 0.75, 0.9), level: float = 0.95
) -> str:
    """Per layout: fraction of units with BR-Prox above a few thresholds (nearest profile point)."""
    lines = [f"Performance profiles: fraction of units with BR-Prox > tau [{level:.0%} CI]"]
    for layout, frame in profiles.groupby("layout", sort=True):
        grid = np.sort(frame["threshold"].unique())
        taus = sorted({float(grid[np.abs(grid - t).argmin()]) for t in thresholds})
        rows = []
        for algorithm, sub in frame.groupby("algorithm", sort=True):
            sub = sub.set_index("threshold")
            rows.append(
                [algorithm]
                + [
                    format_cell(sub.loc[t, "fraction"], sub.loc[t, "ci_low"], sub.loc[t, "ci_high"])
                    for t in taus
                ]
            )
        lines += ["", f"layout: {layout}", *_table(["algorithm", *(f"tau={t:g}" for t in taus)], rows)]
    return "\n".join(lines)


def format_comparison(rows: pd.DataFrame, layouts: pd.DataFrame, name: str) -> str:
    """Our IQM BR-Prox next to the reference's, their difference (``*``: more than
    :data:`~zsceval.bench.comparison.DIFFERENCE_FLAG`; ``!``: the reference outside our CI), and
    Spearman rho per layout."""
    from zsceval.bench.comparison import DIFFERENCE_FLAG

    lines = [
        f"Comparison with {name}: IQM BR-Prox (all partners) vs the reference; Spearman rho per layout",
        f"  ours - ref: * where it exceeds {DIFFERENCE_FLAG:.2f} in size; ! where the reference lies "
        "outside our 95% CI",
    ]
    for layout, frame in rows.groupby("layout", sort=True):
        info = layouts.set_index("layout").loc[layout]
        if info["num_common"] == 0:
            lines += ["", f"layout: {layout}: no reference numbers"]
            continue
        rho = (
            "n/a (fewer than 2 common algorithms)"
            if np.isnan(info["spearman"])
            else f"{info['spearman']:.2f}"
        )
        table_rows = [
            [
                r.algorithm,
                format_cell(r.iqm, r.ci_low, r.ci_high),
                "-" if np.isnan(r.reference) else f"{r.reference:.2f}",
                "-"
                if np.isnan(r.reference)
                else f"{r.difference:+.2f}" + (" *" if r.flagged else "") + (" !" if r.outside_ci else ""),
            ]
            for r in frame.sort_values("algorithm").itertuples()
        ]
        lines += ["", f"layout: {layout} (Spearman rho {rho}, {int(info['num_common'])} algorithms)"]
        lines += _table(["algorithm", "ours", name, "ours - ref"], table_rows)
    return "\n".join(lines)


def format_cell(iqm: float, low: float, high: float) -> str:
    """``"0.812 [0.700, 0.900]"``: IQM and CI bounds, 3 decimals."""
    return f"{iqm:.3f} [{low:.3f}, {high:.3f}]"


def format_table(summary: pd.DataFrame, *, level: float = 0.95) -> str:
    """Text table: per layout, one row per algorithm; columns all / moderate / expert partners.

    Args:
        summary: output of :func:`summarize`.
        level: CI coverage, for the header.

    Returns:
        The table as text (no trailing newline).
    """
    columns = [ALL_LEVELS, *PARTNER_LEVELS]
    lines = [
        f"BR-Prox: IQM [{level:.0%} bootstrap CI] over (ego seed, partner, seat) units; the intervals "
        f"resample {RESAMPLING}"
    ]
    for layout, frame in summary.groupby("layout", sort=True):
        cells = {
            (r.algorithm, r.partner_level): format_cell(r.iqm, r.ci_low, r.ci_high)
            if getattr(r, "informative", True)
            else f"{r.iqm:.3f} [n/i]"
            for r in frame.itertuples()
        }
        algorithms = sorted(frame["algorithm"].unique())
        width = max(len("algorithm"), *(len(a) for a in algorithms))
        rows = [[a, *(cells.get((a, c), "-") for c in columns)] for a in algorithms]
        col_widths = [width] + [max(len(c), *(len(r[i + 1]) for r in rows)) for i, c in enumerate(columns)]
        lines += ["", f"layout: {layout}", _row(["algorithm", *columns], col_widths)]
        lines += [_row(r, col_widths) for r in rows]
        if "informative" in frame and not frame["informative"].all():
            few = int(frame.loc[~frame["informative"], "num_candidates"].min())
            lines.append(
                f"[n/i]: not informative, the set has {few} candidate{'s' * (few != 1)} at that level (an "
                f"interval needs at least {MIN_INFORMATIVE_CANDIDATES}); compare IQMs on a larger set"
            )
    return "\n".join(lines)


def strata_rows(summary: pd.DataFrame, unhelpful: pd.DataFrame | None = None) -> pd.DataFrame:
    """The partner strata per (layout, algorithm), as rows.

    Args:
        summary: :func:`summarize` output; its ``expert`` and ``moderate`` rows are the skilled and
            semi-skilled strata (the rows are reused, not recomputed).
        unhelpful: :func:`zsceval.evaluation.strata.unhelpful_summary` output, or None.

    Returns:
        Columns :data:`STRATA_COLUMNS`: ``stratum`` is ``"skilled"``, ``"semi-skilled"`` or
        ``"unhelpful"``; ``partners`` the ZSC-Eval level (``"expert"``, ``"moderate"``) or the
        unhelpful partner (``"unhelpful-stay"``, ``"unhelpful-random"``); ``metric``
        ``"br_prox_iqm"`` (unitless, in [0, 1]) or ``"mean_sparse_return"`` (team sparse return per
        episode); ``estimate, ci_low, ci_high`` (float); ``num_seeds`` (int). Sorted by layout,
        algorithm, then skilled, semi-skilled and the unhelpful partners (stay, random, then others
        by name).
    """
    from zsceval.evaluation.strata import UNHELPFUL

    rows = []
    for stratum, level in STRATA:
        for r in summary[summary["partner_level"] == level].itertuples():
            rows.append([r.layout, r.algorithm, stratum, level, "br_prox_iqm", r.iqm, r.ci_low, r.ci_high,
                         int(r.num_seeds)])  # fmt: skip
    if unhelpful is not None:
        for r in unhelpful.itertuples():
            rows.append([r.layout, r.algorithm, "unhelpful", r.partner, "mean_sparse_return", r.mean, r.low,
                         r.high, int(r.seeds)])  # fmt: skip
    frame = pd.DataFrame(rows, columns=list(STRATA_COLUMNS))
    known = [level for _, level in STRATA] + [cls.agent_class for cls in UNHELPFUL.values()]
    frame["_order"] = [known.index(p) if p in known else len(known) for p in frame["partners"]]
    frame = frame.sort_values(["layout", "algorithm", "_order", "partners"], kind="stable")
    return frame.drop(columns="_order").reset_index(drop=True)


def format_strata(
    strata: pd.DataFrame, *, level: float = 0.95, levels: str = "checkpoint", unhelpful_games: bool = True
) -> str:
    """Text table of :func:`strata_rows`: per layout, one row per algorithm; columns skilled
    (expert), semi-skilled (moderate) and each unhelpful partner.

    Args:
        strata: :func:`strata_rows` output.
        level: CI coverage, for the header.
        levels: the moderate/expert split of the summary (``checkpoint`` or ``median``), named in
            the header.
        unhelpful_games: whether the folder holds unhelpful-partner games; without them a line
            says why the columns are missing.
    """
    split = (
        ("skilled (expert): the set's final checkpoints; semi-skilled (moderate): its mid checkpoints;",
         f"both by IQM BR-Prox [{level:.0%} CI]")
        if levels == "checkpoint"
        else ("skilled (expert): partners whose BR return is above the layout's median; semi-skilled",
              f"(moderate): the others (--levels median); both by IQM BR-Prox [{level:.0%} CI]")
    )  # fmt: skip
    lines = [
        "Partner strata (after Hypothetical Minds): ZSC-Eval's expert and moderate partners are the skilled "
        "and semi-skilled strata",
        *(f"  {line}" for line in split),
        f"  unhelpful: mean sparse return per episode [{level:.0%} CI] with a partner that only stays",
        "  (unhelpful-stay) or acts uniformly at random (unhelpful-random); no best response, so no BR-Prox",
    ]
    if not unhelpful_games:
        lines += [
            "  no unhelpful-partner games in this folder (a suite with evaluation.strata: false, or a bench",
            "  from before the strata): rerun `zsceval bench` with it on to add them",
        ]
    names = list(dict.fromkeys(strata.loc[strata["stratum"] == "unhelpful", "partners"]))
    header = ["algorithm", *(f"{s} ({lv})" for s, lv in STRATA), *names]
    for layout, frame in strata.groupby("layout", sort=True):
        cells = {}
        for r in frame.itertuples():
            key = f"{r.stratum} ({r.partners})" if r.stratum != "unhelpful" else r.partners
            fmt = format_cell if r.metric == "br_prox_iqm" else _format_return
            cells[(r.algorithm, key)] = fmt(r.estimate, r.ci_low, r.ci_high)
        algorithms = sorted(frame["algorithm"].unique())
        rows = [[a, *(cells.get((a, h), "-") for h in header[1:])] for a in algorithms]
        lines += ["", f"layout: {layout}", *_table(header, rows)]
    return "\n".join(lines)


def _format_return(mean: float, low: float, high: float) -> str:
    """``"12.5 [4.0, 20.0]"``: a mean return and its CI bounds, 1 decimal."""
    return f"{mean:.1f} [{low:.1f}, {high:.1f}]"


def summary_records(summary: pd.DataFrame) -> list[dict]:
    """The summary as JSON-ready records (one dict per row, Python scalars)."""
    return [
        {k: (v.item() if isinstance(v, np.generic) else v) for k, v in row.items()}
        for row in summary.to_dict("records")
    ]


def bench_notes(
    directory: str | Path,
    features: pd.DataFrame | None,
    br_returns: pd.DataFrame | None = None,
    *,
    nonpositive_br: str = "one",
) -> list[str]:
    """Lines saying what a bench folder's tables leave out or chose: the algorithms its
    ``suite.yaml`` names that were skipped (not implemented), the selected partners per layout, and,
    given ``br_returns``, the partners whose BR never scores and the mid partners whose candidate's
    co-trained BR beats the fresh one (:func:`~zsceval.bench.br_notes.folder_notes`)."""
    import yaml

    from zsceval import registry

    lines = []
    suite_path = Path(directory) / "suite.yaml"
    if suite_path.is_file():
        try:
            suite = yaml.safe_load(suite_path.read_text()) or {}
        except yaml.YAMLError:
            suite = {}
        names = set(registry.names())
        skipped = [a for a in suite.get("algorithms") or [] if a not in names]
        if skipped:
            lines.append(f"skipped (not implemented yet): {', '.join(skipped)}")
    if features is not None and "selected" in features and len(features):
        for layout, frame in features.groupby("layout", sort=True):
            chosen = sorted(frame.loc[frame["selected"].astype(bool), "candidate_id"].astype(str))
            lines.append(
                f"selected partners on {layout}: {', '.join(chosen) or 'none'} "
                f"(of {len(frame)} candidates; each with its mid checkpoint)"
            )
    if br_returns is not None:
        lines += folder_notes(directory, br_returns, nonpositive_br=nonpositive_br)
    return lines


def mark_selected(
    features: pd.DataFrame | None, manifests: Sequence[PartnerSetManifest]
) -> pd.DataFrame | None:
    """Set ``selected`` from manifests (their ``selection.selected_ids``, per layout).

    Without a features frame, the manifests' own partners (``final`` level, BR features) become the
    frame, all selected. Returns ``None`` when there is neither.
    """
    if not manifests:
        return features
    if features is None:
        rows = [
            {
                "layout": m.layout,
                "candidate_id": p.candidate_id,
                "selected": True,
                **dict(zip(m.feature_names, p.features)),
            }
            for m in manifests
            for p in m.partners
            if p.level == "final"
        ]
        return pd.DataFrame(rows)
    features = features.copy()
    chosen = {(m.layout, c) for m in manifests for c in m.selection.selected_ids}
    features["selected"] = [
        (lay, str(c)) in chosen for lay, c in zip(features["layout"], features["candidate_id"])
    ]
    return features


def feature_matrix(frame: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Numeric feature columns of one layout's features frame, normalized by column max + 1e-3."""
    names = [
        c for c in frame.columns if c not in FEATURE_KEY_COLUMNS and pd.api.types.is_numeric_dtype(frame[c])
    ]
    if not names:
        raise ValueError(f"features frame has no numeric feature columns besides {list(FEATURE_KEY_COLUMNS)}")
    return normalize_features(frame[names].to_numpy(dtype=np.float64)), names


def pca_2d(features: np.ndarray) -> np.ndarray:
    """Project rows onto their first two principal components (centered SVD).

    Args:
        features: float[n, m].

    Returns:
        float64[n, 2] (a zero column when the rank is below 2).
    """
    return pca_2d_explained(features)[0]


def pca_2d_explained(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pca_2d` and the fraction of the total variance each of the two components explains.

    Returns:
        ``(float64[n, 2] scores, float64[2] explained-variance ratios)`` (0 for a missing component;
        both 0 when all rows are equal).
    """
    x = np.asarray(features, dtype=np.float64)
    x = x - x.mean(axis=0)
    _, sv, vt = np.linalg.svd(x, full_matrices=False)
    scores = x @ vt[:2].T
    var = sv**2
    ratio = var[:2] / var.sum() if var.sum() > 0 else np.zeros(min(2, len(var)))
    return np.pad(scores, ((0, 0), (0, 2 - scores.shape[1]))), np.pad(ratio, (0, 2 - len(ratio)))


def write_figures(
    summary: pd.DataFrame,
    features: pd.DataFrame | None,
    out_dir: str | Path,
    *,
    comparisons: dict[str, pd.DataFrame] | None = None,
    reference: tuple[str, pd.DataFrame, pd.DataFrame] | None = None,
) -> list[Path]:
    """Write every report figure into ``out_dir`` (created); returns the written paths.

    Args:
        summary: :func:`summarize` output.
        features: candidates' behavior features (module docstring) or ``None``.
        out_dir: folder of the PNGs.
        comparisons: :func:`compare_algorithms` output, for the PoI, profile and rank figures.
        reference: ``(name, rows, layouts)`` of :func:`~zsceval.bench.comparison.compare_with_reference`.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sns.set_theme(style="whitegrid")
    written = [
        _save(_plot_br_prox(summary[summary["partner_level"] == ALL_LEVELS]), out_dir / "br_prox.png"),
    ]
    split = summary[summary["partner_level"].isin(PARTNER_LEVELS)]
    if len(split):
        written.append(_save(_plot_levels(split), out_dir / "br_prox_levels.png"))
    if comparisons is not None:
        if len(comparisons["poi"]):
            written.append(_save(_plot_poi(comparisons["poi"]), out_dir / "probability_of_improvement.png"))
        written.append(_save(_plot_profiles(comparisons["profiles"]), out_dir / "performance_profiles.png"))
        written.append(_save(_plot_ranks(comparisons["ranks"]), out_dir / "ranks.png"))
    if reference is not None and (reference[2]["num_common"] > 0).any():
        name, rows, layouts = reference
        written.append(_save(_plot_reference(rows, layouts, name), out_dir / f"compare_{name}.png"))
    if features is not None and len(features):
        for layout, frame in features.groupby("layout", sort=True):
            written.append(_save(_plot_pca(frame, str(layout)), out_dir / f"partners_pca_{layout}.png"))
            if "selected" in frame and frame["selected"].any():
                written.append(
                    _save(_plot_heatmap(frame, str(layout)), out_dir / f"partners_features_{layout}.png")
                )
    return written


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(header[i])), *(len(str(r[i])) for r in rows)) for i in range(len(header))]
    return [_row(header, widths)] + [_row(r, widths) for r in rows]


def _row(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()


def _save(fig: plt.Figure, path: Path) -> Path:
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path


def _error_bars(ax: plt.Axes, x: np.ndarray, frame: pd.DataFrame) -> None:
    yerr = np.vstack([frame["iqm"] - frame["ci_low"], frame["ci_high"] - frame["iqm"]])
    ax.errorbar(x, frame["iqm"], yerr=np.clip(yerr, 0, None), fmt="none", ecolor="black", capsize=3, lw=1)


def _panels(layouts: Sequence[str]) -> tuple[plt.Figure, np.ndarray]:
    fig, axes = plt.subplots(
        1, len(layouts), figsize=(3.2 * len(layouts) + 1, 3.6), squeeze=False, sharey=True
    )
    return fig, axes[0]


def _plot_br_prox(summary: pd.DataFrame) -> plt.Figure:
    layouts = sorted(summary["layout"].unique())
    fig, axes = _panels(layouts)
    for ax, layout in zip(axes, layouts):
        frame = summary[summary["layout"] == layout].sort_values("algorithm")
        x = np.arange(len(frame))
        ax.bar(x, frame["iqm"], color=sns.color_palette("deep", len(frame)))
        _error_bars(ax, x, frame)
        ax.set_xticks(x, frame["algorithm"], rotation=45, ha="right")
        ax.set_title(layout)
        ax.set_ylim(0, 1.05)
    axes[0].set_ylabel("BR-Prox (IQM, 95% CI)")
    return fig


def _plot_levels(summary: pd.DataFrame) -> plt.Figure:
    layouts = sorted(summary["layout"].unique())
    fig, axes = _panels(layouts)
    colors = dict(zip(PARTNER_LEVELS, sns.color_palette("deep", len(PARTNER_LEVELS))))
    for ax, layout in zip(axes, layouts):
        frame = summary[summary["layout"] == layout]
        algorithms = sorted(frame["algorithm"].unique())
        width = 0.8 / len(PARTNER_LEVELS)
        for i, partner_level in enumerate(PARTNER_LEVELS):
            sub = frame[frame["partner_level"] == partner_level].set_index("algorithm").reindex(algorithms)
            x = np.arange(len(algorithms)) + (i - (len(PARTNER_LEVELS) - 1) / 2) * width
            ax.bar(x, sub["iqm"], width=width, color=colors[partner_level], label=partner_level)
            _error_bars(ax, x, sub)
        ax.set_xticks(np.arange(len(algorithms)), algorithms, rotation=45, ha="right")
        ax.set_title(layout)
        ax.set_ylim(0, 1.05)
    axes[0].set_ylabel("BR-Prox (IQM, 95% CI)")
    axes[-1].legend(title="partners", loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return fig


def _plot_pca(frame: pd.DataFrame, layout: str) -> plt.Figure:
    matrix, _ = feature_matrix(frame)
    scores, explained = pca_2d_explained(matrix)
    selected = frame["selected"].to_numpy(dtype=bool) if "selected" in frame else np.zeros(len(frame), bool)
    fig, ax = plt.subplots(figsize=(4.5, 4))
    ax.scatter(scores[~selected, 0], scores[~selected, 1], s=18, color="0.65", label="candidates")
    ax.scatter(
        scores[selected, 0], scores[selected, 1], s=60, marker="*", color="C3", label="selected partners"
    )
    if "candidate_id" in frame:
        for (x, y), cid, sel in zip(scores, frame["candidate_id"].astype(str), selected):
            ax.annotate(cid, (x, y), xytext=(4, 4), textcoords="offset points", fontsize=7,
                        color="C3" if sel else "0.4", fontweight="bold" if sel else "normal")  # fmt: skip
    ax.set_xlabel(f"PC 1 ({explained[0]:.0%} of variance)")
    ax.set_ylabel(f"PC 2 ({explained[1]:.0%} of variance)")
    ax.set_title(f"{layout}: partner behavior features")
    ax.legend()
    return fig


def _plot_heatmap(frame: pd.DataFrame, layout: str) -> plt.Figure:
    matrix, names = feature_matrix(frame)
    mask = frame["selected"].to_numpy(dtype=bool)
    table = pd.DataFrame(matrix[mask], index=frame["candidate_id"].astype(str)[mask], columns=names)
    fig, ax = plt.subplots(figsize=(0.45 * len(names) + 2, 0.35 * len(table) + 1.5))
    sns.heatmap(table, ax=ax, cmap="viridis", vmin=0, vmax=1, cbar_kws={"label": "feature / column max"})
    ax.set_title(f"{layout}: selected partners")
    ax.set_ylabel("candidate")
    return fig


def _plot_poi(poi: pd.DataFrame) -> plt.Figure:
    """One panel per layout: P(X > Y) with CI for each pair X < Y (alphabetical), 0.5 marked."""
    layouts = sorted(poi["layout"].unique())
    pairs = poi[poi["algorithm_x"] < poi["algorithm_y"]]
    height = max(2.5, 0.45 * pairs.groupby("layout").size().max() + 1.2)
    fig, axes = plt.subplots(
        1, len(layouts), figsize=(4.6 * len(layouts) + 0.5, height), squeeze=False, layout="constrained"
    )
    for ax, layout in zip(axes[0], layouts):
        frame = pairs[pairs["layout"] == layout].sort_values(["algorithm_x", "algorithm_y"])
        y = np.arange(len(frame))[::-1]
        err = np.vstack([frame["poi"] - frame["ci_low"], frame["ci_high"] - frame["poi"]]).clip(0)
        ax.errorbar(frame["poi"], y, xerr=err, fmt="o", color="C0", ecolor="C0", capsize=3)
        ax.axvline(0.5, color="0.4", ls="--", lw=1)
        ax.set_yticks(y, [f"{a} > {b}" for a, b in zip(frame["algorithm_x"], frame["algorithm_y"])])
        ax.set_xlim(-0.02, 1.02)
        ax.set_xlabel("P(X > Y)")
        ax.set_title(layout)
    fig.suptitle("Probability of improvement (95% CI)")
    return fig


def _plot_profiles(profiles: pd.DataFrame) -> plt.Figure:
    layouts = sorted(profiles["layout"].unique())
    fig, axes = _panels(layouts)
    algorithms = sorted(profiles["algorithm"].unique())
    colors = dict(zip(algorithms, sns.color_palette("deep", len(algorithms))))
    for ax, layout in zip(axes, layouts):
        for algorithm, frame in profiles[profiles["layout"] == layout].groupby("algorithm", sort=True):
            ax.plot(frame["threshold"], frame["fraction"], color=colors[algorithm], label=algorithm, lw=1.8)
            ax.fill_between(
                frame["threshold"], frame["ci_low"], frame["ci_high"], color=colors[algorithm], alpha=0.2
            )
        ax.set_title(layout)
        ax.set_xlabel("BR-Prox threshold tau")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
    axes[0].set_ylabel("fraction of units > tau")
    axes[-1].legend(title="algorithm", loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return fig


def _plot_ranks(ranks: pd.DataFrame) -> plt.Figure:
    layouts = sorted(ranks["layout"].unique())
    fig, axes = _panels(layouts)
    columns = sorted((c for c in ranks.columns if c.startswith("p_rank_")), key=lambda c: int(c[7:]))
    palette = sns.color_palette("viridis", len(columns))
    for ax, layout in zip(axes, layouts):
        frame = ranks[ranks["layout"] == layout].sort_values("algorithm")
        x = np.arange(len(frame))
        bottom = np.zeros(len(frame))
        for color, column in zip(palette, columns):
            values = frame[column].fillna(0).to_numpy()
            ax.bar(x, values, bottom=bottom, color=color, label=f"rank {column[7:]}")
            bottom += values
        ax.set_xticks(x, frame["algorithm"], rotation=45, ha="right")
        ax.set_ylim(0, 1)
        ax.set_title(layout)
    axes[0].set_ylabel("bootstrap probability of rank")
    axes[-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return fig


def _plot_reference(rows: pd.DataFrame, layouts: pd.DataFrame, name: str) -> plt.Figure:
    common = rows.dropna(subset=["reference"])
    rho = layouts.set_index("layout")["spearman"]
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    for i, (layout, frame) in enumerate(common.groupby("layout", sort=True)):
        label = f"{layout} (rho {rho[layout]:.2f})" if not np.isnan(rho[layout]) else layout
        err = np.vstack([frame["iqm"] - frame["ci_low"], frame["ci_high"] - frame["iqm"]]).clip(0)
        ax.errorbar(
            frame["reference"], frame["iqm"], yerr=err, fmt="o", color=f"C{i}", capsize=3, label=label
        )
        for r in frame.itertuples():
            ax.annotate(
                r.algorithm, (r.reference, r.iqm), textcoords="offset points", xytext=(4, 3), fontsize=8
            )
    ax.plot([0, 1], [0, 1], color="0.5", ls="--", lw=1)
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(f"{name} IQM BR-Prox")
    ax.set_ylabel("ours: IQM BR-Prox (95% CI)")
    ax.set_title(f"Agreement with {name}")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return fig
