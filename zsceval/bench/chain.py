"""``zsceval train`` for a multi-stage algorithm: its jobs (:meth:`Algorithm.jobs`) as one
resumable chain in the run folder.

FCP, MEP, TrajeDi (and HSP) need a stage-1 population before the ego can train. When such an
algorithm is trained without its inputs (e.g. no ``algo.population``), ``zsceval train`` runs the
chain the plug-in declares, with the local executor, into ``--out``: each job writes its own
folder (``stage1/...``, ``ego/``), finished jobs are never redone, and an interrupted training job
resumes from its last checkpoint when the same command (or ``--resume --out``) is run again.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import yaml

from zsceval.io import atomic_write_text
from zsceval.rl.config import ConfigError, TrainConfig

__all__ = [
    "CHAIN",
    "REDONE",
    "chain_job_ids",
    "chain_threads",
    "missing_inputs",
    "redo_jobs",
    "run_chain",
    "saved_chain",
]

CHAIN = "chain.json"
"""The chain's parameters, saved in the run folder (``--resume`` reads them)."""
EGO = "ego"
REDONE = "redone"
"""Where :func:`redo_jobs` sets aside the folders of jobs to redo: ``out/redone/<time>/<job folder>``."""


def _context(params: dict[str, Any]) -> Any:
    """The chain's job context; the ``algo.*`` overrides are its ``ego_options`` (which the plug-in
    reads, and :func:`chain_jobs` sends on to the training jobs that take them)."""
    from zsceval.bench.algo_options import algo_items

    overrides = list(params["overrides"])
    algo = algo_items(overrides)
    common = {k: params[k] for k in ("layout", "preset", "device")}
    common["overrides"] = [o for o in overrides if o not in algo]
    ego_options = dict(algo.values())
    from zsceval.rl.algorithm import JobContext  # torch: imported when a chain runs, not for --help

    return JobContext(params["algo"], params["layout"], params["seed"], params["steps"], EGO, common,
                      ego_options=ego_options)  # fmt: skip


def chain_jobs(params: dict[str, Any]) -> list:
    """The plug-in's jobs for the chain, each user ``algo.*`` option in the training jobs that take it
    (:func:`zsceval.bench.algo_options.route_chain_options`: TrajeDi's ``jsd_weight`` reaches its
    stage-1 population, not the ego).

    Raises:
        ConfigError: an ``algo.*`` option that no training job of the chain takes (the options of
            each job's algorithm named), or whose value the plug-in replaces with its own for the
            ego (:func:`~zsceval.bench.algo_options.plugin_conflicts`), before any job runs.
    """
    from zsceval import registry
    from zsceval.bench.algo_options import describe_options, plugin_conflicts, route_chain_options

    ctx = _context(params)
    algo_cls = registry.get(params["algo"])
    _check_ego_values(algo_cls, ctx.ego_options)
    jobs = algo_cls.jobs(ctx)
    if len(jobs) == 1:  # a one-stage algorithm: its run validates its options itself
        return jobs
    ego = next((j for j in jobs if j.id == ctx.ego_id), None)
    if ego is not None and ego.kind != "train":  # the chain reads its options itself (TBS): all are its own
        algo_cls.parse_options(ctx.ego_options)
    taken = [c for j in jobs if j.id == ctx.ego_id for c in plugin_conflicts(j, ctx.ego_options)]
    if taken:
        raise ConfigError(f"{params['algo']} sets these options itself, so --set cannot: {'; '.join(taken)}")
    jobs, unused = route_chain_options(jobs, ctx.ego_options, ctx.ego_id)
    if unused:
        keys = ", ".join(f"algo.{k}" for k in unused)
        raise ConfigError(f"{keys}: no training job of {params['algo']} has this option (the options of its "
                          f"jobs' algorithms: {describe_options(jobs)})")  # fmt: skip
    return jobs


def _check_ego_values(algo_cls: type, options: dict[str, Any]) -> None:
    """The values of the options the ego's algorithm declares, coerced to their types before its
    jobs are built (``algo.pool_size=abc`` is one line naming the key, not a traceback); options of
    the chain's other algorithms are routed and checked by the jobs that take them.

    Raises:
        ConfigError: a value of the wrong type.
    """
    if algo_cls.Options is None:
        return
    names = {f.name for f in dataclasses.fields(algo_cls.Options)}
    algo_cls.parse_options({k: v for k, v in options.items() if k in names})


