"""Football env throughput: the batched ``football`` env with 1, 2 and all cores' worker processes,
against one simulator stepped in this process (the reference), measured in the same run.

Each row steps random *available* joint actions for ``--seconds`` after a warm-up; an env step is
one joint action (3 controlled players) in one game. The reference is one gfootball simulator
(``academy_3_vs_1_with_keeper``, raw observations, ``scoring,checkpoints`` rewards) stepped directly
in this process, without our observation encoding, masks or events: the ratio shows what the worker
processes buy and what the wrapper costs.

Usage (from the repository root; needs ``pip install zsceval[football]``, docs/football.md)::

    python benchmarks/perf/football.py
    python benchmarks/perf/football.py --games 8 16 --seconds 10
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import time
import warnings

import numpy as np
import torch


def reference_steps_per_s(seconds: float) -> float:
    """One gfootball simulator stepped in this process with uniformly random actions."""
    with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():  # old gym's notices
        warnings.simplefilter("ignore", DeprecationWarning)
        import gfootball.env as football_env

        env = football_env.create_environment(
            env_name="academy_3_vs_1_with_keeper",
            representation="raw",
            rewards="scoring,checkpoints",
            number_of_left_players_agent_controls=3,
        )
    rng = np.random.default_rng(0)
    env.reset()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        _, _, done, _ = env.step(rng.integers(0, 19, 3))
        steps += 1
        if done:
            env.reset()
    rate = steps / (time.perf_counter() - start)
    env.close()
    return rate


def batched_steps_per_s(games: int, workers: int, seconds: float) -> float:
    """The ``football`` env of ``games`` games in ``workers`` processes, random available actions."""
    from zsceval.envs import make

    gen = torch.Generator().manual_seed(0)
    with make("football", num_envs=games, num_workers=workers) as env:
        step = env.reset()
        for _ in range(3):  # warm-up
            step = env.step(_sample(step.avail_actions, gen))
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            step = env.step(_sample(step.avail_actions, gen))
            steps += games
        return steps / (time.perf_counter() - start)


def _sample(avail: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Uniform over each agent's available actions: ``int64 [B, n]``."""
    return torch.multinomial(avail.flatten(0, 1).float(), 1, generator=gen).view(avail.shape[:2])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, nargs="+", default=[8], help="games per batched env")
    parser.add_argument("--workers", type=int, nargs="+", default=None, help="default: 1, 2, all cores")
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    cores = os.cpu_count() or 1
    workers = args.workers or sorted({1, min(2, cores), cores})
    ref = reference_steps_per_s(args.seconds)
    print(f"{cores} CPU core(s); {args.seconds:.0f} s per row; random (available) actions")
    print(f"{'env':<28} {'games':>5} {'workers':>7} {'env steps/s':>11} {'x reference':>11}")
    print(f"{'reference (1 gfootball sim)':<28} {1:>5} {'-':>7} {ref:>11,.0f} {1.0:>10.2f}x")
    for g in args.games:
        for w in workers:
            rate = batched_steps_per_s(g, w, args.seconds)
            print(f"{'zsceval football':<28} {g:>5} {w:>7} {rate:>11,.0f} {rate / ref:>10.2f}x")


if __name__ == "__main__":
    main()
