"""IPC overhead of ``ProcessBatchedEnv`` (the worker processes behind the ``football`` env).

Steps :class:`~zsceval.envs.process_vector.CounterGame` (a pure-Python game that does no work, or
1 ms of busy work per step) in this process and through 1 and 2 worker processes, measured in the
same run; the per-step overhead is the batched step time minus the in-process time divided by the
number of workers.

Usage (from the repository root)::

    python benchmarks/perf/process_overhead.py [--games 8]
"""

from __future__ import annotations

import argparse
import functools
import time

import numpy as np

from zsceval.envs.process_vector import CounterGame, ProcessBatchedEnv, game_seed


def benchmark(num_envs: int = 8) -> None:
    """Env steps/s of :class:`CounterGame` in-process and with 1 and 2 workers, for a free game and a
    game of 1 ms per step; the per-step overhead is the batched step time minus the in-process
    time divided by the number of workers."""
    actions = np.zeros((num_envs, 3), np.int64)
    for work_us, steps in ((0.0, 2000), (1000.0, 200)):
        make = functools.partial(CounterGame, work_us=work_us)
        games = [make(game_seed(0, i)) for i in range(num_envs)]
        for g in games:
            g.reset()
        t0 = time.perf_counter()
        for _ in range(steps):
            for g in games:
                g.step(actions[0])
        direct = (time.perf_counter() - t0) / steps
        print(f"game work {work_us:.0f} us, B={num_envs}: in-process {num_envs / direct:,.0f} env steps/s")
        for workers in (1, 2):
            with ProcessBatchedEnv(make, num_envs, num_workers=workers) as env:
                env.reset()
                for _ in range(20):
                    env.step(actions)
                t0 = time.perf_counter()
                for _ in range(steps):
                    env.step(actions)
                per = (time.perf_counter() - t0) / steps
            print(
                f"  {workers} worker(s): {num_envs / per:,.0f} env steps/s, {per * 1e6:.0f} us per batched "
                f"step, overhead ~{(per - direct / workers) * 1e6:.0f} us"
            )


if __name__ == "__main__":
    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=fmt)
    parser.add_argument("--games", type=int, default=8)
    benchmark(parser.parse_args().games)
