"""Hardware-aware defaults: ``model.bf16: auto`` and ``run.num_threads: auto``.

Both settings change a run's numbers (bf16 rounding; the split of intra-op reductions), so ``auto``
is resolved once, when a run starts, into a concrete value that the run's ``config.yaml`` records
and ``--resume`` reuses. Explicit values (``true`` / ``false``, a thread count) are kept as given.

- ``model.bf16: auto`` is on only where the device computes bfloat16 natively: a CUDA device with
  bf16 support, or a CPU with AVX512-BF16 or AMX. Elsewhere autocast emulates bf16 and is slower
  than float32 (a 102,400-step quick SP run, 1 thread, on an AVX2-only AMD EPYC: 37 s with bf16,
  12 s without; docs/performance.md).
- ``run.num_threads: auto`` is the free cores, or 1 when another zsceval run is active on this host
  or other processes keep the cores busy: an intra-op thread that the OS deschedules stalls every
  parallel op (two quick runs at once, 2 threads each: 84.5 s each; 1 thread each: 12.4 s).
  ``ZSCEVAL_MAX_THREADS`` (set by ``zsceval bench`` when it runs jobs side by side) caps it.

Active runs register a file named after their pid in :func:`active_dir`; a file whose process is gone
is stale and ignored (and removed).
"""

from __future__ import annotations

import atexit
import os
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

from zsceval.io import pid_alive

__all__ = [
    "AUTO",
    "MAX_THREADS_ENV",
    "active_dir",
    "auto_threads",
    "native_bf16",
    "other_active_runs",
    "register_active_run",
    "resolve_bf16",
    "resolve_threads",
    "scoped_environ",
    "usable_cores",
    "worker_thread_env",
]

AUTO = "auto"
"""The value that asks for the hardware-aware choice."""

MAX_THREADS_ENV = "ZSCEVAL_MAX_THREADS"
"""Upper bound on ``run.num_threads`` of new runs; ``zsceval bench`` sets it to cores // workers when
it runs several jobs at once (torch threads of concurrent runs oversubscribing the cores made each run
~7x slower on a 2-core machine; docs/performance.md)."""

ACTIVE_DIR_ENV = "ZSCEVAL_ACTIVE_DIR"
"""Folder of the active-run registry (default: ``<tmp>/zsceval-active-<uid>``)."""

