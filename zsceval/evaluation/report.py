"""BR-Prox reports: tables (text / JSON) and seaborn figures from a results folder.

Inputs (a folder ``DIR``):
    * ``results.parquet``: per-episode results, schema of :mod:`zsceval.evaluation.metrics`.
    * ``br_returns.parquet``: BR reference returns, schema of :mod:`zsceval.evaluation.metrics`.
    * ``features.parquet`` (optional): one row per partner candidate with columns ``layout``,
      ``candidate_id``, optionally ``selected`` (bool), and one numeric column per behavior feature.
      Partner-set manifests (:mod:`zsceval.evaluation.manifest`) can mark the selected candidates instead.

Figures (PNG, written atomically into ``DIR/figures``):
    * ``br_prox.png``: IQM BR-Prox per algorithm with 95% CI error bars, one panel per layout.
    * ``br_prox_levels.png``: the same split into moderate and expert partners (ZSC-Eval Fig. 6).
    * ``partners_pca_<layout>.png``: first two principal components of the candidates' normalized
      behavior features, selected partners highlighted (ZSC-Eval Fig. 3).
    * ``partners_features_<layout>.png``: heatmap of the selected partners' normalized features.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from zsceval.evaluation.manifest import PartnerSetManifest  # noqa: E402
from zsceval.evaluation.metrics import ALL_LEVELS, PARTNER_LEVELS, br_prox_summary  # noqa: E402
from zsceval.evaluation.selection import normalize_features  # noqa: E402

RESULTS_FILE = "results.parquet"
BR_RETURNS_FILE = "br_returns.parquet"
FEATURES_FILE = "features.parquet"
FIGURES_DIR = "figures"
FEATURE_KEY_COLUMNS: tuple[str, ...] = ("layout", "candidate_id", "selected")


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
) -> pd.DataFrame:
    """:func:`~zsceval.evaluation.metrics.br_prox_summary` with ``rng = np.random.default_rng(seed)``."""
    return br_prox_summary(
        results,
        br_returns,
        rng=np.random.default_rng(seed),
        reps=reps,
        level=level,
        nonpositive_br=nonpositive_br,
    )


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
    lines = [f"BR-Prox: IQM [{level:.0%} bootstrap CI] over (ego seed, partner, seat) units"]
    for layout, frame in summary.groupby("layout", sort=True):
        cells = {
            (r.algorithm, r.partner_level): format_cell(r.iqm, r.ci_low, r.ci_high)
            for r in frame.itertuples()
        }
        algorithms = sorted(frame["algorithm"].unique())
        width = max(len("algorithm"), *(len(a) for a in algorithms))
        rows = [[a, *(cells.get((a, c), "-") for c in columns)] for a in algorithms]
        col_widths = [width] + [max(len(c), *(len(r[i + 1]) for r in rows)) for i, c in enumerate(columns)]
        lines += ["", f"layout: {layout}", _row(["algorithm", *columns], col_widths)]
        lines += [_row(r, col_widths) for r in rows]
    return "\n".join(lines)


def summary_records(summary: pd.DataFrame) -> list[dict]:
    """The summary as JSON-ready records (one dict per row, Python scalars)."""
    return [
        {k: (v.item() if isinstance(v, np.generic) else v) for k, v in row.items()}
        for row in summary.to_dict("records")
    ]


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
    x = np.asarray(features, dtype=np.float64)
    x = x - x.mean(axis=0)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    scores = x @ vt[:2].T
    return np.pad(scores, ((0, 0), (0, 2 - scores.shape[1])))


def write_figures(summary: pd.DataFrame, features: pd.DataFrame | None, out_dir: str | Path) -> list[Path]:
    """Write every report figure into ``out_dir`` (created); returns the written paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sns.set_theme(style="whitegrid")
    written = [
        _save(_plot_br_prox(summary[summary["partner_level"] == ALL_LEVELS]), out_dir / "br_prox.png"),
    ]
    split = summary[summary["partner_level"].isin(PARTNER_LEVELS)]
    if len(split):
        written.append(_save(_plot_levels(split), out_dir / "br_prox_levels.png"))
    if features is not None and len(features):
        for layout, frame in features.groupby("layout", sort=True):
            written.append(_save(_plot_pca(frame, str(layout)), out_dir / f"partners_pca_{layout}.png"))
            if "selected" in frame and frame["selected"].any():
                written.append(
                    _save(_plot_heatmap(frame, str(layout)), out_dir / f"partners_features_{layout}.png")
                )
    return written


def _row(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()


def _save(fig: plt.Figure, path: Path) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
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
    scores = pca_2d(matrix)
    selected = frame["selected"].to_numpy(dtype=bool) if "selected" in frame else np.zeros(len(frame), bool)
    fig, ax = plt.subplots(figsize=(4.5, 4))
    ax.scatter(scores[~selected, 0], scores[~selected, 1], s=18, color="0.65", label="candidates")
    ax.scatter(
        scores[selected, 0], scores[selected, 1], s=60, marker="*", color="C3", label="selected partners"
    )
    ax.set_xlabel("PC 1")
    ax.set_ylabel("PC 2")
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
