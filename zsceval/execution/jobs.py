"""Jobs: every expensive step of a benchmark, with explicit inputs and outputs on disk.

A :class:`Job` names a registered job function (``kind``), its JSON-able parameters, the job
outputs it reads (``needs``) and its own output directory. A job is *done* when its directory
holds ``DONE.json`` (written last, atomically, with the function's JSON result and the job spec),
so running a list of jobs again skips finished work and a killed run resumes where it stopped.
Job functions that can resume internally (training runs) see their partial output directory.

Executors (:mod:`zsceval.execution.executors`) run jobs in-process, in a local process pool, or on
a Ray cluster; they all use :func:`run_job`, so a job behaves the same everywhere.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Job", "JobError", "job_kind", "run_job", "is_done", "read_result", "order_jobs", "JOB_KINDS"]

DONE = "DONE.json"

# kind -> function(params: dict, out_dir: Path, needs: dict[str, Path]) -> JSON-able result
JOB_KINDS: dict[str, Callable[[dict, Path, dict[str, Path]], Any]] = {}


class JobError(RuntimeError):
    """A job failed or cannot run (unknown kind, missing inputs, dependency cycle)."""


def job_kind(name: str) -> Callable:
    """Decorator registering a job function under ``name``.

    Raises:
        ValueError: the name is already registered.
    """

    def wrap(fn: Callable) -> Callable:
        old = JOB_KINDS.get(name)
        same = old is not None and (old.__module__, old.__qualname__) == (fn.__module__, fn.__qualname__)
        if old is not None and not same:  # re-importing the same module may re-register
            raise ValueError(
                f"job kind {name!r} is already registered by {old.__module__}.{old.__qualname__}"
            )
        JOB_KINDS[name] = fn
        return fn

    return wrap


@dataclass(frozen=True)
class Job:
    """One unit of work.

    Attributes:
        id: unique, path-like name, e.g. ``counter_circuit/candidates/w017``.
        kind: registered job function name.
        params: JSON-able parameters (the function's inputs besides ``needs``).
        needs: ids of jobs whose outputs this job reads; they run first.
        out: output directory (absolute or relative to the bench directory).
    """

    id: str
    kind: str
    params: dict = field(default_factory=dict)
    needs: tuple[str, ...] = ()
    out: str = ""

    @property
    def fingerprint(self) -> str:
        """sha256 of (kind, params): a finished job whose parameters changed is not reused."""
        blob = json.dumps({"kind": self.kind, "params": self.params}, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def is_done(job: Job, root: Path) -> bool:
    """True if ``job``'s output holds a ``DONE.json`` with the same fingerprint."""
    marker = root / job.out / DONE
    if not marker.is_file():
        return False
    try:
        return json.loads(marker.read_text()).get("fingerprint") == job.fingerprint
    except json.JSONDecodeError:
        return False


def read_result(job: Job | str, root: Path) -> Any:
    """The JSON result a finished job returned (``job`` or its output directory)."""
    out = job.out if isinstance(job, Job) else job
    marker = root / out / DONE
    if not marker.is_file():
        raise JobError(f"job output {root / out} is not finished (no {DONE})")
    return json.loads(marker.read_text())["result"]


def run_job(job: Job, root: str | Path, out_dirs: dict[str, str]) -> Any:
    """Run one job (unless done) and mark it done; returns its result.

    Args:
        job: the job.
        root: directory that relative ``out`` paths are under.
        out_dirs: output directory of every job id (to resolve ``needs``).

    Raises:
        JobError: unknown kind (valid ones listed), unfinished input, or the function raised
            (the original traceback is included; nothing is marked done).
    """
    root = Path(root)
    if is_done(job, root):
        return read_result(job, root)
    if job.kind not in JOB_KINDS:
        close = difflib.get_close_matches(job.kind, list(JOB_KINDS), n=1)
        raise JobError(
            f"unknown job kind {job.kind!r}{f' (did you mean {close[0]!r}?)' if close else ''}; "
            f"known: {', '.join(sorted(JOB_KINDS))}"
        )
    needs = {}
    for dep in job.needs:
        path = root / out_dirs[dep]
        if not (path / DONE).is_file():
            raise JobError(f"job {job.id!r} needs {dep!r}, which has not finished ({path})")
        needs[dep] = path
    out = root / job.out
    out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    try:
        result = JOB_KINDS[job.kind](dict(job.params), out, needs)
    except Exception as exc:
        raise JobError(f"job {job.id!r} ({job.kind}) failed: {exc}\n{traceback.format_exc()}") from exc
    record = {
        "job": asdict(job),
        "fingerprint": job.fingerprint,
        "seconds": round(time.time() - start, 3),
        "result": result,
    }
    _atomic_write(out / DONE, json.dumps(record, indent=2, default=str))
    return result


def order_jobs(jobs: list[Job]) -> list[Job]:
    """Jobs in dependency order (each after everything it ``needs``), stable otherwise.

    Raises:
        JobError: duplicate ids, a dependency on an unknown id, or a cycle.
    """
    by_id: dict[str, Job] = {}
    for j in jobs:
        if j.id in by_id:
            raise JobError(f"duplicate job id {j.id!r}")
        by_id[j.id] = j
    for j in jobs:
        for dep in j.needs:
            if dep not in by_id:
                raise JobError(f"job {j.id!r} needs unknown job {dep!r}")
    ordered: list[Job] = []
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(j: Job, chain: tuple[str, ...]) -> None:
        if state.get(j.id) == 2:
            return
        if state.get(j.id) == 1:
            raise JobError(f"dependency cycle: {' -> '.join((*chain, j.id))}")
        state[j.id] = 1
        for dep in j.needs:
            visit(by_id[dep], (*chain, j.id))
        state[j.id] = 2
        ordered.append(j)

    for j in jobs:
        visit(j, ())
    return ordered
