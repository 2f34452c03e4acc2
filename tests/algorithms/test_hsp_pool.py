"""HSP's biased pool from a shipped set's validation split (``algo.pool=validation``): no candidate is
trained, the pool is the validation partners (disjoint from the test split the bench scores on, and
loadable under the training guard that refuses the test partners), the K follow greedy max-L1 on the
manifest's features, and a tiny stage-2 run trains with validation partners."""

import dataclasses
import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from zsceval import registry
from zsceval.bench.plan import build_phases
from zsceval.bench.suite import load_suite
from zsceval.evaluation import shipped_sets
from zsceval.evaluation.exclusion import training_guard
from zsceval.evaluation.manifest import load_manifest
from zsceval.generation.selection import br_div, similarity_kernel
from zsceval.rl.checkpoint import RefusedCheckpointError, load_agent
from zsceval.rl.config import ConfigError, resolve_config

SUITE = "overcooked-s12-hsp-cc"
SET = "zsceval:counter_circuit@2"


def hsp():
    return __import__(registry.get("hsp").__module__, fromlist=["validation_pool"])


def _manifests(name):
    test = load_manifest(shipped_sets.resolve_set(name).manifest, verify=False)
    val = load_manifest(shipped_sets.resolve_set(f"{name}/validation").manifest, verify=False)
    return test, val


def _candidate_jobs(suite):
    phases, _ = build_phases(suite)
    jobs = [j for phase in phases for j in phase]
    return jobs, [j for j in jobs if j.kind != "train" or j.params.get("algo") == "biased"]


def test_the_validation_pool_plan_trains_no_candidates_and_pins_the_scored_set():
    suite = load_suite(SUITE)
    assert suite.partner_set("counter_circuit") == SET
    jobs, candidates = _candidate_jobs(suite)
    assert not [j for j in candidates if j.kind != "partners.human_proxy"]
    hsp_egos = [j for j in jobs if "/egos/hsp/" in j.id]
    assert len(hsp_egos) == 3
    for ego in hsp_egos:
        assert ego.params["algo_options"]["pool_set"] == SET
        assert "algo.pool=validation" in ego.params["overrides"] and "algo.k=6" in ego.params["overrides"]
        assert ego.needs == ("counter_circuit/stage1/mep-stage1",)  # MEP's stage 1, nothing else
    # without the option the same suite trains HSP's own candidates (the cost the option saves)
    own = dataclasses.replace(suite, algo_overrides=(("hsp", ("algo.k=6",)),))
    _, trained = _candidate_jobs(own)
    assert len([j for j in trained if j.params.get("algo") == "biased"]) == 8


def test_the_pool_is_the_validation_split_disjoint_from_the_test_split():
    test, val = _manifests(SET)
    usable = hsp().validation_pool(SET, "counter_circuit", "overcooked", 0.1)
    assert [u["id"] for u in usable] == [p.id for p in val.partners]  # all 23 have own return > 0.1
    assert {u["source"] for u in usable} == {f"{SET}/validation"}
    assert not {p.id for p in val.partners} & {p.id for p in test.partners}
    assert not {p.candidate_id for p in val.partners} & {p.candidate_id for p in test.partners}
    # the own-return filter reads candidate.evaluate's final_return (the sparse_reward feature)
    own = {u["id"]: u["final_return"] for u in usable}
    cut = sorted(own.values())[3]
    kept = hsp().validation_pool(SET, "counter_circuit", "overcooked", cut)
    assert {u["id"] for u in kept} == {i for i, r in own.items() if r > cut} and len(kept) < len(usable)


def test_the_validation_features_are_the_candidates_features_the_selection_used():
    """The validation manifest's determinant is BR-Div over the kept candidates' features; rebuilt
    from the test split's and the validation split's features it is the same number, so both hold
    the candidates' ``candidate.evaluate`` features (``build_validation_set``)."""
    test, val = _manifests(SET)
    by_candidate = {p.candidate_id: p.features for p in (*test.partners, *val.partners)}
    kept = list(val.selection.candidate_ids)
    assert set(kept) == set(by_candidate)
    features = np.array([by_candidate[c] for c in kept], dtype=float)
    rest = [kept.index(c) for c in val.selection.selected_ids]
    assert br_div(similarity_kernel(features), rest) == pytest.approx(val.selection.determinant, rel=1e-9)
    assert list(val.feature_names) == list(test.feature_names) and val.feature_names[-1] == "sparse_reward"


def test_the_chosen_k_follow_greedy_max_l1_on_the_manifest_features():
    _, val = _manifests(SET)
    over = [
        "run.algo=hsp",
        "env.layout=counter_circuit",
        "population.size=12",
        "algo.k=6",
        "algo.pool=validation",
    ]
    cfg = resolve_config(preset="quick", overrides=[*over, f"algo.pool_set={SET}"])
    a = registry.get("hsp")(cfg, 4, 2, "cpu")
    chosen = a.select_biased()
    direct = hsp().greedy_max_l1(np.array([p.features for p in val.partners]), 6, np.random.default_rng(0))
    assert [b["id"] for b in chosen] == [val.partners[i].id for i in direct]
    assert len({b["id"] for b in chosen}) == 6
    other = dataclasses.replace(a.options, selection_seed=3)  # another first draw, another greedy run
    a.options = other
    redo = hsp().greedy_max_l1(np.array([p.features for p in val.partners]), 6, np.random.default_rng(3))
    assert [b["id"] for b in a.select_biased()] == [val.partners[i].id for i in redo]


