"""zsceval.io: atomic writes leave the old file or the whole new one, never a temp file behind."""

import hashlib

import pytest

from zsceval.io import (
    atomic_path,
    atomic_write_bytes,
    atomic_write_text,
    sha256_bytes,
    sha256_file,
    sha256_text,
)


def test_atomic_writes_replace_whole_files_and_clean_up_on_failure(tmp_path):
    path = tmp_path / "sub" / "f.json"
    atomic_write_text(path, "old")
    atomic_write_bytes(path, b"new", fsync=True)
    assert path.read_bytes() == b"new"
    with pytest.raises(TypeError):
        atomic_write_bytes(path, "not bytes")  # fails after the temp file was created
    assert path.read_bytes() == b"new" and [p.name for p in path.parent.iterdir()] == ["f.json"]


def test_sha256_helpers_agree_with_hashlib(tmp_path):
    data = "héllo".encode()
    (tmp_path / "x").write_bytes(data * 300_000)  # > 1 MiB: read in several chunks
    assert sha256_file(tmp_path / "x") == hashlib.sha256(data * 300_000).hexdigest()
    assert sha256_text("héllo") == sha256_bytes(data) == hashlib.sha256(data).hexdigest()


def test_atomic_path_renames_on_success_and_removes_the_temp_on_failure(tmp_path):
    target = tmp_path / "table.bin"
    with atomic_path(target) as tmp:
        assert tmp.parent == tmp_path and tmp != target
        tmp.write_bytes(b"whole")
        assert not target.exists()  # not visible until the writer is done
    assert target.read_bytes() == b"whole"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("writer died")
    assert target.read_bytes() == b"whole" and [p.name for p in tmp_path.iterdir()] == ["table.bin"]


def test_atomic_directory_replaces_whole_or_not_at_all(tmp_path):
    from zsceval.io import atomic_directory

    target = tmp_path / "d"
    with atomic_directory(target) as tmp:
        (tmp / "a").write_text("1")
    assert (target / "a").read_text() == "1"
    with atomic_directory(target) as tmp:
        (tmp / "b").write_text("2")
    assert sorted(p.name for p in target.iterdir()) == ["b"]  # replaced, not merged
    with pytest.raises(RuntimeError), atomic_directory(target) as tmp:
        (tmp / "c").write_text("3")
        raise RuntimeError("killed")
    assert sorted(p.name for p in target.iterdir()) == ["b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]  # no temp left behind
