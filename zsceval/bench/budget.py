"""A suite's training cost: env steps per stage, what a bench folder already holds, and the hours
left (``zsceval bench --plan``; ``stages.parquet``, which the report prints as the training cost)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pandas as pd

from zsceval.bench.suite import Suite
from zsceval.envs.scenarios import num_players, resolve_scenario
from zsceval.execution import Job
from zsceval.execution import job_ids as ids

__all__ = [
    "ASSUMED_RATES",
    "STAGE_RATE_MIN_STEPS",
    "env_step_budget",
    "estimate_hours",
    "format_hours",
    "hours_left",
    "jobs_budget",
    "stage_of",
    "trained_steps",
]

ASSUMED_RATES = {
    ("quick", "cpu"): 30_000,
    ("paper", "cpu"): 3_000,
    ("quick", "cuda"): 30_000,
    ("paper", "cuda"): 10_800,
}
"""Env steps/s of one training process, assumed for the time estimate before any job of the folder
has run (docs/performance.md): the quick preset (MLP) at 30-90k on the project's 2-core CPU, and no
faster on one GPU, where a job of 512 games is launch-bound; the paper preset (CNN + GRU) at about
3k on a CPU core and 10.8k on an H200."""

COLUMNS = ["stage", "jobs", "env_steps", "done_steps", "train_s", "busy_s"]


def stage_of(job_id: str) -> str:
    """The cost table's stage of a training job (candidates, a stage-1 population, an algorithm's
    egos); another job's id below its layout (a plug-in's own stage, e.g. ``tbs/pool_n6_s0``)."""
    job = ids.parse(job_id)
    if job.kind == "candidate":
        return (
            "HSP's own candidates (biased + BR)"
            if job.group == ids.HSP_CANDIDATES
            else "candidates (biased agent + its BR)"
        )
    if job.kind == "stage1":
        return f"stage 1: {job.algo}"
    if job.kind in ("ego", "ego_stage"):
        return f"ego: {job.algo}"
    parts = str(job_id).split("/")
    return "/".join(parts[1:]) if len(parts) > 1 else job_id


def trained_steps(run: Path) -> tuple[int, float, float]:
    """``(env steps, training seconds, busy seconds)`` a (possibly unfinished) run has logged in
    ``metrics.csv``.

    Busy seconds are the CPU seconds the run's process spent (the ``cpu_s`` column summed): the
    time it needs on a core of its own. Training seconds also count the time the process waited
    for a core (other jobs, a niced or paused process), so a rate from them says how busy the
    machine was, not how fast a job trains. A log from before ``cpu_s`` existed gives its env steps
    over its 90th-percentile iteration rate (``env_steps_per_s``, the iterations that had a core),
    and a log without either its training seconds.
    """
    metrics = run / "metrics.csv"
    if not metrics.is_file():
        return 0, 0.0, 0.0
    wanted = {"env_steps", "wall_time_s", "env_steps_per_s", "cpu_s"}
    try:
        frame = pd.read_csv(metrics, usecols=lambda c: c in wanted)
    except (ValueError, OSError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return 0, 0.0, 0.0
    if frame.empty or "env_steps" not in frame or "wall_time_s" not in frame:
        return 0, 0.0, 0.0
    done, secs = int(frame["env_steps"].iloc[-1]), float(frame["wall_time_s"].iloc[-1])
    if "cpu_s" in frame and frame["cpu_s"].notna().all():
        return done, secs, float(frame["cpu_s"].sum())
    rates = frame["env_steps_per_s"].dropna() if "env_steps_per_s" in frame else pd.Series(dtype=float)
    rate = float(rates.quantile(0.9)) if len(rates) else 0.0
    return done, secs, (done / rate if rate > 0 else secs)


def jobs_budget(jobs: list[Job], root: str | Path | None = None, default_steps: int = 0) -> pd.DataFrame:
    """Env steps of the training jobs among ``jobs`` by stage (:func:`stage_of`), and what their
    runs under ``root`` have logged.

    A ``train`` job counts its ``steps`` (``default_steps`` when it has none: an ego that trains its
    preset's budget); a job of another kind that trains counts ``steps_per_br`` (TBS's best
    responses, one per cluster and one to the pool, so its row is per BR); the rest train nothing.

    Returns:
        the columns of :func:`env_step_budget`.
    """
    rows: dict[str, dict] = {}
    root = Path(root) if root is not None else None
    seen = set()
    for job in jobs:
        steps = (
            job.params.get("steps") or default_steps
            if job.kind == "train"
            else job.params.get("steps_per_br")
        )
        if not steps or job.id in seen:
            continue
        seen.add(job.id)
        stage = stage_of(job.id) + ("" if job.kind == "train" else " (per best response)")
        row = rows.setdefault(stage, dict.fromkeys(COLUMNS, 0) | {"stage": stage})
        row["jobs"] += 1
        row["env_steps"] += int(steps)
        if root is not None and job.out is not None:
            done, secs, busy = trained_steps(root / job.out / "run")
            row["done_steps"] += min(done, int(steps))
            row["train_s"] += secs
            row["busy_s"] += busy
    return pd.DataFrame(list(rows.values()), columns=COLUMNS).astype({"train_s": float, "busy_s": float})


def env_step_budget(suite: Suite, static: list[list[Job]], root: str | Path | None = None) -> pd.DataFrame:
    """Env steps of every training stage of a suite, and how many a folder already holds.

    Counts the training jobs of phases 1-3 (``steps`` of each ``train`` job: candidates with their
    BRs, stage-1 populations, egos) and the mid-checkpoint BRs of the late phase (K per layout; one
    per pair of the 2K partners for games of more than two players), whose ids depend on the
    selection. Evaluation episodes are not counted.

    Returns:
        one row per stage: ``stage, jobs, env_steps, done_steps, train_s, busy_s`` (``done_steps``:
        what the runs under ``root`` have logged, finished or not; ``train_s``: their training
        seconds; ``busy_s``: the seconds they need on a core each, see :func:`trained_steps`).
    """
    frame = jobs_budget([j for phase in static for j in phase], root)
    rows = {r["stage"]: r for r in frame.to_dict("records")}
    root = Path(root) if root is not None else None

    def add(stage: str, steps: int, out: str | None) -> None:
        row = rows.setdefault(stage, dict.fromkeys(COLUMNS, 0) | {"stage": stage})
        row["jobs"] += 1
        row["env_steps"] += int(steps)

    for layout in suite.layouts:
        lay = resolve_scenario(layout)
        pb = suite.budget(lay)
        if suite.partner_set(lay):  # a shipped set: nothing to train
            continue
        count = pb.k if num_players(lay) <= 2 else len(list(itertools.combinations(range(2 * pb.k), 2)))
        brs = root / lay / "partners" if root is not None else None
        for _ in range(count):
            add("mid-checkpoint BRs", pb.mid_br_steps, None)
        if brs is not None and brs.is_dir():  # their ids depend on the selection: count what is there
            row = rows["mid-checkpoint BRs"]
            for run in brs.glob("*/*/run"):
                done, secs, busy = trained_steps(run)
                row["done_steps"] += min(done, pb.mid_br_steps)
                row["train_s"] += secs
                row["busy_s"] += busy
    return pd.DataFrame(list(rows.values()), columns=COLUMNS).astype({"train_s": float, "busy_s": float})


STAGE_RATE_MIN_STEPS = 100_000
"""Env steps a stage's runs must have logged before its own rate is used for its remaining steps."""


