"""``run.compile: full`` end to end: ``zsceval train --algo sp`` with the env
step, acting, values and the PPO minibatch step compiled (``aot_eager``: the same graphs without
inductor's code generation, which takes minutes on a CPU) logs the eager run's metrics for the
same seed, within float tolerance. Slow: tracing the env step and the update takes about a minute."""

import csv

import pytest
import torch
from click.testing import CliRunner

from zsceval.cli import main
from zsceval.rl.config import ConfigError, compile_mode, resolve_config, validate

# 3 iterations of 8 games x 100 steps; the episodes (horizon 400) do not end, so the comparison is
# of the losses, gradient norms and value targets. `full` turns ppo.obs_columns off (its width
# changes every update), so the eager reference does too (tests/rl/test_obs_columns.py checks
# that path against the dense one).
ARGS = ["train", "--algo", "sp", "--layout", "cramped_room", "--preset", "quick", "--steps", "2400",
        "--seed", "3", "--no-progress", "--set", "env.num_envs=8", "--set", "run.eval_episodes=0",
        "--set", "run.num_threads=1", "--set", "ppo.obs_columns=false",
        "--set", "run.compile_backend=aot_eager"]  # fmt: skip
COMPARED = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "actor_grad_norm",
            "critic_grad_norm", "value_target_mean", "shaped_return")  # fmt: skip


def _metrics(run) -> list[dict[str, str]]:
    with open(run / "metrics.csv") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_training_with_run_compile_full_logs_the_eager_metrics(tmp_path):
    rows = {}
    for mode in ("off", "full"):
        res = CliRunner().invoke(main, [*ARGS, "--set", f"run.compile={mode}", "--out", str(tmp_path / mode)])
        assert res.exit_code == 0, res.output
        rows[mode] = _metrics(tmp_path / mode)
    assert "compile: full" in (tmp_path / "full" / "config.yaml").read_text()
    assert len(rows["full"]) == len(rows["off"]) == 3
    for off, full in zip(rows["off"], rows["full"]):
        for key in COMPARED:
            if off.get(key, "") == "":
                continue
            a, b = float(off[key]), float(full[key])
            assert abs(a - b) <= 1e-4 * (1 + abs(a)), (off["iteration"], key, a, b)


def test_run_compile_takes_off_step_full_and_auto():
    base = ["env.num_envs=2", "ppo.rollout_length=4"]
    cfg = resolve_config(preset="quick", overrides=[*base, "run.compile=full"])
    validate(cfg)
    assert compile_mode(cfg, torch.device("cpu")) == "full"
    auto = resolve_config(preset="quick", overrides=base)
    assert compile_mode(auto, torch.device("cpu")) == "off"
    assert compile_mode(auto, torch.device("cuda")) == "step"
    with pytest.raises(ConfigError, match="run.compile must be one of off, step, full, rollout, auto, got"):
        validate(resolve_config(preset="quick", overrides=[*base, "run.compile=fast"]))
