"""Suite budgets: per-algorithm overrides, the env steps of every stage, the hours left."""

import pandas as pd
import pytest
from click.testing import CliRunner

from zsceval.bench import budget as bm_budget
from zsceval.bench import plan as bm_plan
from zsceval.bench import suite as bm_suite
from zsceval.bench.stages import format_budget
from zsceval.cli import main

SUITE = """
name: tiny-s12
seed: 0
layouts: [cramped_room]
algorithms: [sp, fcp, cole]
ego_seeds: 2
ego_steps: 1000
algo_ego_steps: {fcp: 5000, cole: 7000}
preset: quick
overrides: [population.size=6, population.stage1_steps=400, env.num_envs=4, env.horizon=100]
algo_overrides:
  cole: [population.size=9]
partners: {candidates: 3, candidate_steps: 2000, k: 2, mid_br_steps: 400, checkpoints: 2}
"""


@pytest.fixture
def suite_file(tmp_path):
    path = tmp_path / "tiny-s12.yaml"
    path.write_text(SUITE)
    return path


def test_algo_overrides_reach_only_that_algorithms_jobs(suite_file):
    suite = bm_suite.load_suite(suite_file)
    assert suite.to_dict()["algo_overrides"] == {"cole": ["population.size=9"]}
    egos = {j.id: j for j in bm_plan.build_phases(suite)[1]["cramped_room"].egos}
    assert egos["cramped_room/egos/cole/s0"].params["overrides"][-1] == "population.size=9"
    assert "population.size=9" not in egos["cramped_room/egos/fcp/s1"].params["overrides"]
    assert "population.size=9" not in egos["cramped_room/egos/sp/s0"].params["overrides"]
    assert bm_suite.load_suite(suite_file, algorithms=["sp"]).algo_overrides == ()  # left out with cole


def test_algo_option_overrides_reach_only_the_jobs_that_take_them(suite_file):
    """HSP's ``algo.min_return`` goes to its ego, not to the MEP stage-1 population it shares with
    MEP (which has no such option: it would refuse it, and would no longer be MEP's job); TrajeDi's
    ``algo.jsd_weight`` goes to its stage-1 population, not to its ego. Before, both failed."""
    text = suite_file.read_text().replace("algorithms: [sp, fcp, cole]", "algorithms: [mep, hsp, trajedi]")
    text = text.replace("algo_ego_steps: {fcp: 5000, cole: 7000}", "algo_ego_steps: {hsp: 5000}")
    text = text.replace(
        "  cole: [population.size=9]",
        "  hsp: [algo.min_return=-1]\n  trajedi: [algo.jsd_weight=0.3]",
    )
    suite_file.write_text(text)
    static, layouts = bm_plan.build_phases(bm_suite.load_suite(suite_file))
    jobs = {j.id: j for phase in static for j in phase}
    jobs |= {j.id: j for j in layouts["cramped_room"].egos}
    assert jobs["cramped_room/egos/hsp/s0"].params["overrides"][-1] == "algo.min_return=-1"
    mep1 = jobs["cramped_room/stage1/mep-stage1"].params["overrides"]
    assert not any(o.startswith("algo.") for o in mep1)  # MEP's own job, shared with HSP
    assert jobs["cramped_room/stage1/trajedi-stage1"].params["overrides"][-1] == "algo.jsd_weight=0.3"
    assert "algo.jsd_weight=0.3" not in jobs["cramped_room/egos/trajedi/s1"].params["overrides"]
    # an option no job of the algorithm has is refused, naming the options there are
    suite_file.write_text(text.replace("algo.jsd_weight=0.3", "algo.jsd_wieght=0.3"))
    with pytest.raises(bm_suite.SuiteError, match=r"algo_overrides.trajedi: algo.jsd_wieght=0.3.*jsd_weight"):
        bm_plan.build_phases(bm_suite.load_suite(suite_file))
    # a non-option override of HSP reaches the shared MEP stage 1 too: a conflict, explained
    suite_file.write_text(text.replace("algo.min_return=-1", "algo.min_return=-1, ppo.lr=0.002"))
    with pytest.raises(bm_suite.SuiteError, match="mep-stage1.*suite's `overrides`"):
        bm_plan.build_phases(bm_suite.load_suite(suite_file))


