"""Recompute ZSC-Eval's pooled IQM BR-Prox from the result files shipped with sjtu-marl/ZSC-Eval.

For every Overcooked layout with results, every algorithm (sp, e3t, fcp, mep, trajedi, hsp, cole) and
every population size present (12 / 24 / 36 for the co-play methods, 25 / 50 / 75 for COLE; SP and E3T
have no population), this computes the IQM BR-Prox pooled over ego seeds, partners and seats, twice:

- ``correct``: partner ``bias{i}_final`` scored against its own co-trained BR, the ``w1`` agent of hsp
  run ``LAYOUTS_EXPS[layout][i-1]`` (file ``bias/eval-hsp{LAYOUTS_EXPS[layout][i-1]}.json``);
- ``shipped``: the shipped ``extract_results.py`` pairing, ``bias{i}_final`` with ``eval-hsp{i}.json``
  (docs/differences.md, "Known defects in the reference" of the ZSC-Eval facts page).

``bias{i}_mid`` partners use the freshly trained BR of ``bias/eval-br_*.json`` (keyed by partner name)
in both variants. Per (ego seed, partner, seat) the unit is ``min(1, R(ego, partner) / R(BR, partner))``
with the BR in the ego's seat, 1 when the BR return is <= 0 (:func:`zsceval.stats.metrics.br_prox`);
the units are pooled with :func:`zsceval.stats.metrics.iqm`.

Usage::

    python benchmarks/reference/recompute_zsceval.py --repo /path/to/ZSC-Eval            # a checkout
    python benchmarks/reference/recompute_zsceval.py --repo PATH/TO/ZSC-Eval \\
        --populations 12 24 36 --json /tmp/zsceval_pop.json --validate

``--repo`` is either a plain checkout (a folder holding ``zsceval/scripts/overcooked/eval/results``)
or a git directory (e.g. a bare mirror). From a git directory the script exports the result folder and
``zsceval/utils/bias_agent_vars.py`` of ``--rev`` (default ``HEAD``) with ``git archive`` into a
temporary folder, reads them there and deletes the folder afterwards.

``--raw LAYOUT`` also prints the mean sparse returns behind the ratio on one layout (ZSC-Eval's name,
e.g. ``random3``) at the first ``--populations`` value: each algorithm's ego with the final and mid
partners, and the partners' BRs (correct mapping); ``--ours DIR`` adds the same means from a bench's
``results.parquet`` and ``br_returns.parquet`` (our expert = final, moderate = mid). A BR-Prox gap is then
read as "our egos score less with their partners" or "our BRs score more".

``--validate`` compares the population-36 (COLE 75) numbers with the shipped reference table
``zsceval-paper`` (``br_prox`` for ``correct``, ``shipped_script`` for ``shipped``) and exits 1 if any
cell differs by more than 0.01.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

from zsceval.stats.metrics import br_prox, iqm

RESULTS_PATH = "zsceval/scripts/overcooked/eval/results"
VARS_PATH = "zsceval/utils/bias_agent_vars.py"

ALGORITHMS: dict[str, str] = {
    "sp": "sp",
    "e3t": "e3t",
    "fcp": "fcp",
    "mep": "mep",
    "trajedi": "traj",
    "hsp": "hsp",
    "cole": "cole",
}
"""Our algorithm name -> ZSC-Eval's result folder and experiment prefix."""

NO_POPULATION = ("sp", "e3t")
COLE_POPULATION = {12: 25, 24: 50, 36: 75}
"""Co-play population size -> the COLE population reported in the same column."""

SEEDS = (1, 2, 3, 4, 5)
SEATS = (0, 1)
SPARSE = "eval_ep_sparse_r"
VARIANTS = ("correct", "shipped")


