r"""Human-proxy scores and interdependence of saved agents, and of each proxy with itself.

    python benchmarks/human/proxy_scores.py \
        --agent sp:0:cramped_room:runs/sp_cramped_room_s0 --agent sp:1:cramped_room:runs/sp_cramped_room_s1

``--agent NAME:SEED:LAYOUT:RUN`` (repeatable); the proxy is the shipped H_proxy of the layout
(fitted on the 2019 trials' test split, docs/human-data.md) or, with ``--proxy-root``, read from
``PROXY_ROOT/<layout>`` or ``PROXY_ROOT/<layout>/human-proxy``
(``zsceval partners human-proxy --layout L --out ...``). Prints
one row per (layout, agent name): the mean return with the proxy (both seats, bootstrap 95% CI over
(seed, seat) units) and the mean interdependence counts per episode (docs/results.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
import torch

from zsceval.envs.overcooked import OvercookedEnv, load_layout
from zsceval.evaluation.human_proxy import human_proxy_summary
from zsceval.evaluation.interdependence import interdependence_summary, play_with_interdependence
from zsceval.human.partners import HUMAN_PROXY_FILE, load_human_proxy, shipped_model_dir
from zsceval.rl.checkpoint import load_policy


def proxy_dir(root: Path | None, layout: str) -> Path:
    if root is None:
        return shipped_model_dir(layout, "human-proxy")
    for d in (root / layout, root / layout / "human-proxy"):
        if (d / HUMAN_PROXY_FILE).is_file():
            return d
    hint = f"zsceval partners human-proxy --layout {layout}"
    raise SystemExit(f"no human proxy of {layout} under {root} ({hint})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--proxy-root", type=Path, default=None, help="default: the shipped H_proxy models")
    ap.add_argument("--agent", action="append", default=[], help="NAME:SEED:LAYOUT:RUN")
    ap.add_argument("--episodes", type=int, default=10, help="episodes per seat")
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--out", type=Path, default=None, help="also write the per-episode table (parquet)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    jobs = [a.split(":", 3) for a in args.agent]
    frames = []
    for layout in sorted({j[2] for j in jobs}):
        proxy, _ = load_human_proxy(proxy_dir(args.proxy_root, layout), layout)
        pairs = [("human proxy", 0, proxy)]
        pairs += [(name, int(seed), load_policy(run)[0]) for name, seed, lay, run in jobs if lay == layout]
        for name, seed, agent in pairs:
            env = OvercookedEnv(load_layout(layout), num_envs=args.episodes)
            gen = torch.Generator().manual_seed(args.seed)
            labels = {"algorithm": name, "ego_seed": seed}
            frame = play_with_interdependence(env, agent, proxy, args.episodes, generator=gen, labels=labels)
            frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    if args.out:
        frame.to_parquet(args.out)
    table = human_proxy_summary(frame).merge(interdependence_summary(frame).drop(columns="episodes"))
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)
    print(table.round(1).to_string(index=False))


if __name__ == "__main__":
    main()
