"""``zsceval bench``: run (or resume) a suite's phases of jobs and collect its result tables.

:mod:`zsceval.bench.suite` loads the suite, :mod:`zsceval.bench.plan` builds its jobs and
:mod:`zsceval.bench.budget` costs them. :func:`run_bench` runs what is missing phase by phase
(partner generation, selection, mid BRs, manifest, ego training, evaluation), so a killed bench
resumes and finished work is never redone. Algorithms of the ZSC-Eval paper that are not registered
yet are reported as skipped. Outputs under ``--out``: ``<layout>/...`` job folders, and
``results.parquet``, ``br_returns.parquet``, ``cotrained_br_returns.parquet`` (generated sets, 2
players), ``features.parquet``, ``unhelpful.parquet`` (with
``evaluation.strata``), ``human_proxy.parquet`` (with ``evaluation.human_proxy``),
``stages.parquet`` and ``suite.yaml`` (the resolved suite) for ``zsceval report``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from zsceval import registry
from zsceval.bench.budget import env_step_budget
from zsceval.bench.plan import LayoutPlan, build_phases, human_data_installed, late_phases
from zsceval.bench.stacking import resolve_stacking, run_stacked
from zsceval.bench.stages import STAGES_TABLE
from zsceval.bench.suite import SUITE_RECORD, Suite, SuiteError, check_device, check_suite_record
from zsceval.evaluation.human_proxy import HUMAN_PROXY_TABLE
from zsceval.evaluation.partner_set import COTRAINED_BR_TABLE
from zsceval.evaluation.strata import UNHELPFUL_TABLE
from zsceval.execution import Job, run_jobs
from zsceval.execution import job_ids as ids
from zsceval.execution.locks import FolderLock
from zsceval.execution.slurm import SlurmOptions, slurm_options
from zsceval.io import atomic_path, atomic_write_text
from zsceval.rl.hardware import MAX_THREADS_ENV, scoped_environ, worker_thread_env
from zsceval.rl.loggers import LOGGERS_ENV, open_loggers
from zsceval.training.jobs import JOB_PROGRESS_ENV

__all__ = ["TABLES", "collect_tables", "log_summary", "run_bench"]

TABLES = ("results", "br_returns", "features", "human_proxy", "unhelpful", "scored_checkpoints", "stages")
"""The result tables a bench folder holds (``<name>.parquet``)."""


def _write_table(frame: pd.DataFrame, path: Path) -> None:
    with atomic_path(path) as tmp:
        frame.to_parquet(tmp)


def run_bench(
    suite: Suite,
    out: str | Path,
    *,
    executor: str = "local",
    workers: int = 1,
    retries: int | None = None,
    progress: bool = True,
    log=print,
    force: bool = False,
    stack: bool | None = None,
    loggers: tuple[str, ...] = (),
    slurm: SlurmOptions | None = None,
    stack_vmap: bool | None = None,
) -> dict[str, Any]:
    """Run (or resume) a suite; returns a summary with the result table paths.

    ``stack``: train each phase's stackable jobs as stacked phases first (:mod:`zsceval.bench.stacking`).
    ``stack_vmap``: a stacked phase's members act and update vmapped (:mod:`zsceval.rl.stacked_acting`,
    :mod:`zsceval.rl.stacked_update`); None for either: its default for the suite's device
    (:func:`~zsceval.bench.stacking.resolve_stacking`).
    ``loggers``: metric loggers (:mod:`zsceval.rl.loggers`) every training job of the bench also
    logs to, besides its ``run.loggers`` (through ``ZSCEVAL_LOGGERS``: a logger changes no result,
    so it is no job input and finished jobs stay finished); :func:`log_summary` sends the bench's
    summary to them. ``slurm``: the resources of ``executor="slurm"``'s jobs (default: the suite's
    ``slurm`` block); each job's torch threads are capped at its ``cpus``.

    ``retries``: attempts after a job's first failure (default: 1 for the process and Ray
    executors, 0 in-process; :func:`zsceval.execution.run_jobs`). The folder's ``suite.yaml``
    decides what it holds: a suite with other settings is refused unless ``force``
    (:func:`check_suite_record`); with ``force`` the old result tables are removed first, so
    ``zsceval report`` never shows them under the new suite.

    Raises:
        SuiteConflictError: ``out`` holds another suite setting and not ``force``.
        SuiteError: the suite names no implemented algorithm.
        zsceval.execution.JobError: a job failed (finished jobs stay finished; rerun to resume).
    """
    root = Path(out)
    implemented = [a for a in suite.algorithms if a in registry.names()]
    if not implemented and not suite.agents:
        raise SuiteError(
            f"none of the algorithms {', '.join(suite.algorithms)} is implemented yet, so there is nothing "
            f"to evaluate; implemented: {', '.join(registry.names())} (`zsceval algos`). "
            "To train evaluation partners only, use `zsceval partners generate` / `select`."
        )
    check_device(suite)
    diffs = check_suite_record(suite, root, force=force)
    root.mkdir(parents=True, exist_ok=True)
    stack, stack_vmap = resolve_stacking(stack, stack_vmap, str(suite.device))
    with FolderLock(root, "bench", info={"executor": executor, "workers": workers}):
        return _run_locked(
            suite, root, diffs, executor, workers, retries, progress, log, stack, loggers, slurm, stack_vmap
        )


def _run_locked(
    suite,
    root,
    diffs,
    executor,
    workers,
    retries,
    progress,
    log,
    stack=False,
    loggers=(),
    slurm=None,
    stack_vmap=False,
) -> dict[str, Any]:
    """:func:`run_bench` once the bench folder is locked."""
    if executor == "slurm" and slurm is None:
        slurm = slurm_options(dict(suite.slurm))
    if diffs:
        log("--force: replacing a run of another suite setting (" + "; ".join(diffs) + ")")
        for name in TABLES:
            (root / f"{name}.parquet").unlink(missing_ok=True)
    atomic_write_text(root / SUITE_RECORD, yaml.safe_dump(suite.to_dict(), sort_keys=False))
    skipped = [a for a in suite.algorithms if a not in registry.names()]
    if skipped:
        log(f"skipped (not implemented yet): {', '.join(skipped)}")
    if suite.human_proxy and not human_data_installed():
        from zsceval.human.trials import INSTALL_HINT

        log(f"human-proxy scores skipped: the 2019 human trials are not installed ({INSTALL_HINT})")
    static, infos = build_phases(suite)
    all_jobs: list[Job] = []

    def run_phase(name: str, jobs: list[Job]) -> None:
        log(f"phase: {name} ({len(jobs)} job{'' if len(jobs) == 1 else 's'})")
        all_jobs.extend(jobs)  # earlier phases' jobs are done: they are skipped, not rerun
        # progress inside a job (env steps of training) where one job runs at a time in this process
        inner = progress and executor == "local"
        env = {JOB_PROGRESS_ENV: "1" if inner else "0", LOGGERS_ENV: ",".join(loggers)}
        if executor == "slurm":  # a job's threads: the cores SLURM gives it
            env[MAX_THREADS_ENV] = str(slurm.cpus)
        elif executor != "local":  # concurrent jobs share the cores: no oversubscription
            env.update(worker_thread_env(workers))
        with scoped_environ(env):
            if stack:
                run_stacked(jobs, root, log, known=all_jobs, vmap=stack_vmap)
            run_jobs(all_jobs, root, executor=executor, workers=workers, retries=retries, progress=progress,
                     modules=_JOB_MODULES, slurm=slurm)  # fmt: skip

    for name, jobs in zip(["candidates and ego training", "candidate features", "partner selection"], static):
        run_phase(name, jobs)
    late = late_phases(suite, root, infos)
    for name, jobs in zip(["mid-checkpoint best responses", "partner-set manifests", "ego evaluation"], late):
        run_phase(name, jobs)
    tables = collect_tables(root, late[-1], infos, skipped)
    _write_table(env_step_budget(suite, static, root), root / STAGES_TABLE)
    tables["stages"] = str(root / STAGES_TABLE)
    return tables


_JOB_MODULES = (
    "zsceval.training.jobs",
    "zsceval.generation.pipeline",
    "zsceval.evaluation.ego_evaluation",
    "zsceval.evaluation.strata",
)
"""Modules whose import registers the bench's job kinds (in worker processes too)."""


