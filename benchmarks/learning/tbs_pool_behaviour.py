"""What each pair of a TBS partner pool does in self-play, and what its random shaping pays it
(the TBS-chain diagnostics: why some pool pairs never score).

For every pair of a ``tbs-pool`` run (the training pool ``pool_*`` or the held-out pool
``heldout_*`` of a chain), the pair plays ``--episodes`` greedy self-play episodes on the run's
layout, and the script prints per pair:

- the team's mean sparse return;
- per agent: the counter events per episode (pickups from and drops on empty counters, any item),
  the deliveries, and the random shaping reward it earned per episode (its own coefficients,
  TBS App. D.2, times its own event counts: ``zsceval.algorithms.tbs.shaping``);
- a label (:func:`label`): ``scores``, ``counter loop`` (no soup delivered, and one agent picks up
  from or drops on a counter at least every fourth step: a loop that its positive counter
  coefficients pay for) or ``no score`` (neither).

Then per pool the pairs per label, with the mean shaping reward earned per episode.

    python benchmarks/learning/tbs_pool_behaviour.py CHAIN_OR_POOL_RUN [...] [--episodes 4] [--json F]

A chain folder (``--out`` of ``zsceval train --algo tbs``) gives its training and held-out pools; a
``tbs-pool`` run folder (with ``config.yaml``) gives that pool alone, so a pool can be read before
its chain has finished.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

from zsceval.algorithms.tbs.pool import load_pool_agents
from zsceval.algorithms.tbs.shaping import SHAPING_EVENTS, event_matrix, pool_coefficients
from zsceval.envs.overcooked import OvercookedEnv
from zsceval.io import atomic_write_text
from zsceval.rl.play import play

COUNTER_EVENTS = ("pickup_onion_from_X", "pickup_dish_from_X", "pickup_soup_from_X",
                  "put_onion_on_X", "put_dish_on_X", "put_soup_on_X")  # fmt: skip
"""Pickups from and drops on empty counters (the engine's ZSC-Eval event counters)."""

LOOP_EVERY = 4
"""A pair is a counter loop when an agent triggers a counter event at least every LOOP_EVERY steps."""


def label(sparse: float, counter_events: np.ndarray, horizon: int) -> str:
    """The behaviour of a pair from its mean team sparse return and each agent's counter events
    per episode (``float [n]``) over episodes of ``horizon`` steps.

    Example: ``label(0, [195, 0], 400)`` is ``"counter loop"``; ``label(0, [40, 3], 400)`` is
    ``"no score"``; ``label(20, [195, 0], 400)`` is ``"scores"``.
    """
    if sparse > 0:
        return "scores"
    if float(np.max(counter_events)) >= horizon / LOOP_EVERY:
        return "counter loop"
    return "no score"


def pool_runs(folder: Path) -> list[Path]:
    """The ``tbs-pool`` run folders of a chain (its ``<layout>/tbs*/pool_*`` and ``heldout_*``) or
    the folder itself when it is a run (has ``config.yaml``).

    Raises:
        SystemExit: neither.
    """
    if (folder / "config.yaml").is_file():
        return [folder]
    runs = sorted(p / "run" for p in folder.glob("*/tbs*/pool_*")) + sorted(
        p / "run" for p in folder.glob("*/tbs*/heldout_*")
    )
    runs = [r for r in runs if (r / "config.yaml").is_file()]
    if not runs:
        raise SystemExit(f"{folder}: neither a tbs-pool run (config.yaml) nor a chain with pool runs")
    return runs


@torch.no_grad()
def analyse(run: Path, episodes: int) -> dict[str, Any]:
    """One pool run's numbers, printed and returned.

    Args:
        run: a ``tbs-pool`` run folder (``config.yaml`` and checkpoints).
        episodes: greedy self-play episodes per pair.

    Returns:
        ``run, layout, seed, horizon, events`` (the paper events' names) and ``pairs``: per pair
        ``sparse_return`` (mean per episode), ``counter_events``, ``deliveries`` and ``shaping_earned``
        (per agent, per episode), ``coefficients`` (``[2][6]``) and ``label``; ``summary``: per label
        its pairs and the mean shaping earned by the higher-earning agent.

    Raises:
        zsceval.rl.checkpoint.CheckpointError: the run has no loadable checkpoint.
    """
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    layout, seed = cfg["env"]["layout"], int(cfg["run"]["seed"])
    scale = float(cfg.get("algo", {}).get("shaping_scale", 1.0))
    firsts, seconds = load_pool_agents(run)
    N = len(firsts)
    coef = pool_coefficients(N, seed, scale)
    env = OvercookedEnv(layout, num_envs=episodes, view_radius=int(cfg["env"].get("view_radius") or 0),
                        horizon=cfg["env"].get("horizon"))  # fmt: skip
    horizon = int(env.horizon)
    M = event_matrix(env.event_names).numpy()
    counter = [env.event_names.index(e) for e in COUNTER_EVENTS]
    delivery = env.event_names.index("delivery")
    pairs = []
    print(f"\n=== {run} ({layout}, seed {seed}, {N} pairs, {episodes} greedy episodes each)")
    print("pair | return | counter events a1/a2 | deliveries a1/a2 | shaping earned a1/a2 | label")
    for i in range(N):
        res = play(
            env, [firsts[i], seconds[i]], episodes, torch.Generator().manual_seed(seed), deterministic=True
        )
        ev = res.events.double().mean(0).numpy()  # [n, E] per episode
        earned = ((ev @ M.T) * coef[2 * i : 2 * i + 2]).sum(-1)
        counts = ev[:, counter].sum(-1)
        sparse = float(res.sparse.double().mean())
        row = {"pair": i, "sparse_return": sparse, "counter_events": counts.tolist(),
               "deliveries": ev[:, delivery].tolist(), "shaping_earned": earned.tolist(),
               "coefficients": coef[2 * i : 2 * i + 2].tolist(),
               "label": label(sparse, counts, horizon)}  # fmt: skip
        pairs.append(row)
        print(f"{i:4d} | {sparse:6.1f} | {counts[0]:6.0f} / {counts[1]:<6.0f}     | "
              f"{ev[0, delivery]:4.1f} / {ev[1, delivery]:<4.1f}      | "
              f"{earned[0]:+7.1f} / {earned[1]:<+7.1f}    | {row['label']}")  # fmt: skip
    summary = {}
    for name in ("scores", "counter loop", "no score"):
        rows = [p for p in pairs if p["label"] == name]
        if rows:
            earned = float(np.mean([max(p["shaping_earned"]) for p in rows]))
            summary[name] = {"pairs": [p["pair"] for p in rows], "shaping_earned": earned}
            print(f"{name:>12}: pairs {summary[name]['pairs']}; the higher-earning agent's shaping "
                  f"{summary[name]['shaping_earned']:+.1f} per episode")  # fmt: skip
    return {"run": str(run), "layout": layout, "seed": seed, "horizon": horizon,
            "events": list(SHAPING_EVENTS), "pairs": pairs, "summary": summary}  # fmt: skip


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("folders", nargs="+", type=Path, help="TBS chains or tbs-pool run folders")
    parser.add_argument("--episodes", type=int, default=4, help="greedy episodes per pair (default 4)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers to this file")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    results = [analyse(run, args.episodes) for folder in args.folders for run in pool_runs(folder)]
    if args.json:
        atomic_write_text(args.json, json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
