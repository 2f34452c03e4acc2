"""Intervals that resample every level that varies: a candidate's mid and final checkpoints are one
training run, so the bootstrap resamples candidates (both checkpoints, both seats), then ego seeds;
a set with too few candidates gets no interval that pretends to inform."""

import numpy as np
import pandas as pd
import pytest

from zsceval.stats.metrics import (
    bootstrap_ci,
    br_prox_summary,
    candidate_array,
    candidate_of,
    unit_array,
)


def _units(candidate_scores: dict[str, float], seeds=(0, 1, 2)) -> pd.DataFrame:
    rows = []
    for cid, score in candidate_scores.items():
        for slot in ("final", "mid"):
            for seed in seeds:
                for seat in (0, 1):
                    rows.append(
                        {"ego_seed": seed, "partner": f"{cid}_{slot}", "seat": seat, "br_prox": score}
                    )
    return pd.DataFrame(rows)


def test_candidate_of_pairs_a_candidates_checkpoints_and_leaves_other_ids_alone():
    assert candidate_of("c006_final") == ("c006", "final") and candidate_of("c006_mid") == ("c006", "mid")
    assert candidate_of("c001_final+c003_mid") == ("c001_final+c003_mid", "")
    assert candidate_of("human_proxy") == ("human_proxy", "")


def test_the_candidate_array_holds_both_checkpoints_and_seats_of_a_candidate_in_one_entry():
    units = _units({"c000": 0.0, "c001": 1.0})
    units.loc[units["partner"] == "c001_mid", "br_prox"] = 0.5
    array = candidate_array(units)
    assert array.shape == (3, 2, 2, 2)  # seeds, candidates, (final, mid), seats
    assert np.all(array[:, 0] == 0.0) and np.all(array[:, 1, 0] == 1.0) and np.all(array[:, 1, 1] == 0.5)
    wide = candidate_array(units, partners=["c000_final", "c000_mid", "c001_final", "c001_mid", "c009_final"])
    assert wide.shape == (3, 3, 2, 2) and np.isnan(wide[:, 2]).all()  # a candidate never played


def test_resampling_candidates_keeps_the_variance_that_resampling_partners_hides():
    """Scores set by the candidate (its two checkpoints alike): 6 candidates are 6 draws, not 12."""
    units = _units({f"c{i:03d}": i / 5 for i in range(6)})

    def mean(x, axis=None):
        return np.nanmean(x, axis=axis)

    by_partner = bootstrap_ci(unit_array(units), mean, reps=4000, rng=np.random.default_rng(0))
    by_candidate = bootstrap_ci(candidate_array(units), mean, reps=4000, rng=np.random.default_rng(0))
    assert by_partner.estimate == by_candidate.estimate  # the same units, only the resampling differs
    width = lambda ci: ci.high - ci.low  # noqa: E731
    assert width(by_candidate) > 1.3 * width(by_partner)  # about sqrt(2): half as many independent draws


def test_a_set_of_fewer_than_five_candidates_is_not_informative_and_the_report_says_so():
    from zsceval.bench.report import format_table

    def results(n):
        rows = []
        for i in range(n):
            for slot, level in (("final", "expert"), ("mid", "moderate")):
                for seed in (0, 1):
                    for seat in (0, 1):
                        rows.append({"layout": "l", "algorithm": "sp", "ego_seed": seed,
                                     "partner": f"c{i:03d}_{slot}", "partner_level": level, "seat": seat,
                                     "episode": 0,
                                     "sparse_return": float(10 * (i + seat))})  # fmt: skip
        brs = pd.DataFrame(
            {"layout": "l", "partner": sorted({r["partner"] for r in rows}), "br_return": 50.0}
        )
        return pd.DataFrame(rows), brs

    small = br_prox_summary(*results(3), rng=np.random.default_rng(0), reps=200)
    assert set(small["num_candidates"]) == {3} and not small["informative"].any()
    text = format_table(small)
    assert "[n/i]" in text and "3 candidates" in text and "resample candidates" in text
    large = br_prox_summary(*results(6), rng=np.random.default_rng(0), reps=200)
    assert large["informative"].all() and "[n/i]" not in format_table(large)


def test_pooled_training_runs_are_resampled_first():
    """Three runs whose levels differ (a retrained BR moves by tens of points): an interval over runs
    is wider than one over the pooled pairs and episodes, and holds the pooled mean."""
    from zsceval.stats.metrics import runs_bootstrap_ci

    rng = np.random.default_rng(0)
    runs = [level + 0.05 * rng.standard_normal((8, 10, 2)) for level in (-0.3, -0.1, +0.1)]
    over_runs = runs_bootstrap_ci(runs, reps=2000, rng=np.random.default_rng(1))
    pooled = bootstrap_ci(np.concatenate(runs, axis=1), np.nanmean, reps=2000, rng=np.random.default_rng(1))
    assert over_runs.estimate == pytest.approx(np.mean(np.concatenate(runs, axis=1)))
    assert over_runs.low < -0.2 and over_runs.high > 0.0  # three draws of runs reach both sides
    # pairs and episodes alone: an interval that leaves the run-to-run variance out, far narrower
    assert over_runs.high - over_runs.low > 1.5 * (pooled.high - pooled.low)
