"""Jobs declared by the algorithm: multi-stage plug-ins run through `zsceval bench` and the executors."""

import json

import pytest
import yaml

from zsceval import registry
from zsceval.bench import run as bench_run
from zsceval.bench.plan import build_phases
from zsceval.bench.suite import SuiteError, load_suite
from zsceval.execution import run_jobs
from zsceval.rl.algorithm import Algorithm

SUITE = """
name: stages
seed: 0
layouts: [cramped_room]
algorithms: [two_stage_a, two_stage_b]
ego_seeds: 1
ego_steps: 800
preset: quick
overrides: [env.num_envs=8, env.horizon=100, ppo.rollout_length=100, run.eval_episodes=2]
partners:
  candidates: 2
  candidate_steps: 800
  checkpoints: 2
  feature_episodes: 2
  k: 1
  mid_br_steps: 800
  dpp_samples: 10
  min_return: -1
evaluation:
  episodes: 2
"""


class TwoStage(Algorithm):
    """Stage 1: a self-play partner shared by both plug-ins; stage 2: the ego, a BR to it."""

    @classmethod
    def jobs(cls, ctx):
        partner = ctx.train_job(f"{ctx.layout}/populations/sp_s{ctx.seed}", algo="sp", steps=800)
        return [partner, ctx.train_job(algo="br", algo_inputs={"partner": partner.id})]


class NoEgo(Algorithm):
    """Declares no job with its ego id."""

    @classmethod
    def jobs(cls, ctx):
        return [ctx.train_job(f"{ctx.layout}/elsewhere")]


@pytest.fixture
def plugins():
    registry.names()
    for name, cls in (("two_stage_a", TwoStage), ("two_stage_b", TwoStage), ("no_ego", NoEgo)):
        registry.register(name, cls=type(name, (cls,), {"__doc__": cls.__doc__}))
    yield
    for name in ("two_stage_a", "two_stage_b", "no_ego"):
        registry._registry.pop(name, None)


def test_multi_stage_jobs_share_a_stage_and_feed_the_ego(plugins, tmp_path):
    (tmp_path / "s.yaml").write_text(SUITE)
    suite = load_suite(tmp_path / "s.yaml")
    phases, infos = build_phases(suite)
    first = {j.id: j for j in phases[0]}
    shared = "cramped_room/populations/sp_s1000"
    assert shared in first  # declared by both algorithms, listed once
    assert sum(j.id == shared for j in phases[0]) == 1
    egos = [e.id for e in infos["cramped_room"].egos]
    assert egos == ["cramped_room/egos/two_stage_a/s0", "cramped_room/egos/two_stage_b/s0"]
    ego = first[egos[0]]
    assert ego.needs == (shared,) and ego.params["algo"] == "br"
    jobs = [first[shared], first[egos[0]], first[egos[1]]]
    run_jobs(jobs, tmp_path / "out", progress=False)
    run = tmp_path / "out" / egos[0] / "run"
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    assert cfg["algo"]["partner"] == str(tmp_path / "out" / shared / "run")
    assert json.loads((run / "eval.json").read_text())["eval_seats"] == ["br", "partner"]
    assert len(list((tmp_path / "out" / "cramped_room" / "populations").iterdir())) == 1


def test_a_plugin_without_its_ego_job_is_refused(plugins, tmp_path):
    (tmp_path / "s.yaml").write_text(SUITE.replace("[two_stage_a, two_stage_b]", "[no_ego]"))
    with pytest.raises(SuiteError, match="exactly one job with id 'cramped_room/egos/no_ego/s0'"):
        build_phases(load_suite(tmp_path / "s.yaml"))


def test_bench_passes_retries_to_the_executor(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from zsceval.bench import suite as bench_mod_suite
    from zsceval.cli import main

    seen = {}

    def fake_run_jobs(jobs, root, **kw):
        seen.update(kw)
        raise bench_mod_suite.SuiteError("stop here")

    monkeypatch.setattr(bench_run, "run_jobs", fake_run_jobs)
    (tmp_path / "s.yaml").write_text(SUITE.replace("[two_stage_a, two_stage_b]", "[sp]"))
    args = ["bench", "--suite", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o"), "--no-progress"]
    res = CliRunner().invoke(main, [*args, "--executor", "process", "--retries", "3"])
    assert seen["retries"] == 3 and seen["executor"] == "process" and "stop here" in res.output
    res = CliRunner().invoke(main, [*args, "--retries", "-1"])
    assert res.exit_code != 0 and "-1" in res.output
    # the bench states every ego's budget before it starts
    suite = SUITE.replace("[two_stage_a, two_stage_b]", "[sp, e3t, fcp]") + "algo_ego_steps:\n  fcp: 4000\n"
    (tmp_path / "s.yaml").write_text(suite)
    res = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "o2")])
    assert "ego env steps: sp, e3t 800; fcp 4,000" in res.output, res.output
