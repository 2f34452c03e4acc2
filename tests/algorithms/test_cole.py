"""COLE (algorithms/cole.py): the graphic-form game's rules on hand-made matrices, the meta-solver's
env allocation, a growing and overwritten population, the CLI run and an exact resume."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from zsceval.algorithms.cole import (
    COLE,
    admission_threshold,
    admit_payoff,
    ego_rank,
    generation_due,
    initial_members,
    partner_returns,
    prioritized_alpha,
    replacement_slot,
    sampling_probabilities,
    self_play_return,
    should_admit,
    update_payoff,
)
from zsceval.cli import main
from zsceval.rl.checkpoint import decode_state, encode_state, list_checkpoints
from zsceval.rl.config import resolve_config
from zsceval.rl.policy import Policy, network_spec
from zsceval.rl.trainer import Trainer

NAN = float("nan")


# -- the payoff matrix U (rows: members then the ego; columns: members) --------------------------------
def test_update_payoff_moves_the_ego_row_half_way_and_skips_unplayed_members():
    U = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [10.0, 4.0, 0.0]])
    out = update_payoff(U, np.array([20.0, NAN, 6.0]))
    np.testing.assert_array_equal(out[:3], U[:3])  # member rows are never re-measured
    np.testing.assert_array_equal(out[3], [15.0, 4.0, 3.0])  # (10+20)/2, kept, (0+6)/2
    assert U[3, 0] == 10.0  # the input is not modified


def test_partner_returns_average_each_seat_then_the_seats():
    # arm 0 = self-play; arm 1 + p * 2 + s = member p with the ego in seat s
    arm = np.array([0, 1, 1, 2, 3, 4, 0])
    sparse = np.array([100.0, 10.0, 20.0, 40.0, 0.0, 6.0, 60.0])
    r = partner_returns(arm, sparse, members=3, num_agents=2)
    assert r[0] == pytest.approx((15.0 + 40.0) / 2)  # seat 0: (10+20)/2, seat 1: 40
    assert r[1] == pytest.approx(3.0)
    assert math.isnan(r[2])  # no episode with member 2
    assert self_play_return(arm, sparse) == pytest.approx(80.0)
    assert math.isnan(self_play_return(np.array([1, 2]), np.array([1.0, 2.0])))


def test_admission_into_a_new_slot_copies_the_ego_row_into_row_and_column():
    U = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])  # 2 members, ego row [5, 6]
    out = admit_payoff(U, slot=2, self_play=9.0)
    expected = np.array(
        [
            [1.0, 2.0, 5.0],  # U[0][q] = U[ego][0]
            [3.0, 4.0, 6.0],  # U[1][q] = U[ego][1]
            [5.0, 6.0, 9.0],  # q's row = the ego's row, U[q][q] = self-play
            [5.0, 6.0, 9.0],  # ego row, U[ego][q] = self-play
        ]
    )
    np.testing.assert_array_equal(out, expected)


def test_admission_over_an_existing_member_rewrites_only_its_row_and_column():
    U = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [10.0, 11.0, 12.0]])
    out = admit_payoff(U, slot=1, self_play=30.0)
    expected = np.array(
        [
            [1.0, 10.0, 3.0],
            [10.0, 30.0, 12.0],
            [7.0, 12.0, 9.0],
            [10.0, 30.0, 12.0],
        ]
    )
    np.testing.assert_array_equal(out, expected)
    with pytest.raises(ValueError, match="slot 4"):
        admit_payoff(U, slot=4, self_play=0.0)


# -- the meta-solver ----------------------------------------------------------------------------------
def test_sampling_probabilities_rank_the_worst_cooperators_highest():
    # member row means m = [2, 6, 2]; m / sum = [.2, .6, .2]; 1 - m = [.8, .4, .8]; dense ranks [2, 1, 2]
    U = np.array([[2.0, 2.0, 2.0], [6.0, 6.0, 6.0], [0.0, 3.0, 3.0], [50.0, 50.0, 50.0]])
    np.testing.assert_allclose(sampling_probabilities(U, 1.0), [2 / 5, 1 / 5, 2 / 5])
    s = 2**1.5
    np.testing.assert_allclose(
        sampling_probabilities(U, 1.5), [s / (2 * s + 1), 1 / (2 * s + 1), s / (2 * s + 1)]
    )
    np.testing.assert_allclose(sampling_probabilities(U, 0.0), [1 / 3] * 3)
    # m = [0, 5, 5, 10] -> 1 - m/20 = [1, .75, .75, .5] -> dense ranks [3, 2, 2, 1]
    U4 = np.diag([0.0, 20.0, 20.0, 40.0])
    U4 = np.vstack([U4, np.zeros(4)])
    np.testing.assert_allclose(sampling_probabilities(U4, 1.0), [3 / 8, 2 / 8, 2 / 8, 1 / 8])
    np.testing.assert_allclose(
        sampling_probabilities(U4, 0.5), np.sqrt([3, 2, 2, 1]) / np.sqrt([3, 2, 2, 1]).sum()
    )


def test_sampling_probabilities_of_an_unplayed_or_single_member_population():
    np.testing.assert_allclose(sampling_probabilities(np.zeros((6, 5)), 1.5), [0.2] * 5)
    np.testing.assert_allclose(sampling_probabilities(np.array([[7.0], [3.0]]), 1.5), [1.0])


def test_prioritized_alpha_and_initial_population_follow_the_reference_sizes():
    assert [prioritized_alpha(n) for n in (25, 50, 75)] == [1.5, 1.0, 0.5]
    assert prioritized_alpha(5) == 1.5 and prioritized_alpha(100) == 0.5
    assert prioritized_alpha(40) == pytest.approx(1.2)  # linear between 25 and 50
    assert [initial_members(n) for n in (25, 50, 75, 5, 2)] == [5, 10, 15, 3, 2]


def test_ego_rank_threshold_and_admission_rule():
    # members' row means 1..5; the ego's row mean is the last row's
    members = np.repeat(np.arange(1.0, 6.0)[:, None], 5, axis=1)
    U = np.vstack([members, np.full(5, 4.5)])
    assert ego_rank(U) == 4  # above 1, 2, 3, 4
    assert ego_rank(np.vstack([members, np.full(5, 5.0)])) == 5  # a tie counts for the ego
    assert ego_rank(np.vstack([members, np.zeros(5)])) == 0
    assert ego_rank(np.zeros((4, 3))) == 3  # the initial all-zero U admits
    # ceil(0.9 n) with free slots, ceil(0.8 n) when full
    assert [admission_threshold(n, False) for n in (3, 5, 10, 25)] == [3, 5, 9, 23]
    assert [admission_threshold(n, True) for n in (5, 25, 50, 75)] == [4, 20, 40, 60]
    assert not should_admit(4, admission_threshold(5, False), failed_tries=0)
    assert should_admit(4, admission_threshold(5, True), failed_tries=0)
    assert not should_admit(0, 5, failed_tries=1)
    assert should_admit(0, 5, failed_tries=2)  # the third try after two failures admits


def test_replacement_draws_uniformly_among_the_first_ten_members():
    rng = np.random.default_rng(0)
    draws = np.array([replacement_slot(25, rng) for _ in range(20000)])
    assert draws.min() == 0 and draws.max() == 9
    np.testing.assert_allclose(np.bincount(draws) / draws.size, [0.1] * 10, atol=0.01)
    assert {replacement_slot(4, rng) for _ in range(200)} == {0, 1, 2, 3}


def test_generation_tries_every_interval():
    assert [i for i in range(1, 13) if generation_due(i, 4)] == [4, 8, 12]
    assert [i for i in range(1, 4) if generation_due(i, 1)] == [1, 2, 3]


# -- the plug-in without a trainer ---------------------------------------------------------------------
def _cole(*overrides, num_envs=16, size=4):
    """A COLE plug-in with its ego and initial pool, outside a trainer (cramped_room MLP spec)."""
    cfg = resolve_config(
        preset="quick", overrides=[f"population.size={size}", "env.layout=cramped_room", *overrides]
    )
    algo = COLE(cfg, num_envs, 2, "cpu")
    spec = network_spec(cfg.model, (4, 5, 20), (4, 5, 20), 6)
    torch.manual_seed(0)
    algo.learners = algo.build_learners(lambda: Policy(spec))
    algo.build_partners(lambda: Policy(spec))
    algo.np_rng = np.random.default_rng(0)
    return algo


class _Episodes:
    """The two columns of an EpisodeTable that COLE reads."""

    def __init__(self, arm, sparse):
        self.arm = torch.tensor(arm, dtype=torch.int64)
        self.sparse = torch.tensor(sparse, dtype=torch.float32)

    def __len__(self):
        return int(self.arm.numel())


def test_assign_gives_a_quarter_of_the_games_self_play_and_samples_members_by_probability():
    algo = _cole(num_envs=16)
    algo.probs = np.array([0.5, 0.3, 0.2])  # 3 initial members
    assert len(algo.arms()) == 1 + 3 * 2
    gen = torch.Generator().manual_seed(0)
    games = torch.arange(16).repeat(4000)
    arms = algo.assign(games, gen)
    assert torch.all(arms[games < 4] == 0)  # r = 3: the first 16 // 4 games are self-play
    rest = arms[games >= 4]
    assert int(rest.min()) >= 1
    freq = torch.bincount(rest, minlength=7)[1:].double() / rest.numel()
    # each member's probability is split equally over its two seats; 48,000 draws: sd < 0.0025
    np.testing.assert_allclose(freq.numpy(), [0.25, 0.25, 0.15, 0.15, 0.1, 0.1], atol=0.01)


def test_after_iteration_admits_fills_then_overwrites_and_counts_failed_tries():
    algo = _cole("algo.generation_interval=1", size=4)
    ego = algo.learners["ego"]
    # ego with member 0 in either seat: 20, with member 1: 10; self-play 8; member 2 not played
    stats = {}
    algo.after_iteration(1, 0, stats, _Episodes([1, 2, 3, 0], [20.0, 20.0, 10.0, 8.0]))
    # U[ego] = [10, 5, 0] (row mean 5) > member means 0: rank 3 >= ceil(0.9 * 3) = 3, admitted
    assert stats["cole/admitted"] == 1 and stats["cole/members"] == 4 and stats["cole/arms"] == 9
    np.testing.assert_array_equal(algo.payoff[-1], [10.0, 5.0, 0.0, 8.0])
    np.testing.assert_array_equal(algo.payoff[3], [10.0, 5.0, 0.0, 8.0])
    np.testing.assert_array_equal(algo.payoff[:3, 3], [10.0, 5.0, 0.0])
    np.testing.assert_array_equal(algo.payoff[:3, :3], np.zeros((3, 3)))
    for k, v in ego.state_dict().items():
        assert torch.equal(algo.pool.stacked[k][3], v), k
    assert algo.pool.names == ["gen0", "gen1", "gen2", "gen3"] and len(algo.arms()) == 9
    # member row means [2.5, 1.25, 0, 5.75]: dense ranks [2, 3, 4, 1], alpha 1.5 (N = 4)
    expected = np.array([2.0, 3.0, 4.0, 1.0]) ** 1.5
    np.testing.assert_allclose(algo.probs, expected / expected.sum())
    # full now; no episodes: the ego's row mean 5.75 ties member 3's: rank 4 >= ceil(0.8 * 4) = 4
    stats = {}
    before = {k: v.clone() for k, v in algo.pool.stacked.items()}
    algo.after_iteration(2, 0, stats, _Episodes([], []))
    assert stats["cole/admitted"] == 1 and len(algo.pool) == 4 and algo.generation == 5
    slot = algo.pool.names.index("gen4")
    assert algo.payoff[slot, slot] == 8.0 and algo.payoff[-1, slot] == 8.0
    for k, v in ego.state_dict().items():
        assert torch.equal(algo.pool.stacked[k][slot], v), k
        for i in set(range(4)) - {slot}:
            assert torch.equal(algo.pool.stacked[k][i], before[k][i]), (k, i)
    # the ego now plays badly with everyone: rank 0, two failures, the third try admits
    algo.payoff[:-1] = 50.0
    for i, admitted in ((3, 0), (4, 0), (5, 1)):
        stats = {}
        algo.after_iteration(i, 0, stats, _Episodes([1, 2, 3, 4, 5, 6, 7, 8], [0.0] * 8))
        assert stats["cole/ego_rank"] == 0 and stats["cole/admitted"] == admitted
    assert algo.failed_tries == 0 and algo.generation == 6


def test_state_round_trip_restores_u_counters_and_the_grown_pool():
    """Through the checkpoint encoding, into a fresh plug-in: same state, same next decisions."""
    a = _cole("algo.generation_interval=1", size=4)
    a.after_iteration(1, 0, {}, _Episodes([1, 3, 0], [20.0, 10.0, 8.0]))  # admitted: 4 members
    a.payoff[:-1] = 50.0
    a.after_iteration(2, 0, {}, _Episodes([1, 0], [0.0, 6.0]))  # rank 0: one failed try
    assert (len(a.pool), a.failed_tries, a.sp_return) == (4, 1, 6.0)
    tensors = {}
    state = decode_state(encode_state(a.state_dict(), tensors), tensors)
    b = _cole("algo.generation_interval=1", size=4)
    b.learners["ego"].load_state_dict(a.learners["ego"].state_dict())
    b.load_state_dict(state)
    assert (b.generation, b.failed_tries, b.sp_return, b.pool.names) == (4, 1, 6.0, a.pool.names)
    np.testing.assert_array_equal(b.payoff, a.payoff)
    np.testing.assert_array_equal(b.probs, a.probs)
    for k, v in a.pool.stacked.items():
        assert torch.equal(b.pool.stacked[k], v), k
    # the next try fails again on both; the one after admits (two failures) with self-play 6
    for algo in (a, b):
        for i in (3, 4):
            algo.after_iteration(i, 0, {}, _Episodes([2], [0.0]))
    assert a.failed_tries == b.failed_tries == 0 and a.generation == b.generation == 5
    np.testing.assert_array_equal(b.payoff, a.payoff)
    assert 6.0 in np.diag(a.payoff[:-1])
    for k, v in a.pool.stacked.items():
        assert torch.equal(b.pool.stacked[k], v), k


# -- preset additions ---------------------------------------------------------------------------------
def test_preset_config_scales_the_paper_budget_with_the_population():
    paper = resolve_config(preset="paper", **{"run.algo": "cole"})
    assert paper.population.size == 25 and paper.run.total_steps == 50_000_000
    assert paper.env.num_envs == 125 and paper.algo["generation_interval"] == 20
    assert paper.ppo.entropy_milestones == (0, 25_000_000, 50_000_000)
    assert paper.ppo.entropy_coefs == (0.2, 0.05, 0.01) and paper.shaping.horizon == 50_000_000
    assert not paper.model.recurrent
    big = resolve_config(preset="paper", overrides=["population.size=75"], **{"run.algo": "cole"})
    assert big.run.total_steps == 150_000_000 and big.ppo.entropy_milestones == (0, 75_000_000, 150_000_000)
    quick = resolve_config(preset="quick", overrides=["algo.generation_interval=2"], **{"run.algo": "cole"})
    assert quick.population.size == 5 and quick.algo["generation_interval"] == 2  # the user's --set wins
    assert quick.model.kind == "mlp" and not quick.model.recurrent


# -- training runs ------------------------------------------------------------------------------------
TINY = ["--preset", "quick", "--no-progress", "--set", "env.num_envs=8", "--set", "ppo.rollout_length=25",
        "--set", "env.horizon=50", "--set", "ppo.epochs=1", "--set", "ppo.num_minibatches=1",
        "--set", "run.eval_episodes=2", "--set", "run.num_threads=1"]  # fmt: skip


def test_cli_run_grows_the_population_and_evaluates_the_ego(tmp_path):
    out = tmp_path / "run"
    res = CliRunner().invoke(
        main,
        ["train", "--algo", "cole", "--layout", "cramped_room", "--steps", "1600", "--out", str(out), *TINY,
         "--set", "algo.generation_interval=1", "--set", "population.size=5"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    members = [int(r["cole/members"]) for r in rows]
    arms = [int(r["cole/arms"]) for r in rows]
    assert len(rows) == 8 and members[0] >= 4 and members[-1] == 5  # 3 random members, then snapshots
    assert arms == [1 + 2 * m for m in members] and arms[-1] > 7
    meta = json.loads((list_checkpoints(out)[-1] / "meta.json").read_text())
    assert meta["partners"]["pool"]["members"] == 5 and meta["ego"] == "ego"
    summary = json.loads((out / "eval.json").read_text())
    assert summary["ego"] == "ego" and summary["self_play"]["episodes"] == 2


class _Interrupt(Exception):
    pass


def test_stopped_run_resumes_to_the_uninterrupted_weights_pool_and_payoffs(tmp_path):
    """Cut after iteration 7; resume from the checkpoint of iteration 5 (125 env steps per game: the
    50-step episodes are half done; the population is already full): after 16 iterations the ego,
    the pool, U and the counters equal the uninterrupted run's."""
    overrides = ["env.layout=cramped_room", "env.num_envs=8", "ppo.rollout_length=25", "env.horizon=50",
                 "ppo.epochs=1", "ppo.num_minibatches=2", "run.eval_episodes=0", "run.num_threads=1",
                 "run.checkpoint_every=1000", "run.total_steps=3200", "population.size=4",
                 "algo.generation_interval=1"]  # fmt: skip
    cfg = resolve_config(preset="quick", overrides=overrides, **{"run.algo": "cole"})
    full = Trainer(cfg, tmp_path / "full", progress=False)
    full.train()
    assert full.algorithm.generation > 5  # the full population was overwritten after the resume point

    def stop(trainer, row):
        if trainer.iteration == 7:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        Trainer(cfg, tmp_path / "cut", progress=False).train(stop)
    resumed = Trainer(cfg, tmp_path / "cut", resume=True, progress=False)
    assert resumed.iteration == 5 and len(resumed.runner.arm_table) == 1 + 2 * len(resumed.algorithm.pool)
    resumed.train()
    for k, v in full.learners["ego"].state_dict().items():
        assert torch.equal(resumed.learners["ego"].state_dict()[k], v), k
    a, b = full.algorithm, resumed.algorithm
    for k, v in a.pool.stacked.items():
        assert torch.equal(b.pool.stacked[k], v), k
    np.testing.assert_array_equal(a.payoff, b.payoff)
    assert (a.generation, a.failed_tries, a.sp_return, a.pool.names) == (
        b.generation,
        b.failed_tries,
        b.sp_return,
        b.pool.names,
    )
