"""benchmarks/sets/cotrained_br.py: a set's fresh mid-checkpoint BRs beside the co-trained BRs."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location(
        "cotrained_br_in_tests", REPO / "benchmarks/sets/cotrained_br.py"
    )
    script = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = script
    spec.loader.exec_module(script)
    return script


def test_each_mid_partner_gets_its_stored_and_co_trained_br_returns(tiny_bench):
    """On the tiny bench: one row per (mid partner, seat) of the set, the stored fresh BR return its
    br_returns.parquet mean, the co-trained returns those of playing the candidate's own BR, and the
    best known return the largest of the three."""
    script = _script()
    _, out, _ = tiny_bench
    mids = script.table(out, "cramped_room", episodes=1)
    set_dir = out / "cramped_room" / "partners" / "set"
    stored = pd.read_parquet(set_dir / "br_returns.parquet").groupby(["partner", "seat"])["br_return"].mean()
    expected = {(p, seat) for p, _, _ in script.mid_partners(set_dir) for seat in (0, 1)}
    assert set(zip(mids["partner"], mids["seat"], strict=True)) == expected and expected
    for r in mids.itertuples():
        assert r.fresh_br == pytest.approx(stored[(r.partner, r.seat)])
        assert r.best_known == max(r.fresh_br, r.cotrained_at_mid, r.cotrained_final)
    cand = script.mid_partners(set_dir)[0]
    ckpts = out / "cramped_room" / "candidates" / cand[1] / "train" / "run" / "checkpoints"
    mid = ckpts / f"step_{cand[2]:012d}"
    row = mids[mids["partner"] == cand[0]].sort_values("seat")
    assert tuple(row["cotrained_at_mid"]) == script.play(mid, mid, "cramped_room", 1)


def test_best_known_returns_replace_only_the_lower_mid_denominators(tmp_path):
    """BR-Prox with the best known return: a unit whose stored BR return is 0 (1 for any ego) gets
    ret / best known; a unit the fresh BR already leads keeps its value; final partners are untouched."""
    script = _script()
    set_dir = tmp_path / "L" / "partners" / "set"
    set_dir.mkdir(parents=True)
    partners = ["a_mid", "a_mid", "b_mid", "b_mid", "a_final", "a_final"]
    br = pd.DataFrame({"partner": partners, "seat": [0, 1, 0, 1, 0, 1],
                       "br_return": [0.0, 0.0, 100.0, 100.0, 80.0, 80.0]})  # fmt: skip
    br.to_parquet(set_dir / "br_returns.parquet")
    units = br[["partner", "seat"]].assign(layout="L", algorithm="sp", ego_seed=0, episode=0,
                                           partner_level=["moderate"] * 4 + ["expert"] * 2,
                                           sparse_return=[20.0, 30.0, 50.0, 60.0, 40.0, 40.0])  # fmt: skip
    units.to_parquet(tmp_path / "results.parquet")
    mids = pd.DataFrame({"partner": ["a_mid", "a_mid", "b_mid", "b_mid"], "seat": [0, 1, 0, 1],
                         "best_known": [40.0, 60.0, 100.0, 100.0]})  # fmt: skip
    got = script.iqm_with(tmp_path, set_dir, "L", mids).loc["sp"]
    stored = [1.0, 1.0, 0.5, 0.6, 0.5, 0.5]
    best = [0.5, 0.5, 0.5, 0.6, 0.5, 0.5]
    from scipy.stats import trim_mean

    assert got["stored"] == pytest.approx(round(trim_mean(np.array(stored), 0.25), 3))
    assert got["with_best_known"] == pytest.approx(round(trim_mean(np.array(best), 0.25), 3))
    assert got["stored"] != got["with_best_known"]
