"""The published baselines' scores on every shipped partner set, as one markdown table.

One row per (set, egos): the set's protocol and size (from ``eval_partners/index.yaml``), the egos
that were scored on it, each algorithm's IQM BR-Prox over all partners with the 95% CI of
``zsceval report`` (its :func:`zsceval.bench.report.summarize`: the bootstrap resamples candidates,
a candidate's mid and final checkpoints together with both seats, then ego seeds), and what the set
tells apart: the algorithms whose probability of improvement over SP
(:func:`zsceval.bench.report.compare_algorithms`) has a CI above or below 0.5, and the (partner,
seat) units that decide, from the units of :func:`zsceval.stats.metrics.br_prox_units`.

Each data folder is one that ``zsceval report DIR`` reads (``results.parquet``,
``br_returns.parquet``). Before anything is computed, its BR returns on the set's layout must be the
set's own (``br_returns.parquet`` of the set's test split: the same (partner, seat) units, the same
values); a folder scored on other partners is refused, naming both.

    python benchmarks/sets/scores_table.py [--seed 0] [--check-seeds 1 ...] [--reps 2000]

The numbers are those of ``zsceval report DIR --seed SEED``. The verdicts must hold at every seed of
``--check-seeds`` too (default 1): an algorithm's P(improvement over SP) CI counts as above (below)
0.5 only when it is at every seed, and one that is at some seeds only is named as at the edge.

To add a set's scores, add one line to :data:`ROWS`.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from zsceval.bench import report as rep
from zsceval.evaluation.shipped_sets import ShippedSet, parse_set_name, read_index, registry_roots
from zsceval.stats.metrics import MIN_INFORMATIVE_CANDIDATES, br_prox_units, candidate_of

REPO = Path(__file__).resolve().parents[2]

ALGORITHMS: tuple[tuple[str, str], ...] = (
    ("sp", "SP"), ("fcp", "FCP"), ("mep", "MEP"), ("trajedi", "TrajeDi"), ("hsp", "HSP"), ("cole", "COLE"),
    ("e3t", "E3T"),
)  # fmt: skip
"""The table's algorithm columns: (results name, column title)."""

BASELINE = "sp"
"""The algorithm the probability of improvement compares every other one with."""

SPREAD = 0.5
"""A unit decides when the algorithms' mean BR-Prox on it (over ego seeds) spans at least this much."""

SHOWN_UNITS = 6
"""Units named per list in the verdict column; longer lists give the count and the first ones."""


@dataclass(frozen=True)
class Row:
    """One row of the table.

    Attributes:
        set: the set's name, ``zsceval:NAME@VERSION`` (its test split is scored).
        data: a folder ``zsceval report`` reads, relative to the repository; None where the
            per-episode tables were not kept (the IQMs then come from the index's ``baselines``).
        egos: which egos were scored, at which env-step budgets.
        withdrawn: algorithms whose scores on the set are withdrawn (shown as ``withdrawn*``, left out
            of the verdict).
        note: what the numbers leave out, in words (appended to the verdict).
    """

    set: str
    data: str | None
    egos: str
    withdrawn: tuple[str, ...] = ()
    note: str = ""