def test_the_training_guard_loads_validation_partners_and_refuses_test_partners():
    test, val = _manifests(SET)
    with training_guard("counter_circuit") as partners:
        held = {(p.source, p.partner_id) for p in partners}
        assert not {pid for src, pid in held if src == f"{SET}/test"} & {p.id for p in val.partners}
        for p in val.partners:
            load_agent(val.resolve(p.checkpoint), "biased")
        with pytest.raises(RefusedCheckpointError, match=test.partners[0].id):
            load_agent(test.resolve(test.partners[0].checkpoint))


def test_a_missing_validation_split_names_the_fetch_command(monkeypatch, tmp_path):
    real = shipped_sets.list_sets()

    def without_validation():
        return [
            dataclasses.replace(s, folder=tmp_path / "absent") if s.split == "validation" else s for s in real
        ]

    monkeypatch.setattr(shipped_sets, "list_sets", without_validation)
    with pytest.raises(ConfigError, match=r"`zsceval partners fetch zsceval:cramped_room@1/validation`"):
        hsp().validation_pool("zsceval:cramped_room@1", "cramped_room", "overcooked", 0.1)
    with pytest.raises(ConfigError, match="is a set of cramped_room, not of counter_circuit"):
        hsp().validation_split("zsceval:cramped_room@1", "counter_circuit")


def test_the_option_is_refused_where_it_cannot_mean_the_scored_set():
    with pytest.raises(ConfigError, match="valid values are candidates, validation"):
        registry.get("hsp").parse_options({"pool": "val"})
    quick = load_suite("overcooked-quick", algorithms=["hsp", "mep"])
    generated = dataclasses.replace(quick, algo_overrides=(("hsp", ("algo.pool=validation",)),))
    with pytest.raises(ConfigError, match="generates its own partners"):
        build_phases(generated)
    other = dataclasses.replace(
        load_suite(SUITE),
        algo_overrides=(("hsp", ("algo.pool=validation", "algo.pool_set=zsceval:counter_circuit@1")),),
    )
    with pytest.raises(ConfigError, match="the validation split of the set the layout is scored on"):
        build_phases(other)
    from zsceval.bench.chain import chain_jobs

    params = {"algo": "hsp", "layout": "cramped_room", "seed": 0, "steps": 1000, "preset": "quick",
              "device": "cpu", "overrides": ["algo.pool=validation"]}  # fmt: skip
    with pytest.raises(ConfigError, match="needs algo.pool_set=LABEL:NAME@VERSION"):
        chain_jobs(params)  # trained alone: the set is named
    params["overrides"].append("algo.pool_set=zsceval:cramped_room@1")
    jobs = chain_jobs(params)
    assert [j.params["algo"] for j in jobs] == ["mep-stage1", "hsp"]  # no candidate
    assert jobs[-1].params["algo_options"]["pool_set"] == "zsceval:cramped_room@1"


def test_a_tiny_stage2_run_trains_with_validation_partners(tmp_path):
    """cramped_room@1, K = 2 of its 5 validation partners + 1 MEP member x 3 (population 5)."""
    from zsceval.cli import main

    args = ["train", "--algo", "hsp", "--out", tmp_path / "hsp", "--layout", "cramped_room", "--steps", "800",
            "--no-progress", "--set", "population.size=5", "--set", "population.stage1_steps=800",
            "--set", "env.num_envs=8", "--set", "env.horizon=100", "--set", "run.checkpoint_every=800",
            "--set", "run.eval_episodes=1", "--set", "run.num_threads=1", "--set", "ppo.epochs=1",
            "--set", "ppo.num_minibatches=1", "--set", "algo.k=2", "--set", "algo.pool=validation",
            "--set", "algo.pool_set=zsceval:cramped_room@1"]  # fmt: skip
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    assert not (tmp_path / "hsp" / "cramped_room" / "hsp_candidates").exists()
    pool = json.loads(next((tmp_path / "hsp" / "ego" / "run" / "pools").glob("*/pool.json")).read_text())
    biased = [n for n in pool["names"] if n.startswith("biased/")]
    _, val = _manifests("zsceval:cramped_room@1")
    prefix = "biased/zsceval:cramped_room@1/validation/"
    assert len(biased) == 2 and all(n.startswith(prefix) for n in biased)
    assert {n.removeprefix(prefix) for n in biased} <= {p.id for p in val.partners}
    assert len(pool["names"]) == 5  # 2 biased + 1 MEP member x init / mid / final


def test_a_shipped_biased_agent_acts_at_the_pools_precision_with_its_own_weights():
    from zsceval.rl.policy import Policy
    from zsceval.rl.population import PolicyPool

    _, val = _manifests("zsceval:cramped_room@1")
    agent, _ = load_agent(val.resolve(val.partners[0].checkpoint), "biased")
    flipped = {**agent.spec, "model": {**agent.spec["model"], "bf16": not agent.spec["model"]["bf16"]}}
    member = Policy(flipped)  # an MEP member trained where model.bf16=auto chose otherwise
    pool = PolicyPool.from_policies([agent, member], ["biased", "mep"], spec=member.spec)
    assert pool.spec == flipped and pool.bf16 == flipped["model"]["bf16"]
    state, kept = agent.state_dict(), pool.member(0).state_dict()
    assert all(torch.equal(state[k], kept[k]) for k in state)
    other = Policy({**flipped, "num_actions": 7})  # any other difference is another network
    with pytest.raises(ValueError, match="differs from the pool's member spec"):
        PolicyPool.from_policies([agent, other], spec=member.spec)
