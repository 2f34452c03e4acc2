"""Jobs: every expensive step of a benchmark, with explicit inputs and outputs on disk.

A :class:`Job` names a registered job function (``kind``), its JSON-able parameters, the job
outputs it reads (``needs``) and its own output directory. A job is *done* when its directory
holds ``DONE.json`` (written last, atomically, with the function's JSON result and the job spec),
so running a list of jobs again skips finished work and a killed run resumes where it stopped.
Job functions that can resume internally (training runs) see their partial output directory.

Executors (:mod:`zsceval.execution.executors`) run jobs in-process, in a local process pool, or on
a Ray cluster; they all use :func:`run_job`, so a job behaves the same everywhere.

Job kinds are filled from the entry-point group ``zsceval.jobs`` (:mod:`zsceval.plugins`; the
built-ins are declared in ``setup.py``): the entry point's name is the kind and its value the job
function, ``module:function``, registered under that name unless importing its module did so with
the :func:`job_kind` decorator (:data:`KINDS`, a :class:`zsceval.plugins.Registry`). :func:`run_job`
loads the entry point of a job's kind (only) when the kind is not registered yet, in whichever
process runs the job, so worker processes need no ``modules`` to import for declared kinds.
"""

from __future__ import annotations

import json
import shutil
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from zsceval.io import atomic_write_text, sha256_text
from zsceval.plugins import PluginLoadError, Registry, UnknownPluginError

__all__ = [
    "Job",
    "JobError",
    "job_kind",
    "run_job",
    "is_done",
    "read_result",
    "order_jobs",
    "chain_fingerprints",
    "job_function",
    "job_kinds",
    "JOB_GROUP",
    "JOB_KINDS",
    "KINDS",
    "UnknownJobKindError",
]

DONE = "DONE.json"
STARTED = "STARTED.json"  # written when a job starts: which inputs its output directory holds

JOB_GROUP = "zsceval.jobs"


class UnknownJobKindError(UnknownPluginError, KeyError):
    """No job kind of that name (the message lists the known ones; also a ``KeyError``)."""


KINDS = Registry(
    JOB_GROUP,
    "job kind",
    kind="callable",
    unknown_error=UnknownJobKindError,
    advice=(
        f"A kind is declared in the entry-point group {JOB_GROUP!r}, or registered by importing the "
        "module that defines it: pass it in `modules`."
    ),
)
"""The registry of job kinds (:class:`zsceval.plugins.Registry`): kind -> ``function(params: dict,
out_dir: Path, needs: dict[str, Path]) -> JSON-able result``."""
JOB_KINDS: dict[str, Callable[[dict, Path, dict[str, Path]], Any]] = KINDS.objects
"""The kinds registered so far (:attr:`Registry.objects <zsceval.plugins.Registry.objects>`);
tests replace a job function in it."""


