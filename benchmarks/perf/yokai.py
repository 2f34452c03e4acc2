"""Yōkai engine throughput: env steps/s with random available actions, next to the paper's H100.

Steps ``YokaiEnv`` with a uniformly random *available* action per agent (drawn from the previous
step's ``avail_actions``, as the paper's random agents, YLE App. B.1 "Resulting Performance")
for num_envs in {512, 1024, 2048}. An env step is one joint action in one game, so one
``env.step`` call is ``num_envs`` env steps. Two rates per row: ``env.step`` alone, and the loop
with the action draw. The paper's figures (YLE Table 3, one NVIDIA H100, JAX, 1,000 random
consecutive actions) are printed next to them with our rate as a fraction of theirs (``ratio``).

Usage:
    python benchmarks/perf/yokai.py [--num-envs 512 1024 2048] [--steps 100] [--device cpu]
        [--version 3x3] [--players 2] [--threads 1]

``--device cuda`` runs on the GPU (synchronized before each clock read); ``--threads k`` sets
torch's intra-op threads (default 1: the engine's tensors are small, and on a shared 2-core
machine a second thread made every op wait, 15x slower; 0 keeps torch's default).
"""

from __future__ import annotations

import argparse
import time

import torch

from zsceval.envs.yokai import YokaiEnv

# YLE Table 3: steps/s on one H100 with random actions, by version and num_envs (2 players).
PAPER_H100 = {
    "3x3": {512: 139_107, 1024: 274_669, 2048: 559_251},
    "4x4": {512: 135_662, 1024: 144_636, 2048: 148_269},
}


def random_available(step, generator: torch.Generator) -> torch.Tensor:
    """``int64 [B, n]``: a uniform draw among the current player's available actions (the max of
    uniforms on the mask); NOOP, the only available action, for the others (turn-based)."""
    avail = step.avail_actions
    B = avail.shape[0]
    rows = torch.arange(B, device=avail.device)
    current = step.infos["current_player"]
    noise = torch.rand(avail.shape[0], avail.shape[2], generator=generator, device=avail.device)
    actions = torch.zeros(avail.shape[:2], dtype=torch.int64, device=avail.device)
    actions[rows, current] = (noise * avail[rows, current]).argmax(-1)
    return actions


def measure(version: str, players: int, num_envs: int, steps: int, device: str) -> tuple[float, float]:
    """``(step_rate, loop_rate)`` in env steps/s."""
    env = YokaiEnv(num_envs, num_agents=players, version=version, device=device, seed=0)
    gen = torch.Generator(device=device).manual_seed(0)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    step = env.reset()
    for _ in range(5):  # warm-up
        step = env.step(random_available(step, gen))
    sync()
    in_step, start = 0.0, time.perf_counter()
    for _ in range(steps):
        actions = random_available(step, gen)
        sync()
        t0 = time.perf_counter()
        step = env.step(actions)
        sync()
        in_step += time.perf_counter() - t0
    total = time.perf_counter() - start
    return steps * num_envs / in_step, steps * num_envs / total


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--num-envs", type=int, nargs="+", default=[512, 1024, 2048])
    parser.add_argument("--steps", type=int, default=100, help="env.step calls per measurement")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--version", default="3x3", choices=sorted(PAPER_H100))
    parser.add_argument("--players", type=int, default=2, choices=[2, 3, 4])
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (0: torch's default)")
    args = parser.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda: CUDA is not available here")
    if args.threads:
        torch.set_num_threads(args.threads)
    paper = PAPER_H100[args.version] if args.players == 2 else {}
    print(f"Yokai {args.version}, {args.players} players, {args.device}, {torch.get_num_threads()} threads")
    print(f"{'num_envs':>8} {'step/s':>10} {'loop/s':>10} {'paper H100':>11} {'ratio':>7}")
    for B in args.num_envs:
        step_rate, loop_rate = measure(args.version, args.players, B, args.steps, args.device)
        ref = paper.get(B)
        ratio = f"{step_rate / ref:7.3f}" if ref else f"{'-':>7}"
        paper_rate = f"{ref:>11,}" if ref else f"{'-':>11}"
        print(f"{B:>8} {step_rate:>10,.0f} {loop_rate:>10,.0f} {paper_rate} {ratio}")


if __name__ == "__main__":
    main()
