"""Nothing silently lost, no tracebacks. Folder records decide (partners.yaml, suite.yaml),
runs killed before / after their first checkpoint recover, bad inputs get messages."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.cli_helpers import clean_error, invoke
from zsceval.bench import run as bench_run
from zsceval.execution import JobError

REPO = Path(__file__).resolve().parents[1]
TINY = ["--preset", "quick", "--steps", "3200", "--no-progress",
        "--set", "env.num_envs=8", "--set", "run.checkpoint_every=3200", "--set", "run.eval_episodes=2",
        "--set", "ppo.epochs=1", "--set", "ppo.num_minibatches=1"]  # fmt: skip


# -- 1. partners: the folder's record decides -----------------------------------------------------------
@pytest.fixture
def captured_jobs(monkeypatch):
    """Replace run_jobs: record the jobs asked for and stop there (no training)."""
    import zsceval.execution as execution

    calls = []

    def fake(jobs, root, **kw):
        calls.append([j.id for j in jobs])
        raise JobError("stopped by the test", retryable=True)

    monkeypatch.setattr(execution, "run_jobs", fake)
    return calls


def test_partners_select_reads_what_generate_recorded(tmp_path, captured_jobs):
    out = tmp_path / "P"
    res = invoke("partners", "generate", "--layout", "cramped_room", "--candidates", 3, "--steps", "3e5",
                 "--out", out)  # fmt: skip
    assert "stopped by the test" in res.output
    assert sum(j.endswith("/train") for j in captured_jobs[0]) == 3
    record = yaml.safe_load((out / "partners.yaml").read_text())
    assert record["candidates"] == 3 and record["steps"] == 300000
    res = invoke("partners", "select", "--layout", "cramped_room", "-k", 2, "--out", out)
    assert "stopped by the test" in res.output
    trains = [j for j in captured_jobs[1] if j.endswith("/train")]
    assert len(trains) == 3  # the 3 generated candidates, not 8 defaults


def test_partners_select_names_the_br_returns_that_misstate_br_prox(tmp_path, monkeypatch):
    """After the manifest, `partners select` prints the set's notes: a BR that never scores and a
    fresh mid BR that its candidate's co-trained BR beats."""
    import pandas as pd

    from zsceval.bench import partner_runs

    set_dir = tmp_path / "P" / "set"
    set_dir.mkdir(parents=True)
    units = [("c000_final", 0, 100.0, None), ("c000_mid", 0, 0.0, 80.0), ("c000_mid", 1, 60.0, 62.0)]
    rows = [{"layout": "cramped_room", "partner": p, "seat": s, "episode": 0, "br_return": r}
            for p, s, r, _ in units]  # fmt: skip
    pd.DataFrame(rows).to_parquet(set_dir / "br_returns.parquet")
    rows = [{"layout": "cramped_room", "partner": p, "seat": s, "episode": 0, "cotrained_br_return": c}
            for p, s, _, c in units if c is not None]  # fmt: skip
    pd.DataFrame(rows).to_parquet(set_dir / "cotrained_br_returns.parquet")
    monkeypatch.setattr(partner_runs, "select_partners", lambda suite, out: set_dir / "manifest.json")
    out = tmp_path / "P"
    res = invoke("partners", "select", "--layout", "cramped_room", "-k", 1, "--candidates", 2, "--out", out)
    assert res.exit_code == 0, res.output
    notes = [ln for ln in res.output.splitlines() if ln.startswith("note: ")]
    assert len(notes) == 2
    assert "the BR return is <= 0 for 1 of 3 (partner, seat) units (c000_mid)" in notes[0]
    weak = "on 1 of 2 mid (partner, seat) units (c000_mid; largest: c000_mid seat 0, 0.0 against 80.0)"
    assert weak in notes[1]


