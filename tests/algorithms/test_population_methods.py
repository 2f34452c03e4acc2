"""FCP, MEP and TrajeDi: the formulas on hand-computed values, the checkpoint choice,
and each algorithm's job chain trained end to end through the CLI, resumed after a kill."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from zsceval import registry
from zsceval.algorithms.base.stage2 import sliding_window
from zsceval.cli import main
from zsceval.rl.config import resolve_config
from zsceval.rl.population.checkpoints import mid_step, nearest_checkpoint


def _algo(name):
    return registry.get(name)


def mep():
    import importlib

    registry.get("mep")
    return importlib.import_module(registry.get("mep").__module__)


def trajedi():
    import importlib

    return importlib.import_module(registry.get("trajedi").__module__)


# -- MEP ------------------------------------------------------------------------------------------------
def test_mep_bonus_is_minus_log_of_the_population_mean_probability_with_its_floor():
    probs = torch.tensor([[0.5, 0.2, 1e-7], [0.1, 0.6, 1e-8]])  # [K=2 members, 3 steps]
    bonus = mep().population_entropy_bonus(probs.log(), alpha=0.01)
    expected = [-0.01 * math.log(0.3), -0.01 * math.log(0.4), -0.01 * math.log(1e-5)]  # floor at 1e-5
    torch.testing.assert_close(bonus, torch.tensor(expected))


def test_mep_prioritized_law_on_hand_computed_tables():
    law = mep().prioritized_probs
    seen = torch.ones(4, dtype=torch.bool)
    # returns 10, 0, 5, 5 -> 1/R ranks (dense, ascending): 10 -> 1, 5 -> 2 (twice), 0 -> 3
    p = law(torch.tensor([10.0, 0.0, 5.0, 5.0]), seen, alpha=1.0)
    torch.testing.assert_close(p, torch.tensor([1, 3, 2, 2], dtype=torch.float64) / 8)
    p = law(torch.tensor([10.0, 0.0, 5.0, 5.0]), seen, alpha=0.5)
    w = torch.tensor([1, 3, 2, 2], dtype=torch.float64).sqrt()
    torch.testing.assert_close(p, w / w.sum())
    # an arm without data takes the mean of the others: 10, (5), 0 -> ranks 1, 2, 3
    p = law(torch.tensor([10.0, 123.0, 0.0]), torch.tensor([True, False, True]), alpha=1.0)
    torch.testing.assert_close(p, torch.tensor([1, 2, 3], dtype=torch.float64) / 6)
    p = law(torch.zeros(5), torch.zeros(5, dtype=torch.bool), alpha=1.5)
    torch.testing.assert_close(p, torch.full((5,), 0.2, dtype=torch.float64))


def test_mep_running_average_and_sampling_follow_the_law():
    from zsceval.rl.runner import EpisodeTable

    cls = _algo("mep")
    cfg = resolve_config(preset="quick", overrides=["population.size=24"], **{"run.algo": "mep"})
    algo = cls(cfg, num_envs=8, num_agents=2, device="cpu")
    algo.num_arms = 3
    assert algo.alpha == 1.0  # population 24 -> 1.0 (ZSC-Eval)

    def table(arms, returns):
        n = len(arms)
        zeros = torch.zeros(n, dtype=torch.int64)
        return EpisodeTable(torch.tensor(arms), torch.tensor(arms), zeros, torch.tensor(returns),
                            torch.zeros(n, 2), torch.zeros(n, 2, 1), [], ("e",))  # fmt: skip

    stats = {}
    algo.after_iteration(1, 0, stats, table([0, 0, 1], [10.0, 30.0, 40.0]))  # first values: 20, 40
    algo.after_iteration(2, 0, stats, table([0, 2], [0.0, 5.0]))  # arm 0: 0.95 * 20 + 0.05 * 0 = 19
    torch.testing.assert_close(algo.running, torch.tensor([19.0, 40.0, 5.0], dtype=torch.float64))
    expected = torch.tensor([2, 1, 3], dtype=torch.float64) / 6
    torch.testing.assert_close(algo.probabilities(), expected)
    gen = torch.Generator().manual_seed(0)
    draws = algo.assign(torch.arange(60_000), gen)
    freq = torch.bincount(draws, minlength=3).double() / draws.numel()
    assert torch.allclose(freq, expected, atol=0.01)  # > 5 sigma for 60k draws


# -- TrajeDi --------------------------------------------------------------------------------------------
def test_discounted_window_matches_the_explicit_sum_within_episodes():
    torch.manual_seed(0)
    T, R = 7, 3
    logp = -torch.rand(2, T, R) * 3
    starts = torch.zeros(T, R, dtype=torch.bool)
    starts[0] = True
    starts[4, 1] = True  # row 1: a new episode at step 4
    out = trajedi().discounted_window(logp, starts, 0.5)
    episode = starts.long().cumsum(0)
    for k in range(2):
        for t in range(T):
            for r in range(R):
                same = [u for u in range(T) if episode[u, r] == episode[t, r]]
                want = sum(0.5 ** abs(t - u) * float(logp[k, u, r]) for u in same)
                assert abs(float(out[k, t, r]) - want) < 1e-5


def test_trajedi_jsd_on_a_three_step_two_member_example_by_hand():
    # one row driven by member 0; log-probs of the taken actions under each member
    p0, p1 = [0.9, 0.5, 0.8], [0.2, 0.5, 0.4]
    logp = torch.tensor([p0, p1]).log().unsqueeze(-1).requires_grad_(True)  # [K=2, T=3, R=1]
    starts = torch.tensor([[True], [False], [False]])
    owner = torch.zeros(3, 1, dtype=torch.int64)
    jsd, surrogate = trajedi().trajectory_jsd(logp, owner, starts, gamma=0.5)
    # local likelihoods l~(t) = sum_t' 0.5^|t-t'| l(t'); d = l~_0 - log((e^l~_0 + e^l~_1) / 2)
    g = [[1, 0.5, 0.25], [0.5, 1, 0.5], [0.25, 0.5, 1]]
    loc = [[sum(g[t][u] * math.log(p[u]) for u in range(3)) for t in range(3)] for p in (p0, p1)]
    d = [a - math.log((math.exp(a) + math.exp(b)) / 2) for a, b in zip(*loc, strict=True)]
    assert abs(float(jsd) - sum(d) / 3) < 1e-6
    assert abs(float(jsd) - 0.4417727) < 1e-6
    surrogate.backward()
    # more probability for its own actions makes member 0 more distinct from member 1 ...
    assert (logp.grad[0] > 0).all()
    # ... and member 1 agreeing more with member 0's actions makes them less distinct
    assert (logp.grad[1] < 0).all()


def test_trajedi_stays_finite_over_long_unlikely_episodes():
    T = 400
    logp = torch.full((3, T, 2), -30.0)
    logp[1] = -0.01
    starts = torch.zeros(T, 2, dtype=torch.bool)
    starts[0] = True
    owner = torch.tensor([0, 1]).expand(T, 2)
    jsd, surrogate = trajedi().trajectory_jsd(logp.requires_grad_(True), owner, starts, gamma=0.5)
    assert torch.isfinite(jsd) and torch.isfinite(surrogate)
    surrogate.backward()
    assert torch.isfinite(logp.grad).all()


# -- checkpoint choice ----------------------------------------------------------------------------------
def test_mid_checkpoint_is_the_first_grid_step_closest_to_half_the_final_return():
    steps = [0, 1000, 2000, 3000, 4000, 5000]
    returns = [0, 0, 40, 100, 100, 100]
    # R_f = mean of the last 5 = (0 + 40 + 100 + 100 + 100) / 5 = 68 -> target 34; on the 100-step grid
    # 1800 -> 32 and 1900 -> 36 are equally close: the first one wins
    step, final = mid_step(steps, returns)
    assert (step, final) == (1800, 68.0)
    assert nearest_checkpoint([400, 1600, 2000, 4800], step) == 1  # 1600 and 2000 tie: the earlier
    assert nearest_checkpoint([400, 1600, 1900, 4800], step) == 2
    with pytest.raises(ValueError):
        mid_step([0, 0], [1, 2])


def test_sliding_windows_are_zsc_evals():
    # 5 stage-1 members, windows of 4: ego seeds start one member apart and wrap around
    assert sliding_window(5, 4, 0) == [0, 1, 2, 3]
    assert sliding_window(5, 4, 4) == [4, 0, 1, 2]
    assert sliding_window(10, 8, 1) == [2, 3, 4, 5, 6, 7, 8, 9]
    with pytest.raises(ValueError):
        sliding_window(3, 4, 0)


def test_plugin_presets_give_the_stage_budgets_and_the_user_wins():
    cfg = resolve_config(preset="paper", overrides=["population.size=24"], **{"run.algo": "mep"})
    assert cfg.model.recurrent and cfg.run.total_steps == 80_000_000
    assert list(cfg.ppo.entropy_milestones) == [0, 40_000_000, 80_000_000]
    assert cfg.shaping.horizon == 80_000_000
    cfg = resolve_config(preset="paper", overrides=["model.recurrent=false"], **{"run.algo": "fcp"})
    assert not cfg.model.recurrent and cfg.run.total_steps == 50_000_000  # population 12
    s1 = resolve_config(preset="quick", overrides=["population.size=36"], **{"run.algo": "fcp-stage1"})
    assert s1.run.total_steps == 15 * s1.population.stage1_steps  # 15 runs for a population of 36
    assert s1.run.checkpoint_first
    # each member trains like one quick run: its games, and schedules that follow its own steps
    quick = resolve_config(preset="quick", **{"run.algo": "sp"})
    assert s1.env.num_envs == 15 * quick.env.num_envs and s1.shaping.horizon == 15 * quick.shaping.horizon
    assert list(s1.ppo.entropy_milestones) == [15 * m for m in quick.ppo.entropy_milestones]
    mep = resolve_config(preset="paper", **{"run.algo": "mep-stage1"})  # 5 members, 0 / 6e6 / 1e7 each
    assert list(mep.ppo.entropy_milestones) == [0, 30_000_000, 50_000_000]
    # a member's schedules given by the user: each member gets them over its own steps
    # (Algorithm.preset_derived); the games given are the population's total
    mine = ["population.size=36", "shaping.horizon=100000000", "ppo.entropy_milestones=[0,1000000]",
            "ppo.entropy_coefs=[0.1,0.01]", "env.num_envs=64"]  # fmt: skip
    s1 = resolve_config(preset="quick", overrides=mine, **{"run.algo": "fcp-stage1"})
    assert s1.shaping.horizon == 15 * 1e8 and list(s1.ppo.entropy_milestones) == [0, 15_000_000]
    assert s1.env.num_envs == 64
    mep = resolve_config(preset="paper", overrides=mine[1:4], **{"run.algo": "mep-stage1"})
    assert list(mep.ppo.entropy_milestones) == [0, 5_000_000]  # not the paper's own 6e6 / 1e7
    ego = resolve_config(preset="quick", overrides=mine, **{"run.algo": "fcp"})
    assert ego.shaping.horizon == 1e8  # a stage-2 ego's addition is replaced (the plan says so)


@pytest.mark.parametrize("algo", ["fcp", "mep", "trajedi", "hsp"])
def test_quick_stage2_anneals_entropy_over_the_egos_own_budget(algo):
    """ZSC-Eval's stage 2 anneals entropy 0.2 -> 0.05 -> 0.01 at 0, T/2 and T for any budget T;
    the quick preset used to keep SP's 0.05 -> 0.01 at 2M (a 15M ego ended its exploration at 2M)."""
    cfg = resolve_config(preset="quick", **{"run.algo": algo, "run.total_steps": 15_000_000})
    assert list(cfg.ppo.entropy_coefs) == [0.2, 0.05, 0.01]
    assert list(cfg.ppo.entropy_milestones) == [0, 7_500_000, 15_000_000]
    assert cfg.shaping.horizon == 15_000_000 and cfg.model.recurrent
    cfg = resolve_config(preset="quick", overrides=["ppo.entropy_coefs=[0.1]", "ppo.entropy_milestones=[0]"],
                         **{"run.algo": algo, "run.total_steps": 4_000_000})  # fmt: skip
    assert list(cfg.ppo.entropy_coefs) == [0.1]  # the user wins


