r"""The GPU table of docs/performance.md: the engine at 4k / 16k / 65k / 262k games, eager and with the step
compiled (``run.compile: step``), next to JaxMARL's Overcooked when jax and jaxmarl are importable
(measured in the same run by ``jaxmarl_engine.py``'s harness); and PPO end to end (quick preset,
counter_circuit) at 512 and 4,096 games and with the paper preset (float32, and ``model.bf16=auto``),
eager and compiled; each PPO row says what share of its time the collection took (the rest: the
update).

``--modes`` picks the rows: ``eager`` (``run.compile: off``), ``step`` (the env step compiled),
``full`` (``run.compile: full``: step, acting, values and the PPO minibatch step; engine rows as
``step``), ``graphs`` (``full`` with ``run.cuda_graphs``: ``mode="reduce-overhead"``; engine rows
compile the step with that mode) and ``rollout`` (``run.compile: rollout``: K env steps of the
collection as one graph, the update eager; engine rows as ``step``).

JaxMARL's IPPO-FF is not run here: its figure in the issue (2.8M env steps/s at 512 games, one
H100) is printed as a fixed reference, labelled as such. Runs on ``--device cuda`` (the default);
``--device cpu`` with small sizes checks the script itself.

Usage::

    python benchmarks/perf/gpu.py                                   # the issue's table, CUDA
    python benchmarks/perf/gpu.py --modes full graphs --games 4096 65536     # the compiled rows only
    python benchmarks/perf/gpu.py --device cpu --games 256 --ppo-games 64 --iterations 1 --no-compile \
        --no-paper
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jaxmarl_engine import import_jaxmarl, jaxmarl_rate  # noqa: E402

from zsceval.envs.overcooked import OvercookedEnv  # noqa: E402
from zsceval.rl.config import resolve_config  # noqa: E402
from zsceval.rl.trainer import Trainer  # noqa: E402

JAXMARL_IPPO_FF = 2.8e6
"""JaxMARL IPPO-FF env steps/s at 512 games on one H100, as the issue quotes it (not measured here)."""


MODES = ("eager", "step", "full", "graphs", "rollout")
"""The row kinds of ``--modes``: ``run.compile`` off / step / full, full with CUDA graphs, rollout."""


def engine_rate(layout: str, games: int, device: str, seconds: float, mode: str) -> tuple[float, float]:
    """``(env steps/s, compile seconds)`` of ``step`` over random joint actions; ``mode`` one of
    :data:`MODES` (``step`` and ``full`` compile the step alike, ``graphs`` with
    ``mode="reduce-overhead"``)."""
    env = OvercookedEnv(layout, num_envs=games, device=device, seed=0)
    env.reset()
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    gen = torch.Generator(device=device).manual_seed(0)
    pool = [torch.randint(0, 6, (games, 2), generator=gen, device=device) for _ in range(32)]
    compile_s = 0.0
    if mode != "eager":
        env.compile_step(mode="reduce-overhead" if mode == "graphs" else None)
        t = time.perf_counter()
        env.step(pool[0])
        sync()
        compile_s = time.perf_counter() - t
    for a in pool[:5]:
        env.step(a)
    sync()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for a in pool[:16]:
            env.step(a)
        steps += 16
        sync()
    return steps * games / (time.perf_counter() - start), compile_s


def ppo_rate(
    preset: str, games: int | None, device: str, iterations: int, mode: str, extra: tuple[str, ...] = ()
) -> tuple[float, float]:
    """Env steps/s of whole PPO iterations (collection and update), after one warm-up iteration, and
    the share of their time spent collecting (the rest is the update: where a preset's time goes);
    ``mode`` one of :data:`MODES`; ``extra``: more config overrides (e.g. ``model.bf16=auto``)."""
    compile_ = {"eager": "off", "graphs": "full"}.get(mode, mode)  # rollout: run.compile=rollout
    overrides = [
        "env.layout=counter_circuit", f"run.device={device}", "run.eval_episodes=0",
        f"run.compile={compile_}", f"run.cuda_graphs={str(mode == 'graphs').lower()}",
        "run.checkpoint_every=1000000000000",
    ]  # fmt: skip
    if games is not None:
        overrides.append(f"env.num_envs={games}")
    overrides += list(extra)
    cfg = resolve_config(preset=preset, overrides=overrides)
    per_iteration = cfg.env.num_envs * cfg.ppo.rollout_length
    total = per_iteration * (iterations + 1)
    cfg = resolve_config(preset=preset, overrides=[*overrides, f"run.total_steps={total}"])
    marks = []
    with tempfile.TemporaryDirectory() as tmp:
        tr = Trainer(cfg, f"{tmp}/run", progress=False)
        try:
            tr.train(on_iteration=lambda t, row: marks.append((time.perf_counter(), t.env_steps, row)))
        finally:
            tr.close()
    (t0, s0, _), (t1, s1, _) = marks[0], marks[-1]
    timed = [row for _, _, row in marks[1:]]
    collect = sum(r["collect_s"] for r in timed) / max(
        sum(r["collect_s"] + r["update_s"] for r in timed), 1e-9
    )
    return (s1 - s0) / (t1 - t0), collect


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--games", nargs="+", type=int, default=[4096, 16384, 65536, 262144])
    parser.add_argument(
        "--ppo-games", nargs="*", type=int, default=[512, 4096], help="quick-preset PPO rows (none: skip)"
    )
    parser.add_argument("--iterations", type=int, default=3, help="timed PPO iterations per cell")
    parser.add_argument("--seconds", type=float, default=3.0, help="timed engine seconds per cell")
    parser.add_argument("--no-compile", action="store_true", help="eager rows only (--modes eager)")
    parser.add_argument(
        "--modes", nargs="+", choices=MODES, default=["eager", "step"], help="the rows to run, in order"
    )
    parser.add_argument("--no-paper", action="store_true", help="skip the paper-preset PPO rows")
    parser.add_argument(
        "--paper-games",
        type=int,
        default=None,
        help="games of the paper-preset rows [default: the preset's 100]",
    )
    parser.add_argument("--layout", default="counter_circuit")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("no CUDA device: run with --device cpu to check the script")
    modes = ["eager"] if args.no_compile else args.modes
    jx = import_jaxmarl(args.device)
    if jx is not None and args.layout not in jx[2]:
        jx = None
    name = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    print(f"device: {name}, torch {torch.__version__}")
    print(f"JaxMARL: {'jax ' + jx[0].__version__ if jx else 'not importable (engine ratios n/a)'}\n")
    head = ("engine games", "mode", "env steps/s", "compile s", "JaxMARL", "ratio")
    print(" ".join(f"{h:>{w}}" for h, w in zip(head, (12, 8, 14, 10, 14, 7))))
    for games in args.games:
        ref = jaxmarl_rate(jx, args.layout, games, args.seconds)[0] if jx else None
        for mode in [m for m in modes if m != "full"]:  # the engine's full row is its step row
            rate, cs = engine_rate(args.layout, games, args.device, args.seconds, mode)
            ref_s, ratio = (f"{ref:,.0f}", f"{rate / ref:.2f}") if ref else ("-", "n/a")
            print(f"{games:>12} {mode:>8} {rate:>14,.0f} {cs:>10.1f} {ref_s:>14} {ratio:>7}", flush=True)
    print(
        f"\n{'PPO':>12} {'mode':>8} {'env steps/s':>14} {'collect %':>9} {'IPPO-FF (fixed)':>16} {'ratio':>7}"
    )
    cells = [("quick", g, ()) for g in args.ppo_games]
    if not args.no_paper:  # the paper preset as it is (float32), and at bf16 where the device has it
        cells += [("paper", args.paper_games, ()), ("paper", args.paper_games, ("model.bf16=auto",))]
    for preset, games, extra in cells:
        for mode in modes:
            rate, collect = ppo_rate(preset, games, args.device, args.iterations, mode, extra)
            label = f"{preset} {games}" if games else f"{preset} preset"
            label += " bf16" if extra else ""
            ratio = f"{rate / JAXMARL_IPPO_FF:.3f}" if games == 512 else "-"
            ref = f"{JAXMARL_IPPO_FF:,.0f}" if games == 512 else "-"
            print(
                f"{label:>12} {mode:>8} {rate:>14,.0f} {100 * collect:>8.0f}% {ref:>16} {ratio:>7}",
                flush=True,
            )


if __name__ == "__main__":
    main()
