"""benchmarks/sets/scores_table.py: the table of every shipped set's scores (docs/partner-sets.md)."""

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from zsceval.cli import main

REPO = Path(__file__).resolve().parents[2]
FORCED = "docs/data/quick-sets-scores-3b7d9ef/forced_coordination"


def _script():
    spec = importlib.util.spec_from_file_location(
        "scores_table_in_tests", REPO / "benchmarks/sets/scores_table.py"
    )
    script = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = script  # dataclasses resolve the module's annotations through sys.modules
    spec.loader.exec_module(script)
    return script


def test_the_table_gives_what_zsceval_report_json_gives(tmp_path):
    """A row's IQM and CI of every algorithm equal ``zsceval report DIR --json`` at the same seed."""
    script = _script()
    folder = tmp_path / "forced"
    shutil.copytree(REPO / FORCED, folder, ignore=shutil.ignore_patterns("*human_proxy*", "unhelpful*"))
    res = CliRunner().invoke(
        main, ["report", str(folder), "--seed", "3", "--reps", "50", "--json", "--no-figures"]
    )
    assert res.exit_code == 0, res.output
    report = {r["algorithm"]: r for r in json.loads(res.output)["rows"] if r["partner_level"] == "all"}
    row = script.Row("zsceval:forced_coordination@1", str(folder), "egos", withdrawn=("hsp",))
    records = script.table_rows((row,), seeds=[3], reps=50)
    assert len(records) == 1
    for algo, title in script.ALGORITHMS:
        r = report[algo]
        expected = (
            "withdrawn*" if algo == "hsp" else f"{r['iqm']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
        )
        assert records[0][title] == expected
    assert records[0]["size"].startswith("6 partners (3 candidates)")
    assert records[0]["protocol"].startswith("quick: `overcooked-quick-sets`, 8 candidates x 5e6")
    # forced_coordination@1: the BR never scores with c003 and c007 when the ego is in seat 0
    assert [script.steps(v) for v in (1_500_000, 5_000_000, 10_000_000, 12_345_678)] == [
        "1.5e6", "5e6", "1e7", "1.23e7",
    ]  # fmt: skip
    fixed = "4 of 12 units score 1 for every ego: c003_final/0, c003_mid/0, c007_final/0, c007_mid/0"
    assert fixed in records[0]["verdict"]
    assert "not informative" in records[0]["verdict"]


def test_every_row_scores_its_own_set_and_a_folder_of_other_partners_is_refused():
    """Each data folder's BR returns are the set's own; another set's folder is refused, naming both."""
    script = _script()
    for row in script.ROWS:
        entry = script.find_set(row.set)
        if row.data is not None:
            br = pd.read_parquet(REPO / row.data / "br_returns.parquet")
            script.check_folder(entry, br, REPO / row.data)
    entry = script.find_set("zsceval:counter_circuit@2")
    br = pd.read_parquet(REPO / "docs/data/quick-cc-0fb63d1/br_returns.parquet")
    with pytest.raises(ValueError, match=r"not those of zsceval:counter_circuit@2/test"):
        script.check_folder(entry, br, Path("quick-cc"))
    with pytest.raises(
        ValueError, match=r"no shipped set 'zsceval:counter_circuit@9'; valid: .*counter_circuit@2"
    ):
        script.find_set("zsceval:counter_circuit@9")


def test_deciding_units_by_hand():
    """Units fixed at 1 for every ego, and units where the algorithms' means span >= 0.5 (widest first);
    a withdrawn algorithm counts for neither."""
    script = _script()
    rows = []
    for algo, seed, values in [
        ("sp", 0, {("a_mid", 0): 1.0, ("a_mid", 1): 0.2, ("b_final", 0): 0.5}),
        ("sp", 1, {("a_mid", 0): 1.0, ("a_mid", 1): 0.0, ("b_final", 0): 0.5}),
        ("fcp", 0, {("a_mid", 0): 1.0, ("a_mid", 1): 0.9, ("b_final", 0): 0.8}),
        ("hsp", 0, {("a_mid", 0): 0.0, ("a_mid", 1): 0.1, ("b_final", 0): 0.0}),
    ]:
        for (partner, seat), v in values.items():
            rows.append({"algorithm": algo, "ego_seed": seed, "partner": partner, "seat": seat, "br_prox": v})
    units = pd.DataFrame(rows)
    fixed, deciding, total = script.deciding_units(units, withdrawn=("hsp",))
    assert (fixed, deciding, total) == ([("a_mid", 0)], [("a_mid", 1)], 3)  # spans 0.8, 0.3, 0
    fixed, deciding, _ = script.deciding_units(units)
    assert fixed == []
    assert deciding == [("a_mid", 0), ("a_mid", 1), ("b_final", 0)]  # 1.0, 0.8, 0.8: ties sorted
    # An algorithm that is no column of the table (a folder's renamed variant) counts for neither.
    renamed = units.assign(algorithm=units["algorithm"].replace({"hsp": "hsp-3+9"}))
    assert script.deciding_units(renamed) == ([("a_mid", 0)], [("a_mid", 1)], 3)


@pytest.mark.parametrize(
    "name, folder",
    [
        ("zsceval:coordination_ring@2", "docs/data/overcooked-s12-grid-6627195-coordination_ring"),
        ("zsceval:asymmetric_advantages@2", "docs/data/overcooked-s12-grid-f6561e7-asymmetric_advantages"),
        ("zsceval:blocked_corridor@2", "docs/data/overcooked-s12-grid-h1e8-6943a99-blocked_corridor"),
    ],
)
def test_the_index_baselines_are_the_committed_tables_iqms(name, folder):
    """`zsceval eval --partner-set NAME` prints the index's baselines: each is the IQM BR-Prox of the
    run's committed tables over (ego seed, partner, seat) units, to 3 decimals, for every algorithm
    scored there."""
    from zsceval.bench import report as rep
    from zsceval.stats.metrics import br_prox_units, iqm

    script = _script()
    entry = script.find_set(name)
    results, br_returns, _ = rep.read_tables(REPO / folder)
    units = br_prox_units(results, br_returns)
    units = units[units["layout"] == entry.layout]
    by_hand = {a: round(float(iqm(g["br_prox"].to_numpy())), 3) for a, g in units.groupby("algorithm")}
    assert entry.baselines["iqm"] == by_hand
