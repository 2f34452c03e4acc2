"""Bad inputs a new user hit: each is one clear message, no traceback."""

import shutil
from pathlib import Path

import pytest
import yaml

from tests.cli_helpers import clean_error, invoke
from zsceval.envs.overcooked import OvercookedEnv


def test_a_negative_seed_is_refused(tmp_path):
    clean_error(invoke("train", "--seed", "-1", "--out", tmp_path / "r"), "--seed", "-1")
    assert not (tmp_path / "r").exists()


def test_a_binary_config_or_suite_file_is_named(tmp_path):
    blob = tmp_path / "blob.yaml"
    blob.write_bytes(bytes(range(256)) * 4)
    clean_error(
        invoke("train", "--config", blob, "--print-config"), f"cannot read config file {blob}", "UTF-8"
    )
    clean_error(invoke("bench", "--suite", blob, "--plan"), str(blob), "not a text")


def test_fcp_with_a_population_below_three_is_a_message(tmp_path):
    res = invoke("train", "--algo", "fcp", "--layout", "cramped_room", "--set", "population.size=2",
                 "--out", tmp_path / "f")  # fmt: skip
    clean_error(res, "population.size must be >= 3")


@pytest.mark.parametrize("item", ["run.checkpoint_every=0", "run.keep_checkpoints=-1"])
def test_checkpoint_settings_below_one_are_refused(tmp_path, item):
    res = invoke("train", "--set", item, "--out", tmp_path / "r", "--print-config")
    clean_error(res, item.split("=")[0], "must be >= 1")


def test_report_refuses_too_few_bootstrap_replicates(tmp_path):
    clean_error(invoke("report", tmp_path, "--reps", "1"), "--reps")


def test_a_fractional_number_of_games_is_refused():
    with pytest.raises(ValueError, match="whole number >= 1, got 2.5"):
        OvercookedEnv("cramped_room", num_envs=2.5)
    assert OvercookedEnv("cramped_room", num_envs=2.0).num_envs == 2


def test_partners_select_without_generate_says_so(tmp_path):
    out = tmp_path / "P"
    res = invoke("partners", "select", "--layout", "cramped_room", "-k", "2", "--out", out)
    clean_error(
        res, "holds no partners.yaml", "zsceval partners generate --layout cramped_room", "--candidates N"
    )
    assert not out.exists()  # nothing generated


def test_bench_subset_errors_name_the_real_flag_and_k_once(tmp_path):
    clean_error(
        invoke("bench", "--suite", "overcooked-quick", "--algos", "nosuch", "--plan"), "--algos 'nosuch'"
    )
    suite = tmp_path / "k.yaml"
    suite.write_text("name: k\nlayouts: [cramped_room]\nalgorithms: [sp]\npartners: {candidates: 2, k: 5}\n")
    res = invoke("bench", "--suite", suite, "--plan")
    clean_error(res, "partners.k=5 must be between 1 and the number of candidates (2)")
    assert res.output.count(str(suite)) == 1


def test_a_layout_file_is_recorded_absolute_so_resume_works_from_another_folder(tmp_path, monkeypatch):
    layouts = Path(__file__).resolve().parent.parent / "layouts"
    shutil.copy(layouts / "cramped_room.layout", tmp_path / "good.layout")
    monkeypatch.chdir(tmp_path)
    args = ["--preset", "quick", "--steps", "3200", "--no-progress", "--set", "env.num_envs=8",
            "--set", "run.eval_episodes=0", "--set", "ppo.epochs=1",
            "--set", "run.checkpoint_every=3200"]  # fmt: skip
    res = invoke("train", "--layout", "good.layout", "--out", tmp_path / "run", *args)
    assert res.exit_code == 0, res.output
    saved = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert saved["env"]["layout"] == str(tmp_path / "good.layout")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    res = invoke("train", "--resume", "--out", tmp_path / "run", "--steps", "6400", "--no-progress")
    assert res.exit_code == 0, res.output


def test_minibatches_of_a_few_samples_get_a_note(tmp_path):
    args = ["--preset", "quick", "--steps", "1600", "--no-progress", "--set", "env.num_envs=16",
            "--set", "run.eval_episodes=0", "--set", "ppo.epochs=1",
            "--set", "ppo.rollout_length=100"]  # fmt: skip
    res = invoke("train", "--out", tmp_path / "a", *args, "--set", "ppo.num_minibatches=1000")
    assert res.exit_code == 0, res.output
    assert "minibatches of about 3" in res.output and "at most 50" in res.output
    res = invoke("train", "--out", tmp_path / "b", *args, "--set", "ppo.num_minibatches=4")
    assert res.exit_code == 0 and "minibatches of about" not in res.output


def test_ctrl_c_says_what_is_kept_and_how_to_resume(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "zsceval.cli", "train", "--out", str(out), "--preset", "quick",
           "--steps", "5e6", "--set", "env.num_envs=8", "--set", "run.checkpoint_every=3200"]  # fmt: skip

    def interruptible():  # Python's SIGINT handler, also when pytest runs as a background job
        signal.signal(signal.SIGINT, signal.default_int_handler)

    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=interruptible)  # fmt: skip
    deadline = time.time() + 120
    while time.time() < deadline and not list((out / "checkpoints").glob("step_*")):
        time.sleep(0.5)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "interrupted: the checkpoints written so far are kept" in err and "--resume --out" in err
    assert "Traceback" not in err


