"""The TBS table of ``zsceval report``: scaled reward against the held-out pool per layout and agent
(paper 000 Sec. 4; written by the ``tbs.evaluate`` jobs as ``tbs_eval/results.parquet``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from zsceval.tbs.jobs import summarize

__all__ = ["TBS_RESULTS", "find_tbs_results", "format_tbs", "tbs_summary"]

TBS_RESULTS = "tbs_eval/results.parquet"
"""Where a ``tbs.evaluate`` job leaves its episodes, relative to the ego job's folder."""


def find_tbs_results(directory: str | Path) -> list[Path]:
    """Every ``tbs_eval/results.parquet`` under ``directory`` (a bench or a ``train --algo tbs`` run)."""
    return sorted(Path(directory).rglob(TBS_RESULTS))


def tbs_summary(paths: list[Path], *, reps: int = 2000, seed: int = 0) -> pd.DataFrame:
    """One row per (layout, run, agent): scaled reward and return with bootstrap CIs
    (:func:`zsceval.tbs.jobs.summarize`); ``run`` is the ego job's folder relative to the common root."""
    rows = []
    root = Path(*Path(paths[0]).parts[:-3]) if len(paths) == 1 else Path(_common(paths))
    for path in paths:
        frame = pd.read_parquet(path)
        table = summarize(frame, reps=reps, seed=seed)
        table.insert(
            0, "run", str(path.parent.parent.relative_to(root)) if path.parent.parent != root else "."
        )
        table.insert(0, "layout", str(frame["layout"].iloc[0]))
        table["heldout_pairs"] = int(frame["heldout"].nunique())
        rows.append(table)
    return pd.concat(rows, ignore_index=True)


def _common(paths: list[Path]) -> str:
    import os

    return os.path.commonpath([str(p) for p in paths])


def format_tbs(summary: pd.DataFrame, level: float = 0.95) -> str:
    """Text table of :func:`tbs_summary`: scaled reward (return / the held-out pair's self-play
    return; the Oracle is 1 by construction) and mean sparse return, with CIs."""
    lines = [f"TBS protocol: held-out pool, both seats; scaled reward and sparse return [{level:.0%} CI]"]
    for (lay, run), g in summary.groupby(["layout", "run"], sort=True):
        lines.append(f"\n{lay}  ({run}, {int(g['heldout_pairs'].iloc[0])} held-out pairs)")
        lines.append(f"  {'agent':<8}  {'scaled reward':>24}  {'sparse return':>26}")
        for r in g.itertuples():
            scaled = f"{r.scaled:6.3f} [{r.scaled_low:6.3f}, {r.scaled_high:6.3f}]"
            ret = f"{r.sparse_return:7.1f} [{r.sparse_return_low:6.1f}, {r.sparse_return_high:6.1f}]"
            lines.append(f"  {r.agent:<8}  {scaled:>24}  {ret:>26}")
    return "\n".join(lines)
