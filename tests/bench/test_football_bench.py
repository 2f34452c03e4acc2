"""The ZSC-Eval pipeline on Football: the suites, the partner-pair BR jobs, and (slow, needs
gfootball) a whole tiny bench through the CLI."""

import json

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from zsceval.bench.plan import _partner_set_br_jobs, build_phases
from zsceval.bench.suite import load_suite
from zsceval.evaluation.combinations import num_seat_combinations


@pytest.mark.parametrize("name", ["football", "football-quick"])
def test_football_suites_load_and_build(name):
    suite = load_suite(name)
    assert suite.layouts == ("academy_3_vs_1_with_keeper",)
    phases, infos = build_phases(suite)
    pb = suite.budget("football")
    assert len(infos["academy_3_vs_1_with_keeper"].candidates) == pb.candidates
    train = phases[0][0]
    assert train.params["algo"] == "biased" and len(train.params["algo_options"]["weights"]) == 8


def test_one_br_job_per_pair_of_partners():
    suite = load_suite("football-quick")
    jobs = _partner_set_br_jobs(suite, "academy_3_vs_1_with_keeper", ["c001", "c004"])
    assert sorted(jobs) == sorted(
        [
            "c001_final+c001_mid", "c001_final+c004_final", "c001_final+c004_mid",
            "c001_mid+c004_final", "c001_mid+c004_mid", "c004_final+c004_mid",
        ]
    )  # fmt: skip
    job = jobs["c001_mid+c004_final"]
    assert job.params["algo"] == "br" and job.params["steps"] == suite.budget("football").mid_br_steps
    lay = "academy_3_vs_1_with_keeper"
    assert job.params["partner_refs"] == [
        [f"{lay}/candidates/c001/train", f"{lay}/candidates/c001/evaluate", "mid"],
        [f"{lay}/candidates/c004/train", f"{lay}/candidates/c004/evaluate", "final"],
    ]
    assert set(job.needs) == {
        f"{lay}/candidates/{c}/{k}" for c in ("c001", "c004") for k in ("train", "evaluate")
    }


@pytest.mark.slow
def test_a_tiny_football_bench_runs_end_to_end(tmp_path):
    pytest.importorskip("gfootball.env", reason="pip install --no-build-isolation gfootball==2.10.2")
    from zsceval.cli import main

    suite = {
        "name": "football-tiny", "seed": 0, "layouts": ["football"], "algorithms": ["sp"],
        "ego_seeds": 1, "ego_steps": 400, "preset": "quick", "device": "cpu",
        "overrides": ["run.num_threads=1", "env.num_envs=2", "env.num_workers=2", "ppo.rollout_length=100",
                      "run.eval_episodes=2"],
        "partners": {"candidates": 2, "candidate_steps": 1600, "checkpoints": 2, "feature_episodes": 1,
                     "k": 1, "mid_br_steps": 200, "dpp_samples": 100, "min_return": -1,
                     "weight_sampling": "random"},
        "evaluation": {"episodes": 1, "human_proxy": False},
    }  # fmt: skip
    path = tmp_path / "football-tiny.yaml"
    path.write_text(yaml.safe_dump(suite))
    out = tmp_path / "bench"
    res = CliRunner().invoke(main, ["bench", "--suite", str(path), "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    results = pd.read_parquet(out / "results.parquet")
    brs = pd.read_parquet(out / "br_returns.parquet")
    combos = num_seat_combinations(2, 3)  # k = 1: one candidate's final and mid checkpoints
    assert results["partner"].nunique() == combos == 18 and set(brs["partner"]) == set(results["partner"])
    assert results["partner"].str.count("ego").between(1, 2).all()
    manifest = json.loads((out / "academy_3_vs_1_with_keeper/partners/set/manifest.json").read_text())
    assert len(manifest["partners"]) == 2 and len(manifest["combination_brs"]) == 1
    assert "BR-Prox" in res.output
