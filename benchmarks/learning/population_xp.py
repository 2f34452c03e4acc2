"""Diagnostics of population egos in a bench folder: their training pools' cross-play and how the
ego plays with the pool it trained with (where a method misses, show the cause).

For every ego of ``zsceval bench --out DIR`` that trained with a pool (FCP, MEP, TrajeDi and HSP
keep theirs under ``egos/<algo>/s<seed>/run/pools/``; COLE's pools grow during training and the last
one is used), plays every ordered pair of the pool's members and the ego's scored checkpoint (the
checkpoint the bench's evaluation scored, :func:`~zsceval.evaluation.ego_checkpoint.scored_ego_checkpoint`)
for ``--episodes`` stochastic episodes each, in one batched call
(:func:`~zsceval.evaluation.pool_xp.pairwise_returns`), and prints per ego:

1. per pool member: its level (``init``, ``mid``, ``final`` for stage-1 members; ``""`` for HSP's
   biased candidates), its self-play return, its mean cross-play return with the other members
   (both seats) and its return with the ego (both seats);
2. per level: the means of these, and the ego's self-play return;
3. the pool's **final** members as a group (all members where no name carries a level, as COLE's
   generations; HSP's biased candidates carry none and are left out): their mean self-play, their
   mean and minimum cross-play with each other (both seats), the ego's mean return with them and
   its self-play
   (:func:`~zsceval.evaluation.pool_xp.group_cross_play`). A last table lists this row for every ego.

Returns are team sparse returns per episode (20 per soup). A pool whose final members score well in
self-play but near 0 with each other holds incompatible conventions; an ego far below the members'
self-play with its own pool did not learn to cooperate with it.

Writes, under ``--out`` (default ``DIR/<layout>/analysis/pool_xp``): ``<algo>_s<seed>.csv`` (the
matrix), ``summary.csv`` (the per-member rows of every ego), ``final_members.csv`` (3.) and
``<algo>_s<seed>.png`` (a heat map).

Usage (from the repository root)::

    python benchmarks/learning/population_xp.py runs/quick-cc --layout counter_circuit
    python benchmarks/learning/population_xp.py runs/s12 --layout counter_circuit --algos fcp mep --seeds 0
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from zsceval.evaluation.ego_checkpoint import scored_ego_checkpoint  # noqa: E402
from zsceval.evaluation.pool_xp import group_cross_play, pairwise_returns, pool_summary  # noqa: E402
from zsceval.io import atomic_path  # noqa: E402
from zsceval.rl.checkpoint import load_policy  # noqa: E402
from zsceval.rl.population.pool import PolicyPool  # noqa: E402

EGO = "ego"


def latest_pool(run: Path) -> Path | None:
    """The pool folder of an ego run (the newest by modification time where it holds several)."""
    pools = [p for p in (run / "pools").glob("*") if (p / "pool.json").is_file()]
    return max(pools, key=lambda p: p.stat().st_mtime) if pools else None


def short(name: str) -> str:
    """``fcp-stage1/member_03@final`` -> ``m03@final``; ``biased/c007`` -> ``c007``."""
    base = name.split("/")[-1]
    return base.replace("member_", "m")


def diagnose(
    job: Path, algo: str, layout: str, episodes: int, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The cross-play matrix and per-member summary of one ego job folder (``egos/<algo>/s<seed>``)."""
    pool_dir = latest_pool(job / "run")
    if pool_dir is None:
        raise FileNotFoundError(f"{job / 'run' / 'pools'}: no pool")
    pool = PolicyPool.load(pool_dir)
    members = [pool.member(i) for i in range(len(pool))]
    names = [short(n) for n in pool.names]
    ckpt, _ = scored_ego_checkpoint(job, algo)
    ego, _ = load_policy(str(ckpt))
    matrix = pairwise_returns([*members, ego], [*names, EGO], layout, episodes=episodes, seed=seed)
    return matrix, pool_summary(matrix, names, ego=EGO)


def by_level(summary: pd.DataFrame) -> pd.DataFrame:
    """Means of the per-member columns for each level."""
    cols = ["self_play", "cross_play", "with_ego"]
    return summary.groupby("level", sort=False)[cols].mean().round(1)


def heatmap(matrix: pd.DataFrame, title: str, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(0.45 * len(matrix) + 2, 0.4 * len(matrix) + 1.5))
    sns.heatmap(
        matrix, annot=len(matrix) <= 16, fmt=".0f", cmap="viridis", ax=ax, cbar_kws={"label": "return"}
    )
    ax.set_xlabel("seat 1")
    ax.set_ylabel("seat 0")
    ax.set_title(title)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("bench", type=Path, help="a zsceval bench --out folder")
    parser.add_argument("--layout", required=True)
    parser.add_argument("--algos", nargs="+", default=None, help="default: every ego with a pool")
    parser.add_argument("--seeds", nargs="+", type=int, default=None, help="ego seeds (default: all)")
    parser.add_argument("--episodes", type=int, default=16, help="episodes per ordered pair")
    parser.add_argument("--seed", type=int, default=0, help="action-sampling seed")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the per-level tables as JSON")
    args = parser.parse_args()
    egos = args.bench / args.layout / "egos"
    if not egos.is_dir():
        parser.error(f"{egos} does not exist (is {args.bench} a bench folder with layout {args.layout}?)")
    out = args.out or args.bench / args.layout / "analysis" / "pool_xp"
    out.mkdir(parents=True, exist_ok=True)
    algos = args.algos or sorted(p.name for p in egos.iterdir() if p.is_dir())
    rows, levels, finals = [], {}, []
    for algo in algos:
        for job in sorted((egos / algo).glob("s*")):
            seed = int(job.name[1:])
            if (args.seeds is not None and seed not in args.seeds) or latest_pool(job / "run") is None:
                continue
            matrix, summary = diagnose(job, algo, args.layout, args.episodes, args.seed)
            tag = f"{algo}_s{seed}"
            with atomic_path(out / f"{tag}.csv") as tmp:
                matrix.round(2).to_csv(tmp)
            heatmap(
                matrix,
                f"{algo} seed {seed}: pool and ego ({args.episodes} episodes per pair)",
                out / f"{tag}.png",
            )
            table = by_level(summary)
            ego_sp = float(matrix.loc[EGO, EGO])
            print(f"\n== {algo} seed {seed}: {len(summary)} pool members; ego self-play {ego_sp:.1f}")
            print(summary.round(1).to_string(index=False))
            print(table.to_string())
            final = summary.loc[summary["level"] == "final", "member"].tolist() or summary["member"].tolist()
            group = group_cross_play(matrix, final, ego=EGO)
            print("final members: " + ", ".join(f"{k} {v:.1f}" for k, v in group.items()))
            levels[tag] = {**group, "levels": table.reset_index().to_dict(orient="records")}
            finals.append({"algo": algo, "seed": seed, **group})
            rows.append(summary.assign(algo=algo, seed=seed, ego_self_play=ego_sp))
    if not rows:
        raise SystemExit(f"no ego with a pool under {egos} for {algos}")
    with atomic_path(out / "summary.csv") as tmp:
        pd.concat(rows).round(2).to_csv(tmp, index=False)
    finals = pd.DataFrame(finals)
    with atomic_path(out / "final_members.csv") as tmp:
        finals.round(2).to_csv(tmp, index=False)
    print("\n== the final members of every ego's pool (returns; cross-play both seats)")
    print(finals.round(1).to_string(index=False))
    if args.json:
        args.json.write_text(json.dumps(levels, indent=1))
    print(f"\nwritten: {out}")


if __name__ == "__main__":
    main()
