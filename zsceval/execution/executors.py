"""Executors: run a list of :class:`~zsceval.execution.jobs.Job` locally, in processes, on Ray, or
as SLURM jobs (:mod:`zsceval.execution.slurm`).

All executors skip finished jobs, respect ``needs`` (a job starts only after its inputs are done),
retry a job whose function raised (or whose worker died) up to ``retries`` times, and raise
:class:`~zsceval.execution.jobs.JobError` on the first job that still fails, after letting running
jobs finish, so that a rerun resumes cleanly. A failed attempt never marks its job done
(``DONE.json`` is written last, atomically, on success only); the next attempt runs in the same
output directory, so a job that saves checkpoints resumes from them.
"""

from __future__ import annotations

import concurrent.futures as cf
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from tqdm.auto import tqdm

from .jobs import Job, JobError, chain_fingerprints, is_done, order_jobs, run_job
from .slurm import SlurmOptions, SlurmPool

__all__ = ["run_jobs", "ensure_ray", "EXECUTORS", "DEFAULT_RETRIES"]

EXECUTORS = ("local", "process", "ray", "slurm")
# Failed attempts retried by default: in a worker pool or on a cluster, failures are often
# transient (a worker killed for memory, a lost node, a job past its time limit); in-process, a
# failure is usually a bug.
DEFAULT_RETRIES = {"local": 0, "process": 1, "ray": 1, "slurm": 1}


def _import_roots(modules: tuple[str, ...]) -> list[str]:
    """sys.path entries that make ``zsceval`` and ``modules`` importable, as seen by this process."""
    roots = [str(Path(__file__).resolve().parents[2])]  # the folder holding the zsceval package
    for name in modules:
        top = name.split(".")[0]
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            continue
        if spec.submodule_search_locations:  # a package: its parent folder
            where = [Path(p).resolve().parent for p in spec.submodule_search_locations]
        elif spec.origin and spec.origin not in ("built-in", "frozen"):  # a single-file module
            where = [Path(spec.origin).resolve().parent]
        else:
            where = []
        roots += [str(p) for p in where]
    return list(dict.fromkeys(roots))


def _run_imported(
    job: Job,
    root: str,
    out_dirs: dict[str, str],
    modules: tuple[str, ...],
    fingerprint: str,
    paths: tuple[str, ...] = (),
):
    """Process/Ray entry point: make ``paths`` importable, import the modules that register job
    kinds, then run the job."""
    for p in reversed(paths):
        if p not in sys.path:
            sys.path.insert(0, p)
    for m in modules:
        try:
            importlib.import_module(m)
        except ImportError as exc:
            raise JobError(
                f"job {job.id!r}: the worker cannot import {m!r}, which registers job kinds ({exc}); "
                "it must be importable on every worker (installed, or under the driver's working "
                "directory for a local Ray instance)",
                job=job.id,
            ) from exc
    return run_job(job, root, out_dirs, fingerprint)


def ensure_ray(num_cpus: int | None = None, address: str | None = None, paths: tuple[str, ...] = ()):
    """Return the ``ray`` module, connected: reuse a running ``ray.init``, else connect or start one.

    With ``address`` (or the ``RAY_ADDRESS`` environment variable) this connects to that cluster
    (``"auto"`` finds one started by ``ray start`` on this machine); otherwise it starts a local
    Ray instance with ``num_cpus`` CPUs and no dashboard, which lives until this process exits
    (or ``ray.shutdown()``). Workers get ``paths`` (and this process's working directory) on
    their ``PYTHONPATH``.

    Args:
        num_cpus: CPUs of a new local instance (default: all of this machine's).
        address: cluster address, e.g. ``"auto"`` or ``"ray://head:10001"``.
        paths: folders workers need on ``sys.path`` to import job kinds' modules.

    Raises:
        JobError: Ray is not installed, or the cluster cannot be reached / started.
    """
    try:
        import ray
    except ImportError:
        raise JobError("executor 'ray' needs Ray: pip install 'zsceval[ray]' (or 'ray>=2.9')") from None
    if ray.is_initialized():
        return ray
    address = address or os.environ.get("RAY_ADDRESS") or None
    pythonpath = [*paths, os.getcwd(), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    runtime_env = {"env_vars": {"PYTHONPATH": os.pathsep.join(dict.fromkeys(pythonpath))}}
    kwargs = dict(runtime_env=runtime_env, ignore_reinit_error=True, log_to_driver=False)
    try:
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, **kwargs)
    except Exception as exc:  # ConnectionError, RuntimeError, ValueError depending on the cause
        where = f"connect to the Ray cluster at {address!r}" if address else "start a local Ray instance"
        raise JobError(f"cannot {where}: {type(exc).__name__}: {exc}") from exc
    return ray


