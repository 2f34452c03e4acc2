"""TBS with some clusters left out, on a finished chain's held-out pool (the TBS-chain diagnostics).

An ablation, not a method of the paper: the chain's TBS agent keeps its global ToM model, window
and options, and loses the best responses and cluster ToM models of the clusters named by
``--drop``; it then plays the ``tbs.evaluate`` job's protocol (every held-out pair in both seats,
``--episodes`` greedy episodes each, the chain's seed and env), and its scaled reward is computed
against the Oracle returns that the chain's evaluation recorded. With ``--drop`` empty the agent is
the chain's own and the printed TBS returns equal those of ``ego/tbs_eval/results.parquet`` (TBS
plays first there, so its draws from the seeded generator are the same); the script checks it.

    python benchmarks/learning/tbs_drop_clusters.py CHAIN --drop 2
    python benchmarks/learning/tbs_drop_clusters.py CHAIN --drop            # the check alone

Prints the kept clusters, the scaled reward with its 95% CI (``zsceval report``'s bootstrap) of
the chain's TBS, of the single BR and of the ablated TBS (None where no held-out pair has a scale),
the paired difference ablated TBS - BR, and the mean sparse returns; ``--json`` writes the same
numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from zsceval.algorithms.tbs.agents import TBSAgent
from zsceval.algorithms.tbs.jobs import _env, _horizon, heldout_assignment
from zsceval.algorithms.tbs.report import _run_cubes
from zsceval.algorithms.tbs.results import scaled_rewards
from zsceval.evaluation.matches import play_games
from zsceval.stats.metrics import bootstrap_ci

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the chain loader and games of tbs_selection.py
import tbs_selection  # noqa: E402


def ablated(tbs: TBSAgent, drop: list[int]) -> TBSAgent:
    """``tbs`` without the best responses and cluster ToM models of the clusters ``drop``.

    Raises:
        SystemExit: a cluster index out of range, or every cluster dropped.
    """
    k = len(tbs.brs)
    if any(not 0 <= j < k for j in drop):
        raise SystemExit(f"--drop takes cluster indices 0..{k - 1}, got {drop}")
    keep = [j for j in range(k) if j not in drop]
    if not keep:
        raise SystemExit("--drop leaves no cluster")
    return TBSAgent([tbs.brs[j] for j in keep], [tbs.toms[j] for j in keep], tbs.global_tom,
                    window=tbs.window, reselect_every=tbs.reselect_every,
                    first_step_random=tbs.first_step_random, kl_eps=tbs.kl_eps).eval()  # fmt: skip


@torch.no_grad()
def held_out_returns(chain, ego, episodes: int, seed: int, horizon: int | None) -> np.ndarray:
    """Team sparse returns ``float [2, H, E]`` (seat, held-out pair, episode) of ``ego``, played
    as the ``tbs.evaluate`` job plays its first variant."""
    h1, h2 = chain.pools["held-out"]
    H = len(h1)
    assignment = heldout_assignment(H, episodes)
    gen = torch.Generator().manual_seed(seed)
    env = _env(chain.layout, assignment.shape[0], "cpu", seed, chain.view_radius, horizon)
    res = play_games(env, [ego, ego, *h1, *h2], assignment, generator=gen, device="cpu", deterministic=True)
    return res.sparse.numpy().astype(float).reshape(2, H, episodes)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("chain", help="--out folder of `zsceval train --algo tbs`")
    parser.add_argument("--drop", type=int, nargs="*", default=[], help="cluster indices to leave out")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    chain = tbs_selection.load_chain(args.chain)
    evaluated = json.loads((Path(args.chain) / "ego" / "tbs_eval" / "DONE.json").read_text())["job"]["params"]
    episodes, seed = int(evaluated["episodes"]), int(evaluated["seed"])
    horizon = _horizon(evaluated)
    recorded = pd.read_parquet(Path(args.chain) / "ego" / "tbs_eval" / "results.parquet")
    ego = ablated(chain.tbs, sorted(set(args.drop)))
    returns = held_out_returns(chain, ego, episodes, seed, horizon)
    H = returns.shape[1]
    frame = pd.DataFrame({"agent": "ablated", "heldout": np.tile(np.repeat(np.arange(H), episodes), 2),
                          "seat": np.repeat([0, 1], H * episodes),
                          "episode": np.tile(np.arange(episodes), 2 * H),
                          "sparse_return": returns.reshape(-1)})  # fmt: skip
    both = scaled_rewards(pd.concat([recorded.drop(columns=["scaled"], errors="ignore"), frame],
                                    ignore_index=True))  # fmt: skip
    if not args.drop:  # the chain's own agent: the recorded episodes again
        mine = both[both.agent == "ablated"].sort_values(["seat", "heldout", "episode"])["sparse_return"]
        theirs = both[both.agent == "TBS"].sort_values(["seat", "heldout", "episode"])["sparse_return"]
        if not np.array_equal(mine.to_numpy(), theirs.to_numpy()):
            raise SystemExit("the replayed TBS differs from the chain's recorded evaluation")
    cubes = {a: _run_cubes([both], a)[0] for a in ("TBS", "BR", "ablated")}
    cubes["ablated - BR"] = cubes["ablated"] - cubes["BR"]
    keep = ~np.isnan(cubes["TBS"]).all(axis=(0, 2))
    out = {"chain": str(args.chain), "dropped": sorted(set(args.drop)),
           "kept_clusters": [c for j, c in enumerate(chain.clusters) if j not in args.drop],
           "heldout_pairs_with_scale": int(keep.sum()), "mean_return": {}}  # fmt: skip
    print(
        f"{args.chain}: clusters {chain.clusters}; dropped {out['dropped']}; "
        f"{int(keep.sum())} of {H} held-out pairs with a scale"
        + ("" if keep.any() else " (every Oracle return is 0: no scaled reward)")
    )
    for name, x in cubes.items():
        if not keep.any():  # every held-out pair's own return is 0: nothing to scale by
            out[name] = None
            continue
        ci = bootstrap_ci(x[:, keep], np.nanmean, reps=2000, rng=np.random.default_rng(0))
        out[name] = {"scaled": ci.estimate, "low": ci.low, "high": ci.high}
        print(f"  {name:13s} scaled reward {ci.estimate:6.3f} [{ci.low:6.3f}, {ci.high:6.3f}]")
    for agent in ("TBS", "BR", "ablated"):
        out["mean_return"][agent] = float(both[both.agent == agent]["sparse_return"].mean())
    print("  mean sparse return: " + ", ".join(f"{a} {v:.1f}" for a, v in out["mean_return"].items()))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
