"""`zsceval report DIR` on a small synthetic results table: printed numbers and figures."""

import json
import re

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from click.testing import CliRunner

from zsceval.commands.report import report
from zsceval.evaluation.manifest import (
    BRReference,
    FileRef,
    PartnerEntry,
    PartnerSetManifest,
    SelectionRecord,
    write_manifest,
)
from zsceval.stats.metrics import bootstrap_ci, br_prox, iqm

LAYOUTS = ["coordination_ring", "counter_circuit"]
ALGORITHMS = ["fcp", "mep", "sp"]
PARTNERS = ["p0", "p1", "p2", "p3"]  # p0, p1 expert (final); p2, p3 moderate (mid)
SEEDS, SEATS, EPISODES = 3, 2, 3
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def synthetic(seed=0):
    """Returns [layout, algorithm, seed, partner, seat, episode] and BR returns [layout, partner, seat]."""
    rng = np.random.default_rng(seed)
    returns = (
        rng.integers(0, 12, size=(len(LAYOUTS), len(ALGORITHMS), SEEDS, len(PARTNERS), SEATS, EPISODES))
        * 20.0
    )
    br = rng.integers(4, 12, size=(len(LAYOUTS), len(PARTNERS), SEATS)) * 20.0
    br[0, 3, 1] = 0.0  # a partner nobody scores with in one seat: BR-Prox 1 by ZSC-Eval's rule
    return returns, br


def write_tables(directory, returns, br):
    rows = [
        {
            "layout": LAYOUTS[li],
            "algorithm": ALGORITHMS[ai],
            "ego_seed": s,
            "partner": PARTNERS[pi],
            "partner_level": "expert" if pi < 2 else "moderate",
            "seat": seat,
            "episode": e,
            "sparse_return": returns[li, ai, s, pi, seat, e],
        }
        for li, ai, s, pi, seat, e in np.ndindex(returns.shape)
    ]
    pd.DataFrame(rows).to_parquet(directory / "results.parquet")
    br_rows = [
        {"layout": LAYOUTS[li], "partner": PARTNERS[pi], "seat": seat, "br_return": br[li, pi, seat]}
        for li, pi, seat in np.ndindex(br.shape)
    ]
    pd.DataFrame(br_rows).to_parquet(directory / "br_returns.parquet")


def write_features(directory):
    rng = np.random.default_rng(1)
    frames = []
    for layout in LAYOUTS:
        frame = pd.DataFrame(rng.uniform(0, 10, size=(12, 5)), columns=[f"event_{i}" for i in range(5)])
        frame.insert(0, "candidate_id", [f"hsp{i}" for i in range(12)])
        frame.insert(0, "layout", layout)
        frame["selected"] = [i in (1, 4, 7, 9) for i in range(12)]
        frames.append(frame)
    pd.concat(frames).to_parquet(directory / "features.parquet")


def expected_all_rows(returns, br, seed, reps):
    """IQM and CI of every (layout, algorithm) over all partners, computed from the arrays directly."""
    units = br_prox(returns.mean(axis=-1), br[:, None, None, :, :])  # [L, A, seeds, partners, seats]
    # groups in documented order: (layout, algorithm) sorted, levels all, moderate, expert
    children = np.random.default_rng(seed).spawn(len(LAYOUTS) * len(ALGORITHMS) * 3)
    expected = {}
    for li, ai in np.ndindex(units.shape[:2]):
        # [seeds, partners, seats]: a resampled partner brings both of its seats
        ci = bootstrap_ci(units[li, ai], reps=reps, rng=children[3 * (li * len(ALGORITHMS) + ai)])
        expected[(LAYOUTS[li], ALGORITHMS[ai])] = ci
        assert ci.estimate == pytest.approx(iqm(units[li, ai]))
    moderate = {
        (LAYOUTS[li], ALGORITHMS[ai]): iqm(units[li, ai, :, 2:]) for li, ai in np.ndindex(units.shape[:2])
    }
    return expected, moderate


