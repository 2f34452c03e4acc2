"""``benchmarks/learning/yokai_memory.py``: the amnesic agent, the final layouts and the colour offsets."""

from __future__ import annotations

import pytest
import torch

from zsceval.envs.yokai.graph import adjacency, clustered_colours
from zsceval.evaluation.episode_infos import InfoRecorder
from zsceval.evaluation.strata import UniformRandomAgent
from zsceval.rl.checkpoint import load_agent
from zsceval.rl.config import EnvConfig
from zsceval.rl.envs import make_env
from zsceval.rl.play import play

from .helpers import load_benchmark, train_tiny


def test_colour_offsets_find_a_fixed_place_and_no_place():
    m = load_benchmark("learning/yokai_memory.py")
    grid = 9
    # colour 0 always in row 3, colours 1 and 2 in rows 4-5 (one layout), then the colours swapped at random
    base = torch.tensor([3 * grid + 3, 3 * grid + 4, 3 * grid + 5, 4 * grid + 3, 4 * grid + 4, 4 * grid + 5,
                         5 * grid + 3, 5 * grid + 4, 5 * grid + 5])  # fmt: skip
    colour = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2])
    fixed = m.colour_offsets(base.expand(40, 9), colour.expand(40, 9), grid, 3).set_index("colour")
    assert fixed.loc[0, "row"] == pytest.approx(-1.0) and fixed.loc[0, "col"] == pytest.approx(0.0)
    assert fixed.loc[2, "row"] == pytest.approx(1.0) and fixed.loc[1, "row"] == pytest.approx(0.0)
    assert fixed.loc[0, "strength"] == pytest.approx(1.0) and fixed.loc[0, "row_se"] == pytest.approx(0.0)
    g = torch.Generator().manual_seed(0)
    perms = torch.stack([torch.randperm(3, generator=g) for _ in range(3000)])
    shuffled = m.colour_offsets(base.expand(3000, 9), perms.gather(1, colour.expand(3000, 9)), grid, 3)
    assert (shuffled["strength"] < 0.1).all() and (shuffled["size"] > 0.5).all()


def test_final_layout_is_the_layout_the_game_was_scored_on():
    m = load_benchmark("learning/yokai_memory.py")
    agent = UniformRandomAgent({"num_actions": 1068})
    rec = m.final_layouts(agent, "-M", episodes=96, seed=4)
    config = EnvConfig(name="yokai", num_envs=96, horizon=32, options={"perfect_memory": True})
    recorder = InfoRecorder(make_env(config, seed=4, evaluation=True))
    play(recorder, [agent, agent], 96, torch.Generator().manual_seed(5))
    infos = recorder.episodes(96)
    rules = rec.env.rules
    clustered = clustered_colours(adjacency(rec.pos, rules.grid), rec.colour, rules.num_colours).sum(-1)
    # the env scores a terminated game on its final layout: the same clusters and wins, game by game
    terminated = infos["clustered"] > 0
    assert bool(terminated.any())
    assert torch.equal(clustered[terminated], infos["clustered"][terminated].long())
    assert torch.equal(rec.won, infos["win"].bool())
    assert bool((rec.colour.sort(1).values == torch.arange(3).repeat_interleave(3)).all())


def test_amnesic_agent_acts_as_the_agent_with_a_zero_state(tmp_path):
    m = load_benchmark("learning/yokai_memory.py")
    train_tiny(tmp_path / "r", recurrent=True)
    agent, _ = load_agent(tmp_path / "r")
    assert agent.recurrent
    env = make_env(EnvConfig(name="yokai", num_envs=6, horizon=32), seed=0)
    step = env.reset()
    obs, avail = step.obs[:, 0], step.avail_actions[:, 0]
    h = torch.randn(6, agent.initial_state(6, "cpu").shape[-1])
    no = torch.zeros(6, dtype=torch.bool)
    forgot = m.Amnesic(agent).act(obs, avail, h, no, torch.Generator().manual_seed(1))
    zero = agent.act(obs, avail, torch.zeros_like(h), no, torch.Generator().manual_seed(1))
    kept = agent.act(obs, avail, h, no, torch.Generator().manual_seed(1))
    assert torch.equal(forgot.actions, zero.actions) and torch.allclose(forgot.log_probs, zero.log_probs)
    assert not torch.allclose(kept.log_probs, zero.log_probs)  # the state matters to this agent