def collect_tables(
    root: Path, evaluations: list[Job], infos: dict[str, LayoutPlan], skipped: list[str]
) -> dict[str, Any]:
    """Concatenate this suite's per-job tables into ``results.parquet``, ``br_returns.parquet``,
    ``cotrained_br_returns.parquet`` (the generated sets' mid partners with their candidates'
    co-trained BRs; :func:`zsceval.bench.br_notes.weak_br_notes` reads it), ``features.parquet``,
    ``human_proxy.parquet``, ``unhelpful.parquet`` and ``scored_checkpoints.parquet`` under ``root`` (outputs
    of other suites or earlier settings that share the folder are not read). A suite without
    ``ego.unhelpful`` jobs (``evaluation.strata: false``) removes an ``unhelpful.parquet`` an
    earlier setting left, so the folder's tables are this suite's.

    ``unhelpful.parquet``: one row per (layout, algorithm, ego seed, unhelpful partner, seating,
    episode), the columns of :func:`zsceval.evaluation.strata.unhelpful_results`.

    ``scored_checkpoints.parquet``: one row per trained ego (layout, algorithm, ego seed) with the
    checkpoint its evaluation scored and why (the record of
    :func:`zsceval.evaluation.ego_checkpoint.scored_ego_checkpoint`: step, training return, rule,
    percentile, fallback); external agents have none.

    Args:
        root: the bench folder.
        evaluations: the suite's evaluation jobs (``ego.evaluate``, ``ego.human_proxy``,
            ``ego.unhelpful``; finished).
        infos: :func:`~zsceval.bench.plan.build_phases`' plans by layout.
        skipped: algorithms the suite names that are not implemented yet.

    Returns:
        ``{"results" | "br_returns" | "cotrained_br_returns" | "features" | "human_proxy" | "unhelpful"
        | "scored_checkpoints": path of the table,
        "skipped_algorithms": [...]}`` (tables the suite has no rows for are left out).

    Raises:
        FileNotFoundError: a job's table is missing (the job has not finished).
    """
    results = [
        pd.read_parquet(root / job.out / "results.parquet")
        for job in evaluations
        if job.kind == "ego.evaluate"
    ]
    human = [
        pd.read_parquet(root / job.out / HUMAN_PROXY_TABLE)
        for job in evaluations
        if job.kind == "ego.human_proxy"
    ]
    unhelpful = [
        pd.read_parquet(root / job.out / UNHELPFUL_TABLE)
        for job in evaluations
        if job.kind == "ego.unhelpful"
    ]
    if not unhelpful:
        (root / UNHELPFUL_TABLE).unlink(missing_ok=True)
    scored = [_scored_checkpoint_row(root, job) for job in evaluations if job.kind == "ego.evaluate"]
    scored = [pd.DataFrame([r]) for r in scored if r is not None]
    brs, feats, cotrained = [], [], []
    for lay, info in infos.items():
        brs.append(pd.read_parquet(root / ids.partner_set(lay) / "br_returns.parquet"))
        if (root / ids.partner_set(lay) / COTRAINED_BR_TABLE).is_file():
            cotrained.append(pd.read_parquet(root / ids.partner_set(lay) / COTRAINED_BR_TABLE))
        if info.shipped:  # no candidates here: the set's features are in its manifest
            continue
        f = pd.read_parquet(root / ids.select(lay) / "features.parquet")
        f.insert(0, "layout", lay)
        feats.append(f)
    if not cotrained:  # shipped or n > 2 sets: no co-trained BRs; an earlier setting's table goes
        (root / COTRAINED_BR_TABLE).unlink(missing_ok=True)
    out = {}
    for name, frames in (
        ("results", results),
        ("br_returns", brs),
        ("cotrained_br_returns", cotrained),
        ("features", feats),
        ("human_proxy", human),
        ("unhelpful", unhelpful),
        ("scored_checkpoints", scored),
    ):
        if frames:
            path = root / f"{name}.parquet"
            _write_table(pd.concat(frames, ignore_index=True), path)
            out[name] = str(path)
    out["skipped_algorithms"] = skipped
    return out


