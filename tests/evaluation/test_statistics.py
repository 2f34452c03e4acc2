"""Probability of improvement, performance profiles and rank distributions on hand-computed cases."""

import numpy as np
import pandas as pd
import pytest

from zsceval.stats.statistics import (
    comparison_tables,
    joint_bootstrap,
    performance_profile,
    performance_profile_ci,
    probability_of_improvement,
    probability_of_improvement_ci,
    rank_distribution,
)


def test_probability_of_improvement_hand_value():
    x = np.array([[[0.8], [0.2]]])  # [1 seed, 2 partners, 1 seat]
    y = np.array([[[0.5], [0.2]], [[0.9], [0.1]]])  # 2 seeds
    # partner 0: 0.8 > 0.5 (1), 0.8 < 0.9 (0) -> 0.5; partner 1: tie 0.2 (1/2), 0.2 > 0.1 (1) -> 0.75
    assert probability_of_improvement(x, y) == pytest.approx(0.625)
    assert probability_of_improvement(y, x) == pytest.approx(0.375)
    y[1, 1, 0] = np.nan  # partner 1 only vs 0.2 (tie): 0.5 -> (0.5 + 0.5) / 2
    assert probability_of_improvement(x, y) == pytest.approx(0.5)
    assert probability_of_improvement(x, x) == 0.5
    with pytest.raises(ValueError, match="same partners"):
        probability_of_improvement(x, np.zeros((2, 3, 1)))


def test_probability_of_improvement_matches_rliable():
    rliable_metrics = pytest.importorskip("rliable.metrics")
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 5, size=(3, 4, 2)) / 4, rng.integers(0, 5, size=(5, 4, 2)) / 4  # with ties
    expected = rliable_metrics.probability_of_improvement(x.reshape(3, -1), y.reshape(5, -1))
    assert probability_of_improvement(x, y) == pytest.approx(expected)


def test_probability_of_improvement_ci_hand_quantiles():
    # X's seeds score 0 and 1 on every unit, Y's one seed 0.5: a replicate's P(X > Y) is the fraction
    # of resampled X seeds equal to seed 1: 0, 1/2, 1 with probabilities 1/4, 1/2, 1/4.
    x = np.stack([np.zeros((3, 2)), np.ones((3, 2))])
    y = np.full((1, 3, 2), 0.5)
    ci = probability_of_improvement_ci(x, y, reps=4000, rng=np.random.default_rng(0))
    assert (ci.estimate, ci.low, ci.high) == (0.5, 0.0, 1.0)
    same = probability_of_improvement_ci(x, y, reps=4000, rng=np.random.default_rng(0))
    assert same == ci
    # X beats Y on every unit: every replicate is 1.
    assert probability_of_improvement_ci(x + 1, y, reps=200, rng=np.random.default_rng(0)) == (1.0, 1.0, 1.0)


def test_joint_bootstrap_shares_the_partner_draw():
    # unit = partner index, same for both algorithms: a shared partner draw gives equal replicates.
    x = np.tile(np.arange(5.0)[None, :, None], (2, 1, 2))
    y = np.tile(np.arange(5.0)[None, :, None], (3, 1, 2))
    rx, ry = joint_bootstrap([x, y], reps=50, rng=np.random.default_rng(0))
    assert rx.shape == (50, 2, 5, 2) and ry.shape == (50, 3, 5, 2)
    np.testing.assert_array_equal(rx[:, 0], ry[:, 0])
    with pytest.raises(ValueError, match="share partner"):
        joint_bootstrap([x, np.zeros((2, 4, 2))], reps=5, rng=np.random.default_rng(0))


def test_performance_profile_hand_values():
    scores = np.array([[0.2, 0.5], [0.5, 1.0], [np.nan, np.nan]])
    # strictly above: tau 0 -> 4/4, 0.2 -> 3/4, 0.5 -> 1/4, 0.99 -> 1/4, 1.0 -> 0
    np.testing.assert_allclose(
        performance_profile(scores, np.array([0, 0.2, 0.5, 0.99, 1.0])), [1, 0.75, 0.25, 0.25, 0]
    )