# -- end to end through the CLI, killed and resumed -----------------------------------------------------
TINY = ["--layout", "cramped_room", "--steps", "1600", "--no-progress",
        "--set", "population.size=3", "--set", "population.stage1_steps=800",
        "--set", "env.num_envs=8", "--set", "env.horizon=100", "--set", "run.checkpoint_every=800",
        "--set", "run.eval_episodes=2", "--set", "run.num_threads=1",
        "--set", "ppo.epochs=1", "--set", "ppo.num_minibatches=1"]  # fmt: skip
# stage 1: 2 members x 800 steps = 2 iterations of 800; stage 2: 2 iterations, a checkpoint after each


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def final_weights(run: Path) -> bytes:
    return (sorted((run / "checkpoints").glob("step_*"))[-1] / "policies.safetensors").read_bytes()


@pytest.mark.parametrize(
    "algo, kill_in",
    [
        ("fcp", "ego"),  # the default suite's chain; the others are slow (their rules have unit tests)
        pytest.param("mep", "ego", marks=pytest.mark.slow),
        pytest.param("trajedi", "ego", marks=pytest.mark.slow),
        pytest.param("trajedi", "stage1", marks=pytest.mark.slow),
        pytest.param("hsp", "ego", marks=pytest.mark.slow),
    ],
)
def test_chain_trains_through_the_cli_and_resumes_after_a_kill(tmp_path, algo, kill_in):
    from tests.test_reliability import run_killed

    extra = []
    if algo == "hsp":  # size 6 = 3 biased agents (of 4 tiny candidates, any return) + 1 MEP member x 3
        extra = ["--set", "population.size=6", "--set", "algo.candidates=4",
                 "--set", "algo.candidate_steps=800", "--set", "algo.min_return=-1"]  # fmt: skip
    ref = tmp_path / "ref"
    res = invoke("train", "--algo", algo, "--out", ref, *TINY, *extra)
    assert res.exit_code == 0, res.output
    ego = ref / "ego" / "run"
    assert "run directory" in res.output and (ego / "eval.json").is_file()
    pool = json.loads(next((ego / "pools").glob("*/pool.json")).read_text())
    members = [n for n in pool["names"] if "@" in n]
    assert len(members) == 3  # 1 stage-1 member x init / mid / final
    assert {n.rsplit("@", 1)[1] for n in members} == {"init", "mid", "final"}
    assert len(pool["names"]) == (6 if algo == "hsp" else 3)

    cut = tmp_path / "cut"
    run_killed(["train", "--algo", algo, "--out", cut, *TINY, *extra], kill_at=2, match=kill_in)
    res = invoke("train", "--resume", "--out", cut, "--no-progress")
    assert res.exit_code == 0, res.output
    assert final_weights(cut / "ego" / "run") == final_weights(ego)
    if algo == "hsp":  # the biased agents came from the same candidates
        assert pool == json.loads(next((cut / "ego" / "run" / "pools").glob("*/pool.json")).read_text())
    stage1 = next((ref / "cramped_room" / "stage1").iterdir()) / "run"
    assert final_weights(next((cut / "cramped_room" / "stage1").iterdir()) / "run") == final_weights(stage1)


