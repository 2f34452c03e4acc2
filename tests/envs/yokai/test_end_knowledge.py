"""``benchmarks/learning/yokai_end_knowledge.py``: what a player had seen when it ENDed the game."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

from zsceval.evaluation.episode_infos import InfoRecorder
from zsceval.evaluation.strata import UniformRandomAgent
from zsceval.rl.config import EnvConfig
from zsceval.rl.envs import make_env
from zsceval.rl.play import play

ROOT = Path(__file__).resolve().parents[3]


def _module():
    path = ROOT / "benchmarks" / "learning" / "yokai_end_knowledge.py"
    spec = importlib.util.spec_from_file_location("zsceval_bench_yokai_end_knowledge", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _EndAtOnce(UniformRandomAgent):
    """ENDs whenever END is available, else a uniformly random available action."""

    def act(self, obs, avail, state, starts, generator=None, deterministic=False):
        out = super().act(obs, avail, state, starts, generator, deterministic)
        out.actions = torch.where(avail[:, -1], avail.shape[-1] - 1, out.actions)
        return out


def test_end_at_once_ends_every_game_at_its_first_step_having_seen_nothing():
    m = _module()
    agent = _EndAtOnce({"num_actions": 1068})
    table = m.end_knowledge(agent, agent, "-M", episodes=64, seed=3)
    assert len(table) == 128 and bool(table["ended_early"].all())
    assert set(table["ender"]) == {"agent", "partner"}
    # seat 0 ENDs at once: the agent in the first seating, the partner in the second
    assert (table["ender"] == table["seating"].str.split("-").str[0]).all()
    assert (table[["ender_seen", "partner_seen", "union_seen", "turn"]] == 0).all().all()
    # the same deals played by hand: END at once wins exactly where the deal is already clustered
    config = EnvConfig(name="yokai", num_envs=64, horizon=32, options={"perfect_memory": True})
    env = make_env(config, seed=3, evaluation=True)
    recorder = InfoRecorder(env)
    play(recorder, [agent, agent], 64, torch.Generator().manual_seed(4))
    won = recorder.episodes(64)["win"].numpy().astype(bool)
    assert (table["won"].to_numpy()[:64] == won).all()


def test_random_players_ends_match_the_envs_end_events_and_counts_are_consistent():
    m = _module()
    agent = UniformRandomAgent({"num_actions": 1068})
    config = EnvConfig(name="yokai", num_envs=200, horizon=32, options={"perfect_memory": True})
    env = make_env(config, seed=5)
    rec = m.EndRecorder(env)
    result = play(rec, [agent, agent], 200, torch.Generator().manual_seed(6))
    ended_by_events = int((result.events[:, :, result.event_names.index("end_early")].sum(1) > 0).sum())
    assert int((rec.ender >= 0).sum()) == ended_by_events > 0
    table = m.seating_games([agent, agent], ["agent", "partner"], "-M", episodes=200, seed=5)
    ends = table[table["ended_early"]]
    assert len(ends) == ended_by_events
    assert (ends["ender_seen"] <= ends["union_seen"]).all() and (ends["union_seen"] <= 9).all()
    assert (ends["partner_seen"] <= ends["union_seen"]).all()
    assert (ends["union_seen"] <= ends["ender_seen"] + ends["partner_seen"]).all()
    assert (ends["ender_seen"] > 0).any()  # some ENDs come after a turn of peeking
    assert (table.loc[~table["ended_early"], ["ender_seen", "turn"]] == -1).all().all()


class _NeverEnd(UniformRandomAgent):
    """A uniformly random available action other than END."""

    def act(self, obs, avail, state, starts, generator=None, deterministic=False):
        avail = avail.clone()
        avail[:, -1] = False
        return super().act(obs, avail, state, starts, generator, deterministic)


def test_the_ender_is_the_player_that_ended_and_the_partner_the_one_that_had_peeked():
    m = _module()
    table = m.seating_games([_NeverEnd({"num_actions": 1068}), _EndAtOnce({"num_actions": 1068})],
                            ["agent", "partner"], "-M", episodes=32, seed=2)  # fmt: skip
    # seat 0 plays one whole turn (two different cards peeked), then seat 1 ENDs at once
    assert bool(table["ended_early"].all()) and (table["ender"] == "partner").all()
    assert (table["ender_seen"] == 0).all() and (table["partner_seen"] == 2).all()
    assert (table["union_seen"] == 2).all() and (table["turn"] > 2).all()
