"""BR-Prox, IQM, bootstrap CIs, rank agreement and the results-table summary, on hand-computed cases."""

import numpy as np
import pandas as pd
import pytest

from zsceval.stats.metrics import (
    assign_levels,
    bootstrap_ci,
    br_prox,
    br_prox_summary,
    br_prox_units,
    iqm,
    levels_by_median,
    rank_table,
    spearman,
    unit_array,
)


def test_br_prox_hand_matrix():
    # ego [seeds=2, partners=3], BR [partners=3] = [20, 20, 0]
    # seed 0: 10/20 = 0.5, 30/20 = 1.5 -> clipped 1, BR 0 -> 1 ("one")
    # seed 1:  0/20 = 0,   20/20 = 1,               BR 0 -> 1
    ego = np.array([[10.0, 30.0, 5.0], [0.0, 20.0, 1.0]])
    br = np.array([20.0, 20.0, 0.0])
    np.testing.assert_allclose(br_prox(ego, br), [[0.5, 1.0, 1.0], [0.0, 1.0, 1.0]])
    excluded = br_prox(ego, br, nonpositive_br="nan")
    np.testing.assert_allclose(excluded[:, :2], [[0.5, 1.0], [0.0, 1.0]])
    assert np.isnan(excluded[:, 2]).all()
    np.testing.assert_allclose(br_prox(ego, br, clip=False)[0, 1], 1.5)


def test_br_prox_negative_br_counts_as_nonpositive():
    assert br_prox(np.array([3.0]), np.array([-5.0]))[0] == 1.0


