"""COLE on three players: the reference's GRF rules (``grf_runner.py: train_cole``) as pure
functions on hand-made matrices, the plug-in's arms, per-iteration seatings and UCB counters, its
resumable state, and the two-player draws pinned to the values recorded before the three-player
code existed."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from tests.algorithms.test_cole import _cole, _Episodes
from zsceval.algorithms.cole import (
    COLE,
    combination_returns,
    grf_admit_payoff,
    grf_arms,
    grf_update_payoff,
    row_scores,
    selected_seatings,
    top_member,
    ucb_probabilities,
)
from zsceval.rl.checkpoint import decode_state, encode_state
from zsceval.rl.config import ConfigError, resolve_config
from zsceval.rl.policy import Policy, network_spec
from zsceval.rl.seating import Arm

NAN = float("nan")


# -- two players: unchanged ----------------------------------------------------------------------------
def test_two_player_draws_payoffs_and_probabilities_are_the_recorded_ones():
    """Recorded with the code of commit f8c4f8e (before COLE learned three players): the same seed
    gives the same arm draws, U and P."""
    algo = _cole("algo.generation_interval=2", size=5, num_envs=12)
    gen = torch.Generator().manual_seed(7)
    draws = [algo.assign(torch.arange(12), gen).tolist()]
    algo.after_iteration(1, 0, {}, _Episodes([1, 2, 3, 0, 5], [20.0, 4.0, 10.0, 8.0, 1.0]))
    draws.append(algo.assign(torch.arange(12), gen).tolist())
    stats = {}
    algo.after_iteration(2, 0, stats, _Episodes([4, 6, 0], [3.0, 0.0, 5.0]))
    draws.append(algo.assign(torch.tensor([3, 4, 7, 11, 5]), gen).tolist())
    assert draws == [
        [0, 0, 0, 4, 6, 6, 2, 4, 5, 5, 1, 1],
        [0, 0, 0, 6, 1, 6, 1, 6, 6, 6, 4, 2],
        [6, 6, 7, 6, 2],
    ]
    assert stats == {"cole/ego_rank": 3, "cole/admitted": 1, "cole/members": 4, "cole/arms": 9}
    np.testing.assert_array_equal(
        algo.payoff,
        [[0, 0, 0, 6], [0, 0, 0, 4], [0, 0, 0, 0.25], [6, 4, 0.25, 5], [6, 4, 0.25, 5]],
    )
    np.testing.assert_allclose(
        algo.probs, [0.1661378547918015, 0.30521472840038905, 0.46990881494027514, 0.05873860186753439],
        rtol=0, atol=1e-15,
    )  # fmt: skip
    assert [a.partner for a in algo.arms()] == ["self"] + [f"pool/{m}" for m in range(4) for _ in range(2)]
    assert set(algo.state_dict()) == {"payoff", "generation", "failed_tries", "sp_return", "names", "pool"}


# -- the reference's GRF rules, restated from grf_runner.py (train_cole, get_agent_pairs) --------------
def reference_pairs(population, agent, n):
    """``GRFRunner.get_agent_pairs``."""
    out = []
    for m in range(n - 1, 0, -1):
        if len(population) < m:
            continue
        for pop_pair in itertools.product(population, repeat=m):
            for ego_seats in itertools.combinations(range(n), n - m):
                rest = iter(pop_pair)
                out.append(tuple(agent if i in ego_seats else next(rest) for i in range(n)))
    return out


def reference_selection(names, top, agent, n):
    """``cole_reset_map_ea2t_fn``'s ``selected_agent_pairs`` (as a set of seat tuples)."""
    pairs = reference_pairs([top], agent, n)
    for others in itertools.combinations(names, n - 2):
        pairs += reference_pairs([*others, top], agent, n)
    return set(pairs)


class ReferenceU:
    """``train_cole``'s ``u_matrix`` bookkeeping with dicts, for comparison with the matrix form."""

    def __init__(self, names, agent="ego"):
        self.names, self.agent = list(names), agent
        self.u = {p: {q: 0.0 for q in names} for p in names}
        self.u[agent] = {p: 0.0 for p in names}

    def update(self, env_info, n):
        pairs = {tuple(sorted(x)) for x in reference_pairs(self.names, self.agent, n)}
        for p in self.names:
            got = [env_info["-".join(pair)] for pair in pairs if p in pair and "-".join(pair) in env_info]
            if got:
                self.u[self.agent][p] = (self.u[self.agent][p] + np.mean(got)) / 2
                self.u[p][self.agent] = self.u[self.agent][p]

    def metric(self):
        return [np.mean(list(self.u[p].values())) for p in [*self.names, self.agent]]

    def admit(self, name, sp_v):
        if name not in self.names:
            self.names.append(name)
        self.u[name] = dict(self.u[self.agent])
        for p, v in self.u[name].items():
            self.u[p][name] = v
        self.u[name][name] = sp_v
        self.u[self.agent][name] = sp_v