def _read_json(path: Path) -> dict:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def layouts_exps(vars_file: Path) -> dict[str, list[int]]:
    """``LAYOUTS_EXPS`` of ZSC-Eval's ``bias_agent_vars.py``, read without importing it."""
    tree = ast.parse(vars_file.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "LAYOUTS_EXPS" for t in node.targets
        ):
            return {str(k): [int(x) for x in v] for k, v in ast.literal_eval(node.value).items()}
    raise ValueError(f"no LAYOUTS_EXPS in {vars_file}")


def export_from_git(git_dir: Path, rev: str, dest: Path) -> str:
    """Extract the result folder and the run lists of ``rev`` into ``dest``; return the commit."""
    git = ["git", f"--git-dir={git_dir}"]
    commit = subprocess.run(
        [*git, "rev-parse", f"{rev}^{{commit}}"], check=True, capture_output=True, text=True
    ).stdout.strip()
    # stream the tar (about 130 MB); stderr is shown only on failure (a mirror may lack large
    # files outside the exported paths, which git reports without failing)
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [*git, "archive", "--format=tar", commit, RESULTS_PATH, VARS_PATH],
            stdout=subprocess.PIPE,
            stderr=err,
        )
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extraction_filter = tarfile.data_filter
            tar.extractall(dest)
        if proc.wait() != 0:
            err.seek(0)
            raise RuntimeError(f"git archive failed: {err.read().decode(errors='replace')}")
    return commit


def partner_brs(bias_dir: Path, exps: list[int], variant: str) -> dict[tuple[str, int], float]:
    """BR return per (partner, seat the BR occupies) for the 2K partners of a layout."""
    brs: dict[tuple[str, int], float] = {}
    for i, run in enumerate(exps, start=1):
        r = run if variant == "correct" else i
        data = _read_json(bias_dir / f"eval-hsp{r}.json")
        w0, w1 = f"hsp{r}_final_w0", f"hsp{r}_final_w1"
        brs[(f"bias{i}_final", 0)] = data[f"{w1}-{w0}-{SPARSE}"]
        brs[(f"bias{i}_final", 1)] = data[f"{w0}-{w1}-{SPARSE}"]
    mid = re.compile(rf"^(br_agent-(bias\d+_mid)|(bias\d+_mid)-br_agent)-{SPARSE}$")
    for path in sorted(bias_dir.glob("eval-br_*.json")):
        for key, value in _read_json(path).items():
            m = mid.match(key)
            if m:
                partner, seat = (m.group(2), 0) if m.group(2) else (m.group(3), 1)
                brs[(partner, seat)] = value
    missing = [f"bias{i}_mid" for i in range(1, len(exps) + 1) if (f"bias{i}_mid", 0) not in brs]
    if missing:
        raise ValueError(f"{bias_dir}: no BR return for {missing}")
    return brs


def experiments(algorithm: str, populations: list[int]) -> list[tuple[int | None, str]]:
    """``(population column, experiment name)`` pairs of an algorithm."""
    prefix = ALGORITHMS[algorithm]
    if algorithm in NO_POPULATION:
        return [(None, prefix)]
    if algorithm == "cole":
        return [(p, f"{prefix}-S2-s{COLE_POPULATION[p]}") for p in populations]
    return [(p, f"{prefix}-S2-s{p}") for p in populations]


def ego_returns(algo_dir: Path, exp: str, partners: list[str]) -> tuple[np.ndarray, list[int]]:
    """float[seeds, partners, seats] ego returns of the seeds present, and those seeds."""
    rows, seeds = [], []
    for seed in SEEDS:
        path = algo_dir / f"eval-{exp}-{seed}.json"
        if not path.is_file():
            continue
        data, ego = _read_json(path), f"{exp}-{seed}"
        rows.append([[data[f"{ego}-{p}-{SPARSE}"], data[f"{p}-{ego}-{SPARSE}"]] for p in partners])
        seeds.append(seed)
    return np.asarray(rows, dtype=np.float64).reshape(len(seeds), len(partners), len(SEATS)), seeds


