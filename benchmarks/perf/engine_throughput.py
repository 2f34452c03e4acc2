"""Engine throughput: env steps/s of the batched engine vs the reference simulator, same run.

Measures ``OvercookedEnv.step`` with uniformly random joint actions (INTERACT included) for
num_envs in {1, 256, 4096, 16384}, with and without observations, on CPU with 1 and 2 intra-op
threads (and CUDA when present), and the reference simulator (PyPI ``overcooked`` 0.2.1 stepping
one game, ``old_dynamics`` for classic layouts; "with observations" adds its
``lossless_state_encoding`` of both players per step, as ZSC-Eval's env does) on the same layout.
Prints a table with the speed-up over the reference with the same observation setting. An env step
is one joint action in one game.

Usage:
    python benchmarks/perf/engine_throughput.py [--layouts counter_circuit counter_circuit_mr]
        [--num-envs 1 256 4096 16384] [--seconds 2] [--threads 1 2] [--device cpu cuda]
        [--view-radius 0 2]

``--view-radius`` r > 0 measures the partially observable engine (``OvercookedEnv(view_radius=r)``);
the reference has no such mode, so its row is the fully observable one.
"""

from __future__ import annotations

import argparse
import random
import time

import torch

from zsceval.envs.overcooked import OvercookedEnv, load_layout


def engine_rate(
    layout: str, num_envs: int, device: str, observe: bool, seconds: float, view_radius: int = 0
) -> float:
    env = OvercookedEnv(layout, num_envs=num_envs, device=device, view_radius=view_radius)
    env.reset()
    gen = torch.Generator(device=device).manual_seed(0)
    pool = [torch.randint(0, 6, (num_envs, env.num_agents), generator=gen, device=device) for _ in range(64)]
    for a in pool[:5]:
        env.step(a, observe=observe)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    sync()
    steps, start = 0, time.perf_counter()
    while True:
        for a in pool[:16]:
            env.step(a, observe=observe)
        steps += 16
        sync()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return steps * num_envs / elapsed


def reference_rate(layout: str, seconds: float, observe: bool) -> float | None:
    try:
        from zsceval.envs.overcooked.reference import ReferenceGame
    except ImportError:
        return None
    try:
        game = ReferenceGame(load_layout(layout))
    except ImportError:
        return None
    rng = random.Random(0)
    start_state = game.to_dict()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(100):
            game.step([rng.randrange(6), rng.randrange(6)])
            if observe:
                game.observe()
            steps += 1
            if steps % 400 == 0:
                game.set_state(start_state)
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--layouts", nargs="+", default=["counter_circuit", "counter_circuit_mr"])
    parser.add_argument("--num-envs", nargs="+", type=int, default=[1, 256, 4096, 16384])
    parser.add_argument("--seconds", type=float, default=2.0, help="measurement time per cell")
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2], help="CPU intra-op threads")
    parser.add_argument(
        "--device", nargs="+", default=["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    )
    parser.add_argument(
        "--view-radius", nargs="+", type=int, default=[0], help="view radii (0 = fully observable)"
    )
    args = parser.parse_args()

    rows = []
    for layout in args.layouts:
        refs = {obs: reference_rate(layout, args.seconds, obs) for obs in (True, False)}
        for obs, ref in refs.items():
            rows.append((layout, "reference", "-", 1, "yes" if obs else "no", ref, 1.0 if ref else None))
        for device in args.device:
            for threads in args.threads if device == "cpu" else [torch.get_num_threads()]:
                torch.set_num_threads(threads)
                for num_envs in args.num_envs:
                    for radius in args.view_radius:
                        for observe in (True, False) if radius == 0 else (True,):
                            rate = engine_rate(layout, num_envs, device, observe, args.seconds, radius)
                            ref = refs[observe]
                            ratio = rate / ref if ref else None
                            obs = ("yes" if observe else "no") + (f" r={radius}" if radius else "")
                            rows.append((layout, device, threads, num_envs, obs, rate, ratio))
                            r = rows[-1]
                            print(
                                f"  measured {r[0]} {r[1]} threads={r[2]} B={r[3]} obs={r[4]}: {rate:,.0f}",
                                flush=True,
                            )

    print()
    header = ("layout", "engine", "threads", "num_envs", "obs", "steps/s", "x ref")
    print(
        f"{header[0]:<20} {header[1]:<10} "
        + " ".join(f"{h:>{w}}" for h, w in zip(header[2:], (7, 9, 8, 13, 8)))
    )
    for layout, device, threads, num_envs, obs, rate, ratio in rows:
        rate_s = f"{rate:,.0f}" if rate else "n/a"
        ratio_s = f"{ratio:.1f}" if ratio else "n/a"
        print(f"{layout:<20} {device:<10} {threads!s:>7} {num_envs:>9} {obs:>8} {rate_s:>13} {ratio_s:>8}")


if __name__ == "__main__":
    main()