def test_an_algo_override_the_plugin_replaces_is_refused(suite_file):
    """FCP sets each ego's sliding ``window`` itself, which wins over the suite's: refused, not dropped."""
    suite_file.write_text(
        suite_file.read_text().replace("cole: [population.size=9]", "fcp: ['algo.window=[0, 1]']")
    )
    with pytest.raises(
        bm_suite.SuiteError, match=r"fcp sets these options itself: window \(cramped_room/egos/fcp/s0: "
    ):
        bm_plan.build_phases(bm_suite.load_suite(suite_file))


def test_algo_overrides_errors_name_the_file_and_key(suite_file):
    text = suite_file.read_text()
    suite_file.write_text(text.replace("cole: [population.size=9]", "e3t: [population.size=9]"))
    with pytest.raises(
        bm_suite.SuiteError, match="algo_overrides names 'e3t'.*its algorithms: sp, fcp, cole"
    ):
        bm_suite.load_suite(suite_file)
    suite_file.write_text(text.replace("population.size=9]", "population.sise=9]"))
    with pytest.raises(bm_suite.SuiteError, match=r"tiny-s12.yaml: algo_overrides.cole: unknown config key"):
        bm_suite.load_suite(suite_file)
    suite_file.write_text(text.replace("cole: [population.size=9]", "cole: {population.size: 9}"))
    with pytest.raises(bm_suite.SuiteError, match="algo_overrides.cole must be a list"):
        bm_suite.load_suite(suite_file)