def test_redo_runs_a_finished_stage_again_with_its_readers_and_keeps_the_old_folders(tmp_path):
    """A chain stuck on a finished stage can be redone with an explicit flag; nothing is lost."""
    out = tmp_path / "fcp"
    assert invoke("train", "--algo", "fcp", "--out", out, *TINY).exit_code == 0
    stage1 = out / "cramped_room" / "stage1" / "fcp-stage1"
    done = {p: p.stat().st_mtime_ns for p in (stage1 / "DONE.json", out / "ego" / "DONE.json")}
    res = invoke("train", "--resume", "--out", out, "--no-progress")  # finished: nothing is redone
    assert res.exit_code == 0 and {p: p.stat().st_mtime_ns for p in done} == done
    res = invoke("train", "--resume", "--out", out, "--no-progress", "--redo", "*stage1*")
    assert res.exit_code == 0, res.output
    assert "redo: cramped_room/stage1/fcp-stage1" in res.output and "redo: ego" in res.output  # its reader
    assert all(p.stat().st_mtime_ns != t for p, t in done.items())  # both ran again
    (aside,) = (out / "redone").iterdir()
    assert (aside / "cramped_room" / "stage1" / "fcp-stage1" / "DONE.json").is_file()  # the old results kept
    assert final_weights(out / "ego" / "run") == final_weights(aside / "ego" / "run")  # same seeds
    res = invoke("train", "--resume", "--out", out, "--no-progress", "--redo", "stage2")
    assert res.exit_code != 0
    assert "matches no job of this chain; its jobs: cramped_room/stage1/fcp-stage1, ego" in res.output
    res = invoke("train", "--algo", "sp", "--out", tmp_path / "sp", *TINY, "--redo", "ego")
    assert res.exit_code != 0 and "--redo applies to a multi-stage run" in res.output


