"""Learning benchmark: SP with the ``quick`` preset on three layouts, 3 seeds each, on CPU.

Prints one row per (layout, seed): final self-play sparse return (stochastic evaluation,
``run.eval_episodes`` episodes), training wall-clock, end-to-end env steps/s (all env steps /
training wall-clock, collection + updates), the median seconds per iteration of collection and of
the update (steadier than the rate on a shared machine), and the wall-clock at which the training
sparse return first reached the layout's target (cramped_room 150, coordination_ring 150,
counter_circuit 100). Then a mean per layout.

Multi-recipe layouts (``counter_circuit_mr`` ...) train with the quick preset's ``by_dynamics``
entry (random starts in half the episodes, its own step budget); their training return includes
random-start episodes, so time-to-target is not reported there: the criterion is the final
self-play return from the standard start (> 0: the agents deliver orders).

Usage (from the repository root)::

    python benchmarks/learning/sp.py                       # all layouts, seeds 0 1 2
    python benchmarks/learning/sp.py --layouts cramped_room --seeds 0 --steps 2e6
    python benchmarks/learning/sp.py --set env.num_envs=256 --json results.json
    python benchmarks/learning/sp.py --layouts counter_circuit_mr coordination_ring_mr
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from zsceval.rl.config import resolve_config
from zsceval.rl.trainer import Trainer

DEFAULT_STEPS = {"cramped_room": 3_000_000, "coordination_ring": 4_000_000, "counter_circuit": 8_000_000}
TARGETS = {"cramped_room": 150.0, "coordination_ring": 150.0, "counter_circuit": 100.0}


def run_one(layout: str, seed: int, steps: int | None, overrides: list[str], out: Path) -> dict:
    """Train SP once and return the benchmark row."""
    flags = {"env.layout": layout, "run.seed": seed, "run.device": "cpu", "run.algo": "sp"}
    flags["run.total_steps"] = steps if steps is not None else DEFAULT_STEPS.get(layout)  # None: preset's
    cfg = resolve_config(preset="quick", overrides=overrides, **flags)
    target = TARGETS.get(layout, 100.0) if cfg.env.random_start_prob == 0 else None
    reached: dict[str, float] = {}

    def watch(trainer: Trainer, row: dict) -> None:
        if target is not None and "time" not in reached and row.get("sparse_return", 0.0) >= target:
            reached.update(time=row["wall_time_s"], steps=row["env_steps"])

    start = time.perf_counter()
    trainer = Trainer(cfg, out / f"{layout}_s{seed}", progress=False)
    summary = trainer.train(watch)
    return {
        "layout": layout,
        "seed": seed,
        "env_steps": trainer.env_steps,
        "final_sp_return": summary["self_play"]["sparse_return_mean"],
        "final_train_return": trainer.metrics[-1].get("sparse_return")
        if trainer.metrics and "sparse_return" in trainer.metrics[-1]
        else None,
        "train_wall_s": trainer.wall_time,
        "total_wall_s": time.perf_counter() - start,
        "env_steps_per_s": trainer.env_steps / trainer.wall_time,
        "collect_s_median": statistics.median(m["collect_s"] for m in trainer.metrics),
        "update_s_median": statistics.median(m["update_s"] for m in trainer.metrics),
        "target": target,
        "time_to_target_s": reached.get("time"),
        "steps_to_target": reached.get("steps"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--layouts", nargs="+", default=list(DEFAULT_STEPS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps", type=float, default=None, help="env steps per run (default: per layout)")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], help="config override key=value"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="keep run directories here (default: temp dir)"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON")
    args = parser.parse_args()
    steps = int(args.steps) if args.steps is not None else None
    out = args.out or Path(tempfile.mkdtemp(prefix="zsceval-bench-"))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; runs in {out}", flush=True)
    header = (
        f"{'layout':<18} {'seed':>4} {'env steps':>10} {'SP return':>9} {'train s':>8} {'steps/s':>8} "
        f"{'collect s':>9} {'update s':>8} {'t->target':>9}"
    )
    print(header, flush=True)
    rows = []
    for layout in args.layouts:
        for seed in args.seeds:
            r = run_one(layout, seed, steps, args.overrides, out)
            rows.append(r)
            ttt = f"{r['time_to_target_s']:.0f}s" if r["time_to_target_s"] is not None else "-"
            print(
                f"{layout:<18} {seed:>4} {r['env_steps']:>10,} {r['final_sp_return']:>9.1f} "
                f"{r['train_wall_s']:>8.0f} {r['env_steps_per_s']:>8,.0f} {r['collect_s_median']:>9.3f} "
                f"{r['update_s_median']:>8.3f} {ttt:>9}",
                flush=True,
            )
    print("\nmean per layout:")
    for layout in args.layouts:
        rs = [r for r in rows if r["layout"] == layout]
        print(
            f"{layout:<18} SP return {statistics.mean(r['final_sp_return'] for r in rs):6.1f}  "
            f"train {statistics.mean(r['train_wall_s'] for r in rs):6.0f} s  "
            f"{statistics.mean(r['env_steps_per_s'] for r in rs):8,.0f} env steps/s"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
