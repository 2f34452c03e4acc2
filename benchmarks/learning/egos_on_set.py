"""Score every finished ego of a bench folder against a partner set, into tables `zsceval report` reads.

A bench run scores its egos against the partners it selected itself. This script plays the same egos
(each at the checkpoint the benchmark scores: ZSC-Eval's rule,
:func:`zsceval.evaluation.ego_checkpoint.scored_ego_checkpoint`) against another set, e.g. a shipped
one (``zsceval:counter_circuit@1/test``), and writes ``OUT/results.parquet`` (one row per episode,
the bench's schema) and ``OUT/br_returns.parquet`` (the set's stored BR returns), so that
``zsceval report OUT`` gives the BR-Prox IQM with CIs per level, the probability of improvement of
every pair of algorithms and the ranks, with the report's own statistics.

Only finished ego jobs (``DONE.json``) are played; each ego's games are kept in
``OUT/egos/<algo>_s<seed>.parquet`` (written to a temp file and renamed), so a rerun plays only the
egos not yet scored: run it again as more egos finish. ``OUT/egos_on_set.json`` records the set, the
episodes and every ego's scored checkpoint.

    python benchmarks/learning/egos_on_set.py RUN --partner-set zsceval:counter_circuit@1/test --out DIR
    zsceval report DIR --no-figures
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

import pandas as pd
import torch

from zsceval.evaluation.ego_checkpoint import scored_ego_checkpoint
from zsceval.evaluation.ego_evaluation import load_partner_set
from zsceval.evaluation.matches import evaluate_agent
from zsceval.evaluation.partner_set import set_br_returns
from zsceval.evaluation.shipped_sets import resolve_partner_set
from zsceval.rl.checkpoint import load_policy

EGO_DIR = re.compile(r"^s(\d+)$")


def finished_egos(
    run: Path, layout: str, algos: list[str] | None
) -> tuple[list[tuple[str, int, Path]], list[str]]:
    """``(algo, seed, job dir)`` of every finished ego job of ``run/<layout>/egos``, and the unfinished ones.

    Raises:
        FileNotFoundError: ``run/<layout>/egos`` does not exist.
    """
    root = run / layout / "egos"
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no ego jobs (is {run} a bench folder with layout {layout}?)")
    done, pending = [], []
    for algo_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        if algos and algo_dir.name not in algos:
            continue
        for job in sorted(algo_dir.iterdir()):
            m = EGO_DIR.match(job.name)
            if not m:
                continue
            if (job / "DONE.json").is_file():
                done.append((algo_dir.name, int(m.group(1)), job))
            else:
                pending.append(f"{algo_dir.name}/{job.name}")
    return done, pending


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="bench folder (zsceval bench --out RUN)")
    ap.add_argument("--partner-set", required=True, help="shipped set name or a partner-set manifest.json")
    ap.add_argument("--layout", default=None, help="layout (default: the shipped set's)")
    ap.add_argument("--out", type=Path, required=True, help="folder for the tables")
    ap.add_argument("--algos", nargs="*", default=None, help="only these algorithms (default: all)")
    ap.add_argument("--episodes", type=int, default=10, help="episodes per (partner, seat) [10]")
    ap.add_argument("--seed", type=int, default=0, help="action-sampling seed of every ego's games [0]")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)

    manifest, layout, entry = resolve_partner_set(args.partner_set, args.layout)
    set_name = entry.full_name if entry is not None else str(manifest)
    egos, pending = finished_egos(args.run, layout, args.algos)
    if not egos:
        print(f"no finished ego in {args.run / layout / 'egos'}", file=sys.stderr)
        return 1
    out_egos = args.out / "egos"
    out_egos.mkdir(parents=True, exist_ok=True)
    partners = load_partner_set(str(manifest), layout, args.device)
    record_path = args.out / "egos_on_set.json"
    record = json.loads(record_path.read_text()) if record_path.is_file() else {}
    if record and (record.get("partner_set"), record.get("episodes")) != (set_name, args.episodes):
        print(
            f"{args.out} holds games against {record.get('partner_set')} with {record.get('episodes')} "
            f"episodes; use another --out",
            file=sys.stderr,
        )
        return 2
    # no machine paths in the record (it is committed under docs/data): the set by name, the run
    # by its folder name and each ego job relative to it
    shown = set_name if entry is not None else os.path.relpath(manifest, args.out)
    record.update({"partner_set": set_name, "manifest": shown, "layout": layout,
                   "episodes": args.episodes, "seed": args.seed, "run": args.run.name})  # fmt: skip
    record.setdefault("egos", {})
    for algo, seed, job in egos:
        name = f"{algo}_s{seed}"
        path = out_egos / f"{name}.parquet"
        if path.is_file():
            continue
        ckpt, chosen = scored_ego_checkpoint(job, algo)
        policy, _ = load_policy(str(ckpt), device=args.device)
        gen = torch.Generator(args.device).manual_seed(args.seed)
        frame = evaluate_agent(
            layout, policy, partners, episodes=args.episodes, generator=gen, device=args.device,
            labels={"algorithm": algo, "ego_seed": seed},
        )  # fmt: skip
        tmp = path.with_suffix(".tmp")
        frame.to_parquet(tmp)
        os.replace(tmp, path)
        record["egos"][name] = {"job": os.path.relpath(job, args.run), **chosen}
        print(f"{name}: {ckpt.name}, mean return {frame['sparse_return'].mean():.1f}", flush=True)
    frames = [pd.read_parquet(p) for p in sorted(out_egos.glob("*.parquet"))]
    results = pd.concat(frames, ignore_index=True)
    br_returns = set_br_returns(manifest, layout)
    results["layout"] = br_returns["layout"].iloc[0]  # the canonical name, as the BR table's
    for table, name in ((results, "results.parquet"), (br_returns, "br_returns.parquet")):
        tmp = args.out / (name + ".tmp")
        table.to_parquet(tmp)
        os.replace(tmp, args.out / name)
    tmp = record_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    os.replace(tmp, record_path)
    print(
        f"{len(frames)} egos against {set_name} in {args.out}; not finished: {', '.join(pending) or 'none'}"
    )
    print(f"zsceval report {args.out} --no-figures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
