"""``benchmarks/learning/yokai_end_knowledge.py``: what a player had seen when it ENDed the game."""

from __future__ import annotations

import pytest
import torch

from zsceval.evaluation.episode_infos import InfoRecorder
from zsceval.evaluation.strata import UniformRandomAgent
from zsceval.evaluation.yokai_xp import find_yokai_runs
from zsceval.rl.checkpoint import load_agent
from zsceval.rl.config import EnvConfig
from zsceval.rl.envs import make_env
from zsceval.rl.play import play

from .helpers import load_benchmark, train_tiny


class _EndAtOnce(UniformRandomAgent):
    """ENDs whenever END is available, else a uniformly random available action."""

    def act(self, obs, avail, state, starts, generator=None, deterministic=False):
        out = super().act(obs, avail, state, starts, generator, deterministic)
        out.actions = torch.where(avail[:, -1], avail.shape[-1] - 1, out.actions)
        return out


def test_end_at_once_ends_every_game_at_its_first_step_having_seen_nothing():
    m = load_benchmark("learning/yokai_end_knowledge.py")
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
    m = load_benchmark("learning/yokai_end_knowledge.py")
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
    # END only at a turn's start (4 env steps a turn), at most 2 peeks in each of the ender's turns,
    # and 8 turns at most: an ENDing player has seen at most 6 of the 9 cards
    assert (ends["turn"] % 4 == 0).all() and (ends["turn"] <= 28).all()
    assert (ends["ender_seen"] <= 2 * (ends["turn"] // 8)).all() and ends["ender_seen"].max() == 6
    assert (table.loc[~table["ended_early"], ["ender_seen", "turn"]] == -1).all().all()


def test_the_ender_is_the_player_that_ended_and_the_partner_the_one_that_had_peeked():
    m = load_benchmark("learning/yokai_end_knowledge.py")
    table = m.seating_games([m.RandomNeverEnd({"num_actions": 1068}), _EndAtOnce({"num_actions": 1068})],
                            ["agent", "partner"], "-M", episodes=32, seed=2)  # fmt: skip
    # seat 0 plays one whole turn (two different cards peeked), then seat 1 ENDs at once
    assert bool(table["ended_early"].all()) and (table["ender"] == "partner").all()
    assert (table["ender_seen"] == 0).all() and (table["partner_seen"] == 2).all()
    assert (table["union_seen"] == 2).all() and (table["turn"] > 2).all()


def test_runs_play_every_pair_once_and_pool_self_play_apart_from_cross_play(tmp_path):
    m = load_benchmark("learning/yokai_end_knowledge.py")
    for seed in (0, 1):
        train_tiny(tmp_path / "memory" / f"sp_s{seed}", seed, perfect_memory=False)
    runs = find_yokai_runs(tmp_path / "memory")
    table = m.pair_table(runs, episodes=6, seed=2)
    pairs = table.groupby(["agent_run", "partner_run"], sort=False).size()
    assert dict(pairs) == {("sp_s0", "sp_s0"): 12, ("sp_s0", "sp_s1"): 12, ("sp_s1", "sp_s1"): 12}
    # the cross-play pair is end_knowledge of the two runs' latest checkpoints, without perfect memory
    s0, s1 = (load_agent(path)[0] for _, path in runs)
    direct = m.end_knowledge(s0, s1, "memory", episodes=6, seed=2)
    xp = table[table["partner_run"] != table["agent_run"]].drop(columns=["agent_run", "partner_run"])
    assert xp.reset_index(drop=True).equals(direct)
    summary = m.pair_summary(table).set_index("pair")
    assert summary.loc["all SP", "games"] == 24 and summary.loc["all XP", "games"] == 12
    assert summary.loc["all SP", "SR"] == pytest.approx(
        table[table["agent_run"] == table["partner_run"]]["won"].mean()
    )
    # runs trained for the two memory settings are not paired
    train_tiny(tmp_path / "mixed" / "sp_s0", 0, perfect_memory=True)
    (tmp_path / "mixed" / "sp_s1").symlink_to(tmp_path / "memory" / "sp_s1")
    with pytest.raises(ValueError, match="mix memory settings"):
        m.pair_table(find_yokai_runs(tmp_path / "mixed"), episodes=2, seed=0)