# -- HSP ------------------------------------------------------------------------------------------------
class FirstPick:
    """An rng whose first draw is a given candidate (the greedy steps are deterministic)."""

    def __init__(self, first):
        self.first = first

    def integers(self, n):
        return self.first


def hsp():
    import importlib

    return importlib.import_module(registry.get("hsp").__module__)


def test_hsp_greedy_max_l1_on_a_hand_made_feature_table():
    greedy = hsp().greedy_max_l1
    square = np.array([[0, 0], [1, 0], [0, 1], [1, 1]], dtype=float)
    # from 0: L1 distances 1, 1, 2 -> 3; then 1 and 2 both sum to 2 -> the lower index
    assert greedy(square, 3, FirstPick(0)) == [0, 3, 1]
    # columns are normalized by their max + 1e-3 first: raw, candidate 1 (distance 10) would win
    scaled = np.array([[0, 0], [10, 0], [0, 1], [5, 1]], dtype=float)
    assert greedy(scaled, 3, FirstPick(0)) == [0, 3, 1]  # 3: 0.5 + 1; then 1: 1 + 1.5 beats 2: 1 + 0.5
    assert greedy(scaled, 2, FirstPick(2)) == [2, 1]  # from 2: 1 -> 1 + 1 = 2 beats 3 -> 0.5
    with pytest.raises(ValueError):
        greedy(square, 5, FirstPick(0))


