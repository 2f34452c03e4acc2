"""``zsceval eval --save-trajectories DIR``: one readable file per seating, the evaluated episodes."""

import json

import pytest
from click.testing import CliRunner

from zsceval.cli import main
from zsceval.interop.trajectory import load_trajectories, replay_in_engine


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A tiny SP run on cramped_room with 25-step episodes (untrained is fine: we test recording)."""
    from zsceval.rl.config import resolve_config
    from zsceval.rl.trainer import Trainer

    out = tmp_path_factory.mktemp("runs") / "sp"
    overrides = ["env.layout=cramped_room", "env.num_envs=4", "env.horizon=25", "run.total_steps=100",
                 "ppo.rollout_length=25", "run.eval_episodes=1"]  # fmt: skip
    Trainer(resolve_config(preset="quick", overrides=overrides), out, progress=False).train()
    return out


def test_eval_writes_one_trajectory_file_per_seating(run_dir, tmp_path):
    dest = tmp_path / "trajs"
    args = ["eval", "--agent", str(run_dir), "--partner", str(run_dir), "--layout", "cramped_room",
            "--episodes", "3", "--seed", "4", "--json", "--save-trajectories", str(dest)]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    files = sorted(dest.iterdir())
    assert [f.name for f in files] == ["agent_seat_0.json", "agent_seat_1.json"]
    assert out["trajectory_files"] == [str(f) for f in files]
    compared = []
    for seat, (path, seating) in enumerate(zip(files, out["seatings"])):
        trajs = load_trajectories(path)
        assert len(trajs) == 3
        for traj in trajs:
            assert traj.layout == "cramped_room" and traj.horizon == 25 and len(traj) == 25
            assert traj.agents[seat] == "agent" and traj.agents[1 - seat] == "partner"
            assert traj.meta["agent_seat"] == seat and traj.meta["seed"] == 4
        replay_in_engine(trajs[0])
        # The recorded episodes are the evaluated ones.
        mean = sum(t.score for t in trajs) / len(trajs)
        assert mean == pytest.approx(seating["sparse_return_mean"])
        for k in range(2):
            shaped = sum(t.meta["shaped_return_by_seat"][k] for t in trajs) / len(trajs)
            assert shaped == pytest.approx(seating["shaped_return_mean_by_seat"][k])
            events = seating["events_mean_by_seat"][k]
            for name, value in events.items():
                assert sum(t.meta["events_by_seat"][k][name] for t in trajs) / len(trajs) == pytest.approx(
                    value
                )
            compared.append(sum(events.values()))
    assert sum(compared) > 0  # the comparisons above are not between zeros


def test_eval_trajectory_option_errors(run_dir, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    args = ["eval", "--agent", str(run_dir), "--partner", str(run_dir), "--layout", "cramped_room",
            "--episodes", "1", "--save-trajectories", str(blocker / "sub")]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code != 0 and "--save-trajectories" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(main, ["eval", "--agent", str(run_dir), "--partner-set", "m.json", "--layout",
                                    "cramped_room", "--save-trajectories", str(tmp_path)])  # fmt: skip
    assert res.exit_code == 2 and "works with --partner" in res.output
