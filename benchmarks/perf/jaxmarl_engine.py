"""zsceval's engine vs JaxMARL's Overcooked: env steps/s with observations, same run, same device kind.

zsceval: ``OvercookedEnv.step`` over B games with uniformly random joint actions (a pre-generated
pool), observations on. JaxMARL (optional, ``pip install jaxmarl``): ``jax.vmap(env.step)`` over B
games inside a jitted ``jax.lax.scan`` of SCAN_STEPS steps, random actions drawn with ``jax.random``
inside the scan, the observations carried out of the scan so XLA cannot drop them, and JaxMARL's
own auto-reset (its ``step`` computes a fresh ``reset`` every step and selects it for finished
games). Both use a 400-step horizon. JaxMARL's compile time is measured apart and not in its rate.
An env step is one joint action in one game. CPU runs use jax's CPU backend (XLA picks its own
thread count; pin the process, e.g. ``taskset -c 0,1``, to compare on N cores); CUDA runs use jax's
default GPU device when jax has one (``pip install "jax[cuda12]"``).

Issue targets this serves: engine with observations >= 2x JaxMARL on jax's CPU backend at 1,024 and
4,096 games on 2 CPU cores; on an H100 >= 1.0x at 4,096 and 65,536 games.

Usage:
    taskset -c 0,1 python benchmarks/perf/jaxmarl_engine.py [--games 1024 4096] [--seconds 3]
        [--threads 1] [--device cpu] [--layout counter_circuit]
    python benchmarks/perf/jaxmarl_engine.py --device cuda --games 4096 65536
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import torch

from zsceval.envs.overcooked import OvercookedEnv

SCAN_STEPS = 16  # JaxMARL env steps per jitted call (per game)


def zsceval_rate(layout: str, games: int, device: str, seconds: float) -> float:
    env = OvercookedEnv(layout, num_envs=games, device=device, seed=0)
    env.reset()
    gen = torch.Generator(device=device).manual_seed(0)
    pool = [torch.randint(0, 6, (games, 2), generator=gen, device=device) for _ in range(64)]
    for a in pool[:5]:
        env.step(a)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    sync()
    steps, start = 0, time.perf_counter()
    while True:
        for a in pool[:16]:
            env.step(a)
        steps += 16
        sync()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return steps * games / elapsed


def import_jaxmarl(device: str):
    """Returns (jax, jaxmarl, layouts dict), or None when JaxMARL is not installed or does not import
    (printing why: e.g. a jax that this jaxmarl does not support)."""
    if device == "cpu":
        os.environ["JAX_PLATFORMS"] = "cpu"
    else:  # share the GPU with torch instead of preallocating 75% of it
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax
        import jaxmarl  # prints two lines about "submoduled environments"
        from jaxmarl.environments.overcooked import overcooked_layouts
    except ImportError:
        return None
    except Exception as exc:  # an installed but broken JaxMARL: no reference column, not a crash
        print(f"JaxMARL did not import ({type(exc).__name__}: {exc}); its column is left out")
        return None
    return jax, jaxmarl, overcooked_layouts


def jaxmarl_rate(jx, layout: str, games: int, seconds: float) -> tuple[float, float]:
    """Returns (env steps/s, compile seconds)."""
    jax, jaxmarl, layouts = jx
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "OvercookedV2 is now released"
        env = jaxmarl.make("overcooked", layout=layouts[layout])
    step = jax.vmap(env.step)

    def rollout(key, state, obs):
        def body(carry, _):
            key, state, _ = carry
            key, k_act, k_step = jax.random.split(key, 3)
            acts = jax.random.randint(k_act, (2, games), 0, env.num_actions)
            keys = jax.random.split(k_step, games)
            obs, state, _, _, _ = step(keys, state, {"agent_0": acts[0], "agent_1": acts[1]})
            return (key, state, obs), None

        return jax.lax.scan(body, (key, state, obs), None, length=SCAN_STEPS)[0]

    key, k_reset = jax.random.split(jax.random.PRNGKey(0))
    obs, state = jax.vmap(env.reset)(jax.random.split(k_reset, games))
    start = time.perf_counter()
    run = jax.jit(rollout, donate_argnums=(1, 2)).lower(key, state, obs).compile()
    compile_s = time.perf_counter() - start
    carry = jax.block_until_ready(run(key, state, obs))  # warm-up
    calls, start = 0, time.perf_counter()
    while True:
        carry = jax.block_until_ready(run(*carry))
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return calls * SCAN_STEPS * games / elapsed, compile_s


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", nargs="+", type=int, default=[1024, 4096], help="games per batch")
    parser.add_argument("--seconds", type=float, default=3.0, help="timed duration per cell")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--layout", default="counter_circuit")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    jx = import_jaxmarl(args.device)
    jax_dev, same_kind = None, False
    if jx is None:
        print("JaxMARL is not installed (pip install jaxmarl): measuring zsceval only.")
    elif args.layout not in jx[2]:
        print(f"JaxMARL has no layout {args.layout!r} (it has {sorted(jx[2])}): measuring zsceval only.")
        jx = None
    else:
        jax_dev = jx[0].devices()[0]
        same_kind = jax_dev.platform == ("cpu" if args.device == "cpu" else "gpu")
        if not same_kind:
            print(f"jax has no {args.device} device; JaxMARL runs on {jax_dev.platform} (ratio n/a).")

    rows = []
    for games in args.games:
        rate = zsceval_rate(args.layout, games, args.device, args.seconds)
        print(f"  measured zsceval B={games}: {rate:,.0f}", flush=True)
        ref, compile_s = jaxmarl_rate(jx, args.layout, games, args.seconds) if jx else (None, None)
        rows.append(("zsceval", args.device, games, rate, rate / ref if same_kind else None, None))
        if jx:
            print(f"  measured JaxMARL B={games}: {ref:,.0f} (compile {compile_s:.1f} s)", flush=True)
            rows.append(("JaxMARL", jax_dev.platform, games, ref, None, compile_s))

    print()
    header = ("engine", "device", "games", "env steps/s", "zsceval / JaxMARL", "compile s")
    widths = (7, 13, 18, 9)
    print(f"{header[0]:<8} {header[1]:<6} " + " ".join(f"{h:>{w}}" for h, w in zip(header[2:], widths)))
    for engine, device, games, rate, ratio, compile_s in rows:
        ratio_s = f"{ratio:.2f}" if ratio else ("n/a" if engine == "zsceval" else "-")
        compile_str = f"{compile_s:.1f}" if compile_s is not None else "-"
        print(f"{engine:<8} {device:<6} {games:>7} {rate:>13,.0f} {ratio_s:>18} {compile_str:>9}")
    torch_dev = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    jax_info = f"jax {jx[0].__version__} on {jax_dev.device_kind}" if jx else "jax n/a"
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(
        f"torch {torch.__version__} on {torch_dev} ({args.threads} threads), {jax_info}; "
        f"layout {args.layout}, {cpus} CPUs usable"
    )


if __name__ == "__main__":
    main()
