"""Speed benchmark: a stage-1 population trained population-batched against one SP run.

The target (docs/performance.md, "Stage-1 populations trained population-batched"): a stage-1 population of 8
``quick``-preset members on counter_circuit trains at >= 3x the env steps/s of one ``quick`` SP run, same
machine, same run. Each member is what one quick SP run is (its own 512 games per iteration, its own network),
so the population's env steps/s against SP's is the speed-up over training the members one after another. Both
are timed here, one after the other, for the same number of iterations (end-to-end: collection, bonus / JSD
step and updates; no evaluation).

Usage (from the repository root)::

    python benchmarks/learning/population.py                      # fcp-stage1, 8 members, 3 iterations
    python benchmarks/learning/population.py --algos fcp-stage1 mep-stage1 trajedi-stage1
    python benchmarks/learning/population.py --members 4 --iterations 5 --layout cramped_room
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch

from zsceval import registry
from zsceval.rl.config import resolve_config
from zsceval.rl.trainer import Trainer


def timed(algo: str, layout: str, iterations: int, overrides: list[str], out: Path) -> dict:
    """Train ``iterations`` iterations; returns games, env steps and env steps/s (training wall-clock)."""
    cfg = resolve_config(preset="quick", overrides=[*overrides, "run.eval_episodes=0"],
                         **{"run.algo": algo, "env.layout": layout})  # fmt: skip
    steps = cfg.steps_per_iteration(registry.get(algo).core)
    cfg = resolve_config(base=cfg, overrides=[f"run.total_steps={iterations * steps}"])
    trainer = Trainer(cfg, out / algo, progress=False)
    trainer.train()
    return {"algo": algo, "games": cfg.env.num_envs, "learners": len(trainer.learners),
            "env_steps": trainer.env_steps, "wall_s": trainer.wall_time,
            "steps_per_s": trainer.env_steps / trainer.wall_time}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--algos", nargs="+", default=["fcp-stage1"])
    parser.add_argument("--members", type=int, default=8)
    parser.add_argument("--layout", default="counter_circuit")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="config override")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="zsceval-popbench-"))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {args.layout}, "
          f"{args.iterations} iterations each", flush=True)  # fmt: skip
    ref = timed("sp", args.layout, args.iterations, args.overrides, out)
    rows = [ref] + [
        timed(
            a, args.layout, args.iterations, [*args.overrides, f"population.stage1_size={args.members}"], out
        )
        for a in args.algos
    ]
    print(
        f"{'run':<16} {'learners':>8} {'games':>6} {'env steps':>10} {'wall':>7} {'steps/s':>9} {'vs SP':>6}"
    )
    for r in rows:
        print(f"{r['algo']:<16} {r['learners']:>8} {r['games']:>6} {r['env_steps']:>10,} {r['wall_s']:>7.1f} "
              f"{r['steps_per_s']:>9,.0f} {r['steps_per_s'] / ref['steps_per_s']:>5.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