def estimate_hours(suite: Suite, budget: pd.DataFrame, workers: int = 1) -> tuple[float, str]:
    """Hours left for the suite's training and how the rate was found (:func:`hours_left` for the
    suite's preset and device)."""
    hours, how, _ = hours_left(suite.preset, str(suite.device), budget, workers)
    return hours, how


def hours_left(
    preset: str, device: str, budget: pd.DataFrame, workers: int = 1
) -> tuple[float, str, pd.Series]:
    """Hours left for a budget's training, how the rate was found, and each stage's hours.

    Once the runs add up to 1e6 env steps, each stage's remaining steps are divided by that stage's
    own rate (its env steps over its busy seconds, once it has logged
    :data:`STAGE_RATE_MIN_STEPS`), else by the rate over all stages: stages differ (a stage-2 ego
    trains slower than a candidate). Busy seconds count a job on a core of its own, so the estimate
    is for ``workers`` concurrent jobs that each get a core, not for a machine shared with other
    work. Before that, :data:`ASSUMED_RATES` for the preset and device (the quick preset's CPU rate,
    said so, for a pair it has no figure for). ``workers`` divide the total, not a stage's hours.

    Args:
        preset: the training preset (``quick``, ``paper``).
        device: the jobs' torch device (``cuda:1`` counts as ``cuda``).
        budget: :func:`env_step_budget` or :func:`jobs_budget` output.
        workers: jobs that run at once.

    Returns:
        ``(hours, how, per-stage hours)`` (a ``pandas.Series`` aligned with ``budget``'s rows).
    """
    busy = budget["busy_s"].astype(float)
    done, secs = int(budget["done_steps"].sum()), float(busy.sum())
    left = (budget["env_steps"] - budget["done_steps"]).clip(lower=0)
    if done >= 1_000_000 and secs > 0:
        rate = done / secs
        own = (budget["done_steps"] >= STAGE_RATE_MIN_STEPS) & (busy > 0)
        stage_s = left / (budget["done_steps"] / busy.where(own)).where(own, rate)
        how = f"{rate:,.0f} env steps/s per job on a core of its own; per stage, measured on these runs"
    else:
        kind = "cuda" if device.startswith("cuda") else device
        rate = ASSUMED_RATES.get((preset, kind))
        note = "nothing has run yet"
        if rate is None:
            rate, note = (
                ASSUMED_RATES[("quick", "cpu")],
                "no figure for this pair: the quick preset's CPU rate",
            )
        how = f"{rate:,.0f} env steps/s per job, assumed for preset {preset!r} on {kind} ({note})"
        stage_s = left / rate
    return float(stage_s.sum()) / max(1, workers) / 3600, how, stage_s / 3600


def format_hours(hours: float) -> str:
    """Hours for a table or a sentence: ``0`` only when nothing is left, ``<0.01`` for a few
    seconds' worth, else two decimals."""
    if hours <= 0:
        return "0"
    return "<0.01" if hours < 0.01 else f"{hours:.2f}"