def test_env_step_budget_counts_every_training_stage(suite_file, tmp_path):
    suite = bm_suite.load_suite(suite_file)
    static = bm_plan.build_phases(suite)[0]
    budget = bm_budget.env_step_budget(suite, static).set_index("stage")
    # population 6 -> ceil(6 / 3 * 5 / 4) = 3 stage-1 members of 400 steps each
    assert budget.loc["candidates (biased agent + its BR)", ["jobs", "env_steps"]].tolist() == [3, 6000]
    assert budget.loc["stage 1: fcp-stage1", "env_steps"] == 1200
    assert budget.loc["ego: sp", ["jobs", "env_steps"]].tolist() == [2, 2000]
    assert budget.loc["ego: fcp", "env_steps"] == 10000 and budget.loc["ego: cole", "env_steps"] == 14000
    assert budget.loc["mid-checkpoint BRs", ["jobs", "env_steps"]].tolist() == [2, 800]
    assert budget["env_steps"].sum() == 6000 + 1200 + 2000 + 10000 + 14000 + 800
    assert budget["done_steps"].sum() == 0
    # what a folder holds: logged env steps of finished and unfinished runs, capped at each budget
    root = tmp_path / "out"
    for job, steps in [("cramped_room/egos/sp/s0", 1000), ("cramped_room/candidates/c001/train", 1500)]:
        run = root / job / "run"
        run.mkdir(parents=True)
        frame = pd.DataFrame({"env_steps": [steps // 2, steps], "wall_time_s": [1.0, 2.0]})
        frame.to_csv(run / "metrics.csv")
    br = root / "cramped_room" / "partners" / "mid_br" / "c000" / "run"
    br.mkdir(parents=True)
    pd.DataFrame({"env_steps": [9999], "wall_time_s": [4.0]}).to_csv(br / "metrics.csv")
    done = bm_budget.env_step_budget(suite, static, root).set_index("stage")
    assert done.loc["ego: sp", "done_steps"] == 1000
    assert done.loc["candidates (biased agent + its BR)", "done_steps"] == 1500
    assert done.loc["mid-checkpoint BRs", "done_steps"] == 400  # capped at its budget
    assert done["train_s"].sum() == 8.0


def test_budget_table_shows_share_done_and_hours():
    budget = pd.DataFrame({"stage": ["ego: sp", "ego: fcp"], "jobs": [2, 2],
                           "env_steps": [4_000_000, 10_000], "done_steps": [1_000_000, 0],
                           "train_s": [7200.0, 0.0], "busy_s": [3600.0, 0.0]})  # fmt: skip
    lines = format_budget(budget).splitlines()
    assert lines[0].split() == ["stage", "jobs", "env", "steps", "done", "train", "h", "core", "h"]
    assert lines[1].split() == ["ego:", "sp", "2", "4,000,000", "25%", "2.00", "1.00"]
    assert lines[-1].split() == ["total", "4", "4,010,000", "25%", "2.00", "1.00"]


def test_hours_left_from_the_folders_rate_or_the_assumed_one(suite_file):
    suite = bm_suite.load_suite(suite_file)
    budget = pd.DataFrame({"stage": ["a", "b"], "jobs": [1, 1], "env_steps": [2_000_000, 5_200_000],
                           "done_steps": [2_000_000, 0], "train_s": [900.0, 0.0],
                           "busy_s": [100.0, 0.0]})  # fmt: skip
    hours, how = bm_budget.estimate_hours(suite, budget, workers=2)
    assert hours == pytest.approx(5_200_000 / (20_000 * 2) / 3600) and "measured" in how
    budget["done_steps"] = [500_000, 0]  # too little to measure: the preset's assumed rate
    hours, how = bm_budget.estimate_hours(suite, budget)
    assert (
        hours == pytest.approx(6_700_000 / bm_budget.ASSUMED_RATES[("quick", "cpu")] / 3600)
        and "assumed" in how
    )


def test_hours_left_use_each_stages_own_rate_and_ignore_waiting(suite_file, tmp_path):
    suite = bm_suite.load_suite(suite_file)
    # a run that waited for its core: 1e6 steps in 1000 s of wall time, but its iterations ran at
    # 10k env steps/s when it had the core (the 90th percentile of the per-iteration rates)
    run = tmp_path / "run"
    run.mkdir()
    rates = [500.0] * 2 + [10_000.0] * 18
    steps, wall = [50_000 * (i + 1) for i in range(20)], [50.0 * (i + 1) for i in range(20)]
    frame = pd.DataFrame({"env_steps": steps, "wall_time_s": wall, "env_steps_per_s": rates})
    frame.to_csv(run / "metrics.csv")
    done, secs, busy = bm_budget.trained_steps(run)
    assert (done, secs) == (1_000_000, 1000.0) and busy == pytest.approx(100.0)
    # a log with each iteration's CPU seconds sums them (the rates are then not needed)
    frame["cpu_s"] = [4.0] * 20
    frame.to_csv(run / "metrics.csv")
    assert bm_budget.trained_steps(run) == (1_000_000, 1000.0, 80.0)
    # a log without per-iteration rates falls back to its wall time
    pd.DataFrame({"env_steps": [10], "wall_time_s": [2.0]}).to_csv(run / "metrics.csv")
    assert bm_budget.trained_steps(run) == (10, 2.0, 2.0)
    # stage a trains at 20k/s, stage b (measured on 200k steps) at 5k/s, stage c has no runs yet
    budget = pd.DataFrame({"stage": ["a", "b", "c"], "jobs": [1, 1, 1],
                           "env_steps": [2_000_000, 1_200_000, 2_100_000],
                           "done_steps": [1_000_000, 200_000, 0], "train_s": [900.0, 900.0, 0.0],
                           "busy_s": [50.0, 40.0, 0.0]})  # fmt: skip
    overall = 1_200_000 / 90.0
    hours, how = bm_budget.estimate_hours(suite, budget, workers=1)
    expected = 1_000_000 / 20_000 + 1_000_000 / 5_000 + 2_100_000 / overall
    assert hours == pytest.approx(expected / 3600) and "per stage" in how
    assert bm_budget.estimate_hours(suite, budget, workers=2)[0] == pytest.approx(expected / 2 / 3600)


def test_shipped_s12_suite_has_the_reference_budgets():
    suite = bm_suite.load_suite("overcooked-s12")
    budget = bm_budget.env_step_budget(suite, bm_plan.build_phases(suite)[0]).set_index("stage")
    assert budget.loc["candidates (biased agent + its BR)", "jobs"] == 36
    assert budget.loc["mid-checkpoint BRs", "env_steps"] == 10 * 10_000_000
    assert budget.loc["stage 1: mep-stage1", "env_steps"] == 5 * 10_000_000
    for algo in ("fcp", "mep", "trajedi", "hsp", "cole"):
        assert budget.loc[f"ego: {algo}", "env_steps"] == 3 * 50_000_000
    assert budget.loc["ego: sp", "env_steps"] == budget.loc["ego: e3t", "env_steps"] == 3 * 10_000_000
    assert budget["env_steps"].sum() == 1_420_000_000


def test_plan_prints_the_budget_and_runs_nothing(suite_file, tmp_path):
    out = tmp_path / "bench"
    res = CliRunner().invoke(main, ["bench", "--suite", str(suite_file), "--out", str(out), "--plan",
                                    "--device", "cuda"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "34,000" in res.output and "training left: about" in res.output
    assert "assumed for preset 'quick' on cuda (nothing has run yet)" in res.output  # every device
    assert "left h" in res.output and " 0.00\n" not in res.output and "about 0.0 h" not in res.output
    assert not out.exists()


def test_plan_prints_each_layouts_env_steps_and_hours():
    """A suite of several layouts: one line per layout, whose env steps add up to the total."""
    res = CliRunner().invoke(main, ["bench", "--suite", "overcooked-s12-grid", "--layouts",
                                    "coordination_ring,forced_coordination", "--plan"])  # fmt: skip
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    total = int(next(x for x in lines if x.startswith("total")).split()[2].replace(",", ""))
    per = {
        x.split()[0]: x.split()
        for x in lines[lines.index(next(x for x in lines if x.startswith("per layout"))) + 1 :][:2]
    }
    assert set(per) == {"coordination_ring", "forced_coordination"}
    steps = {k: int(v[1].replace(",", "")) for k, v in per.items()}
    assert (
        sum(steps.values()) == total and steps["coordination_ring"] > steps["forced_coordination"]
    )  # 52 > 30
    assert all(float(v[3]) > 0 for v in per.values())


def test_hours_are_never_zero_for_work_that_is_left():
    from zsceval.bench.stages import format_left

    budget = pd.DataFrame({"stage": ["a", "b"], "jobs": [1, 1], "env_steps": [3_000, 0],
                           "done_steps": [0, 0], "train_s": [0.0, 0.0], "busy_s": [0.0, 0.0]})  # fmt: skip
    hours, how, per_stage = bm_budget.hours_left("quick", "cpu", budget)
    assert 0 < hours < 0.01 and list(map(bm_budget.format_hours, per_stage)) == ["<0.01", "0"]
    assert format_left(hours, how).startswith("training left: about 1 min")
    assert format_left(0.0, how).startswith("training left: none")
    _, how, _ = bm_budget.hours_left("quick", "mps", budget)
    assert "no figure for this pair" in how


def test_plan_estimates_for_the_workers_of_the_bench_running_in_its_folder(suite_file, tmp_path, monkeypatch):
    import json
    import os
    import socket

    from zsceval.execution.locks import LOCK_NAME

    seen = []
    real = bm_budget.hours_left
    monkeypatch.setattr(bm_budget, "hours_left", lambda p, d, b, w=1: seen.append(w) or real(p, d, b, w))
    out = tmp_path / "bench"
    out.mkdir()
    lock = {"pid": os.getpid(), "host": socket.gethostname(), "started": "2026-11-28 10:00:00",
            "command": "zsceval bench", "executor": "process", "workers": 2}  # fmt: skip
    (out / LOCK_NAME).write_text(json.dumps(lock))
    plan = ["bench", "--suite", str(suite_file), "--out", str(out), "--plan"]
    res = CliRunner().invoke(main, plan)
    assert res.exit_code == 0, res.output
    assert f"pid {os.getpid()}" in res.output and "its --executor process --workers 2" in res.output
    # given on the command line, --workers wins; without a running bench, the defaults (1 job)
    res = CliRunner().invoke(main, [*plan, "--executor", "process", "--workers", "3"])
    assert res.exit_code == 0 and "for the --executor/--workers given" in res.output
    (out / LOCK_NAME).unlink()
    res = CliRunner().invoke(main, plan)
    assert res.exit_code == 0 and "a bench runs" not in res.output
    assert seen == [2, 3, 1]
