"""Score a finished bench's egos against the shipped H_proxy, as its own human-proxy jobs would.

    python benchmarks/human/rescore_bench.py BENCH --out BENCH/human_proxy.parquet

A bench made before the human proxy was fitted on the 2019 trials' test split (H_proxy; Carroll et
al. 2019, arXiv:1910.05789, and human_aware_rl ``ppo/evaluate.py``, which loads the proxy from
``bc_runs/test``) played its egos with the train-split model, which is BC, a training partner
(docs/differences.md). This script replays every ``ego.human_proxy`` job of the bench's suite
(``BENCH/suite.yaml``: the same egos, their scored checkpoints, episodes and seeds) with the shipped
H_proxy of each layout (``eval_partners/human/<layout>/human-proxy``, docs/human-data.md) and writes
the table in ``human_proxy.parquet``'s schema, so that ``zsceval report`` reads it. The egos are
only read; a suite's external agents (``agents:``) are played as well.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pandas as pd
import torch
from tqdm import tqdm

from zsceval.bench.plan import build_phases, late_phases
from zsceval.bench.suite import SUITE_RECORD, load_suite
from zsceval.evaluation.human_proxy import HUMAN_PROXY_TABLE, ego_human_proxy
from zsceval.human.partners import shipped_model_dir
from zsceval.io import atomic_path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench", type=Path, help="a finished zsceval bench folder")
    ap.add_argument("--out", type=Path, required=True, help="the table to write (parquet)")
    ap.add_argument("--algorithms", default=None, help="only these (comma-separated); default: every one")
    args = ap.parse_args()
    torch.set_num_threads(1)
    suite = load_suite(args.bench / SUITE_RECORD)
    _, infos = build_phases(suite)
    jobs = [j for j in late_phases(suite, args.bench, infos)[-1] if j.kind == "ego.human_proxy"]
    if args.algorithms:
        jobs = [j for j in jobs if j.params["algorithm"] in args.algorithms.split(",")]
    if not jobs:
        raise SystemExit(f"{args.bench / SUITE_RECORD}: the suite has no human-proxy jobs")
    frames = []
    with tempfile.TemporaryDirectory() as tmp:
        for job in tqdm(jobs, desc="egos vs H_proxy", unit="ego"):
            needs = {job.params["proxy"]: shipped_model_dir(job.params["layout"], "human-proxy")}
            if job.params.get("ego"):  # a trained ego (an external agent, ``agent``, needs no folder)
                needs[job.params["ego"]] = args.bench / job.params["ego"]
            out = Path(tmp) / job.id
            out.mkdir(parents=True)
            ego_human_proxy(job.params, out, needs)
            frames.append(pd.read_parquet(out / HUMAN_PROXY_TABLE))
    table = pd.concat(frames, ignore_index=True)
    with atomic_path(args.out) as tmp_file:
        table.to_parquet(tmp_file)
    means = table.groupby(["layout", "algorithm"])["sparse_return"].mean().round(1)
    print(means.to_string())


if __name__ == "__main__":
    main()