def recompute(results_dir: Path, exps_by_layout: dict[str, list[int]], populations: list[int]) -> dict:
    """``{layout: {algorithm: {column: {correct, shipped, seeds, units}}}}``; column ``"all"`` for SP/E3T."""
    out: dict = {}
    for layout_dir in sorted(p for p in results_dir.iterdir() if p.is_dir()):
        layout = layout_dir.name
        if layout not in exps_by_layout:
            print(f"skip {layout}: not in LAYOUTS_EXPS", file=sys.stderr)
            continue
        exps = exps_by_layout[layout]
        partners = [f"bias{i}_{c}" for i in range(1, len(exps) + 1) for c in ("final", "mid")]
        brs = {v: partner_brs(layout_dir / "bias", exps, v) for v in VARIANTS}
        layout_out = out.setdefault(layout, {})
        for algorithm, folder in ALGORITHMS.items():
            for column, exp in experiments(algorithm, populations):
                ego, seeds = ego_returns(layout_dir / folder, exp, partners)
                if not seeds:
                    print(f"missing: {layout}/{folder}/eval-{exp}-*.json", file=sys.stderr)
                    continue
                cell = {"experiment": exp, "seeds": seeds, "units": int(ego.size)}
                for v in VARIANTS:
                    br = np.array([[brs[v][(p, s)] for s in SEATS] for p in partners])
                    cell[v] = float(iqm(br_prox(ego, br)))
                key = "all" if column is None else str(column)
                layout_out.setdefault(algorithm, {})[key] = cell
    return out


def raw_returns(results_dir: Path, exps: list[int], population: int) -> dict[str, tuple[float, float]]:
    """Mean sparse return per episode on one layout, ``{row: (with final partners, with mid partners)}``.

    Rows: ``BR`` (each partner's BR in both seats, correct mapping) and every algorithm present (its
    egos at ``population``, COLE at its matching size; all seeds, partners and seats).
    """
    partners = [f"bias{i}_{c}" for i in range(1, len(exps) + 1) for c in ("final", "mid")]
    final = np.array([p.endswith("_final") for p in partners])
    brs = partner_brs(results_dir / "bias", exps, "correct")
    br = np.array([[brs[(p, s)] for s in SEATS] for p in partners])
    out = {"BR": (float(br[final].mean()), float(br[~final].mean()))}
    for algorithm, folder in ALGORITHMS.items():
        for _, exp in experiments(algorithm, [population]):
            ego, seeds = ego_returns(results_dir / folder, exp, partners)
            if seeds:
                out[algorithm] = (float(ego[:, final].mean()), float(ego[:, ~final].mean()))
    return out


def bench_raw_returns(directory: Path) -> dict[str, tuple[float, float]]:
    """The same means from a ``zsceval bench`` folder's tables (one layout):
    expert = final, moderate = mid."""
    import pandas as pd

    results = pd.read_parquet(directory / "results.parquet")
    brs = pd.read_parquet(directory / "br_returns.parquet")
    level = brs["partner"].map(results.drop_duplicates("partner").set_index("partner")["partner_level"])
    out = {"BR": tuple(float(brs.loc[level == lv, "br_return"].mean()) for lv in ("expert", "moderate"))}
    for algorithm, rows in results.groupby("algorithm"):
        means = rows.groupby("partner_level")["sparse_return"].mean()
        out[str(algorithm)] = (float(means.get("expert", np.nan)), float(means.get("moderate", np.nan)))
    return out


def print_raw(columns: dict[str, dict[str, tuple[float, float]]]) -> None:
    """Side-by-side table of :func:`raw_returns` / :func:`bench_raw_returns` outputs."""
    names = list(columns)
    print("mean sparse return per episode (with final / mid partners)")
    print(f"{'':<9}" + "".join(f"{n:>22}" for n in names))
    rows = list(dict.fromkeys(r for c in columns.values() for r in c))
    for row in rows:
        cells = [columns[n].get(row) for n in names]
        texts = ["-" if c is None else f"{c[0]:6.1f} / {c[1]:6.1f}" for c in cells]
        print(f"{row:<9}" + "".join(f"{t:>22}" for t in texts))


