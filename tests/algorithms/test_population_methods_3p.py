"""The population methods on Football's three players: the seatings of each algorithm
(the reference's GRF combinations, ``grf_runner.py: get_agent_pairs``), their draw, the critic's
per-seat policy ids, MEP's prioritized units, TrajeDi's rows, HSP's Football features, COLE's
seatings around its top member (the GRF rules themselves: tests/algorithms/test_cole_grf.py), and
(needs gfootball) one tiny training of each through ``zsceval train --env football``, MEP's and
COLE's killed and resumed."""

import csv
import dataclasses
import itertools
import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from zsceval import registry
from zsceval.algorithms.base.stage2 import multiset_weights, population_arms
from zsceval.rl.config import ConfigError, resolve_config
from zsceval.rl.seating import Seating, ego_partner_arms

FOOTBALL = ["env.name=football", "env.num_agents=3"]
POOL = ["a@init", "a@mid", "a@final"]


def make(algo, overrides=(), n=3, partners=POOL):
    env = FOOTBALL if n == 3 else []
    cfg = resolve_config(preset="quick", overrides=[f"run.algo={algo}", *env, *overrides])
    a = registry.get(algo)(cfg, 4, n, "cpu")
    a.partner_names = list(partners)
    a.num_arms = len(a.arms())
    return a


def reference_pairs(population, agent, n):
    """ZSC-Eval's ``GRFRunner.get_agent_pairs``, restated."""
    out = []
    for m in range(n - 1, 0, -1):
        for pop_pair in itertools.product(population, repeat=m):
            for ego_seats in itertools.combinations(range(n), n - m):
                rest = iter(pop_pair)
                out.append(tuple(agent if i in ego_seats else next(rest) for i in range(n)))
    return out


# -- seatings --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("algo", ["fcp", "mep", "trajedi", "hsp"])
def test_stage2_arms_on_three_players_are_the_reference_grf_combinations(algo):
    arms = make(algo).arms()
    seatings = [tuple("ego" if s == "ego" else POOL[m] for s, m in arm.seats) for arm in arms]
    assert seatings == reference_pairs(POOL, "ego", 3)
    assert len(arms) == 3 * 3**2 + 3 * 3 == 36  # two partners drawn independently, then one partner
    assert len(set(seatings)) == len(seatings)
    for arm, seats in zip(arms, seatings, strict=True):
        ego_seats = [k for k, s in enumerate(seats) if s == "ego"]
        assert arm.ego_seat == ego_seats[0] and len(ego_seats) in (1, 2)
        assert arm.partner == "+".join(s for s in seats if s != "ego")
    # both partner seats may hold different members, or the same one
    assert ("ego", "a@init", "a@mid") in seatings and ("a@mid", "ego", "a@mid") in seatings
    assert ("ego", "ego", "a@final") in seatings and ("a@final", "ego", "ego") in seatings


def test_two_player_arms_and_draw_are_unchanged():
    fcp = make("fcp", n=2)
    assert fcp.arms() == ego_partner_arms("ego", "pool", 2, members=range(3), labels=POOL)
    assert population_arms("ego", "pool", 2, POOL) == fcp.arms()
    games = torch.arange(5)
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    assert torch.equal(fcp.assign(games, g1), torch.randint(0, 6, (5,), generator=g2))
    assert fcp.critic_feature_size == 2


def test_three_player_draw_is_uniform_over_multisets_then_over_seat_orders():
    arms = make("fcp").arms()
    w = multiset_weights(arms)
    units = 3 * 2 // 2 + 2 * 3  # {ego, p, q} p < q; {ego, p, p}; {ego, ego, p}
    assert abs(float(w.sum()) - 1) < 1e-12
    for arm, p in zip(arms, w.tolist(), strict=True):
        distinct = len({s for s in arm.seats})
        orderings = 6 if distinct == 3 else 3
        assert p == pytest.approx(1 / (units * orderings))
    fcp = make("fcp")
    draws = fcp.assign(torch.arange(20000), torch.Generator().manual_seed(0))
    freq = torch.bincount(draws, minlength=len(arms)).double() / 20000
    assert torch.allclose(freq, w, atol=0.01)
    # HSP's GRF script runs train_adaptive (train_mep stage 2 without prioritized sampling): the same draw
    hsp = make("hsp")
    assert torch.equal(hsp.arm_probabilities(), w)
    assert torch.equal(hsp.assign(torch.arange(50), torch.Generator().manual_seed(2)),
                       fcp.assign(torch.arange(50), torch.Generator().manual_seed(2)))  # fmt: skip


