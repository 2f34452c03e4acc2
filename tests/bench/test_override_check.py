"""A suite's ``overrides`` replace what an algorithm sets for its runs, in every job: the bench plan
says which (``zsceval.bench.override_check``). The case that needed it: ``overcooked-s12-grid-h1e8``
sets SP's shaping horizon, 1e8, and with it a stage-2 ego's (its 5e7 env steps); a stage-1
population takes it as each member's (``Algorithm.preset_derived``: 5 x 1e8 for 5 members)."""

from pathlib import Path

from click.testing import CliRunner

from zsceval.bench.override_check import format_overridden, overridden_additions, overridden_settings
from zsceval.bench.plan import build_phases
from zsceval.bench.suite import load_suite
from zsceval.cli import main
from zsceval.envs.scenarios import env_flags

SUITES = Path(__file__).resolve().parents[2] / "benchmarks" / "suites"


def additions(algo, overrides, steps=50_000_000):
    flags = {"run.algo": algo, **env_flags("blocked_corridor"), "run.total_steps": steps}
    return overridden_additions(preset="quick", overrides=["population.size=12", *overrides], **flags)


def test_overridden_additions_name_the_stage2_runs_only():
    h = ["shaping.horizon=100000000"]
    # stage 1 stretches the horizon it is given over its 5 members: the override is its input
    assert additions("mep-stage1", h) == []
    assert additions("fcp", h) == [("shaping.horizon", 5e7, 1e8)]  # stage 2: over its own run
    assert additions("sp", h, 10_000_000) == []  # nothing of SP's own
    assert additions("mep-stage1", []) == []
    assert additions("fcp", ["shaping.horizon=50000000"]) == []  # the same value: nothing replaced


def test_the_plan_lists_what_the_suite_replaces():
    suite = load_suite(SUITES / "overcooked-s12-grid-h1e8.yaml", algorithms=["sp", "fcp"],
                       layouts=["blocked_corridor"])  # fmt: skip
    rows = overridden_settings(build_phases(suite)[0], suite.overrides)
    assert rows == [("fcp", "shaping.horizon", 5e7, 1e8)]
    assert "fcp: shaping.horizon 50,000,000 -> 100,000,000" in format_overridden(rows)
    plain = load_suite(SUITES / "overcooked-s12-grid.yaml", algorithms=["sp", "fcp", "hsp"],
                       layouts=["blocked_corridor"])  # fmt: skip
    # HSP's algo.k = 6 is an algo_overrides entry (it names its algorithm): not listed
    assert overridden_settings(build_phases(plain)[0], plain.overrides) == []
    assert format_overridden([]) == ""


def test_bench_plan_prints_it(tmp_path):
    res = CliRunner().invoke(main, ["bench", "--suite", str(SUITES / "overcooked-s12-grid-h1e8.yaml"),
                                    "--layouts", "blocked_corridor", "--algos", "sp,mep",
                                    "--out", str(tmp_path / "b"), "--plan"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "overrides replace what these algorithms set for their runs" in res.output
    assert "mep: shaping.horizon 50,000,000 -> 100,000,000" in res.output
    assert "mep-stage1: shaping.horizon" not in res.output
