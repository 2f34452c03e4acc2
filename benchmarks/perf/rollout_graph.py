"""``run.compile: rollout`` against ``off`` (and, on CUDA, with CUDA graphs): SP training of a few
iterations per mode from the same seed; prints each mode's env steps/s after the first (compiling)
iteration, the largest relative difference of its logged losses from ``off``'s, and whether inductor
skipped CUDA graphs (its ``cudagraph_skips`` counter and the reasons it logged).

    python benchmarks/perf/rollout_graph.py --device cuda --games 4096            # GPU session
    python benchmarks/perf/rollout_graph.py --device cpu --games 32 --iterations 3   # inductor on CPU

Identical training (bit for bit) holds with the ``aot_eager`` backend (``--backend aot_eager``);
inductor may round differently, so the loss differences are printed, not asserted.
"""

from __future__ import annotations

import argparse
import csv
import logging
import tempfile
import time

import torch

from zsceval.rl.config import resolve_config
from zsceval.rl.trainer import Trainer

COMPARED = ("policy_loss", "value_loss", "entropy", "approx_kl", "value_target_mean")


class _Skips(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.reasons: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if "skipping cudagraphs" in msg:
            self.reasons.append(msg.strip().splitlines()[0][:200])


def run(args, mode: str, graphs: bool) -> tuple[float, list[dict[str, str]], float]:
    over = [f"env.layout={args.layout}", f"env.num_envs={args.games}", f"run.device={args.device}",
            "run.eval_episodes=0", "run.checkpoint_every=1000000000000", f"run.compile={mode}",
            f"run.compile_backend={args.backend}", f"run.cuda_graphs={str(graphs).lower()}",
            f"run.rollout_graph_steps={args.graph_steps}", "run.seed=0"]  # fmt: skip
    cfg = resolve_config(preset=args.preset, overrides=over)
    total = cfg.steps_per_iteration("ppo") * args.iterations
    cfg = resolve_config(preset=args.preset, overrides=[*over, f"run.total_steps={total}"])
    marks = []
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        tr = Trainer(cfg, f"{tmp}/run", progress=False)
        try:
            tr.train(on_iteration=lambda t, row: marks.append((time.perf_counter(), t.env_steps)))
        finally:
            tr.close()
        with open(f"{tmp}/run/metrics.csv") as f:
            rows = list(csv.DictReader(f))
    first = marks[0][0] - t0
    (a, sa), (b, sb) = marks[0], marks[-1]
    return (sb - sa) / (b - a) if b > a else float("nan"), rows, first


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--games", type=int, default=4096)
    ap.add_argument("--layout", default="counter_circuit")
    ap.add_argument("--preset", default="quick")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--graph-steps", type=int, default=8, help="run.rollout_graph_steps (K)")
    ap.add_argument("--backend", default="inductor")
    args = ap.parse_args()
    handler = _Skips()
    logging.getLogger("torch").addHandler(handler)
    try:
        torch._logging.set_logs(perf_hints=True)
    except Exception:  # noqa: BLE001 - logging options differ across torch versions
        pass
    modes = [("off", False), ("rollout", False)]
    if args.device == "cuda":
        modes.append(("rollout", True))
    print(f"device {args.device}, torch {torch.__version__}, {args.layout}, {args.games} games, "
          f"{args.preset} preset, backend {args.backend}, K={args.graph_steps}")  # fmt: skip
    ref = None
    for mode, graphs in modes:
        from torch._dynamo.utils import counters

        counters.clear()
        rate, rows, first = run(args, mode, graphs)
        if ref is None:
            ref = rows
        diff = 0.0
        for r0, r1 in zip(ref, rows):
            for k in COMPARED:
                if r0.get(k) not in (None, "") and r1.get(k) not in (None, ""):
                    x, y = float(r0[k]), float(r1[k])
                    diff = max(diff, abs(x - y) / (1e-8 + abs(x)))
        skips = int(counters["inductor"].get("cudagraph_skips", 0))
        label = mode + (" + cuda graphs" if graphs else "")
        print(f"{label:<24} {rate:>14,.0f} env steps/s   first iteration {first:6.1f} s   "
              f"max rel loss diff vs off {diff:.2e}   cudagraph skips {skips}")  # fmt: skip
    for reason in dict.fromkeys(handler.reasons):
        print("  inductor:", reason)


if __name__ == "__main__":
    main()
