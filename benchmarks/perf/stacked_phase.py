"""A phase of M training jobs that share a network shape and schedule: stacked in one process
(:class:`zsceval.rl.stacked_phase.StackedPhase`, one env batch of M * B games) or as M separate
``zsceval train`` processes, at most ``--workers`` at a time, on the same cores.

Time it as a whole process, the two alternating (docs/performance.md, "Stacked phases"):

    python benchmarks/perf/stacked_phase.py --members 3 --stack
    python benchmarks/perf/stacked_phase.py --members 3 --no-stack
    python benchmarks/perf/stacked_phase.py --members 3 --stack --vmap

Jobs: ``--algo biased`` trains the candidates of a layout (each a behavior-preferring agent with its
own reward weights plus its best response, seed ``i``, weights of :func:`reference_weights`);
``--algo sp`` trains SP egos of seeds 0..M-1. ``--extrapolate STEPS`` prints the hours of STEPS env
steps per member at the measured rate (the suite's env steps of the phase).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def reference_weights(layout: str, count: int) -> list[list[float]]:
    """The partner pipeline's weight vectors of ``count`` candidates (``reference`` sampling, seed 0)."""
    from zsceval.generation.candidates import PartnerBudget, candidate_weights

    return candidate_weights(layout, PartnerBudget(candidates=count), 0).tolist()


def member_overrides(args, i: int, weights) -> list[str]:
    out = [f"run.algo={args.algo}", f"env.layout={args.layout}", f"env.num_envs={args.games}",
           f"run.total_steps={args.steps}", f"run.seed={i}", "run.eval_episodes=0", "run.compile=off",
           f"run.device={args.device}", f"run.checkpoint_every={args.steps}", *args.set]  # fmt: skip
    if args.algo == "biased":
        out.append("algo.weights=[" + ",".join(f"{x:g}" for x in weights[i]) + "]")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--members", type=int, default=3)
    ap.add_argument("--algo", choices=("biased", "sp"), default="biased")
    ap.add_argument("--layout", default="cramped_room")
    ap.add_argument("--games", type=int, default=8, help="games per member (env.num_envs)")
    ap.add_argument("--steps", type=int, default=6400, help="env steps per member")
    ap.add_argument("--preset", default="quick")
    ap.add_argument("--device", default="cpu")
    ap.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="cores: processes at a time (1 thread each), or the stacked process's threads",
    )
    ap.add_argument("--stack", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument(
        "--vmap",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="stacked: the members act in one vmapped forward a step (zsceval.rl.stacked_acting)",
    )
    ap.add_argument("--set", action="append", default=[], help="extra config override for every member")
    ap.add_argument("--extrapolate", type=int, default=0, help="hours of this many env steps a member")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    weights = reference_weights(args.layout, args.members) if args.algo == "biased" else None
    out = args.out or Path(tempfile.mkdtemp(prefix="stacked-phase-"))
    t0 = time.perf_counter()
    if args.stack:
        from zsceval.rl.config import resolve_config
        from zsceval.rl.stacked_phase import StackedPhase

        threads = f"run.num_threads={args.workers}"
        cfgs = [resolve_config(preset=args.preset, overrides=[*member_overrides(args, i, weights), threads])
                for i in range(args.members)]  # fmt: skip
        StackedPhase(cfgs, [out / f"m{i}" for i in range(args.members)], vmap=args.vmap).train()
    else:
        procs: list[subprocess.Popen] = []
        pending = list(range(args.members))
        while pending or procs:
            while pending and len(procs) < args.workers:
                i = pending.pop(0)
                cmd = [sys.executable, "-m", "zsceval.cli", "train", "--preset", args.preset, "--no-progress",
                       "--out", str(out / f"m{i}"), "--set", "run.num_threads=1"]  # fmt: skip
                for o in member_overrides(args, i, weights):
                    cmd += ["--set", o]
                procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL))
            done = [p for p in procs if p.poll() is not None]
            for p in done:
                if p.returncode:
                    sys.exit(f"a member failed ({p.returncode}): {' '.join(p.args)}")
                procs.remove(p)
            time.sleep(0.05)
    dt = time.perf_counter() - t0
    total = args.members * args.steps
    how = (
        ("stacked, vmapped acting and updates" if args.vmap else "stacked")
        if args.stack
        else f"{args.members} processes, {args.workers} at a time"
    )
    print(f"{args.members} x {args.algo} on {args.layout} ({how}): {dt:.1f} s, {total / dt:,.0f} env steps/s")
    if args.extrapolate:
        hours = args.members * args.extrapolate / (total / dt) / 3600
        print(f"  {args.extrapolate:,} env steps per member: {hours:.2f} h")


if __name__ == "__main__":
    main()
