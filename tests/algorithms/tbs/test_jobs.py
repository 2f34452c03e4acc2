"""The TBS jobs' options and envs: the choice of k (``algo.k_rule``, ``algo.fixed_k``) from the
command line to the ``tbs.cluster`` job, and the evaluation env of every variant (the chain's view
radius)."""

import dataclasses
import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from zsceval import registry
from zsceval.algorithms.tbs import jobs as tbs_jobs
from zsceval.execution.jobs import JobInputError
from zsceval.rl.config import ConfigError

# a measured counter_circuit pool (tests/algorithms/tbs/test_stsc.py, _identical_blocks_pool): the paper's
# rule takes k = 5, Zelnik-Manor's normalized rule k = 6
CC_J = np.zeros((10, 10))
for _i, _r in [(0, 240), (1, 220), (7, 180), (9, 180)]:
    CC_J[_i, _i] = _r
CC_J[1, 3] = 20
CC_J[np.ix_([3, 4], [3, 4])] = 180


def _context(*overrides: str):
    """The job context ``zsceval train --algo tbs --layout counter_circuit --set ...`` builds."""
    from zsceval.bench.chain import _context as chain_context

    params = {"algo": "tbs", "layout": "counter_circuit", "seed": 0, "steps": None, "preset": "quick",
              "device": "cpu", "overrides": list(overrides)}  # fmt: skip
    return chain_context(params)


def _cluster(jobs):
    (job,) = [j for j in jobs if j.kind == "tbs.cluster"]
    return job


def test_k_rule_and_fixed_k_reach_the_cluster_job_from_the_command_line():
    tbs = registry.get("tbs")
    default = _cluster(tbs.jobs(_context()))
    assert default.params["k_rule"] == "paper" and default.params["fixed_k"] == 0
    assert default.id == "counter_circuit/tbs/cluster_n6_s0"
    normalized = _cluster(tbs.jobs(_context("algo.k_rule=normalized")))
    assert normalized.params["k_rule"] == "normalized"
    assert normalized.id == "counter_circuit/tbs/cluster_n6_s0_normalized"  # its own stage folders
    fixed = _cluster(tbs.jobs(_context("algo.fixed_k=3")))
    assert (
        fixed.params["fixed_k"] == 3 and "fixed_k_assign" not in fixed.params
    )  # the job's default: rotation
    assert "k_rule" not in fixed.params and fixed.id.endswith("cluster_n6_s0_k3")
    kmeans = _cluster(tbs.jobs(_context("algo.fixed_k=3", "algo.fixed_k_assign=kmeans")))
    assert kmeans.params["fixed_k_assign"] == "kmeans" and kmeans.id.endswith("_k3_kmeans")
    brs = [j for j in tbs.jobs(_context("algo.fixed_k=3")) if j.kind == "tbs.brs"][0]
    assert brs.params["algo_job_dirs"] == {"clustering": fixed.id}  # the BRs read that clustering


@pytest.mark.parametrize(
    ("override", "match"),
    [
        ("algo.k_rule=largest", "algo.k_rule must be one of paper, normalized, got 'largest'"),
        ("algo.fixed_k_assign=gmm", "algo.fixed_k_assign must be one of rotation, kmeans, got 'gmm'"),
        ("algo.fixed_k=7", r"algo.fixed_k must be 0 \(STSC chooses k\) or a number of clusters 1 .. 6"),
        ("algo.fixed_k=-1", "algo.fixed_k must be 0"),
    ],
)
def test_invalid_clustering_options_are_refused_before_any_job_runs(override, match):
    with pytest.raises(ConfigError, match=match):
        registry.get("tbs").jobs(_context(override))


def test_the_train_command_refuses_an_unknown_k_rule(tmp_path):
    from click.testing import CliRunner

    from zsceval.cli import main

    out = tmp_path / "tbs"
    res = CliRunner().invoke(main, ["train", "--algo", "tbs", "--layout", "cramped_room", "--out", str(out),
                                    "--no-progress", "--set", "algo.k_rule=zelnik"])  # fmt: skip
    assert res.exit_code != 0
    assert "k_rule must be one of paper, normalized, got 'zelnik'" in res.output
    assert not list(out.rglob("DONE.json"))  # nothing trained