QUICK_SETS_EGOS = "`overcooked-quick-sets-scores` at `3b7d9ef`: SP and E3T 3e6 env steps, the others 1.5e7"
ROWS: tuple[Row, ...] = (
    Row("zsceval:cramped_room@1", None, "`overcooked-quick` at `2ceea52`: every ego 2e6 env steps, 3 seeds",
        note="FCP, MEP and TrajeDi below SP's IQM at SP's budget"),
    Row("zsceval:counter_circuit@1", "docs/data/quick-cc-0fb63d1",
        "`overcooked-quick-cc` at `0fb63d1`: SP and E3T 3e6 env steps, the others 1.5e7"),
    Row("zsceval:counter_circuit@1", "docs/data/s12-egos-on-counter_circuit-v1",
        "`overcooked-s12` at `0fb63d1` (reference budgets): SP and E3T 1e7 env steps, the others 5e7; "
        "no HSP"),
    Row("zsceval:counter_circuit@2", "docs/data/s12-hsp66-ab1353d",
        "`overcooked-s12` at `0fb63d1` (reference budgets): SP and E3T 1e7 env steps, the others 5e7; "
        "HSP at 6 + 6 from `overcooked-s12-hsp-cc` at `ab1353d` (3 + 9: docs/results.md)"),
    Row("zsceval:asymmetric_advantages@1", "docs/data/quick-sets-scores-3b7d9ef/asymmetric_advantages",
        QUICK_SETS_EGOS, withdrawn=("hsp",), note="the set rewards serving alone in seat 0"),
    Row("zsceval:asymmetric_advantages@1", "docs/data/quick-sets-sp-2d0d487",
        "`overcooked-quick-sets` at `2d0d487` (the run that made the set): SP 3e6 env steps"),
    Row("zsceval:coordination_ring@1", "docs/data/quick-sets-scores-3b7d9ef/coordination_ring",
        QUICK_SETS_EGOS, withdrawn=("hsp",)),
    Row("zsceval:coordination_ring@1", "docs/data/quick-sets-sp-2d0d487",
        "`overcooked-quick-sets` at `2d0d487` (the run that made the set): SP 3e6 env steps"),
    Row("zsceval:forced_coordination@1", "docs/data/quick-sets-scores-3b7d9ef/forced_coordination",
        QUICK_SETS_EGOS, withdrawn=("hsp",)),
    Row("zsceval:forced_coordination@1", "docs/data/quick-sets-sp-2d0d487",
        "`overcooked-quick-sets` at `2d0d487` (the run that made the set): SP 3e6 env steps"),
    Row("zsceval:coordination_ring@2", "docs/data/overcooked-s12-grid-6627195-coordination_ring",
        "`overcooked-s12-grid` at `6627195` (the run that made the set): SP and E3T 1e7, others 5e7 "
        "env steps, HSP 6 + 6"),
    Row("zsceval:asymmetric_advantages@2", "docs/data/overcooked-s12-grid-f6561e7-asymmetric_advantages",
        "`overcooked-s12-grid` at `f6561e7` (the run that made the set; the population methods' egos, "
        "its phase B, are queued): SP 1e7 env steps"),
    Row("zsceval:blocked_corridor@2", "docs/data/overcooked-s12-grid-h1e8-6943a99-blocked_corridor",
        "`overcooked-s12-grid-h1e8` at `6943a99` (the run that made the set; phase B queued): SP 1e7 "
        "env steps",
        note="12 of its 40 units (6 mid partners, both seats) have a BR return of 0 and score 1 for "
        "every ego (ZSC-Eval's rule); without them SP's IQM is 0.039 (docs/results.md)"),
    # One line per further (set, egos):
    # Row("zsceval:LAYOUT@VERSION", "docs/data/FOLDER", "`SUITE` at `COMMIT`: BUDGETS"),
)  # fmt: skip
"""Every (set, egos) the table shows, in its order."""


def find_set(name: str) -> ShippedSet:
    """The full test split of ``name`` (``label:name@version``) from its collection's index.

    Raises:
        ValueError: no such set in the installed collections (the valid names are listed).
    """
    label, set_name, version, _ = parse_set_name(name)
    roots = registry_roots()
    entries = [s for lbl, root in roots.items() for s in read_index(root, lbl, full=True)]
    for s in entries:
        if (s.label, s.name, s.version, s.split) == (label, set_name, version, "test"):
            return s
    valid = sorted({f"{s.label}:{s.name}@{s.version}" for s in entries})
    raise ValueError(f"no shipped set {name!r}; valid: {valid}")


def protocol(entry: ShippedSet) -> str:
    """The set's ``protocol`` as its index entry states it (``reference``: ZSC-Eval's protocol at
    the reference's budgets; ``quick``), and its budget, from its index provenance."""
    b = entry.provenance.budgets
    kind = "reference (population 12, the reference's budgets)" if entry.protocol == "reference" else "quick"
    return (
        f"{kind}: `{entry.provenance.suite}`, {b['candidates']} candidates x {steps(b['candidate_steps'])} "
        f"env steps, K = {b['k']}"
    )


def steps(value: float) -> str:
    """Env steps as the docs write them: ``1500000 -> "1.5e6"``, ``5000000 -> "5e6"``."""
    mantissa, exponent = f"{float(value):.2e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def size(entry: ShippedSet) -> str:
    """Partners and candidates of the test split, and its size on disk (the full folder where this
    checkout has it, else the release archive's)."""
    folder = entry.folder
    if (folder / "manifest.json").is_file():
        nbytes, where = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()), ""
    elif entry.archive:
        nbytes, where = int(entry.archive["size"]), " (archive)"
    else:
        nbytes, where = None, ""
    mb = "" if nbytes is None else f", {nbytes / 1e6:.1f} MB{where}"
    candidates = len({candidate_of(p)[0] for p in _set_units(entry).index.get_level_values("partner")})
    return f"{entry.partners} partners ({candidates} candidates){mb}"


def _set_units(entry: ShippedSet) -> pd.Series:
    """The set's BR return per (partner, seat), averaged over episodes."""
    br = pd.read_parquet(entry.folder / rep.BR_RETURNS_FILE)
    return br.groupby(["partner", "seat"], sort=True)["br_return"].mean()