def test_critic_sees_every_seats_policy_id_own_seat_first():
    fcp = make("fcp")
    assert fcp.critic_feature_size == 3
    actor = torch.tensor([[0, 1, 1], [1, 0, 0]])  # actor 0 = the ego, 1 = the pool
    member = torch.tensor([[0, 2, 0], [1, 0, 0]])
    feats = fcp.critic_features(Seating(actor, member, torch.zeros(2, dtype=torch.int64)))
    assert feats.shape == (2, 3, 3)
    ids = torch.tensor([[-1, 1.0, 1 / 3], [2 / 3, -1, -1]])
    for k in range(3):
        assert torch.allclose(feats[:, k], torch.stack([ids[:, (k + j) % 3] for j in range(3)], -1))
    two = make("fcp", n=2).critic_features(Seating(actor[:, :2], member[:, :2], torch.zeros(2)))
    assert torch.allclose(two, torch.tensor([[[-1, 1.0], [1.0, -1]], [[2 / 3, -1], [-1, 2 / 3]]]))


# -- MEP and TrajeDi -------------------------------------------------------------------------------------
class Episodes:
    def __init__(self, arm, sparse):
        self.arm, self.sparse = torch.tensor(arm), torch.tensor(sparse, dtype=torch.float32)

    def __len__(self):
        return self.arm.numel()


def test_mep_prioritizes_unordered_combinations_floors_and_splits_over_seatings():
    mep = make("mep", ["algo.prioritized_alpha=1.0"], partners=POOL[:2])
    arms = mep.arms()
    assert len(arms) == 3 * 4 + 3 * 2
    probs = mep.probabilities()  # no data: uniform over the 2 + 2 + 1 = 5 units, split over seatings
    assert torch.allclose(probs, multiset_weights(arms))
    units = mep._units()
    key = {i: Counter(s for s in arm.seats) for i, arm in enumerate(arms)}
    low = next(i for i, c in key.items() if c == Counter({("ego", 0): 1, ("pool", 0): 2}))
    same = [i for i in key if key[i] == key[low]]  # its 3 seat orders share one running return
    assert len(same) == 3 and len(set(units[same].tolist())) == 1
    sparse = [0.0 if i in same else 5.0 for i in range(len(arms))]
    mep.after_iteration(0, 0, stats := {}, Episodes(list(range(len(arms))), sparse))
    probs = mep.probabilities()
    assert abs(float(probs.sum()) - 1) < 1e-9
    # dense ranks 2 (the low unit) and 1 (the rest), alpha 1: 2/6 vs 1/6, both above the floor 1/18
    assert float(probs[same].sum()) == pytest.approx(2 / 6)
    assert float(probs[same[0]]) == pytest.approx(2 / 6 / 3)
    assert stats["mep/max_arm_prob"] == pytest.approx(float(probs.max()))
    mep.load_state_dict(mep.state_dict())
    assert torch.allclose(mep.probabilities(), probs)


def test_mep_three_player_floor_is_one_over_the_number_of_arms():
    mep = make("mep", ["algo.prioritized_alpha=8.0"], partners=POOL[:2])
    n = mep.num_arms
    mep.after_iteration(0, 0, {}, Episodes(list(range(n)), [float(i % 5) for i in range(n)]))
    units = mep._units()
    unit_probs = torch.zeros(int(units.max()) + 1, dtype=torch.float64)
    unit_probs.index_add_(0, units, mep.probabilities())
    raw = mep_module().prioritized_probs(mep.running, mep.seen, 8.0)
    assert float(raw.min()) < 1 / n  # the floor binds: clipped once, then renormalised (as the reference)
    assert torch.allclose(unit_probs, raw.clamp_min(1 / n) / raw.clamp_min(1 / n).sum())


def mep_module():
    import importlib

    return importlib.import_module(registry.get("mep").__module__)


def test_trajedi_jsd_rows_cover_all_three_seats_of_each_kept_game():
    import importlib

    mod = importlib.import_module(registry.get("trajedi-stage1").__module__)
    cfg = resolve_config(preset="quick", overrides=["run.algo=trajedi-stage1", *FOOTBALL, "algo.jsd_games=1"])
    t = mod.TrajeDiStage1(cfg, 4, 3, "cpu")
    t.num_arms = 2  # 2 members: games 0, 1 are each member's first
    rows = t._rows(SimpleNamespace(B=4, n=3, actions=torch.zeros(1)))
    assert rows.tolist() == [0, 1, 2, 3, 4, 5]


# -- the others ------------------------------------------------------------------------------------------
def test_e3t_seats_its_mixture_partner_in_the_two_other_seats():
    e3t = make("e3t")
    assert [tuple(n for n, _ in a.seats) for a in e3t.arms()] == [
        ("ego", "partner", "partner"), ("partner", "ego", "partner"), ("partner", "partner", "ego"),
    ]  # fmt: skip
    assert [a.ego_seat for a in e3t.arms()] == [0, 1, 2]
    with pytest.raises(ConfigError, match="partner_model.*2 players only.*has 3"):
        make("e3t", ["algo.partner_model=true"])


