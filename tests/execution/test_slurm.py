"""The SLURM executor through submitit's local back-end (``--slurm-cluster local``): jobs run as
separate processes, retries keep whether a retry can help, an interrupted driver cancels its jobs
and a rerun resumes without redoing finished ones.

Skipped when submitit is not installed (``pip install "zsceval[slurm]"``; the test extra has it).
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.execution import ray_kinds
from zsceval.execution import Job, JobError, run_jobs
from zsceval.execution.slurm import SlurmOptions, parse_time, slurm_options

KINDS = (ray_kinds.MODULE,)
REPO = Path(__file__).resolve().parents[2]
LOCAL = SlurmOptions(cluster="local", cpus=1, time="10")


def runs(root: Path, job: str) -> list[int]:
    """The pids of every call of a job's function (ray_kinds appends one line per call)."""
    path = root / job / "runs.txt"
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def test_time_limits_in_slurm_formats():
    assert [parse_time(t) for t in (90, "90", "1:30:00", "2-00:00:00", "1-12", "0-0:30", "5:30")] == [
        90, 90, 90, 2880, 2160, 30, 6,
    ]  # fmt: skip
    with pytest.raises(ValueError, match="HH:MM:SS"):
        parse_time("1h")
    with pytest.raises(ValueError, match="at least one minute"):
        parse_time("0")


def test_options_from_a_suite_block_and_the_command_line():
    opts = slurm_options(
        {"partition": "gpu", "gpus": 1, "setup": "module load cuda"}, partition="a100", cpus=None
    )
    assert (opts.partition, opts.gpus, opts.cpus, opts.setup) == ("a100", 1, 4, ("module load cuda",))
    with pytest.raises(ValueError, match=r"unknown slurm option\(s\) gpu; valid: partition, time"):
        slurm_options({"gpu": 1})
    with pytest.raises(ValueError, match="cpus must be an integer >= 1"):
        slurm_options({"cpus": 0})


def test_sbatch_parameters_reach_submitit(tmp_path, monkeypatch):
    pytest.importorskip("submitit", reason='the slurm executor needs: pip install "zsceval[slurm]"')
    from submitit.slurm.slurm import SlurmExecutor, _make_sbatch_string

    with pytest.raises(JobError, match="--slurm-cluster local"):  # no SLURM on this machine
        SlurmOptions().executor(tmp_path)
    monkeypatch.setattr(SlurmExecutor, "affinity", staticmethod(lambda: 1))  # as if srun were here

    opts = slurm_options({"partition": "gpu", "time": "2:00:00", "gpus": 1, "cpus": 8, "mem_gb": 32,
                          "setup": ["source venv/bin/activate"], "extra": {"exclude": "node7"}})  # fmt: skip
    ex = opts.executor(tmp_path)
    text = _make_sbatch_string(command="x", folder=tmp_path, **ex._executor.parameters)
    for line in ("--partition=gpu", "--time=120", "--gpus-per-node=1", "--cpus-per-task=8", "--mem=32GB",
                 "--exclude=node7", "source venv/bin/activate", "--job-name=zsceval"):  # fmt: skip
        assert line in text, line


@pytest.fixture
def submitit():
    return pytest.importorskip("submitit", reason='the slurm executor needs: pip install "zsceval[slurm]"')


def flaky(name, value=1, fail_times=0, needs=()):
    return Job(name, "raytest.flaky", {"value": value, "fail_times": fail_times}, needs=needs, out=name)


def test_jobs_run_as_separate_jobs_with_retries_and_needs(tmp_path, submitit):
    jobs = [flaky("a", 1, fail_times=1), flaky("b", 10, needs=("a",))]
    results = run_jobs(jobs, tmp_path, executor="slurm", workers=2, modules=KINDS, retries=1, progress=False,
                       slurm=LOCAL)  # fmt: skip
    assert results["b"] == {"value": 11, "runs": 1}
    assert len(runs(tmp_path, "a")) == 2 and os.getpid() not in runs(tmp_path, "a")  # retried, elsewhere
    assert list((tmp_path / "slurm").glob("*_log.out"))  # submitit's logs in the bench folder
    with pytest.raises(JobError, match="unknown job kind 'raytest.nope'") as info:
        run_jobs([*jobs, Job("x", "raytest.nope", out="x")], tmp_path, executor="slurm", modules=KINDS,
                 retries=1, progress=False, slurm=LOCAL)  # fmt: skip
    assert not info.value.retryable  # kept across the job boundary: the unknown kind was not retried
    assert len(runs(tmp_path, "b")) == 1  # finished jobs are not run again


def test_a_job_whose_process_dies_is_retried(tmp_path, submitit):
    job = Job("c", "raytest.crash", {"crash_times": 1}, out="c")
    results = run_jobs(
        [job], tmp_path, executor="slurm", modules=KINDS, retries=1, progress=False, slurm=LOCAL
    )
    assert results["c"] == {"runs": 2}