def check_folder(entry: ShippedSet, br_returns: pd.DataFrame, folder: Path) -> None:
    """Refuse a data folder whose BR returns on the set's layout are not the set's own.

    Raises:
        ValueError: other (partner, seat) units, or other BR returns (the first differing ones named).
    """
    ours = br_returns[br_returns["layout"] == entry.layout]
    ours = ours.groupby(["partner", "seat"], sort=True)["br_return"].mean()
    theirs = _set_units(entry)
    if set(ours.index) != set(theirs.index):
        extra, missing = (
            sorted(set(ours.index) - set(theirs.index)),
            sorted(set(theirs.index) - set(ours.index)),
        )
        raise ValueError(
            f"{folder}: its {entry.layout} partners are not those of {entry.full_name}: "
            f"(partner, seat) not in the set {extra[:4]}, missing {missing[:4]}"
        )
    diff = (ours - theirs.reindex(ours.index)).abs()
    if (diff > 1e-6).any():
        raise ValueError(
            f"{folder}: BR returns differ from {entry.full_name}'s at {list(diff[diff > 1e-6].index)[:4]}"
        )


@dataclass(frozen=True)
class Scores:
    """One row's numbers: ``summary`` (the ``all`` rows of :func:`zsceval.bench.report.summarize` on the
    set's layout), ``poi`` (P(x > SP) rows of :func:`zsceval.bench.report.compare_algorithms`), ``units``
    (:func:`zsceval.stats.metrics.br_prox_units` on the set's layout)."""

    summary: pd.DataFrame
    poi: pd.DataFrame
    units: pd.DataFrame


def row_scores(row: Row, entry: ShippedSet, *, seed: int, reps: int, root: Path = REPO) -> Scores | None:
    """``zsceval report``'s numbers for one row (None when the row has no data folder).

    The whole folder is summarized as ``zsceval report DIR --seed SEED`` does (so the intervals are
    the report's own, bit for bit), then the set's layout is kept.
    """
    if row.data is None:
        return None
    folder = root / row.data
    results, br_returns, _ = rep.read_tables(folder)
    check_folder(entry, br_returns, folder)
    summary = rep.summarize(results, br_returns, seed=seed, reps=reps)
    poi = rep.compare_algorithms(results, br_returns, seed=seed, reps=reps)["poi"]
    units = br_prox_units(results, br_returns)
    on = summary["layout"] == entry.layout
    summary = summary[on & (summary["partner_level"] == "all")].set_index("algorithm")
    poi = poi[(poi["layout"] == entry.layout) & (poi["algorithm_y"] == BASELINE)].set_index("algorithm_x")
    return Scores(summary, poi, units[units["layout"] == entry.layout])


def _unit_names(keys: list[tuple[str, int]]) -> str:
    names = [f"{p}/{s}" for p, s in keys]
    if len(names) <= SHOWN_UNITS:
        return ", ".join(names)
    return f"{len(names)}, most apart first: " + ", ".join(names[:SHOWN_UNITS]) + ", ..."


def deciding_units(units: pd.DataFrame, withdrawn: tuple[str, ...] = ()) -> tuple[list, list, int]:
    """``(fixed, deciding, total)``: the (partner, seat) units where every ego of every algorithm
    scores BR-Prox 1, those where the algorithms' means over ego seeds span at least :data:`SPREAD`
    (widest span first), and the number of units (withdrawn algorithms, and algorithms that are
    not one of the table's :data:`ALGORITHMS` columns, such as a folder's renamed variants, left out)."""
    shown = [a for a, _ in ALGORITHMS if a not in withdrawn]
    units = units[units["algorithm"].isin(shown)]
    per_unit = units.groupby(["partner", "seat"], sort=True)["br_prox"]
    fixed = [k for k, v in per_unit if (v >= 1.0).all()]
    means = units.groupby(["partner", "seat", "algorithm"])["br_prox"].mean().unstack("algorithm")
    span = (means.max(axis=1) - means.min(axis=1)).sort_values(ascending=False, kind="stable")
    deciding = [k for k, v in span.items() if v >= SPREAD]
    return fixed, deciding, len(means)


def sides(scores: Scores, algos: list[str]) -> dict[str, str]:
    """``{algorithm: "above" | "below" | ""}``: where its P(improvement over SP) CI lies against 0.5."""
    poi = scores.poi.reindex([a for a in algos if a != BASELINE])
    return {a: "above" if r.ci_low > 0.5 else "below" if r.ci_high < 0.5 else "" for a, r in poi.iterrows()}