BUSY_SAMPLE_S = 0.3
"""Seconds over which the other processes' CPU use is sampled (``/proc/stat``)."""


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def worker_thread_env(workers: int) -> dict[str, str]:
    """``{ZSCEVAL_MAX_THREADS: str(cap)}`` for ``workers`` jobs running side by side, so that they
    never oversubscribe the cores: ``cap = max(1, usable cores // workers)``, or a smaller cap already
    set in the environment; ``{}`` for one worker (``zsceval bench --workers``, ``zsceval train
    --workers``)."""
    if workers <= 1:
        return {}
    cap = max(1, usable_cores() // workers)
    outer = os.environ.get(MAX_THREADS_ENV, "").strip()
    return {MAX_THREADS_ENV: str(min(cap, int(outer)) if outer.isdigit() else cap)}


@contextmanager
def scoped_environ(values: dict[str, str]) -> Iterator[None]:
    """Set the environment variables ``values`` for the ``with`` block (and the processes it
    starts), then restore each to its old value, or remove it where it was unset."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# -- bf16 ---------------------------------------------------------------------------------------------
def native_bf16(device: torch.device | str) -> tuple[bool, str]:
    """Whether ``device`` computes bfloat16 matmuls natively, and why (for the run's note).

    CUDA: ``torch.cuda.is_bf16_supported()`` (Ampere and later). CPU: AVX512-BF16 or AMX tiles, as
    torch reports them (``torch.cpu``); other CPUs emulate bf16, which is slower than float32.
    """
    device = torch.device(device)
    if device.type == "cuda":
        ok = bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
        return ok, f"CUDA device {'with' if ok else 'without'} native bf16"
    if device.type != "cpu":
        return False, f"{device.type} device: bf16 not known to be native"
    cpu = torch.cpu
    avx512_bf16 = bool(getattr(cpu, "_is_avx512_bf16_supported", lambda: False)())
    amx = bool(getattr(cpu, "_is_amx_tile_supported", lambda: False)())
    capability = torch.backends.cpu.get_cpu_capability()
    if avx512_bf16 or amx:
        return True, f"CPU with {'AMX' if amx else 'AVX512-BF16'}"
    return False, f"CPU without native bf16 ({capability}; bf16 would be emulated)"


def resolve_bf16(value: bool | str, device: torch.device | str) -> tuple[bool, str | None]:
    """Concrete ``model.bf16`` for ``device``: ``auto`` -> :func:`native_bf16`, booleans as given.

    Returns:
        ``(bf16, note)``; the note says what ``auto`` chose and why (None for an explicit value).

    Raises:
        ValueError: a string other than ``auto``.
    """
    if isinstance(value, bool):
        return value, None
    if value != AUTO:
        raise ValueError(f"model.bf16 must be true, false or 'auto', got {value!r}")
    on, why = native_bf16(device)
    return on, f"model.bf16=auto -> {str(on).lower()} ({why})"


# -- threads ------------------------------------------------------------------------------------------
def active_dir() -> Path:
    """Folder of the active-run registry: ``$ZSCEVAL_ACTIVE_DIR`` or ``<tmp>/zsceval-active-<uid>``."""
    override = os.environ.get(ACTIVE_DIR_ENV)
    if override:
        return Path(override)
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"zsceval-active-{uid}"


_registered: Path | None = None


def register_active_run() -> None:
    """Mark this process as a running zsceval job (once per process; removed at exit)."""
    global _registered
    if _registered is not None and _registered.exists():
        return
    folder = active_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{socket.gethostname()}-{os.getpid()}"
        path.write_text(f"{os.getpid()}\n")
    except OSError:  # a read-only tmp only loses the detection of concurrent runs
        return
    _registered = path
    atexit.register(_unregister, path)


def _unregister(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def other_active_runs() -> list[int]:
    """Pids of the other live zsceval runs on this host (stale registrations are removed)."""
    folder, host, me = active_dir(), socket.gethostname(), os.getpid()
    pids = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return []
    for entry in entries:
        name, _, pid_text = entry.name.rpartition("-")
        if name != host or not pid_text.isdigit():
            continue
        pid = int(pid_text)
        if pid == me:
            continue
        if pid_alive(pid):
            pids.append(pid)
        else:
            _unregister(entry)
    return sorted(pids)


def _cpu_jiffies() -> tuple[int, int] | None:
    """``(busy, total)`` jiffies of all CPUs from ``/proc/stat``; None where there is none."""
    try:
        with open("/proc/stat") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _own_jiffies() -> int:
    try:
        with open("/proc/self/stat") as fh:
            parts = fh.read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in parts[11:15])  # utime, stime, cutime, cstime
    except (OSError, ValueError, IndexError):
        return 0


def busy_cores(sample_s: float = BUSY_SAMPLE_S) -> float:
    """Cores kept busy by other processes, sampled over ``sample_s`` seconds (this one excluded).

    Linux reads ``/proc/stat``; elsewhere the 1-minute load average stands in.
    """
    start, own_start = _cpu_jiffies(), _own_jiffies()
    if start is None:
        try:
            return float(os.getloadavg()[0])
        except (AttributeError, OSError):
            return 0.0
    time.sleep(sample_s)
    end, own_end = _cpu_jiffies(), _own_jiffies()
    if end is None or end[1] <= start[1]:
        return 0.0
    busy = max(0, (end[0] - start[0]) - (own_end - own_start))
    return busy / (end[1] - start[1]) * (os.cpu_count() or 1)


def auto_threads() -> tuple[int, str]:
    """The thread count that ``run.num_threads: auto`` resolves to, and why.

    1 when another zsceval run is active on this host, else the cores not kept busy by other
    processes (at least 1; :func:`resolve_threads` applies ``ZSCEVAL_MAX_THREADS``). This process
    registers itself as an active run first, so two runs started at the same moment see each other.
    """
    register_active_run()
    busy = busy_cores()  # also the wait that lets a run started at the same moment register
    cores = usable_cores()
    others = other_active_runs()
    if others:
        threads, why = 1, f"another zsceval run is active on this host (pid {others[0]})"
    else:
        threads = max(1, cores - int(busy + 0.5))
        why = f"{cores} cores, {busy:.1f} busy with other processes"
    return threads, why


def _cap() -> int | None:
    raw = os.environ.get(MAX_THREADS_ENV)
    if not raw:
        return None
    try:
        return max(1, int(raw))
    except ValueError:
        return None


def resolve_threads(requested: int | str) -> tuple[int, str | None]:
    """Concrete ``run.num_threads`` of a new run, and a note for the user if any.

    ``auto`` -> :func:`auto_threads`. A number is kept (0 = torch's default), capped by
    ``ZSCEVAL_MAX_THREADS``; when the cores other processes leave free are fewer than the threads
    asked for, a note says so (the count is not changed: the user chose it).

    Raises:
        ValueError: a string other than ``auto`` or a negative count.
    """
    if isinstance(requested, str):
        if requested != AUTO:
            raise ValueError(f"run.num_threads must be a count >= 0 or 'auto', got {requested!r}")
        threads, why = auto_threads()
        cap = _cap()
        if cap is not None and threads > cap:
            threads, why = cap, f"{why}; capped by {MAX_THREADS_ENV}={cap}"
        return threads, f"run.num_threads=auto -> {threads} ({why})"
    if requested < 0:
        raise ValueError(f"run.num_threads must be >= 0 or 'auto', got {requested}")
    threads = requested
    cap = _cap()
    if cap is not None and (threads <= 0 or threads > cap):
        threads = cap
    want = threads if threads > 0 else torch.get_num_threads()
    if want <= 1:
        return threads, None
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return threads, None
    free = usable_cores() - int(round(load))
    if free < want:
        return threads, (
            f"note: {want} torch threads but only about {max(free, 0)} of {usable_cores()} cores are free "
            f"(load average {load:.1f}); concurrent runs that oversubscribe the cores are many times "
            "slower each: with other runs going, pass --set run.num_threads=1 (or auto)"
        )
    return threads, None