def run_jobs(
    jobs: list[Job],
    root: str | Path,
    *,
    executor: str = "local",
    workers: int = 1,
    modules: tuple[str, ...] = (),
    retries: int | None = None,
    progress: bool = True,
    on_done: Callable[[Job, object], None] | None = None,
    slurm: SlurmOptions | None = None,
) -> dict[str, object]:
    """Run every unfinished job in dependency order; returns ``{job id: result}`` of all jobs.

    Finished jobs (a ``DONE.json`` with the same chained fingerprint) are never run again, neither
    by a later call nor by a retry.

    Args:
        jobs: the jobs (any order).
        root: directory that relative job outputs live under.
        executor: ``local`` (in this process, one at a time), ``process`` (a local process pool
            of ``workers``) or ``ray`` (Ray tasks, ``workers`` at a time, on the cluster that
            ``ray.init`` was called with, else the one ``RAY_ADDRESS`` names, else a local Ray
            instance started with ``workers`` CPUs; see :func:`ensure_ray`) or ``slurm`` (one
            SLURM job per job, ``workers`` queued or running at once, submitted with submitit;
            logs in ``root/slurm/``; :mod:`zsceval.execution.slurm`).
        workers: parallel jobs for ``process``, ``ray`` and ``slurm``.
        modules: modules to import in worker processes so their job kinds are registered.
        retries: further attempts for a job whose function raised or whose worker died
            (default: ``DEFAULT_RETRIES[executor]``, 1 for ``process``, ``ray`` and ``slurm``, 0 for
            ``local``).
            Errors no retry can fix (unknown kind, unfinished input) are not retried.
        progress: show a progress bar over jobs.
        on_done: called with each job and its result as it finishes.
        slurm: resources of the ``slurm`` executor's jobs (default :class:`SlurmOptions`).

    Raises:
        ValueError: unknown executor (valid ones listed) or negative ``retries``.
        JobError: a job still failed after its retries, naming the job and the number of
            attempts (finished jobs stay finished); or Ray / submitit is missing, or Ray unreachable.
    """
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; valid: {', '.join(EXECUTORS)}")
    retries = DEFAULT_RETRIES[executor] if retries is None else retries
    if retries < 0:
        raise ValueError(f"retries must be >= 0, got {retries}")
    root = Path(root)
    ordered = order_jobs(jobs)
    out_dirs = {j.id: j.out for j in ordered}
    prints = chain_fingerprints(ordered)
    results: dict[str, object] = {}
    pending = [j for j in ordered if not is_done(j, root, prints[j.id])]
    pending_ids = {j.id for j in pending}
    for j in ordered:
        if j.id not in pending_ids:
            results[j.id] = run_job(j, root, out_dirs, prints[j.id])  # reads the stored result
    if not pending:
        return results
    bar = tqdm(
        total=len(ordered), initial=len(ordered) - len(pending), disable=not progress, desc="jobs", unit="job"
    )

    def finished(job: Job, result: object) -> None:
        results[job.id] = result
        bar.update(1)
        if on_done:
            on_done(job, result)

    try:
        if executor == "local" or workers <= 1 and executor == "process":
            for job in pending:
                bar.set_postfix_str(job.id)
                for attempt in range(1, retries + 2):
                    try:
                        result = run_job(job, root, out_dirs, prints[job.id])
                        break
                    except JobError as err:
                        if not err.retryable or attempt > retries:
                            raise _final_error(job, err, attempt, retries) from err
                finished(job, result)
            return results
        if executor == "process":
            pool = _ProcessPool(workers)
            submit = lambda j: pool.submit(_run_imported, j, str(root), out_dirs, modules, prints[j.id])  # noqa: E731
        elif executor == "slurm":
            pool = SlurmPool(slurm or SlurmOptions(), root / "slurm", workers)
            paths = tuple(_import_roots(modules))
            where = str(root.resolve())  # the jobs' working directory may be another
            submit = lambda j: pool.submit(j, _run_imported, j, where, out_dirs, modules, prints[j.id], paths)  # noqa: E731
        else:
            paths = tuple(_import_roots(modules))
            ray = ensure_ray(num_cpus=workers, paths=paths)
            remote = ray.remote(_run_imported).options(max_retries=0)  # retries are counted here
            pool = cf.ThreadPoolExecutor(max_workers=workers)

            def call(j: Job) -> object:
                ref = remote.remote(j, str(root), out_dirs, modules, prints[j.id], paths)
                try:
                    return ray.get(ref)
                except ray.exceptions.RayTaskError as exc:  # the task raised: unwrap its error
                    cause = getattr(exc, "cause", None)
                    if isinstance(cause, JobError):
                        raise cause from None
                    raise JobError(
                        f"job {j.id!r} ({j.kind}) failed on Ray: {exc}", job=j.id, retryable=True
                    ) from None
                except ray.exceptions.RayError as exc:  # worker crashed, node lost, ...
                    raise JobError(
                        f"job {j.id!r} ({j.kind}): its Ray worker failed: {type(exc).__name__}: {exc}",
                        job=j.id,
                        retryable=True,
                    ) from None

            submit = lambda j: pool.submit(call, j)  # noqa: E731
        with pool:
            _schedule(pending, results, submit, finished, retries)
        return results
    finally:
        bar.close()