def test_performance_profile_band_hand_quantiles():
    # seed 0 scores 0, seed 1 scores 1: a replicate's fraction above 0.5 is 0, 1/2 or 1 (1/4, 1/2, 1/4)
    scores = np.stack([np.zeros((4, 2)), np.ones((4, 2))])
    band = performance_profile_ci(scores, np.array([-0.1, 0.5, 1.0]), reps=4000, rng=np.random.default_rng(0))
    assert band["fraction"].tolist() == [1.0, 0.5, 0.0]
    assert band["ci_low"].tolist() == [1.0, 0.0, 0.0] and band["ci_high"].tolist() == [1.0, 1.0, 0.0]


def test_rank_distribution_hand_probabilities():
    # a: seeds score 0 and 1 everywhere; b: one seed at 0.5. IQM(a) on a replicate is 1 (both draws
    # seed 1, p = 1/4), 0 (p = 1/4) or 0.5 (p = 1/2, a tie with b: both rank 1).
    a = np.stack([np.zeros((4, 2)), np.ones((4, 2))])
    b = np.full((1, 4, 2), 0.5)
    table = rank_distribution({"b": b, "a": a}, reps=8000, rng=np.random.default_rng(0)).set_index(
        "algorithm"
    )
    assert table.loc["a", "rank"] == 1 and table.loc["b", "rank"] == 1  # point IQMs tie at 0.5
    assert table.loc["a", "p_rank_1"] == pytest.approx(0.75, abs=0.02)
    assert table.loc["a", "p_rank_2"] == pytest.approx(0.25, abs=0.02)
    assert table.loc["b", "p_rank_1"] == pytest.approx(0.75, abs=0.02)
    np.testing.assert_allclose(table[["p_rank_1", "p_rank_2"]].sum(axis=1), 1.0)
    assert table.loc["a", "mean_rank"] == pytest.approx(1 + table.loc["a", "p_rank_2"])


def test_comparison_tables_from_units():
    rows = []
    for algo, offset in (("mep", 0.3), ("sp", 0.0)):
        for seed in range(2):
            for p, partner in enumerate(["p0", "p1", "p2"]):
                for seat in (0, 1):
                    value = 0.1 * p + offset + 0.05 * seed
                    rows.append(("ring", algo, seed, partner, seat, value))
    units = pd.DataFrame(rows, columns=["layout", "algorithm", "ego_seed", "partner", "seat", "br_prox"])
    tables = comparison_tables(
        units, rng=np.random.default_rng(0), reps=200, thresholds=np.array([0.0, 0.375])
    )
    poi = tables["poi"].set_index(["algorithm_x", "algorithm_y"])
    # mep's units are 0.3 above sp's on every partner and seat: it always wins
    assert poi.loc[("mep", "sp"), "poi"] == 1.0 and poi.loc[("sp", "mep"), "poi"] == 0.0
    profiles = tables["profiles"].set_index(["algorithm", "threshold"])
    # sp: 0, 0.05, ..., 0.25 (x2 seats): none above 0.375; mep: 0.3, 0.35, ..., 0.55: 8 of 12 above
    assert profiles.loc[("sp", 0.375), "fraction"] == 0.0
    assert profiles.loc[("mep", 0.375), "fraction"] == pytest.approx(8 / 12)
    ranks = tables["ranks"].set_index("algorithm")
    assert ranks.loc["mep", "rank"] == 1 and ranks.loc["mep", "p_rank_1"] == 1.0


