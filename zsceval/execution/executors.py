"""Executors: run a list of :class:`~zsceval.execution.jobs.Job` locally, in processes, or on Ray.

All executors skip finished jobs, respect ``needs`` (a job starts only after its inputs are done)
and raise :class:`~zsceval.execution.jobs.JobError` on the first failure after letting running
jobs finish, so that a rerun resumes cleanly.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable
from pathlib import Path

from tqdm.auto import tqdm

from .jobs import Job, JobError, chain_fingerprints, is_done, order_jobs, run_job

__all__ = ["run_jobs", "EXECUTORS"]

EXECUTORS = ("local", "process", "ray")


def _run_imported(job: Job, root: str, out_dirs: dict[str, str], modules: tuple[str, ...], fingerprint: str):
    """Process/Ray entry point: import the modules that register job kinds, then run."""
    import importlib

    for m in modules:
        importlib.import_module(m)
    return run_job(job, root, out_dirs, fingerprint)


def run_jobs(
    jobs: list[Job],
    root: str | Path,
    *,
    executor: str = "local",
    workers: int = 1,
    modules: tuple[str, ...] = (),
    progress: bool = True,
    on_done: Callable[[Job, object], None] | None = None,
) -> dict[str, object]:
    """Run every unfinished job in dependency order; returns ``{job id: result}`` of all jobs.

    Args:
        jobs: the jobs (any order).
        root: directory that relative job outputs live under.
        executor: ``local`` (in this process, one at a time), ``process`` (a local process pool
            of ``workers``) or ``ray`` (``ray.remote`` tasks on the cluster ``ray.init`` finds).
        workers: parallel jobs for ``process`` and ``ray``.
        modules: modules to import in worker processes so their job kinds are registered.
        progress: show a progress bar over jobs.
        on_done: called with each job and its result as it finishes.

    Raises:
        ValueError: unknown executor (valid ones listed).
        JobError: a job failed (finished jobs stay finished).
    """
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; valid: {', '.join(EXECUTORS)}")
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
    bar = tqdm(
        total=len(ordered), initial=len(ordered) - len(pending), disable=not progress, desc="jobs", unit="job"
    )

    def finished(job: Job, result: object) -> None:
        results[job.id] = result
        bar.update(1)
        if on_done:
            on_done(job, result)

    try:
        if executor == "local" or workers <= 1 and executor != "ray":
            for job in pending:
                bar.set_postfix_str(job.id)
                finished(job, run_job(job, root, out_dirs, prints[job.id]))
            return results
        if executor == "process":
            pool = cf.ProcessPoolExecutor(max_workers=workers)
            submit = lambda j: pool.submit(_run_imported, j, str(root), out_dirs, modules, prints[j.id])  # noqa: E731
        else:
            try:
                import ray
            except ImportError:
                raise JobError("executor 'ray' needs Ray: pip install -e .[ray]") from None
            if not ray.is_initialized():
                ray.init()
            remote = ray.remote(_run_imported)
            pool = cf.ThreadPoolExecutor(max_workers=workers)
            submit = lambda j: pool.submit(  # noqa: E731
                lambda: ray.get(remote.remote(j, str(root), out_dirs, modules, prints[j.id]))
            )
        with pool:
            _schedule(pending, results, submit, finished)
        return results
    finally:
        bar.close()


def _schedule(pending: list[Job], results: dict, submit, finished) -> None:
    """Submit jobs whose needs are satisfied; wait; repeat. Stops submitting after a failure."""
    waiting = list(pending)
    running: dict[cf.Future, Job] = {}
    failure: BaseException | None = None
    while waiting or running:
        if failure is None:
            for job in [j for j in waiting if all(d in results for d in j.needs)]:
                waiting.remove(job)
                running[submit(job)] = job
        if not running:
            if failure is None and waiting:
                raise JobError(f"jobs cannot start (unfinished needs): {[j.id for j in waiting]}")
            break
        done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
        for fut in done:
            job = running.pop(fut)
            try:
                finished(job, fut.result())
            except BaseException as exc:  # keep the first failure, let running jobs finish
                failure = failure or exc
    if failure is not None:
        raise failure if isinstance(failure, JobError) else JobError(str(failure))
