"""Which checkpoint of an ego training run the benchmark scores.

Rule (ZSC-Eval ``zsceval/scripts/extract_models/extract_S2_models.py`` ``find_target_index`` and
``extract_pop_S2_models``; the same function in ``extract_e3t_models.py``):

- the curve is the run's logged training sparse return against env steps (ours: ``metrics.csv``,
  columns ``env_steps`` and ``sparse_return``, one row per iteration; the reference: the wandb
  history of ``either-<algo>_adaptive-ep_sparse_r`` or ``ep_sparse_r``); points without a value
  (iterations in which no episode ended) are skipped; no smoothing;
- ``q`` = the P-th percentile of all logged values (linear interpolation, numpy's default);
  P = 80 for the stage-2 egos (FCP, MEP, TrajeDi, HSP) and COLE, 90 for E3T;
- the curve's maximum is its first largest value; among the points logged *after* it, the target is
  the one whose value is closest to ``q`` (the first of equal distances); when the maximum is the
  last logged value, the target is the curve's last row (the end of training);
- the scored checkpoint is the saved one nearest the target's env step (the earlier of two equally
  near); ZSC-Eval saves every few updates, so one is usually near.

SP egos in ZSC-Eval are the ``final`` checkpoints of the FCP stage-1 self-play runs
(``extract_sp_models.py``): the last checkpoint (:data:`REFERENCE_PERCENTILES`).

Where we differ: the reference maps the chosen value back to a curve row by value (the first row of
the whole curve holding that value, which can lie before the maximum); we keep its position. We use
every logged point (the reference reads wandb's sampled history, at most 500 rows). Our checkpoints
are named by the run's env steps (the reference's stage-2 checkpoints count the ego's own
agent-steps, 1.25x the env steps for COLE's self-play share).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from zsceval.rl.checkpoint import list_checkpoints

__all__ = [
    "load_scored_ego",
    "DEFAULT_PERCENTILE",
    "EGO_CHECKPOINTS",
    "REFERENCE_PERCENTILES",
    "EgoCheckpoint",
    "NoTrainingCurve",
    "choose_ego_checkpoint",
    "ego_checkpoint",
    "percentile_for",
    "read_curve",
    "scored_ego_checkpoint",
]

DEFAULT_PERCENTILE = 80.0
"""ZSC-Eval ``extract_S2_models.py`` (``-p`` default 0.8): stage-2 egos and COLE."""

REFERENCE_PERCENTILES: dict[str, float | None] = {"e3t": 90.0, "sp": None}
"""Algorithms whose reference extraction differs: E3T uses the 90th percentile
(``extract_e3t_models.py``), SP the last checkpoint (None; ``extract_sp_models.py`` ``final``)."""

EGO_CHECKPOINTS = 20
"""Evenly spaced checkpoints an ego training run of ``zsceval bench`` keeps for the rule to choose
from (ZSC-Eval saves every 25 updates after the first 100, dozens per run)."""

RULE = "zsceval-extract-S2: after the curve's maximum, the point closest to its P-th percentile"
RULE_LAST = "zsceval-extract-sp: the last checkpoint"


class NoTrainingCurve(ValueError):
    """A run logged no training return (no episode ended), so the rule has no curve."""


@dataclasses.dataclass(frozen=True)
class EgoCheckpoint:
    """The checkpoint the rule chose and why.

    Attributes:
        step: env step of the chosen checkpoint.
        index: its index in the (ascending) checkpoint steps.
        train_return: the last logged training return at or before ``step`` (None if none).
        target_step: env step of the curve point the rule aimed at.
        target_return: the curve's value there.
        percentile: P (None: the last-checkpoint rule).
        percentile_return: the P-th percentile of the curve (None for the last-checkpoint rule).
        max_step, max_return: the curve's (first) maximum.
        exact: whether a checkpoint exists at ``target_step``.
        rule: which rule chose it.
    """

    step: int
    index: int
    train_return: float | None
    target_step: int
    target_return: float | None
    percentile: float | None
    percentile_return: float | None
    max_step: int | None
    max_return: float | None
    exact: bool
    rule: str

    def record(self) -> dict[str, Any]:
        """JSON-able fields (everything but ``index``)."""
        out = dataclasses.asdict(self)
        out.pop("index")
        return out


def percentile_for(algorithm: str | None) -> float | None:
    """The reference's percentile for an ego of ``algorithm`` (None: the last checkpoint)."""
    return REFERENCE_PERCENTILES.get(algorithm or "", DEFAULT_PERCENTILE)