def test_resume_falls_back_to_the_newest_checkpoint_that_verifies(tmp_path):
    run = tmp_path / "run"
    args = ["--preset", "quick", "--no-progress", "--set", "env.num_envs=8", "--set", "run.eval_episodes=0",
            "--set", "ppo.epochs=1", "--set", "run.checkpoint_every=1600",
            "--set", "run.keep_checkpoints=5"]  # fmt: skip
    res = invoke("train", "--out", run, "--steps", "4800", *args)
    assert res.exit_code == 0, res.output
    ckpts = sorted((run / "checkpoints").glob("step_*"))
    weights = ckpts[-1] / "policies.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])  # the newest is truncated
    res = invoke("train", "--resume", "--out", run, "--steps", "6400", "--no-progress")
    assert res.exit_code == 0, res.output
    assert (
        f"{ckpts[-1].name} does not verify" in res.output and f"resuming from {ckpts[-2].name}" in res.output
    )
    assert (run / "corrupt_checkpoints" / ckpts[-1].name).is_dir()  # kept, not deleted
    assert sorted(p.name for p in (run / "checkpoints").glob("step_*"))[-1] == "step_000000006400"


def test_a_missing_weights_file_is_called_missing(tmp_path):
    from zsceval.rl.checkpoint import CheckpointError, _load_tensors

    with pytest.raises(CheckpointError, match="the file is missing"):
        _load_tensors(tmp_path / "policies.safetensors")


def test_output_paths_are_checked_before_any_episode_is_played(tmp_path, monkeypatch):
    import zsceval.render.seating as seating

    played = []
    monkeypatch.setattr(seating, "play_seating", lambda *a, **k: played.append(1) or ([], 0))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = invoke("render", "--agent", tmp_path, "--layout", "cramped_room", "--out", tmp_path / "ep.png")
    clean_error(res, "ep.png must end in .gif", "an episode is a GIF")
    res = invoke("render", "--agent", tmp_path, "--layout", "cramped_room", "--out", blocker / "a.gif")
    clean_error(res, "cannot write to --out")
    res = invoke(
        "render", "--state", tmp_path / "s.json", "--layout", "cramped_room", "--out", tmp_path / "s.gif"
    )
    clean_error(res, "s.gif must end in .png")
    res = invoke("eval", "--agent", tmp_path, "--partner", tmp_path, "--layout", "cramped_room",
                 "--gif", blocker / "g")  # fmt: skip
    clean_error(res, "cannot write to --gif")
    res = invoke("eval", "--agent", tmp_path, "--partner", tmp_path, "--layout", "cramped_room",
                 "--save-trajectories", blocker / "t")  # fmt: skip
    clean_error(res, "cannot write to --save-trajectories")
    assert not played


@pytest.mark.parametrize("command", ["train", "eval", "bench", "partners", "report", "render", "layouts"])
def test_help_does_not_import_torch(command):
    """--help answers in well under a second: no torch, no plug-in loaded."""
    import subprocess
    import sys

    code = ("import sys\nfrom zsceval.cli import main\n"
            f"try:\n    main([{command!r}, '--help'], standalone_mode=False)\nexcept SystemExit:\n    pass\n"
            "print('TORCH' if 'torch' in sys.modules else 'NO TORCH')")  # fmt: skip
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == "NO TORCH"


def test_train_help_lists_the_config_sections_and_population_keys():
    text = invoke("train", "--help").output
    for needle in ("population", "stage1_steps", "num_threads (auto)", "bf16 (auto)", "algo.*"):
        assert needle in text


def test_layouts_show_of_a_non_layout_file_says_only_layout_files_are_read(tmp_path):
    other = tmp_path / "x.txt"
    other.write_text("hi\n")
    clean_error(invoke("layouts", "show", other), "not a .layout file", "*.layout")


TINY = ["--preset", "quick", "--no-progress", "--layout", "cramped_room", "--set", "env.num_envs=8",
        "--set", "run.eval_episodes=0", "--set", "ppo.epochs=1",
        "--set", "run.checkpoint_every=1600"]  # fmt: skip


def test_a_full_disk_while_checkpointing_is_a_message_and_resume_continues(tmp_path, monkeypatch):
    from safetensors import SafetensorError

    import zsceval.rl.checkpoint as ck

    real, calls = ck.save_file, []

    def failing(tensors, path):
        calls.append(path)
        if len(calls) > 2:  # the first checkpoint (weights, train state) is written, then the disk fills
            raise SafetensorError("No space left on device (os error 28)")
        real(tensors, path)

    monkeypatch.setattr(ck, "save_file", failing)
    run = tmp_path / "run"
    res = invoke("train", "--out", run, "--steps", "4800", *TINY)
    clean_error(res, "disk full?", "--resume --out")
    assert [p.name for p in (run / "checkpoints").glob("step_*")] == ["step_000000001600"]
    monkeypatch.setattr(ck, "save_file", real)
    res = invoke("train", "--resume", "--out", run, "--steps", "4800", "--no-progress")
    assert res.exit_code == 0, res.output


def test_resume_after_the_layout_file_changed_says_so(tmp_path):
    layout = tmp_path / "mine.layout"
    shutil.copy(Path(__file__).resolve().parent.parent / "layouts" / "cramped_room.layout", layout)
    run = tmp_path / "run"
    args = [a if a != "cramped_room" else str(layout) for a in TINY]
    assert invoke("train", "--out", run, "--steps", "1600", *args).exit_code == 0
    layout.write_text(layout.read_text().replace("O  2O", "O 2 O"))
    res = invoke("train", "--resume", "--out", run, "--steps", "3200", "--no-progress")
    clean_error(res, "cannot resume", "layout file edited?", "another --out")
