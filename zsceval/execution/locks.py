"""One writer per folder: a lock file in every run, bench and partner folder.

Two processes writing one ``--out`` used to merge two runs silently (one's config and first
checkpoint, the other's later checkpoints). :class:`FolderLock` takes ``<folder>/.zsceval.lock``
atomically (``O_CREAT | O_EXCL``) with the owner's pid, host, start time and command; a second
writer is refused with the owner named. A lock whose process is gone (same host, pid not alive or
not a positive integer) is stale and taken over. The process that holds a lock may take it again (a
trainer built twice in one process); it is released on :meth:`FolderLock.release`, on leaving the
``with`` block, or at exit.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from zsceval.io import pid_alive

__all__ = ["LOCK_NAME", "FolderLock", "FolderLockedError", "holder"]

LOCK_NAME = ".zsceval.lock"
"""File name of the lock inside a locked folder."""


class FolderLockedError(RuntimeError):
    """Another live process writes the folder (the message names it and the way out)."""


class FolderLock:
    """Exclusive write access to ``folder`` (created if missing).

    Args:
        folder: the run, bench or partner folder.
        what: what the folder holds, for the message (``run``, ``bench``, ``partner folder``).
        info: JSON-able facts about the writer stored in the lock beside its pid, host, start time and
            command (e.g. a bench's executor and workers), for :func:`holder` to read.

    Raises (from :meth:`acquire`):
        FolderLockedError: a live process on this host, or a process on another host, holds it.
    """

    def __init__(self, folder: str | Path, what: str = "folder", info: dict[str, Any] | None = None) -> None:
        self.folder, self.what, self.info = Path(folder), what, dict(info or {})
        self.path = self.folder / LOCK_NAME
        self.held = False
        self._created = False  # this object wrote the lock file (an inner, re-entrant one did not)

    def acquire(self) -> FolderLock:
        """Take the lock (idempotent for the holder); returns ``self``."""
        if self.held:
            return self
        self.folder.mkdir(parents=True, exist_ok=True)
        me = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
              "command": " ".join(sys.argv)[:300], **self.info}  # fmt: skip
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                owner = _read_owner(self.path)
                if owner is None:  # being written right now, or unreadable: look again
                    time.sleep(0.05)
                    owner = _read_owner(self.path)
                if _mine(owner):
                    break  # this process already holds it: release leaves it to the holder
                if owner is None or _stale(owner):  # unreadable twice, or its process is gone
                    self.path.unlink(missing_ok=True)
                    continue
                raise FolderLockedError(
                    f"{self.folder} is in use: another zsceval process writes this {self.what} (pid "
                    f"{owner.get('pid')} on {owner.get('host')}, since {owner.get('started')}: "
                    f"{owner.get('command', '?')}). Wait for it to finish or stop it, or choose another "
                    f"--out; if that process is gone (e.g. on another machine), delete {self.path}"
                ) from None
            else:
                with os.fdopen(fd, "w") as fh:
                    json.dump(me, fh)
                self._created = True
                break
        self.held = True
        atexit.register(self.release)
        return self

    def release(self) -> None:
        """Remove the lock if this object took it (idempotent; a re-entrant acquire leaves the file
        to the outer holder)."""
        if not self.held:
            return
        self.held = False
        if not self._created:
            return
        owner = _read_owner(self.path)
        if _mine(owner):
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def holder(folder: str | Path) -> dict[str, Any] | None:
    """The record of the process that writes ``folder`` now, or None.

    Returns the lock's JSON (``pid``, ``host``, ``started``, ``command`` and the writer's ``info``)
    when a live process on this host, or any process on another host (its liveness cannot be
    checked), holds the lock; None when there is no lock, it is unreadable, or it is stale.
    """
    owner = _read_owner(Path(folder) / LOCK_NAME)
    return None if owner is None or _stale(owner) else owner


def _read_owner(path: Path) -> dict[str, Any] | None:
    """A lock file's JSON object, or None where it is missing, being written or malformed."""
    try:
        owner = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return owner if isinstance(owner, dict) else None


def _mine(owner: dict[str, Any] | None) -> bool:
    """Whether a lock record is this process's (same host and pid)."""
    return owner is not None and (owner.get("host"), owner.get("pid")) == (socket.gethostname(), os.getpid())


def _stale(owner: dict[str, Any]) -> bool:
    """Whether a lock record is this host's and its process is gone (a pid that is not a positive
    integer counts as gone: ``os.kill(-1, 0)`` would address every process)."""
    if owner.get("host") != socket.gethostname():
        return False
    pid = owner.get("pid")
    return not (isinstance(pid, int) and pid > 0 and pid_alive(pid))