def test_hsp_population_split_and_bench_placement():
    from zsceval.bench.plan import build_phases
    from zsceval.bench.suite import load_suite

    assert hsp().HSP.biased_count(12, 0) == 6  # ZSC-Eval: 6 biased + 2 MEP members x 3
    with pytest.raises(Exception, match="multiple of 3"):
        hsp().HSP.biased_count(12, 5)
    suite = load_suite("overcooked-quick", algorithms=["hsp", "mep"])
    phases, _ = build_phases(suite)
    ids = [[j.id for j in phase] for phase in phases]
    ego = next(j for j in phases[2] if j.id.endswith("egos/hsp/s0"))  # after the selection
    assert "cramped_room/partners/select" in ego.needs
    assert ego.params["algo_job_dirs"]["evaluation_partners"] == ["cramped_room/partners/select"]
    assert not any("egos/hsp" in i for i in ids[0])
    # HSP and MEP share one MEP stage-1 population
    assert sum(i == "cramped_room/stage1/mep-stage1" for phase in ids for i in phase) == 1


def test_hsp_trained_alone_builds_the_quick_suites_candidates():
    """HSP's chain without a bench builds its candidates from the quick suite's partner budget,
    without importing the bench layer (it sits below it)."""
    import dataclasses

    from zsceval.bench.suite import load_suite
    from zsceval.generation.candidates import PartnerBudget

    quick = load_suite("overcooked-quick").partners
    alone = PartnerBudget(weight_sampling=hsp().STANDALONE_WEIGHT_SAMPLING)
    same_sizes = {"candidates": alone.candidates, "candidate_steps": alone.candidate_steps}
    assert dataclasses.replace(quick, **same_sizes) == alone
    # the sizes it trains alone are each env's quick suite's (Football: football-quick's)
    for suite, env in (("overcooked-quick", "overcooked"), ("football-quick", "football")):
        partners = load_suite(suite).partners
        budget = hsp().STANDALONE_BUDGET[env]
        assert {key: getattr(partners, key) for key in budget} == budget, suite