def _scored_checkpoint_row(root: Path, job: Job) -> dict | None:
    """The scored-checkpoint record of a finished ``ego.evaluate`` job, labelled; None for an
    external agent."""
    done = json.loads((root / job.out / "DONE.json").read_text())
    scored = (done.get("result") or {}).get("scored_checkpoint")
    if scored is None:
        return None
    labels = {"layout": job.params["layout"], "algorithm": job.params["algorithm"],
              "ego_seed": int(job.params["ego_seed"])}  # fmt: skip
    return {**labels, **scored}


def log_summary(root: str | Path, loggers: tuple[str, ...], *, name: str, levels: str = "checkpoint") -> None:
    """Send a finished bench's BR-Prox summary (:func:`zsceval.bench.report.summarize`, the table
    ``zsceval bench`` prints) to each of ``loggers`` as a new run named ``bench <name>``: the table
    ``br_prox_summary`` (``<root>/br_prox_summary.csv`` for ``csv``) and one row of scalars,
    ``<layout>/<algorithm>/<partner level>/<column>`` for ``iqm``, ``ci_low`` and ``ci_high``, at
    step 0 (``<root>/summary_metrics.csv``).

    Raises:
        FileNotFoundError: the bench has no ``results.parquet`` yet.
        zsceval.rl.loggers.LoggerError: an unknown or uninstalled logger.
    """
    from zsceval.bench import report as rep

    results, br, _ = rep.read_tables(root)
    summary = rep.summarize(results, br, levels=levels)
    row: dict[str, Any] = {"env_steps": 0}
    for rec in summary.to_dict("records"):
        key = f"{rec['layout']}/{rec['algorithm']}/{rec['partner_level']}"
        row.update({f"{key}/{col}": float(rec[col]) for col in ("iqm", "ci_low", "ci_high")})
    with open_loggers(loggers, root, run_name=f"bench {name}", metrics_file="summary_metrics.csv") as group:
        group.log_table("br_prox_summary", summary)
        group.log_row(row, 0)
