"""``benchmarks/learning/yokai_games.py``'s ``--keep``: a run kept as an acting-only copy that acts
as the run's last checkpoint does and that ``zsceval report`` reads as a run."""

from __future__ import annotations

import json

import pytest
import torch
from click.testing import CliRunner

from zsceval.cli import main
from zsceval.rl.checkpoint import list_checkpoints, load_agent
from zsceval.rl.config import EnvConfig
from zsceval.rl.envs import make_env

from .helpers import load_benchmark, train_tiny


def test_kept_agent_acts_as_the_last_checkpoint(tmp_path):
    m = load_benchmark("learning/yokai_games.py")
    train_tiny(tmp_path / "runs" / "sp_s0", recurrent=True)
    run = tmp_path / "runs" / "sp_s0"
    dst = tmp_path / "kept" / "relational_-M" / "sp_s0"
    (dst / "checkpoints" / "step_000000000001").mkdir(parents=True)  # an older copy, replaced
    meta = m.keep_agent(run, dst)
    last = list_checkpoints(run)[-1]
    assert [p.name for p in (dst / "checkpoints").iterdir()] == [last.name]
    assert (dst / "config.yaml").read_bytes() == (run / "config.yaml").read_bytes()
    assert json.loads(meta.read_text())["resumable"] is False
    kept, _ = load_agent(list_checkpoints(dst)[-1])
    full, _ = load_agent(last)
    env = make_env(EnvConfig(name="yokai", num_envs=6, horizon=32), seed=0)
    step = env.reset()
    obs, avail = step.obs[:, 0], step.avail_actions[:, 0]
    h, no = full.initial_state(6, "cpu"), torch.zeros(6, dtype=torch.bool)
    a = kept.act(obs, avail, h, no, torch.Generator().manual_seed(3))
    b = full.act(obs, avail, h, no, torch.Generator().manual_seed(3))
    assert torch.equal(a.actions, b.actions) and torch.equal(a.log_probs, b.log_probs)
    res = CliRunner().invoke(main, ["report", str(dst.parent), "--episodes", "2", "--no-figures"])
    assert res.exit_code == 0, res.output
    assert "sp_s0" in res.output and "(self-play)" in res.output  # played as a run of the folder


def test_keeping_a_run_without_a_checkpoint_names_it(tmp_path):
    m = load_benchmark("learning/yokai_games.py")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="empty: no checkpoint"):
        m.keep_agent(tmp_path / "empty", tmp_path / "kept")
    assert not (tmp_path / "kept").exists()