def choose_ego_checkpoint(
    steps: Sequence[float],
    returns: Sequence[float],
    checkpoint_steps: Sequence[int],
    *,
    percentile: float | None = DEFAULT_PERCENTILE,
    run: str = "run",
) -> EgoCheckpoint:
    """Choose the checkpoint to score from a training curve (ZSC-Eval extract_S2_models.py
    find_target_index, then the nearest saved checkpoint).

    Args:
        steps: ``[M]`` env steps of the logged curve points, increasing.
        returns: ``[M]`` training sparse return (mean over the episodes that ended in that
            iteration, team reward units: 20 per soup in Overcooked); NaN = nothing logged.
        checkpoint_steps: ``[C]`` env steps of the saved checkpoints (any order).
        percentile: P in (0, 100]; None scores the last checkpoint (the reference's SP egos).
        run: the run's name, for error messages.

    Returns:
        the choice (:class:`EgoCheckpoint`); ``index`` refers to the checkpoint steps sorted
        ascending.

    Raises:
        ValueError: no checkpoint, mismatched lengths, steps not increasing, or P outside (0, 100].
        NoTrainingCurve (a ValueError): no logged return (only for a percentile rule).
    """
    ckpts = np.sort(np.asarray(checkpoint_steps, dtype=np.int64))
    if ckpts.size == 0:
        raise ValueError(f"{run}: no checkpoint to score")
    x = np.asarray(steps, dtype=np.float64)
    y = np.asarray(returns, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"{run}: the curve needs one return per step, got {x.shape} and {y.shape}")
    if np.any(np.diff(x) <= 0):
        raise ValueError(f"{run}: the curve's env steps must increase")
    last_row = int(x[-1]) if x.size else None
    keep = ~np.isnan(y)
    x, y = x[keep], y[keep]

    def train_return(step: int) -> float | None:
        logged = y[x <= step]
        return float(logged[-1]) if logged.size else None

    if percentile is None:
        last = int(ckpts[-1])
        top = int(np.argmax(y)) if y.size else None
        return EgoCheckpoint(
            step=last,
            index=int(ckpts.size - 1),
            train_return=train_return(last),
            target_step=last,
            target_return=train_return(last),
            percentile=None,
            percentile_return=None,
            max_step=None if top is None else int(x[top]),
            max_return=None if top is None else float(y[top]),
            exact=True,
            rule=RULE_LAST,
        )
    if not 0 < percentile <= 100:
        raise ValueError(f"percentile must be in (0, 100], got {percentile}")
    if y.size == 0:
        raise NoTrainingCurve(
            f"{run}: no logged training return (no episode ended), so no curve to choose from"
        )
    q = float(np.percentile(y, percentile))
    top = int(np.argmax(y))  # the first maximum
    if top + 1 < y.size:
        target = top + 1 + int(np.argmin(np.abs(y[top + 1 :] - q)))  # the first of equal distances
        target_step = int(x[target])
    else:  # nothing after the maximum: the curve's last row (also one that logged no return)
        target, target_step = top, last_row
    k = int(np.argmin(np.abs(ckpts - target_step)))  # the earlier of two equally near
    step = int(ckpts[k])
    return EgoCheckpoint(
        step=step,
        index=k,
        train_return=train_return(step),
        target_step=target_step,
        target_return=float(y[target]),
        percentile=float(percentile),
        percentile_return=q,
        max_step=int(x[top]),
        max_return=float(y[top]),
        exact=step == target_step,
        rule=RULE,
    )


def _step_of(ckpt: Path) -> int:
    return int(ckpt.name.split("_")[1])