def chain_threads(params: dict[str, Any]) -> int:
    """``run.num_threads`` of the chain's jobs: the chain's overrides over its preset (0: torch's
    default; ``auto`` resolved once for the chain), capped by ``ZSCEVAL_MAX_THREADS``
    (:func:`~zsceval.rl.hardware.resolve_threads`).

    Raises:
        ConfigError: a malformed override or an unknown preset.
    """
    from zsceval.rl.config import resolve_config
    from zsceval.rl.hardware import resolve_threads

    overrides = [o for o in params["overrides"] if not o.strip().startswith("algo.")]
    cfg = resolve_config(preset=params["preset"], overrides=overrides, **{"env.layout": params["layout"]})
    return resolve_threads(cfg.run.num_threads)[0]


def missing_inputs(algo_cls: type, cfg: TrainConfig, params: dict[str, Any]) -> list[str]:
    """``algo.*`` options that the plug-in's final job fills from earlier jobs and the config lacks.

    Returns:
        option names; empty for a one-stage algorithm or when the user gave every input.

    Raises:
        ConfigError: the user gave some of the inputs but not all (HSP's ``algo.population`` without
            its ``algo.candidate_runs``): the chain would replace the given ones with its own stages'
            outputs, so the run is refused with the inputs given and missing named.
    """
    # the plug-in's own jobs, before the options are routed: a user who gave every input trains the
    # ego alone, with any option (FCP's window too), so nothing here refuses one (but a bad value of
    # one of the ego's own options is one line, not a traceback from inside the plug-in)
    ctx = _context(params)
    _check_ego_values(algo_cls, ctx.ego_options)
    jobs = algo_cls.jobs(ctx)
    ego = next(j for j in jobs if j.id == EGO)
    inputs = list(ego.params.get("algo_inputs", {}))
    missing = [k for k in inputs if not cfg.algo.get(k)]
    given = [k for k in inputs if k not in missing]
    if given and missing:
        name = params["algo"]
        raise ConfigError(
            f"{name}'s ego takes {', '.join(f'algo.{k}' for k in inputs)} from earlier stages; "
            f"{', '.join(f'algo.{k}' for k in given)} given, {', '.join(f'algo.{k}' for k in missing)} "
            f"missing: give all of them to train the ego alone, or none to run {name}'s whole chain "
            "(its stages would replace the ones given)"
        )
    return missing


def config_file_overrides(path: str | None) -> list[str]:
    """A YAML config file as ``section.key=value`` overrides (the chain's jobs take overrides).

    Raises:
        ConfigError: the file cannot be read or is not a mapping of sections.
    """
    if path is None:
        return []
    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ConfigError(f"config file {path} must be a mapping of sections")
    return [f"{s}.{k}={json.dumps(v)}" for s, values in data.items() for k, v in values.items()]


def saved_chain(out: str | Path) -> dict[str, Any] | None:
    """The chain parameters saved in ``out`` (None: ``out`` holds no chain)."""
    path = Path(out) / CHAIN
    return json.loads(path.read_text()) if path.is_file() else None


def chain_job_ids(params: dict[str, Any]) -> list[str]:
    """The ids of the chain's jobs, in the plug-in's order (e.g. ``cramped_room/stage1/fcp-stage1``,
    ``ego``)."""
    return [j.id for j in chain_jobs(params)]


def redo_jobs(jobs: list, out: Path, patterns: list[str]) -> list[str]:
    """Set aside the folders of the jobs matching ``patterns`` and of every job that reads them, so
    that the chain runs them again; nothing is deleted (``out/redone/<time>/...``).

    Args:
        jobs: the chain's jobs.
        out: the chain's folder.
        patterns: job ids or shell patterns over them (``fnmatch``: ``*stage1*``, ``ego``).

    Returns:
        The ids of the jobs set aside (those that had a folder), in chain order.

    Raises:
        ConfigError: a pattern that matches no job (the chain's job ids are listed).
    """
    import fnmatch
    import time

    ids = [j.id for j in jobs]
    chosen: set[str] = set()
    for pattern in patterns:
        hit = [i for i in ids if fnmatch.fnmatchcase(i, pattern)]
        if not hit:
            raise ConfigError(f"--redo {pattern!r} matches no job of this chain; its jobs: {', '.join(ids)}")
        chosen.update(hit)
    changed = True
    while changed:  # the jobs that read a redone job's output are redone too
        changed = False
        for j in jobs:
            if j.id not in chosen and chosen.intersection(j.needs):
                chosen.add(j.id)
                changed = True
    aside = out / REDONE / time.strftime("%Y%m%d-%H%M%S")
    moved = []
    for j in jobs:
        folder = out / (j.out or j.id)
        if j.id in chosen and folder.exists():
            target = aside / (j.out or j.id)
            target.parent.mkdir(parents=True, exist_ok=True)
            folder.rename(target)
            moved.append(j.id)
    return moved


