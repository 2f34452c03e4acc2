"""The batched ``football`` env: protocol, rewards routed to the cores, and SP through the CLI.

Needs gfootball (``pip install zsceval[football]``, docs/football.md); skipped without it.
"""

import json

import pytest
import torch
from click.testing import CliRunner

pytest.importorskip(
    "gfootball.env",
    reason="gfootball is not installed: pip install --no-build-isolation gfootball==2.10.2 "
    "(needs Debian packages: see docs/football.md)",
)

from zsceval.cli import main  # noqa: E402
from zsceval.envs import BatchedEnv, make  # noqa: E402
from zsceval.envs.football.events import EVENT_NAMES  # noqa: E402

B = 3


def available(step, gen):
    """A uniformly random available action per agent: ``int64 [B, n]``."""
    avail = step.avail_actions
    return torch.multinomial(avail.flatten(0, 1).float(), 1, generator=gen).view(avail.shape[:2])


@pytest.fixture(scope="module")
def played():
    """150 steps of 3 games in 2 worker processes, every Step kept."""
    gen = torch.Generator().manual_seed(0)
    with make("football", num_envs=B, seed=3, num_workers=2) as env:
        steps = [env.reset()]
        for _ in range(150):
            steps.append(env.step(available(steps[-1], gen)))
        meta = {
            "is_batched": isinstance(env, BatchedEnv),
            "obs_shape": env.obs_shape,
            "critic_obs_shape": env.critic_obs_shape,
            "num_agents": env.num_agents,
            "num_actions": env.num_actions,
            "event_names": env.event_names,
            "spec": env.spec_dict(),
            "layout": env.layout.name,
        }
    return steps, meta


def test_sizes_and_spec(played):
    _, meta = played
    assert meta["is_batched"]
    assert meta["obs_shape"] == (58,) and meta["critic_obs_shape"] == (52,)
    assert meta["num_agents"] == 3 and meta["num_actions"] == 19
    assert tuple(meta["event_names"]) == EVENT_NAMES
    assert meta["layout"] == "academy_3_vs_1_with_keeper"
    assert json.dumps(meta["spec"]) and meta["spec"]["env"] == "football"


def test_every_step_has_the_protocol_shapes_and_routes_the_reward(played):
    steps, _ = played
    for s in steps:
        assert s.obs.shape == (B, 3, 58) and s.obs.dtype == torch.float32
        assert s.avail_actions.shape == (B, 3, 19) and s.avail_actions.any(-1).all()
        assert s.events.shape == (B, 3, 8) and s.events.dtype == torch.int16
        critic = s.critic_obs
        assert critic.shape == (B, 3, 52)
        # the reference's critic input is one vector of the whole state, the same for all three agents
        assert torch.equal(critic[:, 0], critic[:, 1]) and torch.equal(critic[:, 0], critic[:, 2])
        # the cores train on the reference's per-agent reward (5 x own goal + checkpoints), as is
        assert torch.equal(s.infos["reward_by_agent"], s.shaped_by_agent)
        assert (s.final_obs is not None) == bool(s.done.any())
        if s.final_obs is not None:
            kept = ~s.done
            assert torch.equal(s.final_obs[kept], s.obs[kept])
            assert s.final_critic_obs.shape == (B, 3, 52)


def test_episodes_end_and_goals_are_credited(played):
    steps, _ = played
    done = torch.stack([s.done for s in steps[1:]])
    assert int(done.sum()) >= 1, "random play ends episodes (possession change, out of play, goal)"
    goals = torch.stack([s.reward for s in steps[1:]])
    scored = torch.stack([s.sparse_by_agent.sum(-1) for s in steps[1:]])
    score_events = torch.stack([s.events[..., EVENT_NAMES.index("score")].sum(-1) for s in steps[1:]])
    assert torch.equal(scored, score_events.float())
    assert (scored <= goals).all(), "a goal is credited to at most one controlled scorer"
    assert bool((goals[~done] == 0).all()), "a goal ends the episode"


def test_sp_trains_through_the_cli(tmp_path):
    out = tmp_path / "sp_football"
    args = ["train", "--algo", "sp", "--env", "football", "--steps", "400", "--out", str(out),
            "--no-progress", "--set", "env.num_envs=2", "--set", "env.num_workers=2",
            "--set", "ppo.rollout_length=100", "--set", "run.eval_episodes=2",
            "--set", "run.checkpoint_every=200"]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "eval.json").read_text())
    assert summary["env_steps"] == 400 and summary["layout"] == "academy_3_vs_1_with_keeper"
    assert summary["self_play"]["episodes"] == 2
    meta = json.loads(next((out / "checkpoints").glob("step_*/meta.json")).read_text())
    assert meta["env_spec"]["env"] == "football" and meta["env_spec"]["obs_shape"] == [58]
    config = (out / "config.yaml").read_text()
    assert "name: football" in config and "num_agents: 3" in config and "rollout_length: 100" in config


def test_eval_crossplays_football_agents_in_every_seat(tmp_path):
    out = tmp_path / "sp"
    args = ["train", "--algo", "sp", "--layout", "football", "--steps", "200", "--out", str(out),
            "--no-progress", "--set", "env.num_envs=2", "--set", "env.num_workers=1",
            "--set", "ppo.rollout_length=100", "--set", "run.eval_episodes=0"]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    args = ["eval", "--agent", str(out), "--partner", str(out), "--layout", "football", "--episodes", "2",
            "--json"]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert [s["agent_seat"] for s in report["seatings"]] == [0, 1, 2]
    assert report["pooled"]["episodes"] == 6
    assert set(report["seatings"][0]["events_mean_by_seat"][0]) <= set(EVENT_NAMES)