def test_partners_conflicting_settings_are_refused(tmp_path, captured_jobs):
    out = tmp_path / "P"
    invoke(
        "partners", "generate", "--layout", "cramped_room", "--candidates", 3, "--steps", "3e5", "--out", out
    )
    res = invoke("partners", "select", "--layout", "cramped_room", "-k", 2, "--candidates", 8, "--out", out)
    clean_error(res, "candidates: 3 -> 8", "--force", "another --out")
    assert len(captured_jobs) == 1  # nothing ran
    res = invoke("partners", "generate", "--layout", "cramped_room", "--seed", 4, "--out", out)
    clean_error(res, "seed: 0 -> 4")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--steps", "abc"], "'abc' is not a number"),
        (["--steps", "-1"], "must be at least 1"),
        (["--layout", "cramped_rom"], "Did you mean 'cramped_room'?"),
        (["--candidates", "0"], "0 is not in the range"),
        (["--device", "tpu"], "unknown device 'tpu'"),
    ],
)
def test_partners_generate_bad_inputs(tmp_path, args, message, captured_jobs):
    base = ["partners", "generate", "--layout", "cramped_room", "--out", tmp_path / "P"]
    res = invoke(*base, *args)
    clean_error(res, message)
    assert not captured_jobs


def test_partners_failure_that_a_rerun_cannot_fix_does_not_advise_rerun():
    from zsceval.commands._common import job_failure

    assert "rerun the same command" in job_failure(JobError("x", retryable=True)).message
    assert "rerun the same command" not in job_failure(JobError("x", retryable=False)).message


def test_too_few_candidates_names_existing_flags(tmp_path):
    from zsceval.execution.jobs import JobInputError
    from zsceval.generation.pipeline import partners_select

    ev = tmp_path / "c000" / "evaluate"
    ev.mkdir(parents=True)
    (ev / "DONE.json").write_text(json.dumps({"result": {"final_return": 0.0, "features": [0.0]}}))
    with pytest.raises(JobInputError) as info:
        partners_select(
            {"k": 1, "seed": 0, "num_samples": 5, "min_return": 10}, tmp_path, {"x/c000/evaluate": ev}
        )
    assert "--min-return" in str(info.value) and "partners.min_return" in str(info.value)
    res = invoke("partners", "select", "--help")
    assert "--min-return" in res.output


# -- 1. bench: the folder's suite.yaml decides -------------------------------------------------------------
TINY_SUITE = """
name: tiny
seed: 0
layouts: [cramped_room]
algorithms: [sp, pecan]
ego_seeds: 1
ego_steps: 3200
preset: quick
overrides: [env.num_envs=8, run.eval_episodes=2, ppo.epochs=1]
partners: {candidates: 2, candidate_steps: 3200, checkpoints: 2, feature_episodes: 2, k: 1,
           mid_br_steps: 1600, dpp_samples: 20, min_return: -1}
evaluation: {episodes: 2}
"""


pytestmark = pytest.mark.usefixtures("unimplemented_zsc_algorithm")


@pytest.fixture
def stop_bench(monkeypatch):

    def fake(*a, **kw):
        raise JobError("stopped by the test", retryable=True)

    monkeypatch.setattr(bench_run, "run_jobs", fake)


def test_bench_refuses_another_suite_setting_without_touching_the_folder(tmp_path, stop_bench):
    suite = tmp_path / "tiny.yaml"
    suite.write_text(TINY_SUITE)
    out = tmp_path / "out"
    res = invoke("bench", "--suite", suite, "--out", out, "--no-progress")
    assert "stopped by the test" in res.output  # the first run records its suite
    finished = out / "cramped_room/egos/sp/s0"
    finished.mkdir(parents=True)
    (finished / "DONE.json").write_text("{}")
    (out / "results.parquet").write_text("old table")
    recorded = (out / "suite.yaml").read_text()

    suite.write_text(TINY_SUITE.replace("seed: 0", "seed: 1"))
    res = invoke("bench", "--suite", suite, "--out", out, "--no-progress")
    clean_error(res, "seed: 0 -> 1", "--force", "another --out")
    assert (out / "suite.yaml").read_text() == recorded
    assert (finished / "DONE.json").is_file() and (out / "results.parquet").is_file()

    # a subset of the same suite is no conflict
    suite.write_text(TINY_SUITE)
    res = invoke("bench", "--suite", suite, "--out", out, "--algos", "sp", "--no-progress")
    assert "stopped by the test" in res.output

    # --force replaces, and the old table can no longer be reported under the new suite
    suite.write_text(TINY_SUITE.replace("seed: 0", "seed: 1"))
    res = invoke("bench", "--suite", suite, "--out", out, "--force", "--no-progress")
    assert "stopped by the test" in res.output
    assert yaml.safe_load((out / "suite.yaml").read_text())["seed"] == 1
    assert not (out / "results.parquet").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--algos", "fcp,tbs"], "'tbs' is not in suite"),
        (["--layouts", "counter_circuit"], "'counter_circuit' is not in suite"),
        (["--algos", "sp,tbs"], "'tbs' is not in suite"),
        (["--workers", "0"], "0 is not in the range"),
        (["--workers", "-2"], "-2 is not in the range"),
    ],
)
def test_bench_bad_selection_is_refused_before_compute(tmp_path, args, message, stop_bench):
    out = tmp_path / "out"
    res = invoke("bench", "--suite", "overcooked-quick", "--out", out, "--no-progress", *args)
    clean_error(res, message)
    assert not (out / "suite.yaml").exists()


