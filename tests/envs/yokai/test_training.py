"""``zsceval train --env yokai``: recurrent self-play runs end to end on the masked action space."""

from __future__ import annotations

import json

import pandas as pd
from click.testing import CliRunner

from zsceval.cli import main


def test_recurrent_self_play_trains_and_never_picks_a_masked_action(tmp_path):
    out = tmp_path / "sp"
    sets = ["env.num_envs=16", "ppo.rollout_length=32", "model.recurrent=true", "model.chunk_length=8",
            "run.eval_episodes=4", "env.horizon=32"]  # fmt: skip
    args = ["train", "--algo", "sp", "--env", "yokai", "--steps", "1024", "--out", str(out), "--no-progress"]
    args += [x for key in sets for x in ("--set", key)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "eval.json").read_text())
    assert summary["layout"] == "yokai-3x3-2p"
    assert all(seat["illegal"] == 0 for seat in summary["self_play"]["events_mean_by_seat"])
    metrics = pd.read_csv(out / "metrics.csv")
    assert len(metrics) == 2 and (metrics["events/illegal"] == 0).all()
    assert (metrics["events/peek"] > 0).all() and (metrics["episodes"] > 0).all()