def as_names(arm: Arm, names):
    return tuple("ego" if a == "ego" else names[m] for a, m in arm.seats)


@pytest.mark.parametrize("n, members", [(3, 2), (3, 4), (4, 3), (4, 4)])
def test_grf_arms_are_the_reference_combinations_and_a_new_member_only_appends(n, members):
    names = [f"m{i}" for i in range(members)]
    arms = grf_arms("ego", "pool", n, members)
    assert arms[0].seats == (("ego", 0),) * n and arms[0].partner == "self"
    seatings = [as_names(a, names) for a in arms[1:]]
    assert sorted(seatings) == sorted(reference_pairs(names, "ego", n))
    assert len(set(seatings)) == len(seatings)
    if n == 3:
        assert len(arms) == 1 + 3 * members**2 + 3 * members
    # stable arm indices as the pool grows
    assert grf_arms("ego", "pool", n, members + 1)[: len(arms)] == arms
    for a in arms[1:]:
        assert a.ego_seat == [k for k, (name, _) in enumerate(a.seats) if name == "ego"][0]


@pytest.mark.parametrize("n, members", [(3, 2), (3, 3), (3, 5), (4, 3), (4, 4)])
def test_selected_seatings_are_the_reference_selection_for_every_top_member(n, members):
    names = [f"m{i}" for i in range(members)]
    arms = grf_arms("ego", "pool", n, members)
    for top in range(members):
        picked = selected_seatings(arms, top, members, n)
        got = [as_names(arms[i], names) for i in picked]
        assert len(set(got)) == len(got)
        assert set(got) == reference_selection(names, names[top], "ego", n)
    if n == 3:  # one-member seatings of everyone (6 each), two-member ones with the top member
        assert len(selected_seatings(arms, 0, members, 3)) == 6 * members + 6 * (members - 1)


def test_grf_update_sets_the_ego_column_and_row_scores_count_held_entries_only():
    # 2 members, then the ego; no ego column entries yet
    U = np.array([[1.0, 2.0, NAN], [3.0, 4.0, NAN], [5.0, 6.0, NAN]])
    out = grf_update_payoff(U, np.array([7.0, NAN]))
    np.testing.assert_array_equal(out, [[1, 2, 6], [3, 4, NAN], [6, 6, NAN]])
    assert np.isnan(U[0, 2])  # the input is unchanged
    np.testing.assert_allclose(row_scores(out), [3.0, 3.5, 6.0])  # (1+2+6)/3, (3+4)/2, (6+6)/2


def test_grf_admission_drops_the_new_members_ego_entry():
    U = np.array([[1.0, 2.0, 9.0], [3.0, 4.0, NAN], [5.0, 6.0, NAN]])
    grown = grf_admit_payoff(U, slot=2, self_play=8.0)
    np.testing.assert_array_equal(grown, [[1, 2, 5, 9], [3, 4, 6, NAN], [5, 6, 8, NAN], [5, 6, 8, NAN]])
    over = grf_admit_payoff(U, slot=0, self_play=8.0)
    np.testing.assert_array_equal(over, [[8, 6, NAN], [6, 4, NAN], [8, 6, NAN]])


def test_matrix_u_follows_the_reference_dicts_through_updates_and_admissions():
    rng = np.random.default_rng(3)
    names = ["g0", "g1", "g2"]
    ref = ReferenceU(names)
    U = np.zeros((4, 4))
    U[:, 3] = NAN
    for step in range(12):
        arms = grf_arms("ego", "pool", 3, len(names))
        picked = rng.integers(0, len(arms), size=10)
        sparse = rng.random(10)
        U = grf_update_payoff(U, combination_returns(picked, sparse, arms, len(names)))
        by_unit = {}
        for a, r in zip(picked, sparse, strict=True):
            by_unit.setdefault("-".join(sorted(as_names(arms[a], names))), []).append(r)
        ref.update({k: np.mean(v) for k, v in by_unit.items()}, 3)
        if step % 3 == 2:  # admit: a new slot while fewer than 5, then overwrite slot 1
            slot = len(names) if len(names) < 5 else 1
            name = f"g{len(ref.names) + step}"
            if slot == len(names):
                names.append(name)
            else:
                ref.u[name] = ref.u.pop(names[slot])  # the reference reuses the old name; same key here
                for d in ref.u.values():
                    if names[slot] in d:
                        d[name] = d.pop(names[slot])
                ref.names[slot] = name
                names[slot] = name
            U = grf_admit_payoff(U, slot, 0.5 + step)
            ref.admit(name, 0.5 + step)
        np.testing.assert_allclose(row_scores(U), ref.metric(), rtol=1e-12)