def test_br_prox_checks_shapes_and_rule():
    with pytest.raises(ValueError, match="broadcast"):
        br_prox(np.zeros((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match="nonpositive_br"):
        br_prox(np.zeros(2), np.ones(2), nonpositive_br="zero")


def test_iqm_is_mean_of_middle_half():
    # 8 values: drop the 2 smallest (0, 1) and 2 largest (6, 100): mean(2, 3, 4, 5) = 3.5
    x = np.array([5.0, 100.0, 0.0, 3.0, 1.0, 6.0, 2.0, 4.0])
    assert iqm(x) == pytest.approx(3.5)
    assert iqm(x.reshape(2, 4)) == pytest.approx(3.5)  # axis=None pools every entry
    assert iqm(np.append(x, np.nan)) == pytest.approx(3.5)  # NaN (excluded units) ignored
    # per row, 4 values each: drop 1 each end. Row [0, 1, 2, 100] -> 1.5; row [3, 4, 5, 6] -> 4.5
    rows = np.array([[0.0, 1.0, 2.0, 100.0], [3.0, 4.0, 5.0, 6.0]])
    np.testing.assert_allclose(iqm(rows, axis=1), [1.5, 4.5])
    rows[1, 0] = np.nan  # [4, 5, 6]: n=3 trims nothing -> 5
    np.testing.assert_allclose(iqm(rows, axis=1), [1.5, 5.0])


def test_bootstrap_ci_is_reproducible_and_contains_the_estimate():
    scores = np.random.default_rng(0).uniform(0, 1, size=(5, 20))
    a = bootstrap_ci(scores, reps=1000, rng=np.random.default_rng(1))
    b = bootstrap_ci(scores, reps=1000, rng=np.random.default_rng(1))
    c = bootstrap_ci(scores, reps=1000, rng=np.random.default_rng(2))
    assert a == b
    assert a != c
    assert abs(a.low - c.low) < 0.05 and abs(a.high - c.high) < 0.05
    assert a.estimate == pytest.approx(iqm(scores))
    assert a.low <= a.estimate <= a.high
    assert a.low < a.high


def test_bootstrap_resamples_seeds_and_partners():
    # Seeds differ, partners do not: only seed resampling can move the statistic.
    # With 2 seeds, P(both draws = seed 0) = 1/4, so the 2.5% and 97.5% quantiles are exactly 0 and 1.
    seeds_only = np.array([[0.0] * 8, [1.0] * 8])
    ci = bootstrap_ci(seeds_only, np.nanmean, reps=2000, rng=np.random.default_rng(0))
    assert (ci.low, ci.high) == (0.0, 1.0)
    # Partners differ, seeds do not: only partner resampling can move it.
    partners_only = np.tile(np.arange(8.0), (3, 1))
    ci = bootstrap_ci(partners_only, np.nanmean, reps=2000, rng=np.random.default_rng(0))
    assert ci.low < 3.5 < ci.high
    # Constant scores: a degenerate interval.
    assert bootstrap_ci(np.full((3, 4), 0.7), rng=np.random.default_rng(0)) == pytest.approx((0.7, 0.7, 0.7))


def test_nested_partner_resampling_is_narrower_when_partners_dominate():
    partners_only = np.tile(np.arange(10.0), (5, 1))
    crossed = bootstrap_ci(partners_only, np.nanmean, rng=np.random.default_rng(0))
    nested = bootstrap_ci(
        partners_only, np.nanmean, rng=np.random.default_rng(0), partner_resampling="nested"
    )
    assert nested.high - nested.low < crossed.high - crossed.low


def test_bootstrap_ci_checks_input():
    with pytest.raises(ValueError, match="num_seeds, num_partners"):
        bootstrap_ci(np.ones(5), rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="level"):
        bootstrap_ci(np.ones((2, 2)), level=1.5, rng=np.random.default_rng(0))


def test_spearman_hand_value():
    # ranks [1, 2, 3, 4] vs [1, 3, 2, 4]: d^2 = [0, 1, 1, 0], rho = 1 - 6 * 2 / (4 * 15) = 0.8
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert spearman({"sp": 0.1, "fcp": 0.5, "mep": 0.9}, {"mep": 3, "sp": 1, "fcp": 2}) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    with pytest.raises(ValueError):
        spearman({"a": 1, "b": 2}, {"a": 1, "c": 2})


def test_rank_table_hand_ranks():
    summary = pd.DataFrame(
        {
            "layout": ["ring"] * 3 + ["circuit"] * 3,
            "algorithm": ["sp", "fcp", "mep"] * 2,
            "iqm": [0.2, 0.7, 0.6, 0.1, 0.5, 0.5],
        }
    )
    ranks = rank_table(summary)
    assert ranks.loc["ring"].to_dict() == {"fcp": 1.0, "mep": 2.0, "sp": 3.0}
    assert ranks.loc["circuit"].to_dict() == {"fcp": 1.0, "mep": 1.0, "sp": 3.0}  # tie shares rank 1
    assert ranks.loc["mean"].to_dict() == {"fcp": 1.0, "mep": 1.5, "sp": 3.0}


def _hand_results() -> tuple[pd.DataFrame, pd.DataFrame]:
    # algorithm "a", seeds 0-1, partners p1 (expert) and p2 (moderate), seats 0-1, 2 episodes each.
    episodes = {
        (0, "p1", 0): [40, 60],  # mean 50 / BR 100 -> 0.5
        (0, "p1", 1): [80, 100],  # 90 / 100 -> 0.9
        (0, "p2", 0): [20, 30],  # 25 / 50 -> 0.5
        (0, "p2", 1): [0, 10],  # BR 0 -> 1 (or excluded)
        (1, "p1", 0): [100, 140],  # 120 / 100 -> clipped 1
        (1, "p1", 1): [10, 30],  # 20 / 100 -> 0.2
        (1, "p2", 0): [50, 50],  # 50 / 50 -> 1
        (1, "p2", 1): [5, 5],  # BR 0 -> 1 (or excluded)
    }
    rows = [
        {
            "layout": "ring",
            "algorithm": "a",
            "ego_seed": seed,
            "partner": partner,
            "partner_level": "expert" if partner == "p1" else "moderate",
            "seat": seat,
            "episode": e,
            "sparse_return": float(r),
        }
        for (seed, partner, seat), returns in episodes.items()
        for e, r in enumerate(returns)
    ]
    br = pd.DataFrame(
        {
            "layout": ["ring"] * 4,
            "partner": ["p1", "p1", "p2", "p2"],
            "seat": [0, 1, 0, 1],
            "br_return": [100.0, 100.0, 50.0, 0.0],
        }
    )
    return pd.DataFrame(rows), br


def test_summary_hand_values():
    results, br = _hand_results()
    summary = br_prox_summary(results, br, rng=np.random.default_rng(0), reps=200).set_index("partner_level")
    # all: [0.5, 0.9, 0.5, 1, 1, 0.2, 1, 1] -> sorted [0.2, 0.5 | 0.5, 0.9, 1, 1 | 1, 1] -> 0.85
    assert summary.loc["all", "iqm"] == pytest.approx(0.85)
    # expert (p1): [0.5, 0.9, 1, 0.2] -> middle [0.5, 0.9] -> 0.7; moderate (p2): [0.5, 1, 1, 1] -> 1.0
    assert summary.loc["expert", "iqm"] == pytest.approx(0.7)
    assert summary.loc["moderate", "iqm"] == pytest.approx(1.0)
    assert summary.loc["all", "num_units"] == 8 and summary.loc["all", "num_seeds"] == 2
    assert (summary["ci_low"] <= summary["iqm"]).all() and (summary["iqm"] <= summary["ci_high"]).all()
    # "nan": the two BR-0 units drop out: [0.2, 0.5, 0.5, 0.9, 1, 1] -> middle [0.5, 0.5, 0.9, 1] -> 0.725
    excluded = br_prox_summary(results, br, rng=np.random.default_rng(0), reps=50, nonpositive_br="nan")
    row = excluded[excluded["partner_level"] == "all"].iloc[0]
    assert row["iqm"] == pytest.approx(0.725) and row["num_units"] == 6


def test_units_average_episodes_and_join_br():
    results, br = _hand_results()
    units = br_prox_units(results, br).set_index(["ego_seed", "partner", "seat"])
    assert units.loc[(0, "p1", 1), "ego_return"] == pytest.approx(90.0)
    assert units.loc[(0, "p1", 1), "episodes"] == 2
    assert units.loc[(1, "p1", 0), "br_prox"] == pytest.approx(1.0)


def test_summary_schema_errors():
    results, br = _hand_results()
    with pytest.raises(ValueError, match="sparse_return"):
        br_prox_summary(results.drop(columns="sparse_return"), br, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="no BR return"):
        br_prox_summary(results, br[br["partner"] == "p1"], rng=np.random.default_rng(0))
    bad_level = results.assign(partner_level="expertish")
    with pytest.raises(ValueError, match="moderate"):
        br_prox_summary(bad_level, br, rng=np.random.default_rng(0))


def test_levels_by_median_follows_the_paper():
    # median of [10, 20, 30, 40] = 25: <= 25 moderate
    assert levels_by_median({"a": 10, "b": 20, "c": 30, "d": 40}) == {
        "a": "moderate",
        "b": "moderate",
        "c": "expert",
        "d": "expert",
    }


def _shared_partner_effect_tables(rng, sims, seeds, partners, sd_partner, sd_seed, sd_unit):
    """``sims`` independent benchmark runs (one "algorithm" each) of units ``0.5 + p_j + s_i + e_ijk``.

    The partner effect ``p_j`` is shared by both seats of partner ``j``. Every effect is a centered
    normal, so the units' distribution is symmetric about 0.5 and its (population) IQM is 0.5.
    """
    shape = (sims, seeds, partners, 2)
    units = (
        0.5
        + rng.normal(0, sd_partner, size=(sims, 1, partners, 1))
        + rng.normal(0, sd_seed, size=(sims, seeds, 1, 1))
        + rng.normal(0, sd_unit, size=shape)
    )
    sim, seed, partner, seat = np.indices(shape).reshape(4, -1)
    results = pd.DataFrame(
        {
            "layout": "ring",
            "algorithm": [f"run{i:04d}" for i in sim],
            "ego_seed": seed,
            "partner": [f"p{j:02d}" for j in partner],
            "partner_level": "expert",
            "seat": seat,
            "episode": 0,
            "sparse_return": 100.0 * units.reshape(-1),
        }
    )
    br = pd.DataFrame(
        {"layout": "ring", "partner": [f"p{j:02d}" for j in range(partners)], "br_return": 100.0}
    )
    return results, br


def test_summary_ci_covers_the_true_iqm_with_a_partner_effect_shared_by_seats():
    # 400 simulated benchmarks of 5 seeds x 30 partners x 2 seats. Resampling (partner, seat) columns
    # as if they were 60 partners halves the partner variance: coverage about 0.83 (the old defect).
    results, br = _shared_partner_effect_tables(np.random.default_rng(0), 400, 5, 30, 0.15, 0.02, 0.05)
    summary = br_prox_summary(results, br, rng=np.random.default_rng(1), reps=1000, split_levels=False)
    assert len(summary) == 400
    coverage = float(((summary["ci_low"] <= 0.5) & (0.5 <= summary["ci_high"])).mean())
    assert abs(coverage - 0.95) <= 0.03, coverage


def test_unit_array_keeps_seats_with_their_partner():
    units = pd.DataFrame(
        {
            "ego_seed": [1, 1, 0, 0, 0],
            "partner": ["b", "a", "a", "a", "b"],
            "seat": [0, 1, 0, 1, 1],
            "br_prox": [0.1, 0.2, 0.3, 0.4, 0.5],
        }
    )
    array = unit_array(units)  # [seeds (0, 1), partners (a, b), seats (0, 1)]
    expected = np.array([[[0.3, 0.4], [np.nan, 0.5]], [[np.nan, 0.2], [0.1, np.nan]]])
    np.testing.assert_array_equal(array, expected)
    wide = unit_array(units, partners=["b", "a", "c"])  # a shared partner axis; c never played
    np.testing.assert_array_equal(wide[:, :2], expected[:, ::-1])
    assert np.isnan(wide[:, 2]).all()
    with pytest.raises(ValueError, match="outside the partner axis"):
        unit_array(units, partners=["a"])


def test_median_levels_relabel_by_br_return():
    results, br = _hand_results()  # mean BR returns: p1 100, p2 25 -> median 62.5: p2 moderate, p1 expert
    flipped = results.assign(partner_level=results["partner"].map({"p1": "moderate", "p2": "expert"}))
    relabelled = assign_levels(flipped, br, "median")
    assert dict(zip(relabelled["partner"], relabelled["partner_level"])) == {"p1": "expert", "p2": "moderate"}
    assert assign_levels(flipped, br, "checkpoint") is flipped
    by_median = br_prox_summary(flipped, br, rng=np.random.default_rng(0), reps=50, levels="median")
    # the hand values of test_summary_hand_values: expert (p1) 0.7, moderate (p2) 1.0
    assert by_median.set_index("partner_level").loc["expert", "iqm"] == pytest.approx(0.7)
    assert by_median.set_index("partner_level").loc["moderate", "iqm"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="valid: checkpoint, median"):
        assign_levels(results, br, "quartile")
