"""Which checkpoints of a stage-1 population become stage-2 partners: init, mid and final.

Rule (ZSC-Eval ``scripts/extract_models/extract_sp_models.py`` and ``extract_pop_S1_models.py``,
docs/reference-protocol.md "FCP", following FCP's recipe):

- the curve is a member's logged training sparse return against env steps;
- final return ``R_f`` = mean of the last 5 logged values; **final** = the last checkpoint;
- **mid**: the curve is linearly interpolated on a grid of 100 env steps; the mid step is the *first*
  grid step whose value is closest to ``R_f / 2``; mid = the checkpoint nearest that step (ties keep
  the earlier);
- **init** = the checkpoint nearest step 0, i.e. the first one saved (after one update).

Our checkpoints are named by env step, so the reference's step -> version rescaling is not needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from zsceval.rl.checkpoint import (
    CheckpointError,
    agent_entries,
    list_checkpoints,
    load_checkpoint,
    policy_weights,
)
from zsceval.rl.policy import Policy

__all__ = ["TAGS", "mid_step", "nearest_checkpoint", "member_checkpoints", "load_population"]

TAGS = ("init", "mid", "final")
GRID = 100
"""Interpolation grid of the mid rule, in env steps (ZSC-Eval)."""


def mid_step(steps: Sequence[float], returns: Sequence[float], grid: int = GRID) -> tuple[int, float]:
    """The first step of the interpolated curve whose return is closest to half the final return.

    Args:
        steps: ``[M]`` increasing env steps of the logged points.
        returns: ``[M]`` training sparse returns at those steps.
        grid: grid spacing in env steps.

    Returns:
        ``(step, R_f)``; ``R_f`` = mean of the last 5 returns.

    Raises:
        ValueError: no points, or steps not increasing.
    """
    x = np.asarray(steps, dtype=np.float64)
    y = np.asarray(returns, dtype=np.float64)
    if x.size == 0 or x.size != y.size:
        raise ValueError("mid_step needs as many returns as steps, at least one")
    if np.any(np.diff(x) <= 0):
        raise ValueError("mid_step needs strictly increasing steps")
    final = float(y[-5:].mean())
    points = np.unique(np.concatenate([np.arange(x[0], x[-1], grid), x]))
    values = np.interp(points, x, y)
    gap = np.abs(values - final / 2)
    return int(points[int(np.argmin(gap))]), final  # argmin: the first of equal gaps


def nearest_checkpoint(ckpt_steps: Sequence[int], step: float) -> int:
    """Index of the checkpoint step nearest ``step`` (ties keep the earlier one)."""
    arr = np.asarray(ckpt_steps, dtype=np.float64)
    return int(np.argmin(np.abs(arr - step)))


def _step_of(ckpt: Path) -> int:
    return int(ckpt.name.split("_")[1])


def member_checkpoints(run_dir: str | Path, member: str) -> dict[str, dict]:
    """Init, mid and final checkpoints of one member of a stage-1 run.

    Args:
        run_dir: the stage-1 run folder (``metrics.csv``, ``checkpoints/``).
        member: the member's learner name (``member_03``).

    Returns:
        ``{tag: {"checkpoint": Path, "step": int, "return": float}}`` for tags init, mid, final;
        ``return`` is the logged curve at the chosen step (0 for init, ``R_f`` for final).

    Raises:
        CheckpointError: no checkpoints, or no logged return of the member.
    """
    run_dir = Path(run_dir)
    ckpts = list_checkpoints(run_dir)
    if not ckpts:
        raise CheckpointError(f"{run_dir}: no checkpoints to choose a population from")
    column = f"{member}/sparse_return"
    path = run_dir / "metrics.csv"
    metrics = pd.read_csv(path) if path.is_file() else pd.DataFrame()
    if column not in metrics:
        raise CheckpointError(f"{run_dir}: no logged training return of {member} ({column} in metrics.csv)")
    curve = metrics[["env_steps", column]].dropna()
    if curve.empty:
        raise CheckpointError(f"{run_dir}: {member} finished no episode; train the population longer")
    step, final = mid_step(curve["env_steps"].to_numpy(), curve[column].to_numpy())
    steps = [_step_of(c) for c in ckpts]
    mid = nearest_checkpoint(steps, step)
    ret_mid = float(np.interp(step, curve["env_steps"], curve[column]))
    return {
        "init": {"checkpoint": ckpts[0], "step": steps[0], "return": 0.0},
        "mid": {"checkpoint": ckpts[mid], "step": steps[mid], "return": ret_mid},
        "final": {"checkpoint": ckpts[-1], "step": steps[-1], "return": final},
    }


def load_population(
    run_dir: str | Path, members: Sequence[str], tags: Sequence[str] = TAGS, device="cpu"
) -> tuple[list[Policy], list[str], list[dict]]:
    """Load the chosen checkpoints of some members of a stage-1 run as frozen policies.

    Args:
        run_dir: the stage-1 run.
        members: learner names to take (a sliding window of the run's members).
        tags: which of init / mid / final.
        device: torch device.

    Returns:
        ``(policies, names, records)``: member-major, then tag; names ``<run>/<member>@<tag>``;
        records say which checkpoint each came from (for ``meta.json`` and docs).

    Raises:
        CheckpointError: a missing member, checkpoint or curve.
    """
    run_dir = Path(run_dir)
    cache: dict[Path, tuple[dict, dict]] = {}
    policies, names, records = [], [], []
    for member in members:
        chosen = member_checkpoints(run_dir, member)
        for tag in tags:
            ckpt = chosen[tag]["checkpoint"]
            if ckpt not in cache:
                _, meta, weights, _ = load_checkpoint(ckpt)
                cache[ckpt] = (meta, weights)
            meta, weights = cache[ckpt]
            entry = agent_entries(meta).get(member)
            if entry is None:
                raise CheckpointError(f"{ckpt} holds no member '{member}'")
            policy = Policy.from_spec(entry["spec"]).to(device)
            policy.load_state_dict(policy_weights(weights, member))
            policy.eval()
            policies.append(policy)
            names.append(f"{run_dir.parent.name}/{member}@{tag}")
            records.append({"member": member, "tag": tag, "step": chosen[tag]["step"],
                            "return": chosen[tag]["return"], "checkpoint": str(ckpt)})  # fmt: skip
    return policies, names, records