def test_bench_of_only_unimplemented_algorithms_is_refused(tmp_path, stop_bench):
    suite = tmp_path / "s.yaml"
    suite.write_text(TINY_SUITE.replace("algorithms: [sp, pecan]", "algorithms: [pecan]"))
    res = invoke("bench", "--suite", suite, "--out", tmp_path / "out", "--no-progress")
    clean_error(res, "none of the algorithms pecan is implemented")
    assert not (tmp_path / "out" / "suite.yaml").exists()


def test_bench_unwritable_out_is_a_message(tmp_path, stop_bench):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = invoke("bench", "--suite", "overcooked-quick", "--out", blocker / "out", "--no-progress")
    clean_error(res, "cannot write to --out")


# -- 3. train: messages, not tracebacks ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "ppo.lr=-1"], "ppo.lr must be > 0"),
        (["--device", "tpu"], "unknown device 'tpu'; valid: cpu, cuda"),
        (["--steps", "abc"], "'abc' is not a number"),
        (["--steps", "0"], "must be at least 1"),
    ],
)
def test_train_bad_values_are_messages(tmp_path, args, message):
    out = tmp_path / "run"
    res = invoke("train", "--out", out, "--no-progress", *args)
    clean_error(res, message)
    assert not (out / "config.yaml").exists()


def test_train_bad_layout_file_names_the_file(tmp_path):
    bad = tmp_path / "bad.layout"
    bad.write_text("XXX\n")
    res = invoke("train", "--layout", bad, "--out", tmp_path / "run", "--no-progress")
    clean_error(res, f"{bad}:1:1")
    binary = tmp_path / "binary.layout"
    binary.write_bytes(b"\xff\xfe\n")
    res = invoke("train", "--layout", binary, "--out", tmp_path / "run", "--no-progress")
    clean_error(res, f"{binary}: not a UTF-8 text layout file")
    res = invoke("train", "--layout", tmp_path, "--out", tmp_path / "run", "--no-progress")
    clean_error(res, "is not a file")


