"""No evaluation partner inside any method's training: HSP's own candidates avoid the shipped sets'
(weights, seed), every training job refuses an evaluation partner's checkpoint (a planted copy or a
re-saved one), the shipped manifests record each partner's candidate, and HSP at population 12
is ZSC-Eval's 6 biased agents + 6 MEP checkpoints in the paper-protocol suites."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zsceval.bench.plan import build_phases
from zsceval.bench.suite import load_suite
from zsceval.evaluation.exclusion import OWN_CANDIDATE_SEED, evaluation_partners, training_guard
from zsceval.evaluation.manifest import load_manifest
from zsceval.evaluation.shipped_sets import list_sets, resolve_set
from zsceval.rl.checkpoint import RefusedCheckpointError, load_agent, save_checkpoint

REPO = Path(__file__).resolve().parents[2]
SCORED_SETS = ("coordination_ring", "asymmetric_advantages", "forced_coordination")
"""The layouts overcooked-quick-sets-scores scores on a shipped set (HSP trains its own candidates)."""


def _pairs(jobs):
    return {
        (tuple(round(x, 5) for x in j.params["algo_options"]["weights"]), j.params["seed"])
        for j in jobs
        if j.kind == "train" and j.params.get("algo") == "biased"
    }


def _set_pairs(name):
    manifest = load_manifest(resolve_set(name).manifest)
    return {(tuple(round(x, 5) for x in p.candidate.weights), p.candidate.seed) for p in manifest.partners}


@pytest.mark.parametrize("layout", SCORED_SETS)
def test_the_shipped_set_hsp_plan_shares_no_weights_and_seed_with_the_set(layout):
    suite = load_suite("overcooked-quick-sets-scores", algorithms=["hsp"], layouts=[layout])
    phases, _ = build_phases(suite)
    own = _pairs(j for phase in phases for j in phase)
    assert len(own) == 8  # HSP trains its own candidates beside a shipped set
    evaluation = _set_pairs(f"zsceval:{layout}@1")
    assert not own & evaluation
    assert not {w for w, _ in own} & {w for w, _ in evaluation}  # not even the weight vector
    assert not {s for _, s in own} & {s for _, s in evaluation}
    assert min(s for _, s in own) >= OWN_CANDIDATE_SEED


def test_hsp_trained_alone_avoids_every_installed_evaluation_partner():
    from zsceval.bench.chain import chain_jobs

    params = {"algo": "hsp", "layout": "coordination_ring", "seed": 0, "steps": 100_000,
              "preset": "quick", "overrides": [], "device": "cpu"}  # fmt: skip
    own = _pairs(chain_jobs(params))
    assert own
    for entry in list_sets():
        if entry.layout == "coordination_ring" and entry.split == "test":
            assert not {w for w, _ in own} & {w for w, _ in _set_pairs(entry.full_name)}


def test_every_partner_of_every_newest_shipped_set_records_its_candidate():
    newest = {}
    for entry in list_sets():
        key = (entry.label, entry.name, entry.split)
        newest[key] = max(newest.get(key, entry), entry, key=lambda e: e.version)
    assert newest
    for entry in newest.values():
        manifest = load_manifest(entry.manifest)
        for p in manifest.partners:
            c = p.candidate
            assert c is not None, f"{entry.full_name}: {p.id} has no candidate record"
            assert len(c.weights) > 1 and isinstance(c.seed, int) and c.layout == manifest.layout
            assert c.suite == entry.provenance.suite
            meta = json.loads(manifest.resolve(p.checkpoint).read_text())
            assert meta["seed"] == c.seed  # the exported checkpoint's own record of its training seed
    # the records agree with the sets' provenance (the script that wrote them, in check mode)
    script = REPO / "benchmarks" / "sets" / "backfill_manifests.py"
    res = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def _partner(layout="coordination_ring"):
    entry = resolve_set(f"zsceval:{layout}@1")
    manifest = load_manifest(entry.manifest)
    p = manifest.partners[0]
    return entry, p, manifest.resolve(p.checkpoint).parent


def test_the_guard_refuses_a_planted_copy_of_an_evaluation_partner_naming_both(tmp_path):
    entry, p, ckpt = _partner()
    planted = tmp_path / "runs" / "hsp_candidates" / "c000" / "train" / "run" / "checkpoints" / ckpt.name
    shutil.copytree(ckpt, planted)
    load_agent(planted)  # outside training: fine (evaluation loads partners)
    with training_guard("coordination_ring"):
        with pytest.raises(RefusedCheckpointError) as err:
            load_agent(planted)
    message = str(err.value)
    assert str(planted) in message and p.id in message and entry.full_name in message
    load_agent(planted)  # the guard ends with its block


def test_the_guard_refuses_a_re_saved_copy_by_its_parameters(tmp_path):
    """Another file (new meta.json: other steps and seed), the same parameters: still refused."""
    entry, p, ckpt = _partner()
    agent, meta = load_agent(ckpt)
    path = save_checkpoint(tmp_path / "copy", 12_345, {"biased": agent}, {"layout": "coordination_ring",
                           "env_spec": meta["env_spec"], "seed": 77, "ego": "biased"})  # fmt: skip
    with training_guard("coordination_ring"), pytest.raises(RefusedCheckpointError, match=p.id):
        load_agent(path)
    with training_guard("cramped_room"):  # another layout's guard holds other partners
        load_agent(path)


def test_a_training_job_with_an_evaluation_partner_is_refused(tmp_path):
    """A BR job against a planted copy of an evaluation partner stops before training, naming both."""
    from zsceval.execution.jobs import JobInputError
    from zsceval.training.jobs import train_job

    entry, p, ckpt = _partner()
    planted = tmp_path / "elsewhere" / ckpt.name
    shutil.copytree(ckpt, planted)
    params = {"algo": "br", "layout": "coordination_ring", "seed": 0, "steps": 2_000, "preset": "quick",
              "device": "cpu", "overrides": ["env.num_envs=8", "run.eval_episodes=0"],
              "algo_options": {"partner": str(planted), "partner_policy": "biased"}}  # fmt: skip
    out = tmp_path / "job"
    out.mkdir()
    with pytest.raises(JobInputError) as err:
        train_job(params, out, {})
    assert p.id in str(err.value) and entry.full_name in str(err.value)
    assert not list((out / "run").glob("checkpoints/step_*"))


def test_evaluation_partners_are_the_test_splits_of_every_version():
    found = {(e.source, e.partner_id) for e in evaluation_partners("random3")}  # the alias
    assert {s for s, _ in found} == {"zsceval:counter_circuit@1/test", "zsceval:counter_circuit@2/test"}
    assert len(found) == 6 + 20


PAPER_PROTOCOL = [
    ("overcooked-s12", 6),
    ("overcooked-s12-grid", 6),
    ("overcooked-s12-grid-h1e8", 6),
    ("overcooked-s12-hsp-cc", 6),
]
QUICK = [("overcooked-quick-sets-scores", 3), ("overcooked-quick", 3)]


@pytest.mark.parametrize(("suite", "k"), PAPER_PROTOCOL + QUICK)
def test_hsp_at_population_12_is_6_plus_6_in_the_paper_protocol_suites(suite, k):
    from zsceval.algorithms.hsp import HSP
    from zsceval.rl.config import population_size, resolve_config

    s = load_suite(suite, algorithms=["hsp"])
    phases, _ = build_phases(s)
    ego = next(j for phase in phases for j in phase if j.id.endswith("egos/hsp/s0"))
    cfg = resolve_config(preset=ego.params["preset"], overrides=ego.params["overrides"],
                         **{"run.algo": "hsp", "env.layout": s.layouts[0]})  # fmt: skip
    size = population_size(cfg)
    biased = HSP.biased_count(size, int(cfg.algo.get("k", 0)))
    assert (size, biased) == (12, k)
    assert len(ego.params["algo_options"]["window"]) == (size - biased) // 3  # MEP members x 3 checkpoints
