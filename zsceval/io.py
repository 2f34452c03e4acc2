"""Small file helpers shared across zsceval: atomic writes and SHA-256 digests.

An atomic write goes to a temporary file in the target's own directory (same filesystem) and is
then renamed onto the target with ``os.replace``, so readers see either the old file or the whole
new one, never a truncated file, even if the writer is killed midway.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "atomic_directory",
    "atomic_path",
    "atomic_write_text",
    "atomic_write_bytes",
    "sha256_file",
    "sha256_text",
    "sha256_bytes",
    "apply_umask",
]


def apply_umask(path: str | Path, *, directory: bool = False) -> None:
    """Give ``path`` the mode a plain ``open`` / ``mkdir`` would (0666 / 0777 minus the umask);
    ``mkstemp`` / ``mkdtemp`` create 0600 / 0700, too private for shared results."""
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, (0o777 if directory else 0o666) & ~mask)


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temp path next to ``path`` for a writer that needs a file name (``to_parquet``,
    ``savefig``); on normal exit it is renamed onto ``path``, on an exception it is removed.

    Raises:
        OSError: the directory cannot be created or written; whatever the body raises.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        apply_umask(tmp)
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def atomic_directory(path: str | Path) -> Iterator[Path]:
    """Yield an empty temp directory next to ``path``; on normal exit it replaces ``path`` (an
    existing directory there is moved aside first and removed after), on an exception it is
    removed. A killed process never leaves a half-written directory under ``path``'s name.

    Raises:
        OSError: the parent cannot be created or written; whatever the body raises.
    """
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".tmp-{final.name}-"))
    try:
        apply_umask(tmp, directory=True)  # mkdtemp makes it 0700
        yield tmp
        if final.exists():
            old = final.parent / f".old-{final.name}"
            shutil.rmtree(old, ignore_errors=True)
            os.replace(final, old)
            os.replace(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def atomic_write_bytes(path: str | Path, data: bytes, *, fsync: bool = False) -> None:
    """Write ``data`` to ``path`` atomically (temp file in the same directory + ``os.replace``).

    Parent directories are created. The temp file is removed if writing fails.

    Args:
        path: target file.
        data: the bytes to write.
        fsync: flush the file to disk before the rename (durability across power loss; slower).

    Raises:
        OSError: the directory cannot be created or written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        apply_umask(tmp)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str, *, fsync: bool = False) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically; see :func:`atomic_write_bytes`.

    Raises:
        OSError: the directory cannot be created or written.
    """
    atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync)


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    """Hex SHA-256 of ``text`` encoded as UTF-8."""
    return sha256_bytes(text.encode("utf-8"))


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB chunks.

    Raises:
        OSError: the file cannot be read (e.g. ``FileNotFoundError``).
    """
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def pid_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists on this host (one of another user's counts too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