def test_train_unwritable_out_is_a_message(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = invoke("train", "--out", blocker / "run", *TINY)
    clean_error(res, "cannot write to --out")


def test_train_help_says_steps_round_up_and_default_preset():
    res = invoke("train", "--help")
    text = " ".join(res.output.split())
    assert "still trains one iteration" in text and "[default: quick]" in text


def test_train_without_preset_is_the_quick_preset(tmp_path):
    plain = invoke("train", "--print-config")
    quick = invoke("train", "--preset", "quick", "--print-config")
    assert plain.exit_code == 0 and plain.output == quick.output


def test_step_error_message_names_numpy_arrays():
    import numpy as np

    from zsceval.envs.overcooked import OvercookedEnv

    env = OvercookedEnv("cramped_room", num_envs=2)
    env.reset()
    env.step(np.zeros((2, 2), dtype=np.int64))  # accepted, as documented
    with pytest.raises(ValueError, match="numpy"):
        env.step([[0, 0], [0, 0]])
    with pytest.raises(ValueError, match="numpy int64"):
        env.step(np.zeros((2, 2), dtype=np.int32))


# -- 4. resume: never lowers the budget, never retrains a finished run ----------------------------------
@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("runs") / "sp"
    res = invoke("train", "--algo", "sp", "--layout", "cramped_room", "--out", run, *TINY)
    assert res.exit_code == 0, res.output
    return run


def snapshot(run: Path) -> dict[str, int]:
    return {str(p.relative_to(run)): p.stat().st_mtime_ns for p in run.rglob("*") if p.is_file()}


def test_resume_with_lower_steps_is_refused(finished_run, tmp_path):
    run = tmp_path / "r"
    shutil.copytree(finished_run, run)
    before = snapshot(run)
    res = invoke("train", "--resume", "--out", run, "--steps", 1600, "--no-progress")
    clean_error(res, "below the run's saved budget of 3,200")
    assert snapshot(run) == before
    assert "total_steps: 3200" in (run / "config.yaml").read_text()


def test_resume_of_a_finished_run_does_nothing(finished_run, tmp_path):
    run = tmp_path / "r"
    shutil.copytree(finished_run, run)
    before = snapshot(run)
    res = invoke("train", "--resume", "--out", run, "--no-progress")
    assert res.exit_code == 0, res.output
    assert "already finished training at 3,200" in res.output
    assert snapshot(run) == before


# -- 2. fault injection: kill training before / after its first checkpoint, the bench inside a job ----------
KILLER = """
import os, signal, sys
from zsceval.rl import trainer
KILL_AT, MATCH = int(os.environ["KILL_AT"]), os.environ.get("KILL_MATCH", "")
orig = trainer.Trainer._iteration
def _iteration(self):
    row = orig(self)
    if self.iteration == KILL_AT and MATCH in str(self.run_dir):
        os.kill(os.getpid(), signal.SIGKILL)
    return row
trainer.Trainer._iteration = _iteration
from zsceval.bench import suite  # the module's `pecan` fixture, in this process too
suite.ZSC_ALGORITHMS = (*suite.ZSC_ALGORITHMS, "pecan")
from zsceval.cli import main
main(sys.argv[1:])
"""


def run_killed(args, kill_at: int, match: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "KILL_AT": str(kill_at), "KILL_MATCH": match,
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, *map(str, args)], env=env, capture_output=True, text=True
    )
    assert proc.returncode == -9, proc.stderr[-2000:]  # really killed
    return proc


FOUR = [*TINY[:2], "--steps", "1600", "--no-progress", "--set", "env.num_envs=4",
        "--set", "ppo.rollout_length=100", "--set", "run.checkpoint_every=800",
        "--set", "run.eval_episodes=2",
        "--set", "ppo.epochs=1", "--set", "ppo.num_minibatches=1"]  # fmt: skip
# 400 env steps per iteration: checkpoints after iterations 2 and 4


def weights(run: Path) -> bytes:
    last = sorted((run / "checkpoints").glob("step_*"))[-1]
    return (last / "policies.safetensors").read_bytes()


def test_training_killed_before_and_after_its_first_checkpoint_recovers_identically(tmp_path):
    ref = tmp_path / "ref"
    res = invoke("train", "--algo", "sp", "--layout", "cramped_room", "--out", ref, *FOUR)
    assert res.exit_code == 0, res.output

    # killed after iteration 1: config.yaml written, no checkpoint yet
    early = tmp_path / "early"
    run_killed(["train", "--algo", "sp", "--layout", "cramped_room", "--out", early, *FOUR], kill_at=1)
    assert (early / "config.yaml").is_file() and not list((early / "checkpoints").glob("step_*"))
    res = invoke("train", "--algo", "sp", "--layout", "cramped_room", "--out", early, *FOUR)
    clean_error(res, "stopped before its first checkpoint", "pass --resume")
    res = invoke("train", "--resume", "--out", early, "--no-progress")
    assert res.exit_code == 0, res.output
    assert "starting it over from scratch" in res.output

    # killed after iteration 3: one checkpoint (800 steps) behind it
    late = tmp_path / "late"
    run_killed(["train", "--algo", "sp", "--layout", "cramped_room", "--out", late, *FOUR], kill_at=3)
    res = invoke("train", "--resume", "--out", late, "--no-progress")
    assert res.exit_code == 0 and "resuming" in res.output and "at 800 env steps" in res.output

    for run in (early, late):
        assert weights(run) == weights(ref)
        a, b = (json.loads((r / "eval.json").read_text())["self_play"] for r in (run, ref))
        assert a == b
        rows = (run / "metrics.csv").read_text().splitlines()
        assert len(rows) == 1 + 4  # header + one row per iteration, none twice


