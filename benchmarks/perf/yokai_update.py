"""Seconds per PPO update on Yōkai with and without ``ppo.skip_forced``, per model.

Builds the learning benchmark's run (``benchmarks/learning/yokai.py``'s settings: 2-player 3x3, 256
games, 64-step rollouts, quick preset, one thread, perfect memory by default), collects one rollout,
then times ``PPOCore.learn`` (``ppo.epochs`` x ``ppo.num_minibatches`` gradient steps) on it
``--repeats`` times with the skip off and on, alternating, and prints the median of each, the
saving, the collection time and the env steps per second of a whole iteration (collect + update).
About half of a Yōkai rollout's samples are forced (the waiting seat's NOOP).

    python benchmarks/perf/yokai_update.py                        # MLP+GRU, MLP, relational, relational+GRU
    python benchmarks/perf/yokai_update.py --models relational --repeats 5 --json out.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "learning"))
from yokai import BENCH  # noqa: E402  (the learning benchmark's settings)

from zsceval.rl.config import resolve_config  # noqa: E402
from zsceval.rl.trainer import Trainer  # noqa: E402

MODELS = {
    "mlp-gru": ["model.recurrent=true"],
    "mlp": ["model.recurrent=false"],
    "relational": ["model.kind=yokai-relational", "model.hidden_size=32", "model.recurrent=false"],
    "relational-gru": ["model.kind=yokai-relational", "model.hidden_size=32", "model.recurrent=true"],
}
"""Model overrides on top of ``BENCH`` (which turns the GRU on)."""


def measure(overrides: list[str], repeats: int) -> dict[str, float]:
    """Median seconds of one update with the skip off and on, and of one collection."""
    flags = {"env.name": "yokai", "run.seed": 0}
    cfg = resolve_config(preset="quick", overrides=[*BENCH, *overrides], **flags)
    with tempfile.TemporaryDirectory() as tmp:
        trainer = Trainer(cfg, Path(tmp) / "run", progress=False)
        core, runner = trainer.core, trainer.runner
        t0 = time.perf_counter()
        core.collect(runner, 0)
        core.bootstrap(runner)
        collect_s = time.perf_counter() - t0
        advantages, returns = core.advantages()
        forced = float((core.buffer.avail.sum(-1) == 1).float().mean())
        times: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(repeats):
            for skip in (False, True):
                core.cfg = dataclasses.replace(cfg, ppo=dataclasses.replace(cfg.ppo, skip_forced=skip))
                t0 = time.perf_counter()
                core.learn(advantages, returns, 0, trainer.update_gen)
                times[skip].append(time.perf_counter() - t0)
        steps = trainer.steps_per_iteration
        trainer.close()
    off, on = statistics.median(times[False]), statistics.median(times[True])
    return {
        "env_steps_per_iteration": steps,
        "forced_fraction": forced,
        "collect_s": collect_s,
        "update_s_skip_off": off,
        "update_s_skip_on": on,
        "saving": 1 - on / off,
        "env_steps_per_s_skip_off": steps / (collect_s + off),
        "env_steps_per_s_skip_on": steps / (collect_s + on),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--memory", action="store_true", help="the paper's implicit-memory setting (no -M)")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    torch.set_num_threads(1)
    memory = [] if args.memory else ["env.options.perfect_memory=true"]
    rows = {}
    print("| model | forced | collect s | update s, skip off | skip on | saving | env steps/s off | on |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.models:
        r = measure([*memory, *MODELS[name]], args.repeats)
        rows[name] = r
        print(
            f"| {name} | {r['forced_fraction']:.0%} | {r['collect_s']:.1f} | {r['update_s_skip_off']:.1f} | "
            f"{r['update_s_skip_on']:.1f} | {r['saving']:.0%} | {r['env_steps_per_s_skip_off']:,.0f} | "
            f"{r['env_steps_per_s_skip_on']:,.0f} |",
            flush=True,
        )
    if args.json:
        tmp = args.json.with_suffix(".tmp")
        tmp.write_text(json.dumps(rows, indent=1))
        tmp.replace(args.json)


if __name__ == "__main__":
    main()