def test_hsp_selects_on_the_reference_s_six_grf_events(tmp_path):
    hsp_mod = __import__(registry.get("hsp").__module__, fromlist=["selection_features"])
    names = ["pass", "actual_pass", "shot", "slide", "catch", "assist", "possession", "score"]
    result = {"feature_names": names, "features": [float(i) for i in range(8)]}
    assert hsp_mod.selection_features(result, "football") == [1.0, 2.0, 4.0, 5.0, 6.0, 7.0]
    assert hsp_mod.selection_features(result, "overcooked") == result["features"]
    with pytest.raises(ConfigError, match="lack"):
        hsp_mod.selection_features({"feature_names": names[:4], "features": [0.0] * 4}, "football")
    # through select_biased: candidate b differs from a only in 'pass' (not an HSP feature), c in 'shot'
    runs, results = [], []
    candidates = {"a": [0, 1, 1, 0, 1, 1, 1, 1], "b": [9, 1, 1, 0, 1, 1, 1, 1], "c": [0, 1, 9, 0, 1, 1, 1, 1]}
    for cid, feats in candidates.items():
        folder = tmp_path / cid / "evaluate"
        folder.mkdir(parents=True)
        done = {"feature_names": names, "features": feats, "final_return": 0.5, "final_checkpoint": "run/x"}
        (folder / "DONE.json").write_text(json.dumps({"result": done}))
        runs.append(str(tmp_path / cid / "run"))
        results.append(str(folder))
    hsp = make("hsp", ["algo.k=2", "population.size=5", "algo.selection_seed=1"])
    given = {"candidate_runs": tuple(runs), "candidate_results": tuple(results)}
    hsp.options = dataclasses.replace(hsp.options, **given)
    picked = [b["id"] for b in hsp.select_biased()]
    first = "abc"[int(np.random.default_rng(1).integers(3))]
    assert picked[0] == first and "c" in picked  # a and b are the same to HSP: c is the far one


def test_cole_seats_the_reference_selection_around_its_top_member():
    from zsceval.rl.policy import Policy, network_spec

    cole = make("cole", ["population.size=5"])
    spec = network_spec(cole.config.model, (58,), (52,), 19)
    cole.learners = cole.build_learners(lambda: Policy(spec))
    cole.build_partners(lambda: Policy(spec))
    assert cole.filled == 3 and cole.top == 2
    names = ["gen0", "gen1", "gen2"]
    arms = cole.arms()
    seated = {tuple("ego" if a == "ego" else names[m] for a, m in arms[i].seats) for i in cole.seatings}
    expected = set(reference_pairs(["gen2"], "ego", 3))
    for other in names:
        expected |= set(reference_pairs([other, "gen2"], "ego", 3))
    assert seated == expected and len(seated) == 30
    dealt = cole.assign(torch.arange(4), torch.Generator().manual_seed(0))
    assert dealt[0] == 0 and set(dealt[1:].tolist()) <= set(cole.seatings)  # 4 // 4 = 1 self-play game


# -- training through the CLI (needs gfootball) ----------------------------------------------------------
TINY = ["--env", "football", "--layout", "academy_3_vs_1_with_keeper", "--no-progress",
        "--set", "population.size=3", "--set", "population.stage1_steps=200",
        "--set", "env.num_envs=2", "--set", "env.num_workers=2", "--set", "env.horizon=100",
        "--set", "ppo.rollout_length=50", "--set", "run.eval_episodes=1", "--set", "run.num_threads=1",
        "--set", "run.checkpoint_every=100", "--set", "ppo.epochs=1",
        "--set", "ppo.num_minibatches=1"]  # fmt: skip
# 100 env steps an iteration; stage 1: 2 members x 200 steps


def invoke(*args):
    return CliRunner().invoke(__import__("zsceval.cli", fromlist=["main"]).main, [str(a) for a in args])


def final_weights(run: Path) -> bytes:
    return (sorted((run / "checkpoints").glob("step_*"))[-1] / "policies.safetensors").read_bytes()


@pytest.fixture
def gfootball():
    pytest.importorskip("gfootball.env", reason="pip install --no-build-isolation gfootball==2.10.2")


@pytest.mark.parametrize("algo", ["fcp", pytest.param("trajedi", marks=pytest.mark.slow)])
def test_stage2_chain_trains_on_three_players(gfootball, tmp_path, algo):
    out = tmp_path / algo
    res = invoke("train", "--algo", algo, "--out", out, "--steps", "200", *TINY)
    assert res.exit_code == 0, res.output
    ego = out / "ego" / "run"
    assert (ego / "eval.json").is_file()
    cfg = (ego / "config.yaml").read_text()
    assert "football" in cfg
    pool = json.loads(next((ego / "pools").glob("*/pool.json")).read_text())
    assert len(pool["names"]) == 3


