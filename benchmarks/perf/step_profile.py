"""Where an env step's time goes: kernels launched per step and host against device time, eager and
with the step compiled (torch.profiler), for one batch size.

On an H200 the compiled step ran 4.5M env steps/s at 4,096 games (0.9 ms a step) and 67M at
65,536 (docs/performance.md, "The first GPU measurements"): the small batch is bound by something
other than arithmetic. This prints, per mode, the kernels (CUDA) or operators (CPU) per step, the
host time per step and the device time per step, and the ten most expensive device entries, so
that the next GPU session can see whether launches, host code or a few kernels dominate.

Usage::

    python benchmarks/perf/step_profile.py --device cuda --games 4096
    python benchmarks/perf/step_profile.py --device cpu --games 64 --backend aot_eager   # checks the script
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.profiler import ProfilerActivity, profile

from zsceval.envs.overcooked import OvercookedEnv


def profile_steps(env: OvercookedEnv, actions: list[torch.Tensor], device: str) -> tuple[float, object]:
    """Host seconds per step over ``actions`` (synchronised at the end) and the profiler."""
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    for a in actions[:5]:  # warm-up (and the compile, when compiled)
        env.step(a)
    sync()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        for a in actions:
            env.step(a)
        sync()
        host = (time.perf_counter() - start) / len(actions)
    return host, prof


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--games", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=50, help="profiled steps per mode")
    parser.add_argument("--layout", default="counter_circuit")
    parser.add_argument("--backend", default="inductor", help="torch.compile backend of the compiled mode")
    parser.add_argument(
        "--threads", type=int, default=1, help="CPU intra-op threads (more spin in fill_ on a busy machine)"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    gen = torch.Generator(device=args.device).manual_seed(0)
    actions = [
        torch.randint(0, 6, (args.games, 2), generator=gen, device=args.device) for _ in range(args.steps)
    ]
    print(f"{args.layout}, {args.games} games, {args.device}, {args.steps} steps per mode")
    for mode in ("eager", "compiled"):
        env = OvercookedEnv(args.layout, num_envs=args.games, device=args.device, seed=0)
        env.reset()
        if mode == "compiled":
            env.compile_step(backend=args.backend)
        host, prof = profile_steps(env, actions, args.device)
        events = prof.key_averages()
        if args.device == "cuda":
            kernels = [e for e in events if e.device_type.name == "CUDA"]
            device_us = sum(e.self_device_time_total for e in kernels) / args.steps
        else:
            kernels = [e for e in events if e.key.startswith("aten::")]
            device_us = sum(e.self_cpu_time_total for e in kernels) / args.steps
        launches = sum(e.count for e in kernels) / args.steps
        print(
            f"\n{mode}: {host * 1e3:.3f} ms a step on the host clock ({args.games / host:,.0f} env steps/s), "
            f"{launches:.0f} {'kernels' if args.device == 'cuda' else 'aten ops'} a step, "
            f"{device_us / 1e3:.3f} ms of {'device' if args.device == 'cuda' else 'op'} time a step"
        )
        key = "self_device_time_total" if args.device == "cuda" else "self_cpu_time_total"
        for e in sorted(kernels, key=lambda e: -getattr(e, key))[:10]:
            name = e.key if len(e.key) <= 70 else e.key[:67] + "..."
            print(f"  {getattr(e, key) / args.steps:9.1f} us/step  x{e.count / args.steps:5.1f}  {name}")


if __name__ == "__main__":
    main()