def validate(table: dict, tolerance: float = 0.01) -> float:
    """Max |difference| of the population-36 numbers vs the ``zsceval-paper`` table; prints mismatches."""
    from zsceval.bench.comparison import load_reference_table

    ref = load_reference_table("zsceval-paper").set_index(["reference_name", "algorithm"])
    worst = 0.0
    for layout, algos in table.items():
        for algorithm, cells in algos.items():
            cell = cells.get("all", cells.get("36"))
            if cell is None or (layout, algorithm) not in ref.index:
                continue
            for variant, column in (("correct", "br_prox"), ("shipped", "shipped_script")):
                diff = abs(cell[variant] - ref.loc[(layout, algorithm), column])
                worst = max(worst, diff)
                if diff > tolerance:
                    print(
                        f"MISMATCH {layout} {algorithm} {variant}: {cell[variant]:.3f}"
                        f" vs {column} {ref.loc[(layout, algorithm), column]:.2f}"
                    )
    return worst


def print_table(table: dict, populations: list[int]) -> None:
    columns = ["all", *map(str, populations)]
    print("layout algorithm " + " ".join(f"{c:>13}" for c in columns) + "   (correct/shipped)")
    for layout, algos in table.items():
        for algorithm, cells in algos.items():
            texts = [
                f"{cells[c]['correct']:.3f}/{cells[c]['shipped']:.3f}" if c in cells else "-" for c in columns
            ]
            print(f"{layout} {algorithm} " + " ".join(f"{t:>13}" for t in texts))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True, help="ZSC-Eval checkout or git directory")
    parser.add_argument("--rev", default="HEAD", help="revision to read from a git directory")
    parser.add_argument("--populations", type=int, nargs="+", default=[12, 24, 36], choices=[12, 24, 36])
    parser.add_argument("--json", type=Path, help="write the numbers to this JSON file")
    parser.add_argument("--validate", action="store_true", help="check population 36 against zsceval-paper")
    parser.add_argument(
        "--raw", metavar="LAYOUT", help="also print mean returns on this layout (e.g. random3)"
    )
    parser.add_argument("--ours", type=Path, help="with --raw: a bench folder whose means to print too")
    args = parser.parse_args(argv)
    if args.ours and not args.raw:
        parser.error("--ours needs --raw LAYOUT (the ZSC-Eval layout to print beside it)")

    with tempfile.TemporaryDirectory() as tmp:
        if (args.repo / RESULTS_PATH).is_dir():
            root, commit = args.repo, None
            if (root / ".git").exists():
                probe = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True)
                commit = probe.stdout.decode().strip() or None
        else:
            root, commit = Path(tmp), export_from_git(args.repo, args.rev, Path(tmp))
        exps = layouts_exps(root / VARS_PATH)
        table = recompute(root / RESULTS_PATH, exps, sorted(args.populations))
        if args.raw:
            if args.raw not in exps:
                valid = ", ".join(sorted(exps))
                parser.error(f"--raw {args.raw}: not a ZSC-Eval layout with results; valid: {valid}")
            pop = args.populations[0]
            raw = {f"zsceval pop{pop}": raw_returns(root / RESULTS_PATH / args.raw, exps[args.raw], pop)}
            if args.ours:
                raw[f"ours {args.ours.name}"] = bench_raw_returns(args.ours)

    print_table(table, sorted(args.populations))
    if args.raw:
        print()
        print_raw(raw)
    if args.json:
        payload = {"zsceval_commit": commit, "cole_population": COLE_POPULATION, "layouts": table}
        args.json.write_text(json.dumps(payload, indent=1) + "\n")
    if args.validate:
        worst = validate(table)
        print(f"max |difference| vs zsceval-paper at population 36 (COLE 75): {worst:.4f}")
        return 0 if worst <= 0.01 else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
