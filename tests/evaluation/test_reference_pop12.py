"""The population-12 / 24 columns of the shipped ``zsceval-paper`` reference table.

Values from benchmarks/reference/recompute_zsceval.py on sjtu-marl/ZSC-Eval f940869 (correct partner/BR
mapping); the same script reproduces the table's population-36 ``br_prox`` and ``shipped_script``.
"""

import numpy as np

from zsceval.bench.comparison import load_reference_table

ALGORITHMS = ("sp", "e3t", "fcp", "mep", "trajedi", "hsp", "cole")


def _table():
    return load_reference_table("zsceval-paper").set_index(["layout", "algorithm"])


def test_counter_circuit_has_pop12_and_pop24_columns_for_all_algorithms():
    table = _table()
    for column in ("br_prox_pop12", "br_prox_pop24"):
        values = np.array([table.loc[("counter_circuit", a), column] for a in ALGORITHMS])
        assert np.all((values >= 0) & (values <= 1)), (column, values)


def test_pop12_hand_checked_facts():
    table = _table()
    cc = table.loc["counter_circuit"]
    # random3 at population 12: FCP 0.558 < MEP 0.671; COLE (25) 0.380 below its population-75 0.47
    assert cc.loc["fcp", "br_prox_pop12"] == 0.56 and cc.loc["mep", "br_prox_pop12"] == 0.67
    assert cc.loc["cole", "br_prox_pop12"] == 0.38 < cc.loc["cole", "br_prox"]
    # SP and E3T have no population: their columns repeat br_prox on every Overcooked layout
    overcooked = table[~table.index.get_level_values("layout").str.startswith("academy")]
    for algorithm in ("sp", "e3t"):
        rows = overcooked.xs(algorithm, level="algorithm")
        assert (rows["br_prox_pop12"] == rows["br_prox"]).all()
        assert (rows["br_prox_pop24"] == rows["br_prox"]).all()
    # GRF has no population columns
    assert np.isnan(table.loc[("academy_3_vs_1_with_keeper", "fcp"), "br_prox_pop12"])


def test_compare_picks_a_population_column_by_name():
    import pandas as pd
    import pytest

    from zsceval.bench.comparison import ReferenceTableError, compare_with_reference, split_reference

    assert split_reference("zsceval-paper") == ("zsceval-paper", "br_prox", "zsceval-paper")
    assert split_reference("zsceval-paper:pop12") == ("zsceval-paper", "br_prox_pop12", "zsceval-paper-pop12")
    assert split_reference("zsceval-paper:shipped_script")[1] == "shipped_script"
    assert split_reference("refs/mine.yaml:pop24") == ("refs/mine.yaml", "br_prox_pop24", "mine-pop24")
    # ours: fcp < mep < trajedi (ranks 1, 2, 3). ZSC-Eval on random3 at population 12: fcp 0.56 <
    # trajedi 0.66 < mep 0.67 (ranks 1, 3, 2); at population 36: trajedi 0.48 < fcp 0.59 < mep 0.62
    # (ranks 2, 3, 1)
    summary = pd.DataFrame({"layout": "random3", "algorithm": ["fcp", "mep", "trajedi"],
                            "partner_level": "all", "iqm": [0.5, 0.6, 0.7], "ci_low": 0.0,
                            "ci_high": 1.0})  # fmt: skip
    reference = load_reference_table("zsceval-paper")
    rows12, lay12 = compare_with_reference(summary, reference, column="br_prox_pop12")
    assert rows12.set_index("algorithm")["reference"].to_dict() == {"fcp": 0.56, "mep": 0.67, "trajedi": 0.66}
    assert lay12["spearman"].iloc[0] == pytest.approx(0.5)  # d = (0, 1, 1): 1 - 6 * 2 / 24
    _, lay36 = compare_with_reference(summary, reference)
    assert lay36["spearman"].iloc[0] == pytest.approx(-0.5)  # d = (1, 1, 2): 1 - 6 * 6 / 24
    with pytest.raises(ReferenceTableError, match="br_prox_pop13.*br_prox_pop12"):
        compare_with_reference(summary, reference, column="br_prox_pop13")


def test_raw_returns_behind_br_prox_from_result_files_and_a_bench(tmp_path):
    """benchmarks/reference/recompute_zsceval.py --raw: mean returns with final / mid partners, the BRs
    read with the correct mapping (partner bias1 = hsp run 7, not run 1), checked by hand."""
    import importlib.util
    import json
    from pathlib import Path

    import pandas as pd
    import pytest

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "reference" / "recompute_zsceval.py"
    spec = importlib.util.spec_from_file_location("recompute_zsceval_in_tests", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    r = "eval_ep_sparse_r"
    layout = tmp_path / "random3"
    (layout / "bias").mkdir(parents=True)
    (layout / "sp").mkdir()
    # the shipped script would read eval-hsp1.json for bias1: its numbers must not be used
    (layout / "bias" / "eval-hsp1.json").write_text(
        json.dumps({f"hsp1_final_w1-hsp1_final_w0-{r}": 999.0, f"hsp1_final_w0-hsp1_final_w1-{r}": 999.0})
    )
    (layout / "bias" / "eval-hsp7.json").write_text(
        json.dumps({f"hsp7_final_w1-hsp7_final_w0-{r}": 200.0, f"hsp7_final_w0-hsp7_final_w1-{r}": 180.0})
    )
    (layout / "bias" / "eval-br_1.json").write_text(
        json.dumps({f"br_agent-bias1_mid-{r}": 100.0, f"bias1_mid-br_agent-{r}": 60.0})
    )
    for seed, (f0, f1, m0, m1) in {1: (10.0, 30.0, 40.0, 0.0), 2: (50.0, 10.0, 20.0, 20.0)}.items():
        ego = f"sp-{seed}"
        (layout / "sp" / f"eval-sp-{seed}.json").write_text(
            json.dumps(
                {
                    f"{ego}-bias1_final-{r}": f0,
                    f"bias1_final-{ego}-{r}": f1,
                    f"{ego}-bias1_mid-{r}": m0,
                    f"bias1_mid-{ego}-{r}": m1,
                }
            )
        )
    raw = script.raw_returns(layout, [7], 12)
    assert raw["BR"] == pytest.approx((190.0, 80.0))
    assert raw["sp"] == pytest.approx((25.0, 20.0))  # (10 + 30 + 50 + 10) / 4, (40 + 0 + 20 + 20) / 4
    assert set(raw) == {"BR", "sp"}  # no other algorithm's files

    bench = tmp_path / "bench"
    bench.mkdir()
    pd.DataFrame(
        {
            "partner": ["p_final", "p_final", "p_mid"],
            "partner_level": ["expert", "expert", "moderate"],
            "algorithm": "sp",
            "sparse_return": [10.0, 20.0, 7.0],
        }
    ).to_parquet(bench / "results.parquet")
    pd.DataFrame({"partner": ["p_final", "p_mid", "p_mid"], "br_return": [100.0, 40.0, 60.0]}).to_parquet(
        bench / "br_returns.parquet"
    )
    ours = script.bench_raw_returns(bench)
    assert ours["BR"] == pytest.approx((100.0, 50.0)) and ours["sp"] == pytest.approx((15.0, 7.0))