def test_compare_with_reference_matches_layouts_by_alias_and_counts_common_algorithms(tmp_path):
    from zsceval.bench.comparison import (
        ReferenceTableError,
        compare_with_reference,
        load_reference_table,
    )

    path = tmp_path / "ref.yaml"
    path.write_text(
        "format_version: 1\nlayouts:\n"
        "  counter_circuit: {reference_name: random3, br_prox: {sp: 0.1, mep: 0.6, fcp: 0.5}}\n"
        "  cramped_room: {br_prox: {sp: 0.9}}\n"
    )
    reference = load_reference_table(path)
    summary = pd.DataFrame(
        {
            "layout": ["random3"] * 3 + ["cramped_room"] * 2 + ["large_room"],
            "algorithm": ["sp", "mep", "fcp", "sp", "mep", "sp"],
            "partner_level": "all",
            "iqm": [0.2, 0.5, 0.7, 0.4, 0.3, 0.5],
            "ci_low": 0.0,
            "ci_high": 1.0,
        }
    )
    rows, layouts = compare_with_reference(summary, reference)
    layouts = layouts.set_index("layout")
    # random3 = counter_circuit: ours ranks sp < mep < fcp, the reference sp < fcp < mep:
    # d = (0, 1, 1) -> rho = 1 - 6 * 2 / (3 * 8) = 0.5
    assert layouts.loc["random3", "spearman"] == pytest.approx(0.5)
    assert layouts.loc["random3", "num_common"] == 3
    assert layouts.loc["cramped_room", "num_common"] == 1 and np.isnan(
        layouts.loc["cramped_room", "spearman"]
    )
    assert layouts.loc["large_room", "num_common"] == 0
    assert np.isnan(rows.set_index(["layout", "algorithm"]).loc[("cramped_room", "mep"), "reference"])
    by = rows.set_index(["layout", "algorithm"])
    # ours - reference: sp 0.2 - 0.1, mep 0.5 - 0.6, fcp 0.7 - 0.5 (> 0.15: flagged); cramped sp 0.4 - 0.9
    assert by["difference"].loc[[("random3", a) for a in ("sp", "mep", "fcp")]].tolist() == pytest.approx(
        [0.1, -0.1, 0.2]
    )
    assert by["flagged"].loc[[("random3", a) for a in ("sp", "mep", "fcp")]].tolist() == [False, False, True]
    assert by.loc[("cramped_room", "sp"), "flagged"] and not by.loc[("cramped_room", "sp"), "outside_ci"]
    assert not by.loc[("cramped_room", "mep"), "flagged"]  # no reference: nothing to flag
    narrow = summary.assign(ci_low=summary["iqm"] - 0.05, ci_high=summary["iqm"] + 0.05)
    narrow_rows = compare_with_reference(narrow, reference)[0].set_index(["layout", "algorithm"])
    assert narrow_rows["outside_ci"].loc[[("random3", a) for a in ("sp", "mep", "fcp")]].tolist() == [
        True,
        True,
        True,
    ]
    with pytest.raises(ReferenceTableError, match="zsceval-paper"):
        load_reference_table("no-such-table")
    path.write_text("format_version: 1\nlayouts:\n  ring: {shipped: {sp: 1}}\n")
    with pytest.raises(ReferenceTableError, match="no br_prox"):
        load_reference_table(path)


def test_shipped_paper_table_covers_the_papers_layouts_and_algorithms():
    from zsceval.bench.comparison import load_reference_table

    table = load_reference_table("zsceval-paper")
    overcooked = table[~table["layout"].str.startswith("academy")]
    assert overcooked.groupby("layout").size().to_dict() == {lay: 7 for lay in overcooked["layout"].unique()}
    assert len(overcooked["layout"].unique()) == 9
    # spot values from zsceval/bench/reference/zsceval_paper.yaml: random3 MEP .62 (.64 shipped script),
    # random0_m HSP .80 (.82)
    row = table.set_index(["reference_name", "algorithm"])
    assert (
        row.loc[("random3", "mep"), "br_prox"] == 0.62
        and row.loc[("random3", "mep"), "shipped_script"] == 0.64
    )
    assert row.loc[("random0_m", "hsp"), "br_prox"] == 0.80
