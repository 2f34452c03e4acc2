"""Figures of the TBS partner clustering (TBS Appendix B, Figs. 10-11).

* :func:`plot_similarity`: heatmap of the cross-play similarity (or cross-play return) matrix with rows
  and columns grouped by cluster and each cluster outlined, as TBS Figs. 10-11 (outlined in red here,
  for contrast with the colour map).
* :func:`plot_costs`: STSC alignment cost (TBS Eq. 6) per candidate number of clusters.

Figures are PNG files written atomically (temp file in the same folder, then ``os.replace``) with
matplotlib's Agg canvas; no pyplot state is touched, so plotting is safe in worker processes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from zsceval.io import atomic_path

__all__ = ["cluster_blocks", "cluster_order", "plot_costs", "plot_similarity"]


def _check_labels(labels: np.ndarray, n: int | None = None) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(
            f"labels must be a 1-D integer array, got shape {labels.shape}, dtype {labels.dtype}"
        )
    if n is not None and labels.shape[0] != n:
        raise ValueError(f"labels have {labels.shape[0]} entries for a {n} x {n} matrix")
    return labels.astype(np.int64)


def cluster_order(labels: np.ndarray) -> np.ndarray:
    """Permutation that groups agents by cluster: clusters in order of their first member, agents in
    their original order within a cluster.

    Args:
        labels: ``int [n]`` cluster of each agent.

    Returns:
        ``int64 [n]`` indices; ``labels[order]`` is grouped, e.g. ``[1, 0, 1, 2, 0]`` gives
        ``[0, 2, 1, 4, 3]``.

    Raises:
        ValueError: ``labels`` is not a 1-D integer array.
    """
    labels = _check_labels(labels)
    if labels.size == 0:
        return np.zeros(0, dtype=np.int64)
    _, first = np.unique(labels, return_index=True)
    rank = {int(labels[i]): r for r, i in enumerate(np.sort(first))}
    keys = np.array([rank[int(c)] for c in labels])
    return np.argsort(keys, kind="stable").astype(np.int64)


def cluster_blocks(labels: np.ndarray) -> list[tuple[int, int]]:
    """``(start, stop)`` positions of each cluster along :func:`cluster_order` ``(labels)``.

    Args:
        labels: ``int [n]`` cluster of each agent.

    Returns:
        One half-open range per cluster, in cluster order, covering ``0 .. n``; e.g. ``[1, 0, 1, 2, 0]``
        gives ``[(0, 2), (2, 4), (4, 5)]``.
    """
    labels = _check_labels(labels)
    grouped = labels[cluster_order(labels)]
    cuts = [0] + [i for i in range(1, len(grouped)) if grouped[i] != grouped[i - 1]] + [len(grouped)]
    return [(cuts[i], cuts[i + 1]) for i in range(len(cuts) - 1)] if len(grouped) else []


def _save(fig: Figure, path: str | Path) -> Path:
    path = Path(path)
    FigureCanvasAgg(fig)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    return path


def plot_similarity(
    S: np.ndarray,
    labels: np.ndarray,
    path: str | Path,
    title: str | None = None,
    *,
    names: Sequence[str] | None = None,
    vmin: float | None = 0.0,
    vmax: float | None = 1.0,
    colorbar_label: str = "similarity s(A, B)",
    axis_labels: tuple[str, str] = ("pair A", "pair B"),
) -> Path:
    """Heatmap of ``S`` with rows and columns grouped by cluster and each cluster outlined.

    Args:
        S: ``float [n, n]`` similarity (TBS Eq. 5) or cross-play returns (pass ``vmax=None``).
        labels: ``int [n]`` cluster of each agent (:class:`~.stsc.Clustering` ``.labels``).
        path: PNG file to write (parent folders are created).
        title: optional figure title.
        names: tick labels, one per agent in the original order; default the agent indices.
        vmin, vmax: colour scale limits; ``None`` takes the data's.
        colorbar_label: label of the colour bar.
        axis_labels: ``(rows, columns)`` axis titles; for cross-play returns e.g.
            ``("agent 1 of pair (seat 0)", "agent 2 of pair (seat 1)")``.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        ValueError: ``S`` is not square, ``labels`` or ``names`` do not match it.
    """
    S = np.asarray(S, dtype=np.float64)
    if S.ndim != 2 or S.shape[0] != S.shape[1]:
        raise ValueError(f"S must be a square [n, n] matrix, got shape {S.shape}")
    n = S.shape[0]
    labels = _check_labels(labels, n)
    names = [str(i) for i in range(n)] if names is None else [str(x) for x in names]
    if len(names) != n:
        raise ValueError(f"{len(names)} names for {n} agents")
    order = cluster_order(labels)
    size = 1.6 + 0.35 * n
    fig = Figure(figsize=(size + 1.2, size))
    ax = fig.add_subplot()
    image = ax.imshow(S[np.ix_(order, order)], cmap="viridis", vmin=vmin, vmax=vmax, interpolation="nearest")
    fig.colorbar(image, ax=ax, label=colorbar_label)
    for start, stop in cluster_blocks(labels):
        ax.add_patch(
            Rectangle(
                (start - 0.5, start - 0.5),
                stop - start,
                stop - start,
                fill=False,
                edgecolor="tab:red",
                lw=2.5,
            )
        )
    ticks = np.arange(n)
    ax.set_xticks(ticks, [names[i] for i in order], rotation=90)
    ax.set_yticks(ticks, [names[i] for i in order])
    ax.set_ylabel(axis_labels[0])
    ax.set_xlabel(axis_labels[1])
    if title:
        ax.set_title(title)
    return _save(fig, path)


def plot_costs(costs: Mapping[int, float], path: str | Path, *, chosen: int | None = None) -> Path:
    """Alignment cost of TBS Eq. 6 per number of clusters ``k``, chosen ``k`` marked.

    Args:
        costs: ``{k: J}`` (:class:`~.stsc.Clustering` ``.costs``).
        path: PNG file to write.
        chosen: ``k`` to highlight, e.g. ``Clustering.k``.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        ValueError: ``costs`` is empty.
    """
    if not costs:
        raise ValueError("no costs to plot")
    ks = sorted(int(k) for k in costs)
    values = [float(costs[k]) for k in ks]
    fig = Figure(figsize=(4.5, 3.2))
    ax = fig.add_subplot()
    ax.plot(ks, values, marker="o")
    if chosen is not None and chosen in costs:
        ax.plot([chosen], [costs[chosen]], marker="o", markersize=12, fillstyle="none", color="tab:red")
    ax.set_xticks(ks)
    ax.set_xlabel("number of clusters k")
    ax.set_ylabel("alignment cost J (Eq. 6)")
    return _save(fig, path)
