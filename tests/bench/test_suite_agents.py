"""A suite's `agents:` entry: external agents scored on each layout's partner set without
training, listed beside the algorithms in the tables and the report."""

import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

SUITE = """
name: agents
seed: 0
layouts: [cramped_room]
algorithms: []
agents:
  stay: {module}:Stay
layout_partner_sets:
  cramped_room: zsceval:cramped_room
evaluation:
  episodes: 1
"""


@pytest.fixture
def module(tmp_path, monkeypatch):
    name = f"suite_agents_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(
        textwrap.dedent("""
        import numpy as np

        class Stay:
            def act(self, obs, avail):
                return np.full(obs.shape[0], 4, dtype=np.int64)
    """)
    )
    monkeypatch.chdir(tmp_path)
    yield name
    sys.modules.pop(name, None)


def test_a_suite_scores_its_external_agents_on_the_partner_set_without_training(module, tmp_path):
    from zsceval.bench.report import summarize
    from zsceval.bench.run import run_bench
    from zsceval.bench.suite import load_suite

    path = tmp_path / "agents.yaml"
    path.write_text(SUITE.format(module=module))
    suite = load_suite(path)
    assert suite.agents == (("stay", f"{module}:Stay"),)
    tables = run_bench(suite, tmp_path / "out", progress=False, log=lambda *_: None)
    assert not (tmp_path / "out/cramped_room/egos").exists()  # nothing trained
    results = pd.read_parquet(tables["results"])
    assert set(results["algorithm"]) == {"stay"} and set(results["ego_seed"]) == {0}
    # every partner of the set (final and mid checkpoints), in both seats, one episode
    assert len(results) == results["partner"].nunique() * 2 and set(results["seat"]) == {0, 1}
    unhelpful = pd.read_parquet(tables["unhelpful"])  # with the unhelpful partners too
    assert set(unhelpful["algorithm"]) == {"stay"} and unhelpful["partner"].nunique() == 2
    summary = summarize(results, pd.read_parquet(tables["br_returns"]), reps=50)
    assert "stay" in set(summary["algorithm"])  # the report's BR-Prox table lists it as an algorithm


@pytest.mark.parametrize(
    ("agents", "needle"),
    [
        ("  sp: {module}:Stay", "agents.sp: an algorithm has this name"),
        ("  stay: not-a-spec", "agents.stay: 'not-a-spec' is not MODULE:ATTR"),
        ("  a/b: {module}:Stay", "agents.a/b: a name is letters"),
    ],
)
def test_a_bad_agents_entry_is_one_error_naming_it(module, tmp_path, agents, needle):
    from zsceval.bench.suite import SuiteError, load_suite

    path = tmp_path / "agents.yaml"
    path.write_text(SUITE.replace("  stay: {module}:Stay", agents).format(module=module))
    with pytest.raises(SuiteError, match=needle):
        load_suite(path)


def test_changing_an_agent_is_a_changed_setting_adding_one_is_not(module, tmp_path):
    import dataclasses

    from zsceval.bench.suite import SUITE_RECORD, SuiteConflictError, check_suite_record, load_suite

    path = tmp_path / "agents.yaml"
    path.write_text(SUITE.format(module=module))
    suite = load_suite(path)
    out = tmp_path / "out"
    out.mkdir()
    import yaml

    (out / SUITE_RECORD).write_text(yaml.safe_dump(suite.to_dict()))
    more = dataclasses.replace(suite, agents=(*suite.agents, ("other", f"{module}:Other")))
    assert check_suite_record(more, out) == []
    changed = dataclasses.replace(suite, agents=(("stay", f"{module}:Other"),))
    with pytest.raises(SuiteConflictError, match="agents.stay"):
        check_suite_record(changed, out)


def test_a_suite_scores_its_external_agents_with_the_human_proxy(module, tmp_path, monkeypatch):
    """With ``evaluation.human_proxy`` the external agent gets an ``ego.human_proxy`` job beside its
    partner-set job, and rows (both seats) in ``human_proxy.parquet``. The proxy job is replaced by
    a copy of the shipped cramped_room H_proxy (training one takes minutes), and the 2019 data is
    declared installed, so the test runs without it."""
    import shutil

    from zsceval.bench import plan as bench_plan
    from zsceval.bench import run as bench_run
    from zsceval.bench.run import run_bench
    from zsceval.bench.suite import load_suite
    from zsceval.execution.jobs import JOB_KINDS
    from zsceval.human.partners import shipped_model_dir

    def shipped_proxy(params, out, needs):
        shutil.copytree(shipped_model_dir(params["layout"], "human-proxy"), out, dirs_exist_ok=True)
        return {"metrics": {}}

    monkeypatch.setitem(JOB_KINDS, "partners.human_proxy", shipped_proxy)
    for mod in (bench_plan, bench_run):
        monkeypatch.setattr(mod, "human_data_installed", lambda: True)
    path = tmp_path / "agents.yaml"
    text = SUITE.format(module=module).replace("  episodes: 1\n", "  episodes: 1\n  human_proxy: true\n")
    path.write_text(text)
    suite = load_suite(path)
    assert suite.human_proxy
    tables = run_bench(suite, tmp_path / "out", progress=False, log=lambda *_: None)
    assert (tmp_path / "out/cramped_room/human-proxy/stay/s0").is_dir()
    human = pd.read_parquet(tables["human_proxy"])
    assert set(human["algorithm"]) == {"stay"} and set(human["ego_seed"]) == {0}
    assert sorted(human["seat"]) == [0, 1] and set(human["partner"]) == {"human_proxy"}
    assert (human["layout"] == "cramped_room").all()
    # benchmarks/human/rescore_bench.py replays the bench's human-proxy jobs with the shipped H_proxy,
    # the proxy this bench played: the same games, the same table
    import runpy

    script = Path(__file__).resolve().parents[2] / "benchmarks/human/rescore_bench.py"
    replay = tmp_path / "replayed.parquet"
    monkeypatch.setattr(sys, "argv", ["rescore_bench.py", str(tmp_path / "out"), "--out", str(replay)])
    runpy.run_path(str(script), run_name="__main__")
    pd.testing.assert_frame_equal(pd.read_parquet(replay), human)
