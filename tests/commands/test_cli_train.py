"""CLI: `zsceval train`, `zsceval eval`, `zsceval algos` with tiny budgets, and their errors."""

import json

import pytest
from click.testing import CliRunner

from zsceval.cli import main

TINY = ["--preset", "quick", "--steps", "3200", "--no-progress",
        "--set", "env.num_envs=8", "--set", "run.checkpoint_every=3200", "--set", "run.eval_episodes=2",
        "--set", "ppo.epochs=1", "--set", "ppo.num_minibatches=1"]  # fmt: skip


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Two tiny SP runs on cramped_room (seeds 0 and 1)."""
    root = tmp_path_factory.mktemp("runs")
    runner = CliRunner()
    for seed in (0, 1):
        res = runner.invoke(main, ["train", "--algo", "sp", "--layout", "cramped_room", "--seed", str(seed),
                                   "--out", str(root / f"s{seed}"), *TINY])  # fmt: skip
        assert res.exit_code == 0, res.output
    return root


def test_train_writes_run_directory(trained):
    run = trained / "s0"
    assert (run / "config.yaml").is_file()
    cfg = (run / "config.yaml").read_text()
    assert "layout: cramped_room" in cfg and "total_steps: 3200" in cfg and "seed: 0" in cfg
    header = (run / "metrics.csv").read_text().splitlines()[0].split(",")
    assert {"env_steps", "sparse_return", "env_steps_per_s", "policy_loss", "entropy_coef"} <= set(header)
    ckpts = sorted((run / "checkpoints").glob("step_*"))
    assert [c.name for c in ckpts] == ["step_000000003200"]
    meta = json.loads((ckpts[0] / "meta.json").read_text())
    assert meta["layout"] == "cramped_room" and meta["steps"] == 3200 and meta["resumable"]
    assert meta["env_spec"]["obs_shape"] == [4, 5, 20]
    summary = json.loads((run / "eval.json").read_text())
    assert summary["self_play"]["episodes"] == 2 and summary["env_steps"] == 3200
    assert not list(run.rglob("*.tmp")) and not list((run / "checkpoints").glob(".tmp-*"))


def test_eval_plays_both_seats(trained):
    res = CliRunner().invoke(main, ["eval", "--agent", str(trained / "s0"), "--partner", str(trained / "s1"),
                                    "--layout", "cramped_room", "--episodes", "3", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert [s["agent_seat"] for s in out["seatings"]] == [0, 1]
    assert all(s["episodes"] == 3 for s in out["seatings"]) and out["pooled"]["episodes"] == 6
    lo, hi = out["pooled"]["sparse_return_ci95"]
    assert lo <= out["pooled"]["sparse_return_mean"] <= hi
    assert "delivery" in out["seatings"][0]["events_mean_by_seat"][0]
    text = CliRunner().invoke(main, ["eval", "--agent", str(trained / "s0"), "--partner", str(trained / "s1"),
                                     "--layout", "simple", "--episodes", "2"])  # fmt: skip
    assert text.exit_code == 0 and "95% CI" in text.output and "agent in seat 1" in text.output


def test_eval_refuses_checkpoint_of_another_layout(trained):
    res = CliRunner().invoke(main, ["eval", "--agent", str(trained / "s0"), "--partner", str(trained / "s1"),
                                    "--layout", "counter_circuit", "--episodes", "2"])  # fmt: skip
    assert res.exit_code != 0
    assert "different layout or observation spec" in res.output
    assert "cramped_room" in res.output and "counter_circuit" in res.output


def test_eval_refuses_corrupt_checkpoint_without_touching_it(trained, tmp_path):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(trained / "s1", bad)
    weights = next((bad / "checkpoints").glob("step_*/policies.safetensors"))
    truncated = weights.read_bytes()[:100]
    weights.write_bytes(truncated)
    res = CliRunner().invoke(main, ["eval", "--agent", str(trained / "s0"), "--partner", str(bad),
                                    "--layout", "cramped_room", "--episodes", "2"])  # fmt: skip
    assert res.exit_code != 0 and "corrupt or truncated" in res.output
    assert weights.read_bytes() == truncated


def test_algos_lists_sp():
    res = CliRunner().invoke(main, ["algos"])
    assert res.exit_code == 0
    rows = dict(line.split(None, 1) for line in res.output.splitlines())
    assert rows["sp"].startswith("Self-play")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--algo", "spp"], "unknown algorithm 'spp'. Registered algorithms: "),
        (["--layout", "cramped_rom"], "Did you mean 'cramped_room'?"),
        (["--set", "ppo.lrr=1"], "unknown config key 'ppo.lrr'; did you mean 'ppo.lr'?"),
        (["--set", "algo.foo=1"], "takes no 'algo.*' options"),
        (["--preset", "quik"], "unknown preset 'quik'. Valid presets: paper, quick"),
        (["--workers", "2"], "--workers applies to a multi-stage run (a job chain); 'sp' trains in one run"),
        (["--workers", "0"], "Invalid value for '--workers': 0 is not in the range x>=1"),
        (
            ["--executor", "slurm"],
            "--executor runs the jobs of a multi-stage algorithm; sp trains in one run",
        ),
    ],
)
def test_train_bad_inputs_give_clear_errors(tmp_path, args, message):
    out = tmp_path / "run"
    res = CliRunner().invoke(main, ["train", "--steps", "100", "--out", str(out), "--no-progress", *args])
    assert res.exit_code != 0
    assert message in res.output
    assert not (out / "config.yaml").exists()


def test_tensorboard_without_package_is_a_clear_error(tmp_path):
    try:
        import tensorboard  # noqa: F401

        pytest.skip("tensorboard is installed")
    except ImportError:
        pass
    out = tmp_path / "run"
    res = CliRunner().invoke(main, ["train", "--out", str(out), "--set", "run.tensorboard=true", *TINY])
    assert res.exit_code != 0 and "needs the 'tensorboard' package" in res.output
    assert not out.exists()


def test_resume_on_directory_without_run(tmp_path):
    res = CliRunner().invoke(main, ["train", "--resume", "--out", str(tmp_path / "empty")])
    assert res.exit_code != 0 and "holds no run" in res.output


def test_existing_run_is_not_overwritten(trained):
    before = (trained / "s0" / "eval.json").read_text()
    res = CliRunner().invoke(main, ["train", "--out", str(trained / "s0"), *TINY])
    assert res.exit_code != 0 and "already holds a run" in res.output
    assert (trained / "s0" / "eval.json").read_text() == before


def test_resume_extends_a_finished_run(trained, tmp_path):
    import shutil

    run = tmp_path / "ext"
    shutil.copytree(trained / "s0", run)
    res = CliRunner().invoke(
        main, ["train", "--resume", "--out", str(run), "--steps", "6400", "--no-progress"]
    )
    assert res.exit_code == 0, res.output
    assert "resuming" in res.output and json.loads((run / "eval.json").read_text())["env_steps"] == 6400
    res = CliRunner().invoke(main, ["train", "--resume", "--out", str(run), "--seed", "3"])
    assert res.exit_code != 0 and "drop --seed" in res.output


def test_print_config_shows_resolved_values():
    res = CliRunner().invoke(main, ["train", "--preset", "paper", "--set", "ppo.lr=0.001", "--print-config"])
    assert res.exit_code == 0
    assert "kind: cnn" in res.output and "lr: 0.001" in res.output and "epochs: 15" in res.output
