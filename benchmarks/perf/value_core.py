"""Speed benchmark of the value-based core (``pqn``): VDN self-play and a TBS pool of N pairs,
against one quick PPO self-play run measured in the same invocation.

Each row trains ``--iterations`` iterations end to end (collection with epsilon-greedy acting and
the Q(lambda) targets, then the epochs x minibatches of the VDN loss; no evaluation) with the
``quick`` preset of its algorithm. ``tbs-pool`` trains 2N Q-networks (N VDN pairs) in one
vmapped forward per step and per minibatch.

Usage (from the repository root)::

    python benchmarks/perf/value_core.py                                   # counter_circuit, 6 pairs
    python benchmarks/perf/value_core.py --layout coordination_ring --pairs 10 --iterations 20
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "learning"))
from population import timed  # noqa: E402  (the same timing as the population benchmark)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--layout", default="counter_circuit")
    parser.add_argument("--pairs", type=int, default=6, help="pairs of the tbs-pool row")
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="config override")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    common = [*args.overrides, f"run.num_threads={args.threads}"]
    out = Path(tempfile.mkdtemp(prefix="zsceval-valuebench-"))
    print(
        f"torch {torch.__version__}, {args.threads} thread(s); {args.layout}, "
        f"{args.iterations} iterations each"
    )
    ref = timed("sp", args.layout, max(1, args.iterations // 8), common, out)  # 51k steps per PPO iteration
    rows = [
        ref,
        timed("vdn", args.layout, args.iterations, common, out),
        timed("tbs-pool", args.layout, args.iterations, [*common, f"algo.pool_size={args.pairs}"], out),
    ]
    print(
        f"{'run':<10} {'learners':>8} {'games':>6} {'env steps':>10} {'wall':>7} {'steps/s':>9} {'vs SP':>6}"
    )
    for r in rows:
        print(f"{r['algo']:<10} {r['learners']:>8} {r['games']:>6} {r['env_steps']:>10,} {r['wall_s']:>7.1f} "
              f"{r['steps_per_s']:>9,.0f} {r['steps_per_s'] / ref['steps_per_s']:>5.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
