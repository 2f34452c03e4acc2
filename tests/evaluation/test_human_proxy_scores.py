"""Human-proxy scores: the summary statistic, the bench's jobs for it, and the report's table."""

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from zsceval.bench.plan import build_phases
from zsceval.bench.suite import check_suite_record, load_suite
from zsceval.cli import main
from zsceval.evaluation.human_proxy import format_human_proxy, human_proxy_summary

SUITE = """
layouts: [{layout}]
algorithms: [sp]
ego_seeds: 2
ego_steps: 800
overrides: [env.num_envs=2]
partners:
  candidates: 2
  candidate_steps: 800
  checkpoints: 2
  k: 1
  mid_br_steps: 800
  dpp_samples: 10
evaluation:
  episodes: 2
  human_proxy: {human}
"""


def _frame(rows):
    return pd.DataFrame(rows, columns=["layout", "algorithm", "ego_seed", "seat", "sparse_return"])


def test_summary_averages_seed_seat_units_not_episodes():
    # units (seed, seat): s0/seat0 mean(10, 20) = 15, s0/seat1 30, s1/seat0 0, s1/seat1 mean(40, 60) = 50
    rows = [("cc", "sp", 0, 0, 10.0), ("cc", "sp", 0, 0, 20.0), ("cc", "sp", 0, 1, 30.0),
            ("cc", "sp", 1, 0, 0.0), ("cc", "sp", 1, 1, 40.0), ("cc", "sp", 1, 1, 60.0)]  # fmt: skip
    s = human_proxy_summary(_frame(rows), reps=500)
    r = s.iloc[0]
    assert r["mean"] == pytest.approx((15 + 30 + 0 + 50) / 4)  # the episode mean would be 26.67
    assert (r["seeds"], r["episodes"]) == (2, 6)
    assert 0.0 <= r["low"] <= r["mean"] <= r["high"] <= 50.0


def test_summary_orders_algorithms_and_format_shows_br_prox_and_rank_correlation():
    rows = []
    for algo, ret in (("a", 10.0), ("b", 30.0), ("c", 20.0)):
        rows += [("cc", algo, s, seat, ret + s) for s in (0, 1) for seat in (0, 1)]
    s = human_proxy_summary(_frame(rows), reps=200)
    assert s["algorithm"].tolist() == ["b", "c", "a"]
    brp = pd.DataFrame(
        [("cc", a, "all", v, v - 0.1, v + 0.1) for a, v in (("a", 0.1), ("b", 0.3), ("c", 0.2))],
        columns=["layout", "algorithm", "partner_level", "iqm", "ci_low", "ci_high"],
    )
    text = format_human_proxy(s, brp)
    assert "0.300 [0.200, 0.400]" in text
    assert "Spearman rank correlation (human-proxy vs BR-Prox, 3 algorithms): 1.00" in text
    with pytest.raises(ValueError, match="columns"):
        human_proxy_summary(pd.DataFrame({"layout": ["cc"]}))


def _suite(tmp_path, layout, human):
    path = tmp_path / f"{layout}-{human}" / "suite-under-test.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(SUITE.format(layout=layout, human=human))
    return load_suite(path)


def test_bench_adds_a_proxy_job_and_one_evaluation_per_ego_on_human_data_layouts(tmp_path):
    suite = _suite(tmp_path, "random3", "true")
    assert suite.human_proxy
    phases, infos = build_phases(suite)
    proxy = [j for j in phases[0] if j.kind == "partners.human_proxy"]
    assert [j.id for j in proxy] == ["counter_circuit/partners/human-proxy"]
    # late phases need the selection's output; build the evaluation jobs from a fake selection record
    import json

    from zsceval.bench.plan import late_phases

    sel = infos["counter_circuit"].select
    (tmp_path / sel.out).mkdir(parents=True)
    (tmp_path / sel.out / "DONE.json").write_text(json.dumps({"result": {"selected_ids": ["c000"]}}))
    evaluations = late_phases(suite, tmp_path, infos)[-1]
    human = [j for j in evaluations if j.kind == "ego.human_proxy"]
    assert [j.id for j in human] == ["counter_circuit/human-proxy/sp/s0", "counter_circuit/human-proxy/sp/s1"]
    assert all(j.needs[1] == proxy[0].id and j.params["proxy"] == proxy[0].id for j in human)
    assert len([j for j in evaluations if j.kind == "ego.evaluate"]) == 2


def test_bench_skips_layouts_without_human_data_and_suites_without_the_flag(tmp_path):
    for layout, human in (("large_room", "true"), ("counter_circuit", "false")):
        phases, infos = build_phases(_suite(tmp_path, layout, human))
        assert not [j for j in phases[0] if j.kind == "partners.human_proxy"]
        assert all(info.human_proxy is None for info in infos.values())


def test_turning_human_proxy_on_does_not_conflict_with_a_finished_run(tmp_path):
    off, on = _suite(tmp_path, "counter_circuit", "false"), _suite(tmp_path, "counter_circuit", "true")
    out = tmp_path / "bench"
    out.mkdir()
    record = off.to_dict()
    record["evaluation"].pop("human_proxy")  # a record written before the key existed
    (out / "suite.yaml").write_text(yaml.safe_dump(record))
    assert check_suite_record(on, out) == []


def test_report_prints_the_human_proxy_table(tmp_path):
    results = pd.DataFrame(
        {"layout": "cc", "algorithm": "sp", "ego_seed": [0, 0, 1, 1], "partner": "p1",
         "partner_level": "expert", "seat": [0, 1, 0, 1], "episode": 0,
         "sparse_return": [40.0, 60.0, 20.0, 20.0]}
    )  # fmt: skip
    br = pd.DataFrame({"layout": "cc", "partner": "p1", "seat": [0, 1], "br_return": [100.0, 100.0]})
    results.to_parquet(tmp_path / "results.parquet")
    br.to_parquet(tmp_path / "br_returns.parquet")
    _frame([("cc", "sp", s, seat, 10.0 * (s + 1)) for s in (0, 1) for seat in (0, 1)]).to_parquet(
        tmp_path / "human_proxy.parquet"
    )
    res = CliRunner().invoke(main, ["report", str(tmp_path), "--no-figures", "--reps", "100"])
    assert res.exit_code == 0, res.output
    assert "Human-proxy score" in res.output and "15.0" in res.output
    res = CliRunner().invoke(main, ["report", str(tmp_path), "--no-figures", "--reps", "100", "--json"])
    payload = __import__("json").loads(res.output)
    assert payload["human_proxy"][0]["mean"] == pytest.approx(15.0)


def test_without_the_human_data_the_bench_skips_the_proxy_and_says_why(tmp_path, monkeypatch):
    from zsceval.bench import plan as bench_plan
    from zsceval.human import trials

    monkeypatch.setenv("ZSCEVAL_HUMAN_DATA", str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    monkeypatch.setattr(trials.importlib.util, "find_spec", lambda name: None)
    assert not bench_plan.human_data_installed()
    phases, infos = build_phases(_suite(tmp_path, "counter_circuit", "true"))
    assert not [j for j in phases[0] if j.kind == "partners.human_proxy"]
    assert infos["counter_circuit"].human_proxy is None
