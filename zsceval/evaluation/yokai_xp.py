"""Cross-play between independently trained Yōkai agents: the matrix and what ``zsceval report`` prints.

The YLE paper ("The Yōkai Learning Environment: Tracking Beliefs Over Space and Time", Sec. 5.4,
Fig. 6) measures zero-shot coordination as the drop from self-play (SP: an agent with itself) to
cross-play (XP: an agent with a separately trained partner); "XP SR drops by 88.5% on average".

:func:`find_yokai_runs` finds the trained Yōkai runs in a folder; :func:`cross_play_matrix` plays
every ordered pair ``(agent i, partner j)`` with :func:`zsceval.evaluation.cross_play.cross_play`
(the play of ``zsceval eval --agent i --partner j``: every seating, the same env seed for every pair)
and keeps each pair's pooled R, SR, NC, SEE and the game score S with 95% bootstrap CIs
(:func:`zsceval.stats.episode_metrics.yle_metrics`). Cell ``[i, j]`` of a metric is the pooled mean
of that pair; the diagonal is self-play. :func:`xp_drop` summarises the SP-XP gap;
:func:`format_yokai_report` and :func:`plot_matrix` present it, and :class:`YokaiCrossPlaySection` is
the report section (entry-point group ``zsceval.report_sections``, name ``yokai``) that plays a
folder of Yōkai runs without bench tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from zsceval.evaluation.cross_play import cross_play
from zsceval.plugins import ReportOptions, ReportSection
from zsceval.rl.checkpoint import find_checkpoint, list_checkpoints
from zsceval.stats.episode_metrics import YLE_METRICS

__all__ = [
    "METRICS",
    "YokaiCrossPlaySection",
    "XPMatrix",
    "cross_play_matrix",
    "find_yokai_runs",
    "format_yokai_report",
    "plot_matrix",
    "xp_drop",
    "yokai_report_json",
]

METRICS = YLE_METRICS
"""The YLE paper's metrics in its Table 1's order, then the game score S
(:mod:`zsceval.stats.episode_metrics`)."""


@dataclass(frozen=True)
class XPMatrix:
    """Cross-play of N agents, every ordered pair.

    Attributes:
        names: ``N`` agent labels (row i = the agent, column j = the partner).
        paths: ``N`` run directories (what ``zsceval eval --agent`` takes).
        layout: the env's layout name (``yokai-3x3-2p`` ...).
        episodes: episodes per seating of each pair (a cell pools ``episodes x num_agents``).
        seed: the env and sampling seed of every pair.
        games: games per pair, pooled over its seatings (``episodes x num_agents``).
        cells: ``N x N`` nested lists of ``{metric: {"mean", "ci95": [low, high]}}`` (R, SR in %,
            NC, SEE in %, S), the pooled ``yle_metrics`` of ``cross_play(paths[i], paths[j])``.
    """

    names: tuple[str, ...]
    paths: tuple[str, ...]
    layout: str
    episodes: int
    seed: int
    games: int
    cells: tuple[tuple[dict[str, dict[str, Any]], ...], ...]

    def mean(self, metric: str) -> np.ndarray:
        """``float64 [N, N]``: cell means of ``metric`` (one of :data:`METRICS`).

        Raises:
            KeyError: an unknown metric.
        """
        if metric not in METRICS:
            raise KeyError(f"unknown metric {metric!r}; one of {', '.join(METRICS)}")
        return np.array([[cell[metric]["mean"] for cell in row] for row in self.cells], dtype=np.float64)


def _run_config(path: Path) -> dict:
    try:
        return yaml.safe_load((path / "config.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}


def find_yokai_runs(directory: str | Path) -> list[tuple[str, Path]]:
    """The trained Yōkai runs in ``directory``: itself, or the run folders below it.

    A run is a folder with a ``config.yaml`` whose ``env.name`` is ``yokai`` and at least one
    checkpoint; folders inside a run are not searched.

    Args:
        directory: a run folder, or a folder of run folders (any depth).

    Returns:
        ``(label, path)`` sorted by label; the label is the path relative to ``directory``
        (``"."`` for ``directory`` itself). Empty when there are none.
    """
    root = Path(directory)
    found: list[tuple[str, Path]] = []

    def visit(folder: Path) -> None:
        if (folder / "config.yaml").is_file():
            env = _run_config(folder).get("env") or {}
            if env.get("name") == "yokai" and list_checkpoints(folder):
                found.append((str(folder.relative_to(root)), folder))
            return
        for child in sorted(p for p in folder.iterdir() if p.is_dir()):
            visit(child)

    if root.is_dir():
        visit(root)
    return sorted(found)


def _layout(path: Path) -> str:
    import json

    meta = json.loads((find_checkpoint(path) / "meta.json").read_text())
    return str(meta["layout"])


def cross_play_matrix(
    runs: list[tuple[str, str | Path]], *, episodes: int = 500, seed: int = 0, device: str = "cpu"
) -> XPMatrix:
    """Play every ordered pair of ``runs`` with :func:`~zsceval.evaluation.cross_play.cross_play`.

    Cell ``[i, j]`` is ``cross_play(path_i, path_j, layout, episodes, device, seed)["pooled"]
    ["yle_metrics"]``: agent i in every seat in turn, partner j in the others, pooled over the
    seatings; the diagonal is self-play. Every pair uses the same seed, so the pairs play the same
    deals.

    Args:
        runs: ``N >= 1`` ``(label, run directory)``, e.g. :func:`find_yokai_runs`' result.
        episodes: episodes per seating (>= 1).
        seed: env and sampling seed of every pair.
        device: torch device.

    Returns:
        The :class:`XPMatrix`.

    Raises:
        ValueError: no runs, ``episodes < 1``, runs on different layouts, or an env that gives no
            YLE infos (not a Yōkai run).
        CheckpointError: a run without a loadable checkpoint.
    """
    if not runs:
        raise ValueError("no runs to cross-play")
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    names = tuple(str(name) for name, _ in runs)
    paths = tuple(str(path) for _, path in runs)
    layouts = {_layout(Path(p)) for p in paths}
    if len(layouts) != 1:
        raise ValueError(f"the runs were trained on different layouts: {sorted(layouts)}")
    layout = layouts.pop()
    cells, games = [], 0
    for agent in paths:
        row = []
        for partner in paths:
            pooled = cross_play(agent, partner, layout, episodes, device, seed)["pooled"]
            if "yle_metrics" not in pooled:
                raise ValueError(f"{agent} with {partner}: the env gives no YLE metrics (not a Yōkai run)")
            row.append(pooled["yle_metrics"])
            games = int(pooled["episodes"])
        cells.append(tuple(row))
    return XPMatrix(names, paths, layout, episodes, seed, games, tuple(cells))


def xp_drop(matrix: XPMatrix, metric: str) -> dict[str, float]:
    """The SP-XP gap of ``metric``: mean diagonal against mean off-diagonal cell.

    Args:
        matrix: the cross-play matrix (N >= 2 for an XP value).
        metric: one of :data:`METRICS`.

    Returns:
        ``{"sp", "xp", "drop", "relative_drop"}``: the mean self-play cell, the mean cross-play cell
        (NaN for N = 1), ``sp - xp`` and ``(sp - xp) / |sp|`` (the paper's "drops by 88.5%"; NaN when
        ``sp`` is 0).
    """
    m = matrix.mean(metric)
    n = m.shape[0]
    sp = float(np.diag(m).mean())
    xp = float(m[~np.eye(n, dtype=bool)].mean()) if n > 1 else float("nan")
    drop = sp - xp
    return {"sp": sp, "xp": xp, "drop": drop, "relative_drop": drop / abs(sp) if sp != 0 else float("nan")}


def yokai_report_json(matrix: XPMatrix) -> dict[str, Any]:
    """JSON-able report: ``layout, episodes_per_seating, seed, games_per_pair, agents`` (name, path),
    ``cells`` (one record per ordered pair: ``agent, partner`` and the metrics as ``{"mean", "ci95"}``),
    ``matrix`` (``{metric: N x N means}``) and ``xp_drop`` (``{metric: xp_drop(...)}``)."""
    n = len(matrix.names)
    return {
        "layout": matrix.layout,
        "episodes_per_seating": matrix.episodes,
        "seed": matrix.seed,
        "games_per_pair": matrix.games,
        "agents": [{"name": a, "path": p} for a, p in zip(matrix.names, matrix.paths, strict=True)],
        "cells": [
            {"agent": matrix.names[i], "partner": matrix.names[j], **matrix.cells[i][j]}
            for i in range(n)
            for j in range(n)
        ],
        "matrix": {k: matrix.mean(k).tolist() for k in METRICS},
        "xp_drop": {k: xp_drop(matrix, k) for k in METRICS},
    }


def _ci(m: dict[str, Any], digits: int) -> str:
    lo, hi = m["ci95"]
    return f"{m['mean']:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


DIGITS = {"R": 2, "SR": 1, "NC": 2, "SEE": 1, "S": 2}


def format_yokai_report(matrix: XPMatrix) -> str:
    """Text: the metrics with their 95% CIs per pair (self-play first), the R and SR matrices
    and the SP-XP drop of each metric."""
    n = len(matrix.names)
    width = max(12, *(len(s) for s in matrix.names))
    lines = [
        f"Yōkai {matrix.layout}: R, SR (%), NC, SEE (%) and the game score S with 95% bootstrap CIs "
        f"over {matrix.games} games per pair (seed {matrix.seed}; YLE Sec. 5)",
        f"{'agent':<{width}} {'partner':<{width}} " + " ".join(f"{k:>22}" for k in METRICS),
    ]
    order = [(i, i) for i in range(n)] + [(i, j) for i in range(n) for j in range(n) if i != j]
    for i, j in order:
        cell = matrix.cells[i][j]
        partner = "(self-play)" if i == j else matrix.names[j]
        lines.append(
            f"{matrix.names[i]:<{width}} {partner:<{width}} "
            + " ".join(f"{_ci(cell[k], DIGITS[k]):>22}" for k in METRICS)
        )
    for metric in ("R", "SR"):
        m = matrix.mean(metric)
        lines += ["", f"cross-play matrix, mean {metric} (row: agent, column: partner; diagonal: self-play)"]
        lines.append(" " * width + " " + " ".join(f"{s[:10]:>10}" for s in matrix.names))
        for i in range(n):
            lines.append(
                f"{matrix.names[i]:<{width}} " + " ".join(f"{v:>10.{DIGITS[metric]}f}" for v in m[i])
            )
    if n > 1:
        lines.append("")
        for metric in METRICS:
            d = xp_drop(matrix, metric)
            rel = "" if np.isnan(d["relative_drop"]) else f" ({100 * d['relative_drop']:.1f}% of SP)"
            lines.append(
                f"SP-XP {metric:>3}: SP {d['sp']:.{DIGITS[metric]}f}, XP {d['xp']:.{DIGITS[metric]}f}, "
                f"drop {d['drop']:.{DIGITS[metric]}f}{rel}"
            )
    return "\n".join(lines)


def plot_matrix(matrix: XPMatrix, path: str | Path) -> Path:
    """Heatmaps of the mean R and SR matrices side by side, saved as a PNG.

    Returns:
        ``path``.

    Raises:
        OSError: the file cannot be written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(matrix.names)
    fig, axes = plt.subplots(1, 2, figsize=(4 + 1.6 * n, 1.5 + 0.8 * n))
    for ax, metric in zip(axes, ("R", "SR"), strict=True):
        m = matrix.mean(metric)
        im = ax.imshow(m, cmap="viridis")
        ax.set_xticks(range(n), matrix.names, rotation=45, ha="right")
        ax.set_yticks(range(n), matrix.names)
        ax.set_xlabel("partner")
        ax.set_ylabel("agent")
        for i in range(n):
            for j in range(n):
                ax.text(j, i, f"{m[i, j]:.{DIGITS[metric]}f}", ha="center", va="center", color="w")
        d = xp_drop(matrix, metric)
        ax.set_title(f"{metric}: SP {d['sp']:.2f}, XP {d['xp']:.2f}")
        fig.colorbar(im, ax=ax, fraction=0.046)
    fig.suptitle(f"cross-play, {matrix.layout}")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