def test_report_json_matches_direct_metrics(tmp_path):
    returns, br = synthetic()
    write_tables(tmp_path, returns, br)
    result = CliRunner().invoke(
        report, [str(tmp_path), "--json", "--reps", "300", "--seed", "7", "--no-figures"]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    rows = {(r["layout"], r["algorithm"], r["partner_level"]): r for r in payload["rows"]}
    expected, moderate = expected_all_rows(returns, br, seed=7, reps=300)
    for (layout, algorithm), ci in expected.items():
        row = rows[(layout, algorithm, "all")]
        assert row["iqm"] == pytest.approx(ci.estimate)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((ci.low, ci.high))
        assert row["num_units"] == SEEDS * len(PARTNERS) * SEATS
        assert row["num_candidates"] == len(PARTNERS) and row["informative"] is False
        assert rows[(layout, algorithm, "moderate")]["iqm"] == pytest.approx(moderate[(layout, algorithm)])
    assert len(rows) == len(LAYOUTS) * len(ALGORITHMS) * 3


def test_report_table_and_figures(tmp_path):
    returns, br = synthetic()
    write_tables(tmp_path, returns, br)
    write_features(tmp_path)
    result = CliRunner().invoke(report, [str(tmp_path), "--reps", "300", "--seed", "7"])
    assert result.exit_code == 0, result.output
    expected, _ = expected_all_rows(returns, br, seed=7, reps=300)
    for (layout, algorithm), ci in expected.items():
        assert f"layout: {layout}" in result.stdout
        line = next(
            ln
            for ln in result.stdout.splitlines()
            if ln.startswith(algorithm + " ") and f"{ci.estimate:.3f}" in ln
        )
        # 4 partners, each its own candidate: too few for an interval that informs (the JSON keeps it)
        assert f"{ci.estimate:.3f} [n/i]" in line
    assert "[n/i]: not informative, the set has 2 candidates at that level" in result.stdout  # 2 per level
    figures = tmp_path / "figures"
    names = ["br_prox.png", "br_prox_levels.png"]
    names += [f"partners_{kind}_{layout}.png" for kind in ("pca", "features") for layout in LAYOUTS]
    for name in names:
        assert (figures / name).read_bytes()[:8] == PNG_MAGIC, name
    assert not [p for p in figures.iterdir() if p.suffix == ".tmp"]


def test_report_manifest_marks_partners(tmp_path):
    returns, br = synthetic()
    write_tables(tmp_path, returns, br)
    ref = FileRef("x.pt", "0" * 64)  # not verified by `report`
    partners = tuple(
        PartnerEntry(
            f"hsp{i}_final", "final", ref, BRReference(ref, 100.0), (float(i), 2.0, 1.0 + i % 2), f"hsp{i}"
        )
        for i in range(3)
    )
    selection = SelectionRecord(
        "exact", "BR-Div", 1.0, 3, 1, ("hsp0", "hsp1", "hsp2"), ("hsp0", "hsp1", "hsp2")
    )
    manifest = PartnerSetManifest("coordination_ring", 0, ("a", "b", "c"), selection, partners)
    path = write_manifest(manifest, tmp_path / "ring.json")
    result = CliRunner().invoke(report, [str(tmp_path), "--reps", "50", "--manifest", str(path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "figures" / "partners_features_coordination_ring.png").read_bytes()[:8] == PNG_MAGIC


def test_report_figures_folder_is_checked_before_the_compute(tmp_path, monkeypatch):
    """A figures path that cannot be written fails before any statistic is computed."""
    from zsceval.bench import report_contents

    returns, br = synthetic()
    write_tables(tmp_path, returns, br)
    (tmp_path / "figures").write_text("a file where the figures' folder goes")
    calls = []
    monkeypatch.setattr(report_contents, "gather_report", lambda *a, **k: calls.append(a))
    result = CliRunner().invoke(report, [str(tmp_path), "--reps", "50"])
    assert result.exit_code != 0 and not calls
    assert f"cannot write the figures to {tmp_path / 'figures'}" in result.output
    assert "--no-figures" in result.output
    assert (tmp_path / "figures").read_text().startswith("a file")  # nothing overwritten
    monkeypatch.undo()
    assert CliRunner().invoke(report, [str(tmp_path), "--reps", "50", "--no-figures"]).exit_code == 0


def test_report_missing_results_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(report, [str(tmp_path)])
    assert result.exit_code != 0
    assert "results.parquet" in result.output


def test_report_json_statistics_and_paper_comparison(tmp_path):
    from zsceval.stats.statistics import performance_profile, probability_of_improvement

    returns, br = synthetic()
    write_tables(tmp_path, returns, br)
    args = [str(tmp_path), "--json", "--reps", "200", "--no-figures", "--compare", "zsceval-paper"]
    result = CliRunner().invoke(report, args)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    units = br_prox(returns.mean(axis=-1), br[:, None, None, :, :])  # [L, A, seeds, partners, seats]
    poi = {
        (r["layout"], r["algorithm_x"], r["algorithm_y"]): r for r in payload["probability_of_improvement"]
    }
    assert len(poi) == len(LAYOUTS) * len(ALGORITHMS) * (len(ALGORITHMS) - 1)
    for li, layout in enumerate(LAYOUTS):
        for ai, a in enumerate(ALGORITHMS):
            for bi, b in enumerate(ALGORITHMS):
                if a != b:
                    row = poi[(layout, a, b)]
                    assert row["poi"] == pytest.approx(
                        probability_of_improvement(units[li, ai], units[li, bi])
                    )
                    assert row["ci_low"] <= row["poi"] <= row["ci_high"]
    profiles = {(r["layout"], r["algorithm"], r["threshold"]): r for r in payload["performance_profiles"]}
    assert profiles[("counter_circuit", "mep", 0.5)]["fraction"] == pytest.approx(
        performance_profile(units[1, 1], np.array([0.5]))[0]
    )
    ranks = {(r["layout"], r["algorithm"]): r for r in payload["ranks"]}
    for li, layout in enumerate(LAYOUTS):
        iqms = {a: iqm(units[li, ai]) for ai, a in enumerate(ALGORITHMS)}
        for a in ALGORITHMS:
            assert ranks[(layout, a)]["rank"] == 1 + sum(v > iqms[a] for v in iqms.values())
        # ZSC-Eval, corrected mapping (zsceval/bench/reference/zsceval_paper.yaml): ring fcp .69, mep .70, sp
        # .27; circuit .59, .62, .09
        paper = {"coordination_ring": [0.69, 0.70, 0.27], "counter_circuit": [0.59, 0.62, 0.09]}[layout]
        rows = {r["algorithm"]: r for r in payload["comparison"]["rows"] if r["layout"] == layout}
        assert [rows[a]["reference"] for a in ALGORITHMS] == paper
        rho = {r["layout"]: r["spearman"] for r in payload["comparison"]["layouts"]}[layout]
        expected = scipy.stats.spearmanr([iqms[a] for a in ALGORITHMS], paper).statistic
        assert rho == pytest.approx(expected)


def test_report_statistics_figures_and_median_levels(tmp_path):
    returns, br = synthetic()
    write_tables(tmp_path, returns, br)
    args = [str(tmp_path), "--reps", "100", "--compare", "zsceval-paper", "--levels", "median"]
    result = CliRunner().invoke(report, args)
    assert result.exit_code == 0, result.output
    for header in ("Probability of improvement", "Performance profiles", "Ranks by IQM", "Spearman rho"):
        assert header in result.stdout
    names = ["probability_of_improvement.png", "performance_profiles.png", "ranks.png"]
    for name in [*names, "compare_zsceval-paper.png"]:
        assert (tmp_path / "figures" / name).read_bytes()[:8] == PNG_MAGIC, name
    payload = json.loads(CliRunner().invoke(report, [*args, "--json", "--no-figures"]).stdout)
    units = br_prox(returns.mean(axis=-1), br[:, None, None, :, :])
    # median split of ring's mean BR returns: partners at or below the median are moderate
    mean_br = br[0].mean(axis=-1)
    moderate = mean_br <= np.median(mean_br)
    row = next(
        r
        for r in payload["rows"]
        if (r["layout"], r["algorithm"], r["partner_level"]) == ("coordination_ring", "sp", "moderate")
    )
    assert row["iqm"] == pytest.approx(iqm(units[0, 2][:, moderate]))


def test_report_unknown_reference_lists_shipped_ones(tmp_path):
    returns, br = synthetic()
    write_tables(tmp_path, returns, br)
    result = CliRunner().invoke(report, [str(tmp_path), "--no-figures", "--compare", "zsceval-papr"])
    assert result.exit_code != 0 and "zsceval-paper" in result.output


# -- partner strata ---------------------------------------------------------------------
UNHELPFUL = ["unhelpful-random", "unhelpful-stay"]  # sorted: the summary's group order


def write_unhelpful(directory, seed=3):
    """unhelpful.parquet with unequal episodes per unit; returns ``{(layout, algo, partner):
    float[seeds, seats]}``, the unit means computed from the raw numbers."""
    rng = np.random.default_rng(seed)
    rows, units = [], {}
    for layout, algorithm, partner in np.ndindex(len(LAYOUTS), len(ALGORITHMS), len(UNHELPFUL)):
        unit = np.zeros((SEEDS, SEATS))
        for s, seat in np.ndindex(SEEDS, SEATS):
            episodes = 1 + (s + seat) % 3  # 1 to 3 episodes: a mean of units is not a mean of episodes
            if UNHELPFUL[partner] == "unhelpful-random":
                values = rng.integers(0, 6, size=episodes) * 20.0
            else:  # stay: one soup per episode with seed 0's ego, none with the others
                values = np.full(episodes, 20.0 * (s == 0))
            unit[s, seat] = values.sum() / episodes
            for e, v in enumerate(values):
                rows.append({"layout": LAYOUTS[layout], "algorithm": ALGORITHMS[algorithm], "ego_seed": s,
                             "partner": UNHELPFUL[partner], "partner_level": "unhelpful", "seat": seat,
                             "seating": f"seat{seat}", "episode": e, "sparse_return": v})  # fmt: skip
        units[(LAYOUTS[layout], ALGORITHMS[algorithm], UNHELPFUL[partner])] = unit
    frame = pd.DataFrame(rows)
    frame.to_parquet(directory / "unhelpful.parquet")
    return units, frame


def test_report_prints_the_partner_strata_computed_from_the_tables(tmp_path):
    returns, br = synthetic()
    write_tables(tmp_path, returns, br)
    units, frame = write_unhelpful(tmp_path)
    args = [str(tmp_path), "--reps", "300", "--seed", "7", "--no-figures", "--no-stats"]
    payload = json.loads(CliRunner().invoke(report, [*args, "--json"]).stdout)
    text = CliRunner().invoke(report, args).stdout
    strata = {(r["layout"], r["algorithm"], r["partners"]): r for r in payload["strata"]}
    assert len(strata) == len(LAYOUTS) * len(ALGORITHMS) * 4
    rows = {(r["layout"], r["algorithm"], r["partner_level"]): r for r in payload["rows"]}
    br_units = br_prox(returns.mean(axis=-1), br[:, None, None, :, :])  # [L, A, seeds, partners, seats]
    children = np.random.default_rng([7, 36]).spawn(len(units))  # the documented group streams
    assert "ZSC-Eval's expert and moderate partners are the skilled and semi-skilled strata" in text
    blocks = dict(b.split("\n", 1) for b in text.split("Partner strata")[1].split("\nlayout: ")[1:])
    for li, ai in np.ndindex(len(LAYOUTS), len(ALGORITHMS)):
        layout, algorithm = LAYOUTS[li], ALGORITHMS[ai]
        skilled, semi = strata[(layout, algorithm, "expert")], strata[(layout, algorithm, "moderate")]
        assert (skilled["stratum"], semi["stratum"]) == ("skilled", "semi-skilled")
        assert skilled["estimate"] == pytest.approx(iqm(br_units[li, ai, :, :2]))  # p0, p1: final
        assert semi["estimate"] == pytest.approx(iqm(br_units[li, ai, :, 2:]))  # p2, p3: mid
        for name, row in (("expert", skilled), ("moderate", semi)):  # the summary's rows, reused
            summary_row = rows[(layout, algorithm, name)]
            assert (row["ci_low"], row["ci_high"]) == (summary_row["ci_low"], summary_row["ci_high"])
        cells = [f"{r['estimate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]" for r in (skilled, semi)]
        for i, partner in enumerate(UNHELPFUL):
            unit = units[(layout, algorithm, partner)]
            ci = bootstrap_ci(unit, np.nanmean, reps=300, rng=children[(li * len(ALGORITHMS) + ai) * 2 + i])
            row = strata[(layout, algorithm, partner)]
            assert (row["stratum"], row["metric"]) == ("unhelpful", "mean_sparse_return")
            assert row["estimate"] == pytest.approx(unit.mean())
            assert (row["ci_low"], row["ci_high"]) == pytest.approx((ci.low, ci.high))
            assert row["ci_low"] <= row["estimate"] <= row["ci_high"]
        # units, not episodes: seed 0's stay units are 20 over 3 of the 12 episodes (mean 5, not 20/3)
        key = (layout, algorithm, "unhelpful-stay")
        sub = frame[(frame.layout == layout) & (frame.algorithm == algorithm) & (frame.partner == key[2])]
        assert sub["sparse_return"].mean() == pytest.approx(5.0)
        assert units[key].mean() == pytest.approx(20 / 3)
        stay, rand = strata[key], strata[(layout, algorithm, "unhelpful-random")]
        cells += [f"{r['estimate']:.1f} [{r['ci_low']:.1f}, {r['ci_high']:.1f}]" for r in (stay, rand)]
        line = next(ln for ln in blocks[layout].splitlines() if ln.startswith(algorithm + " "))
        assert re.split(r"\s{2,}", line.strip()) == [algorithm, *cells]
    header = next(ln for ln in blocks[LAYOUTS[0]].splitlines() if ln.startswith("algorithm"))
    names = ["skilled (expert)", "semi-skilled (moderate)", "unhelpful-stay", "unhelpful-random"]
    assert re.split(r"\s{2,}", header.strip()) == ["algorithm", *names]


def test_report_strata_without_unhelpful_games_show_skilled_and_semi_skilled_only(tmp_path):
    returns, br = synthetic()
    write_tables(tmp_path, returns, br)
    args = [str(tmp_path), "--reps", "100", "--no-figures", "--no-stats"]
    payload = json.loads(CliRunner().invoke(report, [*args, "--json"]).stdout)
    assert {r["stratum"] for r in payload["strata"]} == {"skilled", "semi-skilled"}
    text = CliRunner().invoke(report, args).stdout
    assert "no unhelpful-partner games in this folder" in text


@pytest.mark.parametrize("rule", ["one", "nan"])
def test_report_notes_name_the_units_whose_br_never_scores(tmp_path, rule):
    returns, br = synthetic()  # layout 0, p3 seat 1: BR return 0
    br[0, 1, 0] = -20.0  # and a negative one
    write_tables(tmp_path, returns, br)
    args = [str(tmp_path), "--json", "--reps", "50", "--no-figures", "--no-stats", "--nonpositive-br", rule]
    result = CliRunner().invoke(report, args)
    assert result.exit_code == 0, result.output
    notes = [n for n in json.loads(result.stdout)["notes"] if "BR return is <= 0" in n]
    total = len(PARTNERS) * SEATS
    assert notes == [
        f"on {LAYOUTS[0]}, the BR return is <= 0 for 2 of {total} (partner, seat) units (p1, p3): those "
        + (
            "units score BR-Prox 1 for every ego (ZSC-Eval's rule; --nonpositive-br nan leaves them out)"
            if rule == "one"
            else "units are left out of every aggregate (--nonpositive-br nan)"
        )
    ]


def test_report_notes_name_the_mid_units_whose_cotrained_br_does_better(tmp_path):
    returns, br = synthetic()
    write_tables(tmp_path, returns, br)
    fresh = dict(zip(PARTNERS, range(len(PARTNERS))))
    rows = []  # the mid partners p2, p3 on the first layout, 2 episodes per seat
    for partner, seat in [("p2", 0), ("p2", 1), ("p3", 0), ("p3", 1)]:
        base = br[0, fresh[partner], seat]
        # p3 seat 1 (fresh BR 0) and p2 seat 0 (+40 over the fresh BR) beat the fresh BR; p2 seat 1
        # is level with it (+1.1 x: within the margin); p3 seat 0 below it
        mean = {("p2", 0): base + 40, ("p2", 1): 1.1 * base + 1, ("p3", 0): base - 20, ("p3", 1): 60}
        for episode, delta in enumerate((-10, 10)):
            rows.append({"layout": LAYOUTS[0], "partner": partner, "seat": seat, "episode": episode,
                         "cotrained_br_return": mean[(partner, seat)] + delta})  # fmt: skip
    pd.DataFrame(rows).to_parquet(tmp_path / "cotrained_br_returns.parquet")
    args = [str(tmp_path), "--json", "--reps", "50", "--no-figures", "--no-stats"]
    result = CliRunner().invoke(report, args)
    assert result.exit_code == 0, result.output
    notes = [n for n in json.loads(result.stdout)["notes"] if "co-trained BR" in n]
    assert notes == [
        f"on {LAYOUTS[0]}, the candidate's co-trained BR returns more than the fresh mid BR (1.1 x + 1) "
        f"on 2 of 4 mid (partner, seat) units (p2, p3; largest: p3 seat 1, 0.0 against 60.0): the fresh "
        "BR is not the best response there, so those units' BR-Prox is overstated for every ego"
    ]
    (tmp_path / "cotrained_br_returns.parquet").unlink()  # a bench without the table: no such note
    notes = json.loads(CliRunner().invoke(report, args).stdout)["notes"]
    assert not [n for n in notes if "co-trained BR" in n]


def test_report_best_known_br_reference_divides_by_the_larger_return(tmp_path):
    """--br-reference best-known: a mid unit whose co-trained BR returns more is scored against that
    return; the IQMs are summarize()'s on BR returns adjusted by hand, and a note says so."""
    from zsceval.bench.report import read_tables, summarize

    returns, br = synthetic()
    write_tables(tmp_path, returns, br)
    raised = {("p2", 0): br[0, 2, 0] + 100.0, ("p3", 1): 200.0}  # first layout; p2 seat 1 lower
    rows = [{"layout": LAYOUTS[0], "partner": partner, "seat": seat, "episode": 0,
             "cotrained_br_return": raised.get((partner, seat), br[0, int(partner[1]), seat] - 40.0)}
            for partner in ("p2", "p3") for seat in (0, 1)]  # fmt: skip
    pd.DataFrame(rows).to_parquet(tmp_path / "cotrained_br_returns.parquet")
    args = [str(tmp_path), "--json", "--reps", "50", "--no-figures", "--no-stats"]
    result = CliRunner().invoke(report, [*args, "--br-reference", "best-known"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    results, fresh, _ = read_tables(tmp_path)
    adjusted = fresh.copy()
    for (partner, seat), value in raised.items():
        unit = (adjusted["layout"] == LAYOUTS[0]) & (adjusted["partner"] == partner)
        adjusted.loc[unit & (adjusted["seat"] == seat), "br_return"] = value
    expected = summarize(results, adjusted, seed=0, reps=50)
    got = pd.DataFrame(payload["rows"])
    merged = got.merge(expected, on=["layout", "algorithm", "partner_level"], suffixes=("", "_expected"))
    assert len(merged) == len(expected) and np.allclose(merged["iqm"], merged["iqm_expected"])
    fresh_payload = json.loads(CliRunner().invoke(report, args).stdout)
    assert fresh_payload["rows"] != payload["rows"] and payload["br_reference"] == "best-known"
    assert fresh_payload["br_reference"] == "fresh"
    assert any("on 2 mid (partner, seat) units (--br-reference best-known" in n for n in payload["notes"])
    (tmp_path / "cotrained_br_returns.parquet").unlink()
    missing = CliRunner().invoke(report, [*args, "--br-reference", "best-known"])
    assert missing.exit_code != 0 and "cotrained_br_returns.parquet" in missing.output


def report_on_synthetic_tables(directory, *args):
    """``zsceval report DIR ARGS`` on :func:`synthetic`'s tables written to ``directory``; the run
    must succeed."""
    write_tables(directory, *synthetic())
    result = CliRunner().invoke(report, [str(directory), *args])
    assert result.exit_code == 0, result.output
    return result


def test_report_text_marks_differences_from_the_reference(tmp_path):
    args = ["--reps", "100", "--no-figures", "--no-stats", "--compare", "zsceval-paper"]
    text = report_on_synthetic_tables(tmp_path, *args).stdout
    payload = json.loads(report_on_synthetic_tables(tmp_path, *args, "--json").stdout)["comparison"]["rows"]
    block = text[text.index("Comparison with") :]
    for row in payload:
        line = next(
            ln
            for ln in block[block.index(f"layout: {row['layout']} (") :].splitlines()
            if ln.startswith(row["algorithm"] + " ")
        )
        mark = f"{row['iqm'] - row['reference']:+.2f}"
        mark += " *" if abs(row["iqm"] - row["reference"]) > 0.15 else ""
        mark += " !" if not row["ci_low"] <= row["reference"] <= row["ci_high"] else ""
        assert line.rstrip().endswith(mark), (line, mark)
    assert any(r["flagged"] for r in payload) and not all(r["flagged"] for r in payload)