@pytest.mark.slow
def test_bench_killed_inside_a_job_resumes_with_identical_results(tmp_path):
    import pandas as pd

    suite = tmp_path / "tiny.yaml"
    suite.write_text(TINY_SUITE)
    ref, killed = tmp_path / "ref", tmp_path / "killed"
    res = invoke("bench", "--suite", suite, "--out", ref, "--no-progress", "--no-report")
    assert res.exit_code == 0, res.output
    # killed after the 2nd iteration of the ego's training, in the middle of its job
    run_killed(["bench", "--suite", suite, "--out", killed, "--no-progress"], kill_at=2, match="egos/sp/s0")
    assert not (killed / "cramped_room/egos/sp/s0/DONE.json").exists()
    res = invoke("bench", "--suite", suite, "--out", killed, "--no-progress", "--no-report")
    assert res.exit_code == 0, res.output
    for name in ("results", "br_returns", "features"):
        a, b = (pd.read_parquet(d / f"{name}.parquet") for d in (ref, killed))
        pd.testing.assert_frame_equal(a, b)


# -- 6. artifacts get the user's umask ---------------------------------------------------------------------
def test_atomic_outputs_and_checkpoints_follow_the_umask(finished_run, tmp_path):
    from zsceval.io import atomic_path, atomic_write_text

    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "a.txt", "x")
        with atomic_path(tmp_path / "fig.png") as tmp:
            tmp.write_bytes(b"png")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "fig.png").stat().st_mode & 0o777 == 0o644
    ckpt = sorted((finished_run / "checkpoints").glob("step_*"))[-1]
    assert ckpt.stat().st_mode & 0o077 != 0  # not 0700
    assert (ckpt / "policies.safetensors").stat().st_mode & 0o044 == 0o044


# -- 7. report: skipped algorithms, selected partners, PCA labels and explained variance --------------------
def test_report_names_skipped_algorithms_and_selected_partners(tmp_path):
    import numpy as np
    import pandas as pd

    from zsceval.bench import report as rep

    rows = [{"layout": "cramped_room", "algorithm": "sp", "ego_seed": s, "partner": p, "partner_level": lvl,
             "seat": seat, "episode": 0, "sparse_return": 100.0 + 10 * s}
            for s in range(2) for p, lvl in (("c001", "expert"), ("c001_mid", "moderate"))
            for seat in (0, 1)]  # fmt: skip
    pd.DataFrame(rows).to_parquet(tmp_path / "results.parquet")
    br = [{"layout": "cramped_room", "partner": p, "seat": seat, "br_return": 150.0}
          for p in ("c001", "c001_mid") for seat in (0, 1)]  # fmt: skip
    pd.DataFrame(br).to_parquet(tmp_path / "br_returns.parquet")
    rng = np.random.default_rng(0)
    feats = pd.DataFrame({"layout": "cramped_room", "candidate_id": ["c000", "c001", "c002"],
                          "selected": [False, True, False], "a": rng.random(3), "b": rng.random(3),
                          "c": rng.random(3)})  # fmt: skip
    feats.to_parquet(tmp_path / "features.parquet")
    (tmp_path / "suite.yaml").write_text("name: x\nalgorithms: [sp, fcp, pecan]\n")
    res = invoke("report", tmp_path, "--no-stats", "--reps", 50)
    assert res.exit_code == 0, res.output
    assert "skipped (not implemented yet): pecan" in res.output
    assert "selected partners on cramped_room: c001 (of 3 candidates" in res.output

    fig = rep._plot_pca(feats, "cramped_room")
    ax = fig.axes[0]
    assert "% of variance" in ax.get_xlabel() and "% of variance" in ax.get_ylabel()
    assert {t.get_text() for t in ax.texts} == {"c000", "c001", "c002"}
    _, ratio = rep.pca_2d_explained(rep.feature_matrix(feats)[0])
    assert 0 < ratio[1] <= ratio[0] and ratio.sum() <= 1 + 1e-9


