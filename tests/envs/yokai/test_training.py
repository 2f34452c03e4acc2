"""``zsceval train --env yokai``: recurrent self-play runs end to end on the masked action space."""

from __future__ import annotations

import json

import pandas as pd
from click.testing import CliRunner

from zsceval.cli import main


def test_recurrent_self_play_trains_and_never_picks_a_masked_action(tmp_path):
    out = tmp_path / "sp"
    args = ["train", "--algo", "sp", "--env", "yokai", "--steps", "1024", "--out", str(out), "--no-progress",
            "--set", "env.num_envs=16", "--set", "ppo.rollout_length=32", "--set", "model.recurrent=true",
            "--set", "model.chunk_length=8", "--set", "run.eval_episodes=4", "--set", "env.horizon=32"]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "eval.json").read_text())
    assert summary["layout"] == "yokai-3x3-2p"
    assert all(seat["illegal"] == 0 for seat in summary["self_play"]["events_mean_by_seat"])
    metrics = pd.read_csv(out / "metrics.csv")
    assert len(metrics) == 2 and (metrics["events/illegal"] == 0).all()
    assert (metrics["events/peek"] > 0).all() and (metrics["episodes"] > 0).all()