def _run_cluster_job(tmp_path, monkeypatch, J, **params):
    """The ``tbs.cluster`` job on given cross-play returns (the pool and the games stubbed out)."""
    n = J.shape[0]
    monkeypatch.setattr(tbs_jobs, "_pool", lambda run, device: ([object()] * n, [object()] * n))
    monkeypatch.setattr(tbs_jobs, "cross_play_returns", lambda *args, **kwargs: J)
    out = tmp_path / "cluster"
    out.mkdir()
    base = {"layout": "counter_circuit", "pool": "pool", "episodes": 1, "seed": 0}
    result = tbs_jobs.cluster_job({**base, **params}, out, {"pool": tmp_path})
    return result, json.loads((out / "clustering.json").read_text())


@pytest.mark.parametrize(
    ("params", "k", "labels"),
    [
        ({}, 5, [0, 1, 2, 1, 1, 2, 2, 3, 2, 4]),  # the paper's rule, the default
        ({"k_rule": "paper"}, 5, [0, 1, 2, 1, 1, 2, 2, 3, 2, 4]),
        ({"k_rule": "normalized"}, 6, [0, 1, 2, 3, 3, 2, 2, 4, 2, 5]),
        ({"fixed_k": 3}, 3, None),
        ({"fixed_k": 3, "fixed_k_assign": "kmeans"}, 3, None),
    ],
)
def test_cluster_job_applies_the_rule_of_k(tmp_path, monkeypatch, params, k, labels):
    result, written = _run_cluster_job(tmp_path, monkeypatch, CC_J, **params)
    assert result["k"] == written["k"] == k
    if labels is not None:
        assert written["labels"] == labels
    fixed = params.get("fixed_k")
    assert written["fixed_k"] == fixed
    assert written["k_rule"] == (None if fixed else params.get("k_rule", "paper"))
    assert written["fixed_k_assign"] == (params.get("fixed_k_assign", "rotation") if fixed else None)
    assert sorted(written["costs"]) == (["3"] if fixed else ["2", "3", "4", "5", "6"])


def test_cluster_job_keeps_the_diagonal_and_refuses_bad_options(tmp_path, monkeypatch):
    """Pairs that cooperate with nobody else stay clusters of their own: the job clusters S with
    s(A, A) = 1 kept (a zero diagonal merges pairs 1, 4 and 5; tests/algorithms/tbs/test_stsc.py)."""
    J = np.array([
        [200, 0, 200, 160, 0, 0], [0, 200, 0, 0, 40, 0], [160, 0, 160, 20, 20, 0],
        [140, 0, 140, 140, 0, 0], [0, 0, 0, 0, 220, 0], [0, 20, 0, 0, 0, 180],
    ], dtype=float)  # fmt: skip
    _, written = _run_cluster_job(tmp_path, monkeypatch, J)
    assert written["labels"] == [0, 1, 0, 0, 2, 3]
    with pytest.raises(JobInputError, match="k_rule must be one of paper, normalized, got 'max'"):
        tbs_jobs.cluster_job({"k_rule": "max", "pool": "p", "layout": "x", "episodes": 1, "seed": 0},
                             tmp_path, {"p": tmp_path})  # fmt: skip
    with pytest.raises(JobInputError, match=r"fixed_k must be .* 1 .. 6 \(the pool's pairs\), got 9"):
        tbs_jobs.cluster_job({"fixed_k": 9, "pool": "p", "layout": "x", "episodes": 1, "seed": 0},
                             tmp_path, {"p": tmp_path})  # fmt: skip


class _Agent(torch.nn.Module):
    """A stand-in for a loaded agent (never acts: ``play_games`` is spied on)."""