# -- 5. threads: concurrent jobs do not oversubscribe the cores -----------------------------------------
def test_thread_cap_for_concurrent_jobs_and_note_when_cores_are_busy(monkeypatch, tmp_path):
    from zsceval.rl import hardware as hw
    from zsceval.rl import trainer as tr

    monkeypatch.setattr(hw.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    monkeypatch.setattr(hw, "usable_cores", lambda: 2)
    monkeypatch.delenv(tr.MAX_THREADS_ENV, raising=False)
    assert tr.choose_threads(2) == (2, None)
    monkeypatch.setenv(tr.MAX_THREADS_ENV, "1")
    assert tr.choose_threads(2) == (1, None) and tr.choose_threads(0) == (1, None)
    monkeypatch.delenv(tr.MAX_THREADS_ENV)
    monkeypatch.setattr(hw.os, "getloadavg", lambda: (1.9, 1.0, 1.0))  # another run busy on 2 cores
    threads, note = tr.choose_threads(2)
    assert threads == 2 and "run.num_threads=1" in note  # an explicit count is a note, not a change

    # the cap is recorded in the run's config, so a resume uses the same count
    monkeypatch.setenv(tr.MAX_THREADS_ENV, "1")
    run = tmp_path / "run"
    res = invoke("train", "--out", run, *TINY)
    assert res.exit_code == 0, res.output
    assert yaml.safe_load((run / "config.yaml").read_text())["run"]["num_threads"] == 1


def test_bench_caps_threads_when_jobs_run_concurrently(tmp_path, monkeypatch):

    from zsceval.rl.trainer import MAX_THREADS_ENV

    seen = []

    def fake(*a, **kw):
        seen.append(os.environ.get(MAX_THREADS_ENV))
        raise JobError("stopped by the test", retryable=True)

    monkeypatch.delenv(MAX_THREADS_ENV, raising=False)  # the test suite's own cap (conftest)
    monkeypatch.setattr(bench_run, "run_jobs", fake)
    monkeypatch.setattr("zsceval.rl.hardware.usable_cores", lambda: 2)
    suite = tmp_path / "tiny.yaml"
    suite.write_text(TINY_SUITE)
    invoke("bench", "--suite", suite, "--out", tmp_path / "a", "--executor", "process", "--workers", 2)
    invoke("bench", "--suite", suite, "--out", tmp_path / "b")
    assert seen == ["1", None]
    assert os.environ.get(MAX_THREADS_ENV) is None  # restored


def test_resume_after_a_killed_extension_continues(finished_run, tmp_path):
    """`--resume --steps 6400` killed before it finished leaves config 6400 and eval.json 3200:
    a plain `--resume` must finish the extension, not call the run finished."""
    run = tmp_path / "r"
    shutil.copytree(finished_run, run)
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    cfg["run"]["total_steps"] = 6400
    (run / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    res = invoke("train", "--resume", "--out", run, "--no-progress")
    assert res.exit_code == 0 and "already finished" not in res.output, res.output
    assert json.loads((run / "eval.json").read_text())["env_steps"] == 6400


def test_bench_shows_training_progress_inside_a_job_with_the_local_executor(tmp_path, monkeypatch):

    from zsceval.training.jobs import JOB_PROGRESS_ENV

    seen = []

    def fake(*a, **kw):
        seen.append(os.environ.get(JOB_PROGRESS_ENV))
        raise JobError("stopped by the test", retryable=True)

    monkeypatch.setattr(bench_run, "run_jobs", fake)
    suite = tmp_path / "tiny.yaml"
    suite.write_text(TINY_SUITE)
    invoke("bench", "--suite", suite, "--out", tmp_path / "a")
    invoke("bench", "--suite", suite, "--out", tmp_path / "b", "--no-progress")
    invoke("bench", "--suite", suite, "--out", tmp_path / "c", "--executor", "process", "--workers", 2)
    assert seen == ["1", "0", "0"]