DRIVER = """
import sys
from tests.execution import ray_kinds
from zsceval.execution import Job, run_jobs
from zsceval.execution.slurm import SlurmOptions
jobs = [Job("a", "raytest.flaky", {"value": 1}, out="a"), Job("w", "raytest.wait", needs=("a",), out="w")]
run_jobs(jobs, sys.argv[1], executor="slurm", modules=(ray_kinds.MODULE,), progress=False,
         slurm=SlurmOptions(cluster="local", cpus=1, time="10"))
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_for(cond, what: str, timeout: float = 120.0) -> None:
    end = time.time() + timeout
    while not cond():
        assert time.time() < end, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.mark.parametrize("sig", [signal.SIGTERM, pytest.param(signal.SIGINT, marks=pytest.mark.slow)])
def test_interrupted_driver_cancels_its_jobs_and_a_rerun_resumes(tmp_path, submitit, sig):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}

    # Python's SIGINT handler, also when pytest runs as a background job: a shell's `cmd &` starts it
    # with SIGINT ignored, which the driver's local jobs would inherit and so ignore their cancel
    # (submitit's local cancel is a SIGINT)
    def interruptible():
        signal.signal(signal.SIGINT, signal.default_int_handler)

    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(tmp_path)], env=env, cwd=REPO, preexec_fn=interruptible
    )
    try:
        _wait_for(lambda: runs(tmp_path, "w"), "the waiting job to start")
        assert (tmp_path / "a" / "DONE.json").is_file()
        done_a = (tmp_path / "a" / "DONE.json").stat().st_mtime_ns
        driver.send_signal(sig)
        assert driver.wait(timeout=60) != 0
    finally:
        driver.kill()
    pid = runs(tmp_path, "w")[0]
    _wait_for(lambda: not _alive(pid), "the cancelled job's process to end", timeout=30)
    assert not (tmp_path / "w" / "DONE.json").exists()
    (tmp_path / "w" / "release").touch()
    jobs = [Job("a", "raytest.flaky", {"value": 1}, out="a"), Job("w", "raytest.wait", needs=("a",), out="w")]
    results = run_jobs(jobs, tmp_path, executor="slurm", modules=KINDS, progress=False, slurm=LOCAL)
    assert results["w"] == {"runs": 2} and len(runs(tmp_path, "a")) == 1  # a was not run again
    assert (tmp_path / "a" / "DONE.json").stat().st_mtime_ns == done_a


TINY_SUITE = """
name: tiny
seed: 0
layouts: [cramped_room]
algorithms: [sp]
ego_seeds: 1
ego_steps: 3200
preset: quick
overrides: [env.num_envs=8, run.eval_episodes=2, ppo.epochs=1]
partners: {candidates: 2, candidate_steps: 3200, checkpoints: 2, feature_episodes: 2, k: 1,
           mid_br_steps: 1600, dpp_samples: 20, min_return: -1}
evaluation: {episodes: 2, strata: false}
slurm: {cluster: local, cpus: 1, time: "30"}
"""


@pytest.mark.slow
def test_tiny_bench_on_slurm_is_stopped_resumes_and_matches_the_local_executor(tmp_path, submitit):
    """`zsceval bench --executor slurm` (submitit's local back-end, from the suite's slurm block):
    stopped after its first jobs finished, then run again to the end; its tables equal those of the
    same suite run in-process, and no job that had finished ran again."""
    import pandas as pd
    from click.testing import CliRunner

    from zsceval.cli import main

    suite = tmp_path / "tiny.yaml"
    suite.write_text(TINY_SUITE)
    ref, out = tmp_path / "ref", tmp_path / "slurm"
    args = ["bench", "--suite", str(suite), "--no-progress", "--no-report"]
    res = CliRunner().invoke(main, [*args, "--out", str(ref)])
    assert res.exit_code == 0, res.output
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    cmd = [
        sys.executable,
        "-m",
        "zsceval.cli",
        *args,
        "--out",
        str(out),
        "--executor",
        "slurm",
        "--workers",
        "2",
    ]
    driver = subprocess.Popen(cmd, env=env, cwd=REPO)
    try:
        _wait_for(lambda: len(list(out.rglob("DONE.json"))) >= 1, "the first finished job", timeout=600)
        driver.send_signal(signal.SIGTERM)
        assert driver.wait(timeout=120) != 0
    finally:
        driver.kill()
    done = {p: p.stat().st_mtime_ns for p in out.rglob("DONE.json")}
    assert not (out / "results.parquet").exists()
    res = CliRunner().invoke(main, [*args, "--out", str(out), "--executor", "slurm", "--workers", "2"])
    assert res.exit_code == 0, res.output
    assert all(p.stat().st_mtime_ns == t for p, t in done.items())  # finished jobs were not redone
    assert len(list(out.rglob("DONE.json"))) == len(list(ref.rglob("DONE.json")))
    for name in ("results", "br_returns", "features"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(ref / f"{name}.parquet"), pd.read_parquet(out / f"{name}.parquet")
        )
