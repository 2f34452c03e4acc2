"""Schedules over env steps: piecewise-linear entropy coefficient and reward-shaping annealing."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["piecewise_linear", "shaping_factor"]


def piecewise_linear(step: float, milestones: Sequence[float], values: Sequence[float]) -> float:
    """Value of a piecewise-linear schedule at ``step`` (constant before the first and after the
    last milestone).

    Args:
        step: env steps so far.
        milestones: increasing env-step milestones, same length as ``values``.
        values: schedule values at the milestones.

    Returns:
        The interpolated value. ZSC-Eval's entropy schedule is ``values=(0.2, 0.05, 0.01)`` at
        ``milestones=(0, 5e6, 1e7)`` for SP (docs/reference-protocol.md "Training settings").

    Raises:
        ValueError: lengths differ or are zero.
    """
    if len(milestones) != len(values) or not milestones:
        raise ValueError("milestones and values must have the same, non-zero length")
    if step <= milestones[0]:
        return float(values[0])
    for (x0, y0), (x1, y1) in zip(zip(milestones, values), zip(milestones[1:], values[1:])):
        if step <= x1:
            if x1 == x0:
                return float(y1)
            return float(y0 + (y1 - y0) * (step - x0) / (x1 - x0))
    return float(values[-1])


def shaping_factor(step: float, initial: float, horizon: float) -> float:
    """Reward-shaping factor ``rsf = initial * max(1 - step / horizon, 0)`` (docs/overcooked-rules.md §3.6).

    Args:
        step: env steps so far (summed over all games).
        initial: factor at step 0.
        horizon: env steps until the factor reaches 0; 0 means "constant ``initial``".
    """
    if horizon == 0:
        return float(initial)
    return float(initial * max(1.0 - step / horizon, 0.0))
