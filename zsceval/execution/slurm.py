"""The SLURM executor: one SLURM job per bench job, submitted with submitit.

``zsceval bench --executor slurm`` runs each job of the bench (a training run, an evaluation, a
selection) as its own SLURM job through submitit (``pip install "zsceval[slurm]"``): the driver
(``zsceval bench`` on the login node) keeps the bench folder's lock, submits a job when its
``needs`` are done, at most ``--workers`` at a time, and waits. A job writes its outputs and its
``DONE.json`` into the shared bench folder exactly as under the other executors
(:func:`zsceval.execution.jobs.run_job`), so a killed bench resumes the same way: finished jobs are
skipped, a training job resumes from its last checkpoint.

Resources (:class:`SlurmOptions`) come from the suite's ``slurm:`` block, overridden by the
``--slurm-*`` options of ``zsceval bench``. submitit's logs and pickles live in
``<bench>/slurm/`` (``%j_log.out`` / ``%j_log.err`` per job). On Ctrl-C (SIGINT) or SIGTERM the
driver cancels the SLURM jobs it submitted (``scancel``) before it exits; a driver killed with
SIGKILL leaves them running: cancel them (``scancel --name zsceval``) before resuming, or the
resumed bench's copy of a still-running training job is refused by its run folder's lock (which
names the holder).

``cluster: local`` runs the jobs as local processes through submitit's ``LocalExecutor`` (the
tests; a single machine), ``debug`` in this process (submitit's ``DebugExecutor``).
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import re
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .jobs import Job, JobError

__all__ = ["CLUSTERS", "SlurmOptions", "SlurmPool", "parse_time", "require_submitit", "slurm_options"]

CLUSTERS = ("slurm", "local", "debug")
"""submitit back-ends: ``slurm`` (sbatch), ``local`` (local processes), ``debug`` (in-process)."""
INSTALL = 'pip install "zsceval[slurm]"'
_FORWARDED_ENV = re.compile(r"^(ZSCEVAL_|OMP_NUM_THREADS$|MKL_NUM_THREADS$|WANDB_|MLFLOW_)")
"""Environment variables of the driver that every job gets (the bench's job settings, loggers)."""


@dataclass(frozen=True)
class SlurmOptions:
    """Resources of every SLURM job of a bench (the suite's ``slurm:`` block, ``--slurm-*``)."""

    partition: str | None = None
    """SLURM partition (``sbatch --partition``); None: the cluster's default."""
    time: str = "24:00:00"
    """Wall-clock limit of one job: minutes, ``HH:MM:SS``, ``D-HH:MM:SS`` or ``D-HH`` (SLURM's
    formats). A job that reaches it is killed; the next run of the bench resumes it from its last
    checkpoint."""
    gpus: int = 0
    """GPUs per job (``--gpus-per-node``); give the suite ``device: cuda`` to use them."""
    cpus: int = 4
    """CPU cores per job (``--cpus-per-task``); a training job uses them as torch threads."""
    mem_gb: float | None = None
    """Memory per job in GB (``--mem``); None: the partition's default."""
    account: str | None = None
    """SLURM account (``--account``)."""
    qos: str | None = None
    """Quality of service (``--qos``)."""
    constraint: str | None = None
    """Node features (``--constraint``), e.g. ``a100``."""
    setup: tuple[str, ...] = ()
    """Shell lines run before each job, e.g. ``module load cuda`` or ``source ~/venv/bin/activate``."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Further ``sbatch`` options by name, e.g. ``{exclude: node12}``."""
    cluster: str = "slurm"
    """``slurm``, ``local`` (local processes, for tests and one machine) or ``debug`` (in-process)."""

    def executor(self, folder: str | Path) -> Any:
        """A ``submitit.AutoExecutor`` with these resources, its files under ``folder``.

        Raises:
            JobError: submitit is not installed (the install command named), an unknown cluster, or
                ``cluster: slurm`` on a machine without SLURM.
        """
        submitit = require_submitit()
        if self.cluster not in CLUSTERS:
            raise JobError(f"slurm cluster must be one of {', '.join(CLUSTERS)}, got {self.cluster!r}")
        try:
            ex = submitit.AutoExecutor(folder=str(folder), cluster=self.cluster)
        except RuntimeError as exc:  # no sbatch / srun on this machine
            raise JobError(
                f"executor 'slurm': {exc} Submit from a machine of the SLURM cluster (its login node), "
                "or run the jobs as local processes with --slurm-cluster local"
            ) from None
        params: dict[str, Any] = {
            "timeout_min": parse_time(self.time), "cpus_per_task": self.cpus, "gpus_per_node": self.gpus,
            "name": "zsceval",
        }  # fmt: skip
        if self.mem_gb is not None:
            params["mem_gb"] = self.mem_gb
        slurm = {"partition": self.partition, "account": self.account, "qos": self.qos,
                 "constraint": self.constraint, "setup": list(self.setup) or None}  # fmt: skip
        if self.extra:
            slurm["additional_parameters"] = dict(self.extra)
        if self.cluster == "slurm":
            params.update({f"slurm_{k}": v for k, v in slurm.items() if v is not None})
        ex.update_parameters(**params)
        return ex


def require_submitit() -> Any:
    """The ``submitit`` module.

    Raises:
        JobError: submitit is not installed (the install command named).
    """
    try:
        import submitit
    except ImportError:
        raise JobError(f"executor 'slurm' needs submitit: {INSTALL}") from None
    return submitit


def parse_time(value: str | int) -> int:
    """Minutes of a SLURM time limit: ``90``, ``"90"``, ``"1:30:00"``, ``"2-00:00:00"``, ``"1-12"``.

    Raises:
        ValueError: another format, or not positive.
    """
    text = str(value).strip()
    m = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", text)
    if not m:
        raise ValueError(f"slurm time {value!r}: use minutes, HH:MM:SS, D-HH:MM:SS or D-HH")
    days, a, b, c = (int(g) if g else 0 for g in m.groups())
    if m.group(1):  # D-HH[:MM[:SS]]
        minutes = days * 1440 + a * 60 + b + (c > 0)
    elif m.group(4):  # HH:MM:SS
        minutes = a * 60 + b + (c > 0)
    elif m.group(3):  # MM:SS
        minutes = a + (b > 0)
    else:  # minutes
        minutes = a
    if minutes < 1:
        raise ValueError(f"slurm time {value!r} must be at least one minute")
    return minutes


def slurm_options(block: dict[str, Any] | None = None, **overrides: Any) -> SlurmOptions:
    """:class:`SlurmOptions` from a suite's ``slurm:`` block, then the non-None ``overrides``
    (the command line's ``--slurm-*``).

    Raises:
        ValueError: an unknown key (the valid ones listed), a malformed time or a bad value.
    """
    names = [f.name for f in fields(SlurmOptions)]
    values = dict(block or {})
    values.update({k: v for k, v in overrides.items() if v is not None})
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise ValueError(f"unknown slurm option(s) {', '.join(unknown)}; valid: {', '.join(names)}")
    if isinstance(values.get("setup"), str):
        values["setup"] = [values["setup"]]
    if "setup" in values:
        values["setup"] = tuple(str(s) for s in values["setup"])
    if not isinstance(values.get("extra", {}), dict):
        raise ValueError("slurm option extra must be a mapping of sbatch options")
    opts = SlurmOptions(**values)
    parse_time(opts.time)
    for name in ("gpus", "cpus"):
        if not isinstance(getattr(opts, name), int) or getattr(opts, name) < (1 if name == "cpus" else 0):
            raise ValueError(f"slurm option {name} must be an integer >= {1 if name == 'cpus' else 0}")
    if opts.cluster not in CLUSTERS:
        raise ValueError(f"slurm cluster must be one of {', '.join(CLUSTERS)}, got {opts.cluster!r}")
    return opts


def _in_job(env: dict[str, str], fn: Callable, args: tuple) -> tuple[str, Any]:
    """Entry point of a SLURM job: the driver's job settings in the environment, then ``fn(*args)``.
    A :class:`JobError` comes back as a value, so the driver keeps whether a retry can help
    (submitit would turn it into a plain failure)."""
    os.environ.update(env)
    try:
        return "ok", fn(*args)
    except JobError as err:
        return "job_error", (str(err), err.job, err.retryable)


class SlurmPool:
    """Submits functions as SLURM jobs and hands back ``concurrent.futures`` futures (for the
    executors' scheduler); at most ``workers`` jobs are queued or running at once.

    Args:
        options: the jobs' resources.
        folder: submitit's folder (logs, pickles).
        workers: jobs in flight at once.
    """

    def __init__(self, options: SlurmOptions, folder: str | Path, workers: int) -> None:
        self.executor = options.executor(folder)
        self.threads = cf.ThreadPoolExecutor(max_workers=max(workers, 1))
        self.jobs: dict[str, Any] = {}  # job id -> submitit job in flight
        self.lock = threading.Lock()
        self.cancelled = threading.Event()
        self._old_term = None

    def submit(self, job: Job, fn: Callable, *args: Any) -> cf.Future:
        """Run ``fn(*args)`` as the SLURM job of ``job``; the future holds its result or raises a
        :class:`JobError` (retryable when the SLURM job failed, timed out or was preempted)."""
        env = {k: v for k, v in os.environ.items() if _FORWARDED_ENV.match(k)}
        return self.threads.submit(self._run, job, fn, args, env)

    def _run(self, job: Job, fn: Callable, args: tuple, env: dict[str, str]) -> Any:
        with self.lock:
            if self.cancelled.is_set():
                raise JobError(f"job {job.id!r} was not submitted: the bench is stopping", job=job.id)
            self.executor.update_parameters(name=f"zsceval:{job.id}")
            sjob = self.executor.submit(_in_job, env, fn, args)
            self.jobs[job.id] = sjob
        try:
            while not sjob.done():  # submitit's own wait checks SLURM's state about once a minute
                if self.cancelled.wait(1.0):
                    raise JobError(f"job {job.id!r}: SLURM job {sjob.job_id} was cancelled", job=job.id)
            outcome, value = sjob.result()
        except JobError:
            raise
        except Exception as exc:  # FailedJobError, UncompletedJobError (timeout, preemption, scancel)
            raise JobError(
                f"job {job.id!r} ({job.kind}) failed as SLURM job {sjob.job_id} (log: {sjob.paths.stderr}): "
                f"{type(exc).__name__}: {exc}",
                job=job.id,
                retryable=True,
            ) from None
        finally:
            with self.lock:
                self.jobs.pop(job.id, None)
        if outcome == "job_error":
            message, job_id, retryable = value
            raise JobError(message, job=job_id, retryable=retryable)
        return value

    def cancel(self) -> None:
        """Cancel every SLURM job in flight (``scancel``; local processes are interrupted); their
        futures fail at once, without waiting for SLURM to report the jobs' end."""
        with self.lock:
            self.cancelled.set()
            jobs = list(self.jobs.values())
        for sjob in jobs:
            try:
                sjob.cancel(check=False)
            except Exception:  # noqa: BLE001 - cancel the others; the job may have just ended
                pass

    def __enter__(self) -> SlurmPool:
        if threading.current_thread() is threading.main_thread():
            self._old_term = signal.signal(signal.SIGTERM, _raise_interrupt)
        return self

    def __exit__(self, exc_type, *exc: object) -> None:
        try:
            if exc_type is not None:
                self.cancel()
            self.threads.shutdown(wait=True)
        finally:
            if self._old_term is not None:
                signal.signal(signal.SIGTERM, self._old_term)


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")