def run_chain(
    params: dict[str, Any], out: str | Path, progress: bool = True, redo: list[str] | None = None,
    log: Any = None, workers: int = 1, executor: str | None = None, slurm: Any = None,
) -> dict[str, Any]:  # fmt: skip
    """Run (or resume) the plug-in's job chain into ``out``.

    Args:
        params: ``algo, layout, seed, steps`` (None: the preset's), ``preset, device, overrides``.
        out: the run folder; the ego's run is ``out/ego/run``.
        progress: progress bars.
        redo: job ids or patterns to run again although finished (:func:`redo_jobs`), with every
            job that reads them.
        log: called with one line per job set aside (default: nothing).
        workers: jobs run at once, each in its own process, when more than 1 (jobs whose inputs are
            all finished, e.g. TBS's training and held-out pools); every job's torch threads are
            then capped at ``usable cores // workers`` (``ZSCEVAL_MAX_THREADS``), so the chain's
            jobs never oversubscribe the cores. Not part of ``params``: a chain may resume with
            another value. With a fixed ``run.num_threads`` (at most the cap) the jobs' outputs do
            not depend on it; with ``auto`` the cap may change a job's thread count, hence its float
            rounding.
        executor: ``local``, ``process`` or ``slurm`` (one SLURM job per job, ``workers`` at once,
            resources ``slurm``: :class:`~zsceval.execution.slurm.SlurmOptions`; each job's threads
            capped at its ``cpus``); default ``process`` with ``workers`` above 1, else ``local``.
        slurm: the SLURM jobs' resources (default :class:`~zsceval.execution.slurm.SlurmOptions`).

    Returns:
        the ego run's ``eval.json`` content.

    Raises:
        ValueError: ``workers`` below 1.
        ConfigError: ``out`` holds another chain, or a ``redo`` pattern matches no job.
        zsceval.execution.jobs.JobError: a job failed (finished jobs stay finished).
    """
    import torch

    from zsceval.execution.executors import run_jobs
    from zsceval.execution.slurm import SlurmOptions
    from zsceval.rl.hardware import MAX_THREADS_ENV, scoped_environ, worker_thread_env
    from zsceval.training.jobs import JOB_PROGRESS_ENV

    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")

    out = Path(out).resolve()  # the runs record their inputs' paths: absolute, so any cwd resumes
    saved = saved_chain(out)
    if saved is not None and saved != params:
        raise ConfigError(
            f"{out} holds a {saved['algo']} chain with other settings; resume it with "
            f"`zsceval train --resume --out {out}` or choose another --out"
        )
    jobs = chain_jobs(params)
    out.mkdir(parents=True, exist_ok=True)
    if redo:
        for job_id in redo_jobs(jobs, out, redo):
            if log is not None:
                log(f"redo: {job_id} (its folder moved to {out / REDONE})")
    atomic_write_text(out / CHAIN, json.dumps(params, indent=2))
    executor = executor or ("process" if workers > 1 else "local")
    if executor == "slurm":  # a job's threads: the cores SLURM gives it
        slurm = slurm or SlurmOptions()
        env = {JOB_PROGRESS_ENV: "0", MAX_THREADS_ENV: str(slurm.cpus)}
    else:
        env = {JOB_PROGRESS_ENV: "1" if progress and workers == 1 else "0", **worker_thread_env(workers)}
    threads_before = torch.get_num_threads()
    try:
        with scoped_environ(env):  # no bars from parallel jobs; their threads capped at cores / workers
            # Training jobs set run.num_threads themselves; the others (clustering, ToM models,
            # evaluation) run with the process's count, which is torch's default (all cores) when a
            # resumed chain has no training job left: two one-thread chains on two cores would then
            # oversubscribe them.
            threads = chain_threads(params)
            if threads > 0:
                torch.set_num_threads(threads)
            run_jobs(jobs, out, executor=executor, workers=workers, progress=progress, slurm=slurm)
    finally:
        torch.set_num_threads(threads_before)
    return json.loads((out / EGO / "run" / "eval.json").read_text())