class _ProcessPool:
    """A process pool that replaces itself when a worker dies (``BrokenProcessPool``), so that
    retries get a working pool; jobs that were running in the broken pool fail one attempt."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.pool = cf.ProcessPoolExecutor(max_workers=workers)

    def submit(self, fn, *args) -> cf.Future:
        try:
            return self.pool.submit(fn, *args)
        except BrokenProcessPool:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = cf.ProcessPoolExecutor(max_workers=self.workers)
            return self.pool.submit(fn, *args)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.pool.shutdown(wait=True)


def _as_job_error(job: Job, exc: BaseException) -> JobError:
    if isinstance(exc, JobError):
        return exc
    if isinstance(exc, BrokenProcessPool):
        return JobError(
            f"job {job.id!r} ({job.kind}): a worker process died (killed for memory? crashed?): {exc}",
            job=job.id,
            retryable=True,
        )
    return JobError(
        f"job {job.id!r} ({job.kind}) failed: {type(exc).__name__}: {exc}", job=job.id, retryable=True
    )


def _final_error(job: Job, err: JobError, attempts: int, retries: int) -> JobError:
    """The error a job that failed for good raises: which job, how many attempts, the last error."""
    if attempts == 1:
        return err  # nothing was retried: the error names the job and speaks for itself
    return JobError(
        f"job {job.id!r} ({job.kind}) failed after {attempts} attempts (retries={retries}); "
        f"finished jobs stay finished. Last error: {err}",
        job=job.id,
        retryable=err.retryable,
    )


def _schedule(pending: list[Job], results: dict, submit, finished, retries: int) -> None:
    """Submit jobs whose needs are satisfied; wait; retry or record failures; repeat.

    Stops submitting new jobs after a job failed for good, lets running ones finish, then raises.
    """
    waiting = list(pending)
    running: dict[cf.Future, Job] = {}
    attempts: dict[str, int] = {}
    failure: JobError | None = None

    def start(job: Job) -> None:
        attempts[job.id] = attempts.get(job.id, 0) + 1
        running[submit(job)] = job

    while waiting or running:
        if failure is None:
            for job in [j for j in waiting if all(d in results for d in j.needs)]:
                waiting.remove(job)
                start(job)
        if not running:
            if failure is None and waiting:
                raise JobError(f"jobs cannot start (unfinished needs): {[j.id for j in waiting]}")
            break
        done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
        for fut in done:
            job = running.pop(fut)
            try:
                result = fut.result()
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt | SystemExit):
                    raise
                err = _as_job_error(job, exc)
                if err.retryable and attempts[job.id] <= retries and failure is None:
                    start(job)  # same output directory: the job may resume from its checkpoints
                    continue
                if failure is None:  # keep the first failure, let running jobs finish
                    failure = _final_error(job, err, attempts[job.id], retries)
                    if failure is not err:
                        failure.__cause__ = err
                continue
            finished(job, result)
    if failure is not None:
        raise failure