class JobError(RuntimeError):
    """A job failed or cannot run (unknown kind, missing inputs, dependency cycle).

    Attributes:
        job: id of the job concerned, or None for errors about the job list as a whole.
        retryable: True when the job function itself raised or its worker died, so another
            attempt may succeed; False when retrying cannot help (unknown kind, missing input).
    """

    def __init__(self, message: str, *, job: str | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.job = job
        self.retryable = retryable

    def __reduce__(self):  # keep job and retryable across processes (the process executor)
        return (_job_error, (str(self), self.job, self.retryable))


def _job_error(message: str, job: str | None, retryable: bool) -> JobError:
    return JobError(message, job=job, retryable=retryable)


class JobInputError(ValueError):
    """Raised by a job function when its inputs cannot work (a rerun would fail the same way):
    the job fails without a retry and without a traceback, with this message."""


def job_kind(name: str) -> Callable:
    """Decorator registering a job function under ``name``.

    Raises:
        zsceval.plugins.DuplicatePluginError: the name is already registered by another function
            (a ``ValueError``).
    """
    return KINDS.register(name)


def job_kinds() -> list[str]:
    """Sorted job kinds: registered ones and declared entry points (none imported)."""
    return KINDS.names()


def job_function(kind: str) -> Callable[[dict, Path, dict[str, Path]], Any]:
    """The job function of ``kind``, loading its entry point (only) if needed.

    Raises:
        UnknownJobKindError: unknown kind (the message lists the known ones and suggests the
            closest; a ``KeyError``).
        zsceval.plugins.PluginLoadError: the entry point of ``kind`` could not be loaded (it and the
            exception are named).
    """
    return KINDS.get(kind)


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
        """sha256 of (kind, params), the job's own inputs; ``chain_fingerprints`` adds its needs'."""
        blob = json.dumps({"kind": self.kind, "params": self.params}, sort_keys=True, default=str)
        return sha256_text(blob)[:16]


def chain_fingerprints(ordered: list[Job]) -> dict[str, str]:
    """Fingerprint of every job over its own (kind, params) and, recursively, its needs'.

    A job is reused only if nothing upstream changed either: retraining a candidate redoes its
    evaluation, the selection and everything after them.

    Args:
        ordered: jobs in dependency order (``order_jobs``).
    """
    chained: dict[str, str] = {}
    for j in ordered:
        blob = json.dumps([j.fingerprint, [chained[d] for d in j.needs]])
        chained[j.id] = sha256_text(blob)
    return chained


def _stored_fingerprint(path: Path) -> str | None:
    try:
        return json.loads(path.read_text()).get("fingerprint")
    except (OSError, json.JSONDecodeError):
        return None


def is_done(job: Job, root: Path, fingerprint: str | None = None) -> bool:
    """True if ``job``'s output holds a ``DONE.json`` with the same fingerprint.

    ``fingerprint`` defaults to ``job.fingerprint``; runners pass ``chain_fingerprints``'.
    """
    return _stored_fingerprint(root / job.out / DONE) == (fingerprint or job.fingerprint)


def read_result(job: Job | str, root: Path) -> Any:
    """The JSON result a finished job returned (``job`` or its output directory)."""
    out = job.out if isinstance(job, Job) else job
    marker = root / out / DONE
    if not marker.is_file():
        raise JobError(f"job output {root / out} is not finished (no {DONE})")
    return json.loads(marker.read_text())["result"]


def run_job(job: Job, root: str | Path, out_dirs: dict[str, str], fingerprint: str | None = None) -> Any:
    """Run one job (unless done) and mark it done; returns its result.

    An output directory left by the same job with other inputs (a ``DONE.json`` or ``STARTED.json``
    with another fingerprint) is cleared first, so that a changed job never resumes stale work;
    one left by a killed run of the same job is kept, for the job to resume.

    Args:
        job: the job.
        root: directory that relative ``out`` paths are under.
        out_dirs: output directory of every job id (to resolve ``needs``).
        fingerprint: the job's fingerprint (default ``job.fingerprint``; runners pass
            ``chain_fingerprints``', which cover the needs too).

    Raises:
        JobError: unknown kind (valid ones listed), a kind whose entry point cannot be loaded,
            unfinished input, or the function raised (the original traceback is included; nothing
            is marked done).
    """
    root = Path(root)
    fingerprint = fingerprint or job.fingerprint
    if is_done(job, root, fingerprint):
        return read_result(job, root)
    try:
        function = job_function(job.kind)
    except UnknownJobKindError as exc:
        raise JobError(f"job {job.id!r}: {exc}", job=job.id) from None
    except PluginLoadError as exc:
        raise JobError(f"job {job.id!r}: {exc}", job=job.id) from exc
    needs = {}
    for dep in job.needs:
        path = root / out_dirs[dep]
        if not (path / DONE).is_file():
            raise JobError(f"job {job.id!r} needs {dep!r}, which has not finished ({path})", job=job.id)
        needs[dep] = path
    out = root / job.out
    stored = [_stored_fingerprint(out / name) for name in (DONE, STARTED)]
    if any(f is not None and f != fingerprint for f in stored):
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / STARTED, json.dumps({"job": job.id, "fingerprint": fingerprint}))
    start = time.time()
    try:
        result = function(dict(job.params), out, needs)
    except JobInputError as exc:
        raise JobError(f"job {job.id!r} ({job.kind}) cannot succeed: {exc}", job=job.id) from exc
    except Exception as exc:
        raise JobError(
            f"job {job.id!r} ({job.kind}) failed: {exc}\n{traceback.format_exc()}", job=job.id, retryable=True
        ) from exc
    record = {
        "job": asdict(job),
        "fingerprint": fingerprint,
        "seconds": round(time.time() - start, 3),
        "result": result,
    }
    atomic_write_text(out / DONE, json.dumps(record, indent=2, default=str))
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