def read_curve(run_dir: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """``(env_steps [M], sparse_return [M])`` of a run's ``metrics.csv`` (NaN where nothing was
    logged); empty arrays when the file or the column is missing."""
    path = Path(run_dir) / "metrics.csv"
    metrics = pd.read_csv(path) if path.is_file() else pd.DataFrame()
    if "env_steps" not in metrics or "sparse_return" not in metrics:
        return np.zeros(0), np.zeros(0)
    return metrics["env_steps"].to_numpy(np.float64), metrics["sparse_return"].to_numpy(np.float64)


def _pruned_note(
    run_dir: Path, ckpt_steps: list[int], steps: np.ndarray, choice: EgoCheckpoint
) -> str | None:
    """Why the choice is a fallback, when the run pruned the checkpoints the rule aimed at."""
    try:
        run_cfg = yaml.safe_load((run_dir / "config.yaml").read_text())["run"]
        every = int(run_cfg["checkpoint_every"])
        first_flag = bool(run_cfg.get("checkpoint_first", False))
        keep = run_cfg.get("keep_checkpoints")
    except (OSError, KeyError, TypeError, ValueError, yaml.YAMLError):
        return None
    if steps.size == 0 or every <= 0:
        return None
    threshold = steps[0] if first_flag else every
    written = steps[steps >= threshold]
    first_written = int(written[0]) if written.size else ckpt_steps[0]
    if ckpt_steps[0] <= first_written or ckpt_steps[0] - choice.target_step <= every / 2:
        return None
    return (
        f"the run kept only {len(ckpt_steps)} checkpoints (steps {ckpt_steps[0]}..{ckpt_steps[-1]}, "
        f"run.keep_checkpoints={keep}); the rule's step {choice.target_step} lies before them, so the "
        "nearest kept checkpoint was scored"
    )


def ego_checkpoint(
    run_dir: str | Path, algorithm: str | None = None, *, last_without_curve: bool = False
) -> tuple[Path, dict[str, Any]]:
    """The checkpoint of an ego run to score, and the record of the choice.

    Args:
        run_dir: the ego's run folder (``metrics.csv``, ``config.yaml``, ``checkpoints/``).
        algorithm: the ego's algorithm (registry name); picks the percentile
            (:func:`percentile_for`).
        last_without_curve: when the run logged no training return (no episode ended: toy
            budgets), score its last checkpoint and say so in ``fallback`` instead of raising.

    Returns:
        ``(checkpoint dir, record)``: the record holds :meth:`EgoCheckpoint.record`'s fields plus
        ``checkpoints_kept`` (how many the run had) and ``fallback`` (None, or why the rule could
        not be followed exactly: pruned checkpoints, no curve).

    Raises:
        ValueError: the run has no checkpoint.
        NoTrainingCurve: the run logged no training return and ``last_without_curve`` is False.
    """
    run_dir = Path(run_dir)
    ckpts = list_checkpoints(run_dir)
    steps_of = [_step_of(c) for c in ckpts]
    if not ckpts:
        raise ValueError(f"{run_dir}: no checkpoint to score")
    x, y = read_curve(run_dir)
    try:
        choice = choose_ego_checkpoint(x, y, steps_of, percentile=percentile_for(algorithm), run=str(run_dir))
        fallback = None if choice.percentile is None else _pruned_note(run_dir, steps_of, x, choice)
    except NoTrainingCurve as exc:
        if not last_without_curve:
            raise
        choice = choose_ego_checkpoint(x, y, steps_of, percentile=None, run=str(run_dir))
        fallback = f"{exc}; the last checkpoint was scored"
    return ckpts[choice.index], {**choice.record(), "checkpoints_kept": len(ckpts), "fallback": fallback}


def scored_ego_checkpoint(ego_job_dir: str | Path, algorithm: str | None) -> tuple[Path, dict[str, Any]]:
    """The checkpoint an ego evaluation job scores: :func:`ego_checkpoint` of the training job's
    ``run`` folder (its last checkpoint when the run logged no return), with the record's
    ``checkpoint`` relative to ``ego_job_dir``.

    Raises:
        ValueError: the run has no checkpoint.
    """
    ego_job_dir = Path(ego_job_dir)
    ckpt, record = ego_checkpoint(ego_job_dir / "run", algorithm, last_without_curve=True)
    return ckpt, {"checkpoint": str(ckpt.relative_to(ego_job_dir)), **record}


def load_scored_ego(params: dict, needs: dict, device: str = "cpu") -> tuple[Any, dict[str, Any] | None]:
    """The ego an evaluation job plays: an external agent (``params["agent"]``, ``module:attr``,
    :mod:`zsceval.rl.external`) or the scored checkpoint of the train job ``params["ego"]``
    (:func:`scored_ego_checkpoint`, the folder in ``needs``).

    Returns:
        ``(agent, scored)``: ``scored`` is the checkpoint's record, None for an external agent.
    """
    from zsceval.rl.checkpoint import load_policy
    from zsceval.rl.external import load_external

    if params.get("agent"):
        return load_external(params["agent"]), None
    ckpt, scored = scored_ego_checkpoint(Path(needs[params["ego"]]), params.get("algorithm"))
    return load_policy(ckpt, None, device)[0], scored