# -- stage 1: per member exactly self-play, and trained past the take-off --------------------------------
SP_TAKEOFF = {"cramped_room": 1_800_000, "coordination_ring": 2_700_000, "counter_circuit": 3_500_000}
"""Env steps at which quick self-play's training return first reaches 100 (docs/performance.md,
counter_circuit 3.3-3.5M)."""


@pytest.mark.parametrize("layout", sorted(SP_TAKEOFF))
def test_quick_stage1_members_train_well_past_the_self_play_take_off(layout):
    cfg = resolve_config(preset="quick", **{"run.algo": "fcp-stage1", "env.layout": layout})
    assert cfg.population.stage1_steps >= 2 * SP_TAKEOFF[layout]


def test_a_one_member_stage1_run_is_self_play_bit_for_bit(tmp_path):
    from safetensors.torch import load_file

    common = ["--layout", "cramped_room", "--no-progress", "--preset", "quick", "--seed", "3",
              "--set", "env.num_envs=8", "--set", "env.horizon=100", "--set", "run.eval_episodes=0",
              "--set", "run.num_threads=1", "--set", "ppo.epochs=1", "--set", "ppo.num_minibatches=2",
              "--set", "model.bf16=false"]  # fmt: skip
    res = invoke("train", "--algo", "sp", "--out", tmp_path / "sp", "--steps", "3200", *common)
    assert res.exit_code == 0, res.output
    res = invoke("train", "--algo", "fcp-stage1", "--out", tmp_path / "s1", *common,
                 "--set", "population.stage1_size=1", "--set", "population.stage1_steps=3200")  # fmt: skip
    assert res.exit_code == 0, res.output
    sp = load_file(final_weights_path(tmp_path / "sp"))
    member = load_file(final_weights_path(tmp_path / "s1"))
    assert {k.split(".", 1)[1] for k in sp} == {k.split(".", 1)[1] for k in member}
    for key, value in sp.items():
        assert torch.equal(value, member["member_00." + key.split(".", 1)[1]]), key


def final_weights_path(run: Path) -> str:
    return str(sorted((run / "checkpoints").glob("step_*"))[-1] / "policies.safetensors")


def test_population_size_zero_means_the_algorithms_default_in_one_place():
    """``population.size`` 0 is the algorithm's ``default_population_size`` (12 for the co-play
    methods and their stage 1, 25 for COLE); a set size wins; an algorithm without a population
    says so."""
    from zsceval.rl.config import ConfigError, population_size

    for algo, default in (("fcp", 12), ("fcp-stage1", 12), ("mep", 12), ("hsp", 12), ("trajedi", 12)):
        assert population_size(resolve_config(preset="quick", **{"run.algo": algo})) == default
        assert population_size(resolve_config(preset="quick", overrides=["population.size=24"],
                                              **{"run.algo": algo})) == 24  # fmt: skip
    cole = resolve_config(preset="paper", **{"run.algo": "cole"})
    assert cole.population.size == population_size(cole) == 25
    assert resolve_config(preset="quick", **{"run.algo": "cole"}).population.size == 5  # the quick preset's
    with pytest.raises(ConfigError, match="'sp' has no default population size"):
        population_size(resolve_config(preset="quick", **{"run.algo": "sp"}))
