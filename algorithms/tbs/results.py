"""The TBS result table: scaled rewards (return / the held-out pair's self-play return), one
agent's results as a bootstrap cube, the per-agent summary with 95% CIs, and its bar chart
(TBS paper, Sec. 4). Read by the ``tbs.evaluate`` job and by ``zsceval report``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["AGENTS", "plot_tbs", "result_cube", "scaled_rewards", "summarize"]

AGENTS = ("TBS", "BR", "Hypothesis", "Random", "CEM", "CBPR", "Oracle")
"""Rows of the TBS table, in the paper's order of discussion; ``Hypothesis`` (not in the TBS paper) is
the hypothesis-scoring agent of Hypothetical Minds over TBS's ToM models and BRs (:mod:`~.hypothesis`)."""


def scaled_rewards(frame: pd.DataFrame) -> pd.DataFrame:
    """Adds ``scaled``: each return divided by the Oracle's mean return with the same held-out pair
    (both seats; TBS's "scaled reward", inferred: the Oracle scores 1 on average). A held-out pair
    whose self-play return is 0 gets NaN (no scale)."""
    oracle = frame[frame["agent"] == "Oracle"].groupby("heldout")["sparse_return"].mean()
    scale = frame["heldout"].map(oracle)
    out = frame.copy()
    out["scaled"] = np.where(scale > 0, out["sparse_return"] / scale.where(scale > 0, 1.0), np.nan)
    return out


def result_cube(frame: pd.DataFrame, col: str) -> np.ndarray:
    """One agent's rows of a ``results.parquet`` as an array for the bootstrap.

    Args:
        frame: rows of one agent, columns ``episode, heldout, seat`` (ints from 0) and ``col``.
        col: the value column, e.g. ``scaled`` or ``sparse_return``.

    Returns:
        ``float64 [episodes, held-out pairs, 2]`` (axis 2: the agent's seat); NaN where a cell has
        no row or no value (a held-out pair without a scale).
    """
    E, H = int(frame["episode"].max()) + 1, int(frame["heldout"].max()) + 1
    x = np.full((E, H, 2), np.nan)
    x[frame["episode"].to_numpy(), frame["heldout"].to_numpy(), frame["seat"].to_numpy()] = frame[
        col
    ].to_numpy()
    return x


def summarize(frame: pd.DataFrame, reps: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Per agent: mean return and mean scaled reward with bootstrap 95% CIs (episodes as seeds,
    held-out pairs as partners, seats travel with their pair;
    :func:`zsceval.stats.metrics.bootstrap_ci`)."""
    rows = []
    for agent in [a for a in AGENTS if a in set(frame["agent"])]:
        sub = frame[frame["agent"] == agent]
        row: dict[str, Any] = {"agent": agent}
        for col in ("scaled", "sparse_return"):
            row.update(cube_ci(result_cube(sub, col), col, reps=reps, seed=seed))
        rows.append(row)
    return pd.DataFrame(rows)


def cube_ci(x: np.ndarray, col: str, *, reps: int = 2000, seed: int = 0) -> dict[str, float]:
    """``{col, col_low, col_high}``: the mean of a :func:`result_cube` (``[episodes, held-out pairs,
    2]``) with its two-level bootstrap CI (episodes as seeds, held-out pairs as partners, seats
    travel with their pair; :func:`zsceval.stats.metrics.bootstrap_ci`); held-out pairs with no
    value (no scale) are left out, NaN where none has one."""
    from zsceval.stats.metrics import bootstrap_ci

    keep = ~np.isnan(x).all(axis=(0, 2))  # held-out pairs with a scale
    if not keep.any():
        return {col: np.nan, f"{col}_low": np.nan, f"{col}_high": np.nan}
    ci = bootstrap_ci(x[:, keep], np.nanmean, reps=reps, rng=np.random.default_rng(seed))
    return {col: ci.estimate, f"{col}_low": ci.low, f"{col}_high": ci.high}


def plot_tbs(table: pd.DataFrame, path: str | Path, title: str = "") -> Path:
    """Bar chart of the scaled reward per agent with its 95% CI, saved atomically as PNG."""
    import textwrap

    from matplotlib.figure import Figure

    from zsceval.io import atomic_path

    fig = Figure(figsize=(max(6.0, 0.95 * len(table)), 3.4))
    ax = fig.add_subplot()
    y = table["scaled"].to_numpy()
    err = np.stack([y - table["scaled_low"].to_numpy(), table["scaled_high"].to_numpy() - y])
    ax.bar(table["agent"], y, yerr=err, capsize=4, color="#4c72b0")
    ax.tick_params(axis="x", labelsize=8)
    ax.set_ylabel("scaled reward")
    ax.set_title("\n".join(textwrap.wrap(title, 80)), fontsize=9)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    return Path(path)