def test_combination_returns_average_each_unordered_combination_then_the_combinations():
    arms = grf_arms("ego", "pool", 3, 2)
    index = {a.seats: i for i, a in enumerate(arms)}
    E, P0, P1 = ("ego", 0), ("pool", 0), ("pool", 1)
    episodes = [
        ((E, P0, P0), 1.0), ((P0, E, P0), 0.0),  # {ego, 0, 0}: 0.5 over its seat orders
        ((P1, P0, E), 1.0),  # {ego, 0, 1}: 1
        ((E, E, P1), 0.0),  # {ego, ego, 1}: 0
        ((E, E, E), 1.0),  # self-play: nobody's
    ]  # fmt: skip
    arm = np.array([index[s] for s, _ in episodes])
    r = combination_returns(arm, np.array([v for _, v in episodes]), arms, members=3)
    np.testing.assert_allclose(r[:2], [(0.5 + 1.0) / 2, (1.0 + 0.0) / 2])
    assert math.isnan(r[2])


def test_ucb_bonus_and_the_top_member_ties_going_to_the_latest():
    p = ucb_probabilities(np.array([0.5, 0.3, 0.2]), np.array([1, 0, 0]), 1.0)
    np.testing.assert_allclose(p, np.array([1.0, 1.3, 1.2]) / 3.5)  # + 1 / 2, + 1, + 1
    assert top_member(p) == 1
    assert top_member(np.array([0.2, 0.4, 0.4])) == 2 and top_member(np.array([0.5, 0.4, 0.1])) == 0
    np.testing.assert_allclose(ucb_probabilities(np.array([0.5, 0.5]), np.zeros(2), 1.0), [0.5, 0.5])


# -- the plug-in on three players --------------------------------------------------------------------
def _cole3(*overrides, num_envs=16, size=5):
    cfg = resolve_config(
        preset="quick",
        overrides=[f"population.size={size}", "env.name=football", "env.num_agents=3", *overrides],
        **{"run.algo": "cole"},
    )
    algo = COLE(cfg, num_envs, 3, "cpu")
    spec = network_spec(cfg.model, (58,), (52,), 19)
    torch.manual_seed(0)
    algo.np_rng = np.random.default_rng(0)
    algo.learners = algo.build_learners(lambda: Policy(spec))
    algo.build_partners(lambda: Policy(spec))
    algo.num_arms = len(algo.arms())
    return algo


def test_three_players_start_with_the_reference_selection_and_alpha():
    algo = _cole3()
    assert algo.filled == 3 and len(algo.arms()) == 1 + 27 + 9 and algo.alpha == 1.25
    assert algo.payoff.shape == (4, 4) and np.isnan(algo.payoff[:, 3]).all()
    # U all zero: P uniform, no counts yet: the tie goes to the latest member
    assert algo.top == 2 and algo.ucb_counts.tolist() == [0, 0, 1]
    assert len(algo.seatings) == 6 * 3 + 6 * 2
    assert set(algo.seatings) == set(selected_seatings(algo.arms(), 2, 3, 3))


def test_games_keep_their_dealt_seating_for_the_iteration_and_self_play_the_first_quarter():
    algo = _cole3(num_envs=16)
    gen = torch.Generator().manual_seed(0)
    first = algo.assign(torch.arange(16), gen)
    assert torch.all(first[:4] == 0) and set(first[4:].tolist()) <= set(algo.seatings)
    assert len(set(first[4:].tolist())) == 12  # 30 seatings for 12 games: all distinct
    again = algo.assign(torch.tensor([5, 9, 2]), gen)  # new episodes in the same iteration
    assert again.tolist() == first[[5, 9, 2]].tolist()
    algo.after_iteration(1, 0, {}, _Episodes([], []))
    redealt = algo.assign(torch.arange(16), gen)
    assert set(redealt[4:].tolist()) <= set(algo.seatings) and not torch.equal(redealt, first)
    # more population games than seatings: each seating equally often
    big = _cole3(num_envs=4 * 40)  # 40 self-play, 120 population games, 30 seatings: 4 games each
    dealt = big.assign(torch.arange(160), torch.Generator().manual_seed(1))
    counts = torch.bincount(dealt[40:], minlength=big.num_arms)[big.seatings]
    assert torch.all(counts == 4) and torch.all(dealt[:40] == 0)


