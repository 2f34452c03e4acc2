"""One writer per folder: a second writer is refused with the owner named."""

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
from click.testing import CliRunner

from zsceval.cli import main
from zsceval.execution.locks import LOCK_NAME, FolderLock, FolderLockedError


def hold_lock_in_child(folder, seconds=30):
    """A child process that holds ``folder``'s lock until killed; returns it once the lock exists."""
    code = textwrap.dedent(f"""
        import time
        from zsceval.execution.locks import FolderLock
        FolderLock({str(folder)!r}, "run").acquire()
        print("held", flush=True)
        time.sleep({seconds})
    """)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "held"
    return child


def test_a_second_writer_is_refused_with_the_owner_named(tmp_path):
    child = hold_lock_in_child(tmp_path / "run")
    try:
        with pytest.raises(FolderLockedError, match=rf"pid {child.pid} on .* choose another --out"):
            FolderLock(tmp_path / "run", "run").acquire()
    finally:
        child.kill()
        child.wait()
    # its process is gone: the lock is stale and taken over
    with FolderLock(tmp_path / "run") as lock:
        assert json.loads(lock.path.read_text())["pid"] == os.getpid()
    assert not (tmp_path / "run" / LOCK_NAME).exists()


def test_the_holder_may_take_its_lock_again(tmp_path):
    a = FolderLock(tmp_path).acquire()
    b = FolderLock(tmp_path).acquire()  # e.g. a command that locks around a library call that locks
    assert a.held and b.held
    b.release()  # the inner release leaves the outer holder's lock in place
    assert (tmp_path / LOCK_NAME).exists()
    a.release()
    assert not (tmp_path / LOCK_NAME).exists()


def test_a_lock_from_another_host_is_not_taken_over(tmp_path):
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": 1, "host": "elsewhere", "started": "x"}))
    with pytest.raises(FolderLockedError, match=f"elsewhere.*delete {tmp_path / LOCK_NAME}"):
        FolderLock(tmp_path).acquire()


TINY = ["--preset", "quick", "--steps", "3200", "--no-progress", "--layout", "cramped_room",
        "--set", "env.num_envs=8", "--set", "run.checkpoint_every=3200", "--set", "run.eval_episodes=0",
        "--set", "ppo.epochs=1", "--set", "ppo.num_minibatches=1"]  # fmt: skip


def test_train_into_a_folder_another_process_writes_is_refused_and_nothing_is_written(tmp_path):
    run = tmp_path / "conc"
    child = hold_lock_in_child(run)
    try:
        res = CliRunner().invoke(main, ["train", "--out", str(run), "--seed", "2", *TINY])
    finally:
        child.kill()
        child.wait()
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert f"pid {child.pid}" in res.output and "in use" in res.output
    assert sorted(p.name for p in run.iterdir()) == [LOCK_NAME]  # no config, no checkpoint of seed 2
    # once the other writer is gone, the same command runs and leaves no lock behind
    res = CliRunner().invoke(main, ["train", "--out", str(run), "--seed", "2", *TINY])
    assert res.exit_code == 0, res.output
    assert not (run / LOCK_NAME).exists() and (run / "config.yaml").exists()


def test_two_trainings_started_into_one_folder_do_not_merge(tmp_path):
    run = tmp_path / "conc"
    cmd = [sys.executable, "-m", "zsceval.cli", "train", "--out", str(run), *TINY]
    procs = [subprocess.Popen([*cmd, "--seed", str(s)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) for s in (1, 2)]  # fmt: skip
    outs = [p.communicate(timeout=300)[0] for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes[0] == 0 and codes[1] != 0, outs
    loser = outs[[p.returncode for p in procs].index(codes[1])]
    assert "in use" in loser or "already holds a run" in loser
    time.sleep(0.1)
    assert not (run / LOCK_NAME).exists()


def test_a_bench_folder_another_process_writes_is_refused(tmp_path):
    suite = tmp_path / "tiny.yaml"
    suite.write_text("name: tiny\nlayouts: [cramped_room]\nalgorithms: [sp]\nego_seeds: 1\nego_steps: 3200\n"
                     "overrides: [env.num_envs=8]\n"
                     "partners: {candidates: 2, candidate_steps: 3200, k: 1}\n")  # fmt: skip
    out = tmp_path / "bench"
    child = hold_lock_in_child(out)
    try:
        res = CliRunner().invoke(main, ["bench", "--suite", str(suite), "--out", str(out), "--no-progress"])
    finally:
        child.kill()
        child.wait()
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "another zsceval process writes this bench" in res.output and f"pid {child.pid}" in res.output
    assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME]  # no suite record, no job folder


def test_a_partner_folder_another_process_writes_is_refused(tmp_path):
    out = tmp_path / "P"
    child = hold_lock_in_child(out)
    try:
        args = ["partners", "generate", "--layout", "cramped_room", "--candidates", "2", "--out", str(out)]
        res = CliRunner().invoke(main, args)
    finally:
        child.kill()
        child.wait()
    assert res.exit_code != 0 and "another zsceval process writes this partner folder" in res.output
    assert not (out / "partners.yaml").exists()


def test_holder_reads_a_live_writers_record_and_ignores_a_stale_one(tmp_path):
    from zsceval.execution.locks import holder

    assert holder(tmp_path) is None  # no lock
    with FolderLock(tmp_path, "bench", info={"executor": "process", "workers": 2}):
        owner = holder(tmp_path)
        assert owner["pid"] == os.getpid() and owner["workers"] == 2 and owner["executor"] == "process"
    assert holder(tmp_path) is None  # released
    child = hold_lock_in_child(tmp_path / "run")
    try:
        assert holder(tmp_path / "run")["pid"] == child.pid
    finally:
        child.kill()
        child.wait()
    assert holder(tmp_path / "run") is None  # its process is gone: stale
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": 1, "host": "elsewhere", "workers": 4}))
    assert holder(tmp_path)["workers"] == 4  # another host's cannot be checked: taken as live
    (tmp_path / LOCK_NAME).write_text("{not json")
    assert holder(tmp_path) is None


def test_a_lock_of_this_host_without_a_valid_pid_is_stale(tmp_path):
    import socket

    from zsceval.execution.locks import holder

    for record in ({"host": socket.gethostname()}, {"host": socket.gethostname(), "pid": -1}, [1, 2]):
        (tmp_path / LOCK_NAME).write_text(json.dumps(record))
        assert holder(tmp_path) is None
        with FolderLock(tmp_path) as lock:  # taken over, not refused (os.kill(-1, 0) would say "alive")
            assert json.loads(lock.path.read_text())["pid"] == os.getpid()