@pytest.mark.slow
def test_mep_chain_trains_on_three_players_and_resumes_after_a_kill(gfootball, tmp_path):
    from tests.test_reliability import run_killed

    cut = tmp_path / "cut"  # killed after the ego's 2nd of 3 iterations (a checkpoint after each)
    run_killed(["train", "--algo", "mep", "--out", cut, "--steps", "300", *TINY], kill_at=2, match="ego")
    assert not (cut / "ego" / "run" / "eval.json").exists()
    res = invoke("train", "--resume", "--out", cut, "--no-progress")
    assert res.exit_code == 0, res.output
    ego = cut / "ego" / "run"
    assert (ego / "eval.json").is_file()
    metrics = (ego / "metrics.csv").read_text().splitlines()
    assert "mep/max_arm_prob" in metrics[0] and len(metrics) == 1 + 3
    assert [int(r.split(",")[0]) for r in metrics[1:]] == [1, 2, 3]  # resumed after iteration 2


@pytest.mark.slow
def test_cole_trains_on_three_players_and_resumes_after_a_kill(gfootball, tmp_path):
    from tests.test_reliability import run_killed

    cut = tmp_path / "cole"  # 4 games x 25 steps an iteration, a checkpoint after each; killed in the 2nd
    args = ["train", "--algo", "cole", "--out", cut, "--steps", "300", *TINY, "--set", "env.num_envs=4",
            "--set", "ppo.rollout_length=25", "--set", "population.size=4",
            "--set", "algo.generation_interval=1"]  # fmt: skip
    run_killed(args, kill_at=2)
    assert not (cut / "eval.json").exists()
    res = invoke("train", "--resume", "--out", cut, "--no-progress")
    assert res.exit_code == 0, res.output
    assert (cut / "eval.json").is_file()
    rows = list(csv.DictReader((cut / "metrics.csv").open()))
    assert [int(r["iteration"]) for r in rows] == [1, 2, 3]  # resumed after iteration 1
    members = [int(r["cole/members"]) for r in rows]
    assert members == [4, 4, 4]  # 3 random members; the first try (rank 3 of 3 on U = 0) admits
    for r, m in zip(rows, members, strict=True):
        assert int(r["cole/arms"]) == 1 + 3 * m * m + 3 * m
        assert int(r["cole/seatings"]) == 12 * m - 6 and 0 <= int(r["cole/top"]) < m
    meta = json.loads((sorted((cut / "checkpoints").glob("step_*"))[-1] / "meta.json").read_text())
    assert meta["partners"]["pool"]["members"] == 4


@pytest.mark.slow
def test_hsp_chain_trains_on_three_players(gfootball, tmp_path):
    out = tmp_path / "hsp"  # MEP stage 1 (2 members), 1 biased candidate, the ego with it and 1 member x 3
    res = invoke("train", "--algo", "hsp", "--out", out, "--steps", "200", *TINY,
                 "--set", "population.size=4", "--set", "algo.k=1", "--set", "algo.candidates=1",
                 "--set", "algo.candidate_steps=400", "--set", "algo.feature_episodes=1",
                 "--set", "algo.min_return=-1")  # fmt: skip
    assert res.exit_code == 0, res.output
    evaluated = [
        json.loads(p.read_text())["result"] for p in out.glob("**/hsp_candidates/*/evaluate/DONE.json")
    ]
    assert len(evaluated) == 1 and len(evaluated[0]["features"]) == 8
    ego = out / "ego" / "run"
    assert (ego / "eval.json").is_file()
    pool = json.loads(next((ego / "pools").glob("*/pool.json")).read_text())
    assert len(pool["names"]) == 4 and pool["names"][0].startswith("biased/")
    assert "football" in (ego / "config.yaml").read_text()


def test_e3t_trains_on_three_players(gfootball, tmp_path):
    out = tmp_path / "e3t"
    res = invoke("train", "--algo", "e3t", "--out", out, "--steps", "100", *TINY)
    assert res.exit_code == 0, res.output
    assert (out / "eval.json").is_file()


def test_env_football_alone_runs_the_chain_on_the_football_scenario(tmp_path, monkeypatch):
    """`zsceval train --algo fcp --env football` (no --layout) used to plan the chain on the default
    Overcooked layout; the chain now gets the Football scenario."""
    from click.testing import CliRunner

    from zsceval.cli import main
    from zsceval.commands import train as train_cmd

    seen = {}
    monkeypatch.setattr(train_cmd, "_finish_chain", lambda params, *a, **k: seen.update(params))
    args = ["train", "--algo", "fcp", "--env", "football", "--out", str(tmp_path / "f")]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert seen["layout"] == "football" and seen["algo"] == "fcp"