class YokaiCrossPlaySection(ReportSection):
    """A folder of trained Yōkai runs (`zsceval train --env yokai`, any depth; no bench tables) gets
    the YLE paper's metrics R, SR (%), NC and SEE (%) with 95% bootstrap CIs for every ordered pair
    of agents, self-play first, the cross-play matrices of mean R and SR (diagonal: self-play) and
    the SP-XP drop of each metric. The pairs are played when the report is made, as
    `zsceval eval --agent A --partner B --episodes N --seed S` plays them (--episodes, --seed,
    --device; the intervals are zsceval eval's, 95% from 2000 replicates, whatever --level and
    --reps say); figures/yokai_xp.png holds the heatmaps. Example: zsceval report runs/yokai_sp
    --episodes 500."""

    with_bench = False

    def gather(self, directory: Path, options: ReportOptions) -> XPMatrix | None:
        """:func:`cross_play_matrix` of the folder's runs (``options.episodes``, ``seed``, ``device``);
        None without Yōkai runs."""
        runs = find_yokai_runs(directory)
        if not runs:
            return None
        return cross_play_matrix(runs, episodes=options.episodes, seed=options.seed, device=options.device)

    def to_json(self, data: XPMatrix) -> dict[str, Any]:
        """``{"yokai": yokai_report_json(...)}``."""
        return {"yokai": yokai_report_json(data)}

    def to_text(self, data: XPMatrix, options: ReportOptions) -> str:
        """:func:`format_yokai_report`."""
        return format_yokai_report(data)

    def figures(self, data: XPMatrix, folder: Path) -> list[Path]:
        """The heatmaps of the matrix, ``folder/yokai_xp.png`` (:func:`plot_matrix`)."""
        return [plot_matrix(data, Path(folder) / "yokai_xp.png")]
