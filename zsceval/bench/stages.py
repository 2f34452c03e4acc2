"""The training cost of a bench, stage by stage: env steps, the share done and the hours logged.

``zsceval bench --plan`` prints it before a run; at the end of a run the bench keeps it as
``stages.parquet`` beside its result tables (:func:`zsceval.bench.budget.env_step_budget`), and
``zsceval report`` prints it from there, so the cost of a result travels with it.
"""

from __future__ import annotations

import pandas as pd

__all__ = ["STAGES_TABLE", "format_budget", "format_left"]

STAGES_TABLE = "stages.parquet"
"""Env steps and hours of every training stage, written by ``zsceval bench`` at the end of a run
(:func:`zsceval.bench.budget.env_step_budget`); the report prints it as the training cost."""


def format_budget(budget: pd.DataFrame, left_hours: pd.Series | None = None) -> str:
    """The budget table as text: stage, jobs, env steps, the share done, and the hours its runs
    have logged (``train h``: their training wall-clock summed over jobs, waits for a core
    included; ``core h``: their busy seconds, :func:`zsceval.bench.budget.trained_steps`). Jobs of one
    stage run side by side, so ``train h`` is compute spent, not the stage's elapsed time.

    Args:
        budget: :func:`zsceval.bench.budget.env_step_budget` output (also ``stages.parquet``).
        left_hours: each stage's hours left on a core of its own
            (:func:`zsceval.bench.budget.hours_left`), printed as a ``left h`` column when given.
    """
    from zsceval.bench.budget import format_hours

    left = "" if left_hours is None else f" {'left h':>7}"
    lines = [f"{'stage':<40} {'jobs':>5} {'env steps':>15} {'done':>7} {'train h':>8} {'core h':>7}{left}"]
    for i, row in enumerate(budget.itertuples()):
        frac = row.done_steps / row.env_steps if row.env_steps else 0.0
        more = "" if left_hours is None else f" {format_hours(float(left_hours.iloc[i])):>7}"
        lines.append(
            f"{row.stage:<40} {row.jobs:>5} {row.env_steps:>15,} {frac:>6.0%} "
            f"{row.train_s / 3600:>8.2f} {row.busy_s / 3600:>7.2f}{more}"
        )
    total, done = int(budget["env_steps"].sum()), int(budget["done_steps"].sum())
    more = "" if left_hours is None else f" {format_hours(float(left_hours.sum())):>7}"
    lines.append(
        f"{'total':<40} {int(budget['jobs'].sum()):>5} {total:>15,} {done / max(total, 1):>6.0%} "
        f"{budget['train_s'].sum() / 3600:>8.2f} {budget['busy_s'].sum() / 3600:>7.2f}{more}"
    )
    return "\n".join(lines)


def format_left(hours: float, how: str) -> str:
    """``training left: about 2.4 h (HOW)``, in minutes under an hour, or that nothing is left."""
    if hours <= 0:
        return "training left: none (every run has trained its budget)"
    amount = f"{hours:.1f} h" if hours >= 1 else f"{max(1, round(hours * 60))} min"
    return f"training left: about {amount} ({how})"