def test_every_variant_and_the_oracle_play_the_chains_partial_view(tmp_path, monkeypatch):
    """``tbs.evaluate`` in the partial variant: TBS, BR, Random, CEM, CBPR, Hypothesis and the Oracle all
    play an
    env with the chain's view radius (before the fix only the Oracle did: the variants played
    ``play_games(layout, ...)``, a fully observable env)."""
    import zsceval.evaluation.matches as matches
    import zsceval.rl.checkpoint as checkpoint

    H, E, radius = 2, 3, 2
    monkeypatch.setattr(tbs_jobs, "_pool", lambda run, device: ([_Agent()] * H, [_Agent()] * H))
    monkeypatch.setattr(checkpoint, "load_agent", lambda run, name, device: (_Agent(), {}))
    monkeypatch.setattr(tbs_jobs, "plot_tbs", lambda *args, **kwargs: None)
    calls = []

    def spy(env, policies, assignment, **kwargs):
        calls.append((env, len(policies), assignment.clone()))
        G = assignment.shape[0]
        return SimpleNamespace(sparse=torch.full((G,), 20.0))

    monkeypatch.setattr(matches, "play_games", spy)
    params = {"layout": "cramped_room", "heldout": "h", "ego": "e", "episodes": E, "seed": 0,
              "view_radius": radius}  # fmt: skip
    (tmp_path / "out").mkdir()
    tbs_jobs.evaluate_job(params, tmp_path / "out", {"h": tmp_path, "e": tmp_path})
    assert len(calls) == 7  # six variants and the Oracle
    for env, _, assignment in calls:
        assert not isinstance(env, str), "a variant played a layout name: a fully observable env"
        assert env.view_radius == radius
        assert env.num_envs == assignment.shape[0]
    assert [a.shape[0] for _, _, a in calls] == [2 * H * E] * 6 + [H * E]  # both seats; the Oracle once
    # and the fully observable chain plays fully observable envs
    calls.clear()
    (tmp_path / "full").mkdir()
    full = {k: v for k, v in params.items() if k != "view_radius"}
    tbs_jobs.evaluate_job(full, tmp_path / "full", {"h": tmp_path, "e": tmp_path})
    assert len(calls) == 7 and all(env.view_radius == 0 for env, _, _ in calls)
    assert all(env.horizon == 400 for env, _, _ in calls)  # the layout's episode length
    calls.clear()  # and a chain trained at another horizon is evaluated at it
    tbs_jobs.evaluate_job({**full, "horizon": 60}, tmp_path / "full", {"h": tmp_path, "e": tmp_path})
    assert len(calls) == 7 and all(env.horizon == 60 for env, _, _ in calls)


def test_partial_chain_gives_the_evaluation_its_view_radius():
    ctx = dataclasses.replace(_context(), ego_options={"partial": True, "view_radius": 3})
    (evaluate,) = [j for j in registry.get("tbs").jobs(ctx) if j.kind == "tbs.evaluate"]
    assert evaluate.params["view_radius"] == 3


def test_tom_summary_says_whether_a_model_learned():
    # early stopping: judged by the kept epoch's held-out loss against 0.9 x the constant predictor's
    curve = {"loss": [3.0, 2.0], "baseline": [3.54], "episodes": [224], "val_epoch": [0, 1, 2],
             "val_loss": [26.4, 3.20, 3.10], "best_epoch": [2]}  # fmt: skip
    assert tbs_jobs._tom_summary(curve)["learned"]  # 3.10 < 0.9 x 3.54 = 3.186
    failed = {**curve, "val_loss": [26.4, 3.60, 3.59]}  # the larger-budget chain's cluster 1
    summary = tbs_jobs._tom_summary(failed)
    assert summary["learned"] is False and summary["heldout_loss"] == 3.59
    assert not tbs_jobs._tom_summary({"loss": [3.5], "baseline": [3.54], "episodes": [8]})["learned"]
    lines = tbs_jobs.unlearned_tom_models({"cluster_0": tbs_jobs._tom_summary(curve), "cluster_1": summary})
    assert len(lines) == 1 and "cluster_1" in lines[0] and "3.590" in lines[0] and "3.540" in lines[0]
    # a summary from before `learned` existed is judged from its stored losses
    legacy = {
        "global": {"baseline": 2.0, "final_loss": 0.3},
        "cluster_0": {"baseline": 2.0, "heldout_loss": 1.95},
    }
    assert [line.split()[3] for line in tbs_jobs.unlearned_tom_models(legacy)] == ["cluster_0"]