def verdict(row: Row, runs: list[Scores] | None, seeds: list[int]) -> str:
    """What the row's set tells apart, in words (module docstring); ``runs`` are its scores at each
    bootstrap seed of ``seeds``: an algorithm is above (below) SP when its CI is at every seed, and
    at the edge when at some seeds only."""
    if runs is None:
        return "CIs not recomputable: tables not kept" + (f"; {row.note}" if row.note else "")
    title = dict(ALGORITHMS)
    scores = runs[0]
    algos = [a for a, _ in ALGORITHMS if a in scores.summary.index and a not in row.withdrawn]
    candidates = int(scores.summary["num_candidates"].min())
    parts = []
    if len(algos) < 2:
        parts.append("one algorithm: nothing to compare")
    else:
        per_seed = [sides(s, algos) for s in runs]
        found = []
        for side in ("above", "below"):
            always = [title[a] for a in per_seed[0] if all(p[a] == side for p in per_seed)]
            if always:
                found.append(f"{side} 0.5: {', '.join(always)}")
            for a in per_seed[0]:
                at = [str(seed) for seed, p in zip(seeds, per_seed) if p[a] == side]
                if at and len(at) < len(seeds):
                    found.append(f"{title[a]} {side} 0.5 at bootstrap seed {', '.join(at)} only")
        if found:
            parts.append("P(improvement over SP) CI " + "; ".join(found))
        else:
            parts.append("**does not separate the methods**: no P(improvement over SP) CI excludes 0.5")
    if candidates < MIN_INFORMATIVE_CANDIDATES:
        parts.append(
            f"{candidates} candidates: `zsceval report` calls these intervals not informative "
            f"(it needs {MIN_INFORMATIVE_CANDIDATES})"
        )
    fixed, deciding, total = deciding_units(scores.units, row.withdrawn)
    if fixed:
        parts.append(f"{len(fixed)} of {total} units score 1 for every ego: {_unit_names(fixed)}")
    if len(algos) >= 2:
        parts.append(
            f"units on which the algorithms' means differ by >= {SPREAD}: "
            + (_unit_names(deciding) if deciding else "none")
        )
    if row.note:
        parts.append(row.note)
    return "; ".join(parts)


def cell(row: Row, entry: ShippedSet, scores: Scores | None, algo: str) -> str:
    """One algorithm's cell: ``IQM [low, high]``, ``withdrawn*``, the index's IQM without tables, or ``-``."""
    if algo in row.withdrawn:
        return "withdrawn*"
    if scores is None:
        value = (entry.baselines.get("iqm") or {}).get(algo)
        return "-" if value is None else f"{value:.3f}"
    if algo not in scores.summary.index:
        return "-"
    r = scores.summary.loc[algo]
    return rep.format_cell(r.iqm, r.ci_low, r.ci_high)


def table_rows(rows: tuple[Row, ...], *, seeds: list[int], reps: int, root: Path = REPO) -> list[dict]:
    """Every row's columns as a dict (``set, protocol, size, egos``, one per algorithm, ``verdict``):
    the numbers at bootstrap seed ``seeds[0]``, the verdict over every seed of ``seeds``."""
    out = []
    for row in rows:
        entry = find_set(row.set)
        runs = None
        if row.data is not None:
            runs = [row_scores(row, entry, seed=seed, reps=reps, root=root) for seed in seeds]
        scores = None if runs is None else runs[0]
        seeds_text = "" if scores is None else f", {int(scores.summary['num_seeds'].max())} seeds"
        data = "" if row.data is None else f"; `{row.data}`"
        out.append(
            {"set": f"`{entry.name}@{entry.version}`", "protocol": protocol(entry), "size": size(entry)}
            | {"egos": row.egos + seeds_text + data}
            | {title: cell(row, entry, scores, algo) for algo, title in ALGORITHMS}
            | {"verdict": verdict(row, runs, seeds)}
        )
    return out


def markdown(records: list[dict]) -> str:
    """The rows as a markdown table (no trailing newline)."""
    header = ["set", "protocol", "size (test split)", "egos", *(t for _, t in ALGORITHMS), "what separates"]
    keys = ["set", "protocol", "size", "egos", *(t for _, t in ALGORITHMS), "verdict"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in records]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seed", type=int, default=0, help="bootstrap seed of the numbers (zsceval report --seed)"
    )
    parser.add_argument(
        "--check-seeds",
        type=int,
        nargs="*",
        default=[1],
        help="further bootstrap seeds the verdicts must hold at (default: 1; none: only --seed)",
    )
    parser.add_argument("--reps", type=int, default=2000, help="bootstrap replicates (zsceval report --reps)")
    args = parser.parse_args(argv)
    seeds = [args.seed, *(s for s in args.check_seeds if s != args.seed)]
    print(markdown(table_rows(ROWS, seeds=seeds, reps=args.reps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