def test_ucb_counts_rotate_the_top_member_and_reset_on_each_generation_try():
    algo = _cole3("algo.generation_interval=4")
    tops = [algo.top]
    for it in range(1, 4):  # no episodes: U stays 0, only the UCB bonus moves the top member
        stats = {}
        algo.after_iteration(it, 0, stats, _Episodes([], []))
        tops.append(stats["cole/top"])
        assert stats["cole/seatings"] == len(algo.seatings) == 30 and stats["cole/arms"] == 37
    # counts [0,0,1]: bonus 1, 1, 1/2 -> member 1 (latest of the tie); [0,1,1] -> 0; [1,1,1] -> 2
    assert tops == [2, 1, 0, 2] and algo.ucb_counts.tolist() == [1, 1, 2]
    stats = {}
    algo.after_iteration(4, 0, stats, _Episodes([], []))  # a try: rank 3 >= ceil(0.9 * 3), admitted
    assert stats["cole/admitted"] == 1 and algo.filled == 4 and stats["cole/arms"] == 1 + 48 + 12
    assert algo.ucb_counts.tolist() == [0, 0, 0, 1]  # reset, then the new top (the latest on a tie)


def test_three_player_payoffs_follow_the_ego_s_games():
    algo = _cole3("algo.generation_interval=100")
    arms = algo.arms()
    index = {a.seats: i for i, a in enumerate(arms)}
    E, P = ("ego", 0), lambda m: ("pool", m)
    eps = [(index[(E, P(0), P(0))], 1.0), (index[(P(1), E, P(0))], 0.0), (0, 1.0)]
    algo.after_iteration(1, 0, {}, _Episodes([a for a, _ in eps], [r for _, r in eps]))
    # r_0 = mean(1, 0) = 0.5, r_1 = 0; member 2 unplayed: no ego entry yet
    np.testing.assert_array_equal(algo.payoff[3, :3], [0.25, 0.0, 0.0])
    np.testing.assert_array_equal(algo.payoff[:3, 3], [0.25, 0.0, NAN])
    assert algo.sp_return == 1.0
    # member means: 0.25 / 4 = 0.0625, 0, 0 -> member 0 cooperates best: lowest rank
    assert algo.probs[0] < algo.probs[1] == algo.probs[2]


def test_three_player_state_round_trip_gives_the_same_next_decisions():
    a = _cole3("algo.generation_interval=2")
    gen = torch.Generator().manual_seed(4)
    a.assign(torch.arange(16), gen)
    arms = a.arms()
    a.after_iteration(1, 0, {}, _Episodes([1, 5, 40 % len(arms), 0], [1.0, 0.0, 1.0, 1.0]))
    a.after_iteration(2, 0, {}, _Episodes([2, 7], [1.0, 1.0]))  # a try: admitted or not
    dealt = a.assign(torch.arange(16), gen)
    tensors = {}
    state = decode_state(encode_state(a.state_dict(), tensors), tensors)
    b = _cole3("algo.generation_interval=2")
    b.learners["ego"].load_state_dict(a.learners["ego"].state_dict())
    b.load_state_dict(state)
    np.testing.assert_array_equal(b.payoff, a.payoff)
    assert (b.top, b.ucb_counts.tolist(), b.seatings) == (a.top, a.ucb_counts.tolist(), a.seatings)
    np.testing.assert_array_equal(b.ucb_probs, a.ucb_probs)
    assert torch.equal(b.assign(torch.arange(16), gen), dealt)  # the dealt arms travel with the state
    for algo in (a, b):
        algo.after_iteration(3, 0, {}, _Episodes([3], [0.0]))
        algo.after_iteration(4, 0, {}, _Episodes([4], [1.0]))
    np.testing.assert_array_equal(b.payoff, a.payoff)
    assert (b.top, b.ucb_counts.tolist(), b.pool.names) == (a.top, a.ucb_counts.tolist(), a.pool.names)
    g1, g2 = torch.Generator().manual_seed(9), torch.Generator().manual_seed(9)
    assert torch.equal(a.assign(torch.arange(16), g1), b.assign(torch.arange(16), g2))


def test_three_player_presets_follow_the_grf_script():
    paper = resolve_config(preset="paper", overrides=["env.name=football"], **{"run.algo": "cole"})
    assert paper.population.size == 15 and paper.run.total_steps == 36_000_000
    assert paper.env.num_envs == 200 and paper.algo["generation_interval"] == 30
    assert paper.ppo.entropy_coefs == (0.02, 0.01, 0.01)
    assert paper.ppo.entropy_milestones == (0, 18_000_000, 36_000_000)
    assert paper.ppo.rollout_length == 200 and paper.ppo.epochs == 15 and not paper.model.recurrent
    quick = resolve_config(preset="quick", overrides=["env.name=football"], **{"run.algo": "cole"})
    assert quick.population.size == 5 and quick.algo["generation_interval"] == 4
    with pytest.raises(ConfigError, match="ucb_factor"):
        _cole3("algo.ucb_factor=-1")
    with pytest.raises(ConfigError, match="cole on 3 players needs population.size >= 2"):
        _cole3(size=1)
