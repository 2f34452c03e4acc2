"""What TBS's online selection does in a finished TBS chain (paper 000 Sec. 3.3, Eq. 8).

For each pool (the training pool, whose cluster labels are known, and the held-out pool), every
pair and both seats, one greedy episode of:

- each cluster best response alone and the single BR (their returns give the **selection upper
  bound**: the best cluster BR per (pair, seat), as if an oracle picked it for the whole episode);
- the TBS agent, recording which best response acts at each step (Eq. 8's arg-min).

Printed per pool: the returns of every fixed best response, TBS's return, its share of steps per
best response and its number of switches; then the mean returns of TBS, the single BR, the mean
cluster BR (a uniform random pick) and the selection upper bound. On the training pool also the
**identification accuracy**: the share of steps at which TBS acts with the BR of the partner's own
cluster. High accuracy on the training pool with returns near a random pick on the held-out pool
says that the ToM selection works as built and that the held-out partners' concept predictions do
not tell which best response suits them.

Usage (from the repository root, on a chain trained by ``zsceval train --algo tbs``)::

    python benchmarks/learning/tbs_selection.py runs/tbs_cr10 --layout coordination_ring
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from zsceval.algorithms.tbs.jobs import read_clusters
from zsceval.algorithms.tbs.pool import GreedyPool, load_pool_agents
from zsceval.envs.overcooked import OvercookedEnv
from zsceval.rl.population.pool import PolicyPool
from zsceval.rl.checkpoint import load_agent


@torch.no_grad()
def play(layout: str, ego, firsts, seconds, seed: int = 0) -> tuple[np.ndarray, np.ndarray | None]:
    """One greedy episode of ``ego`` with every pair, both seats.

    Returns:
        ``(returns float [2, N], choices int [T, 2, N] or None)``: seat s = the ego in seat s (its
        partner the pair's other agent); ``choices`` is the acting best response of a composite
        ego (``extras["choice"]``), None for a plain agent.
    """
    N = len(firsts)
    B = 2 * N
    env = OvercookedEnv(layout, num_envs=B, device="cpu", seed=seed)
    step = env.reset()
    rows = torch.arange(B)
    seat = rows // N  # game g: pair g % N, the ego in seat g // N
    member = torch.where(seat == 0, N + rows % N, rows % N)  # the partner: agent 2 or agent 1
    partners = GreedyPool(PolicyPool.from_policies([*firsts, *seconds]))
    ego_h, partner_h = ego.initial_state(B, "cpu"), partners.initial_state(B, "cpu")
    starts = torch.ones(B, dtype=torch.bool)
    gen = torch.Generator().manual_seed(seed)
    returns, choices = torch.zeros(B), []
    for _ in range(env.horizon):
        mine = ego.act(step.obs[rows, seat], step.avail_actions[rows, seat], ego_h, starts, gen, True)
        theirs = partners.act(step.obs[rows, 1 - seat], step.avail_actions[rows, 1 - seat], partner_h, starts,
                              member=member)  # fmt: skip
        ego_h, partner_h = mine.state, theirs.state
        if "choice" in mine.extras:
            choices.append(mine.extras["choice"].clone())
        actions = torch.zeros(B, 2, dtype=torch.int64)
        actions[rows, seat], actions[rows, 1 - seat] = mine.actions, theirs.actions
        step = env.step(actions)
        returns += step.reward
        starts = torch.zeros(B, dtype=torch.bool)
    picked = torch.stack(choices).view(-1, 2, N).numpy() if choices else None
    return returns.view(2, N).numpy(), picked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chain", type=Path, help="the --out folder of `zsceval train --algo tbs`")
    parser.add_argument("--layout", required=True)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    base = args.chain / args.layout / "tbs"
    clusters = read_clusters(next(base.glob("cluster_*")))
    k = len(clusters)
    brs_run = next(base.glob("brs_*")) / "run"
    brs = [load_agent(brs_run, f"br_{j}", "cpu")[0].eval() for j in range(k)]
    single = load_agent(brs_run, "br_all", "cpu")[0].eval()
    tbs = load_agent(args.chain / "ego" / "run", "tbs", "cpu")[0].eval()
    label = np.zeros(sum(len(c) for c in clusters), dtype=int)
    for j, members in enumerate(clusters):
        label[members] = j
    summary = {}
    for name, pattern in (("training pool", "pool_*"), ("held-out pool", "heldout_*")):
        firsts, seconds = load_pool_agents(next(base.glob(pattern)) / "run")
        N = len(firsts)
        fixed = np.stack([play(args.layout, br, firsts, seconds)[0] for br in brs])  # [k, 2, N]
        single_ret = play(args.layout, single, firsts, seconds)[0]
        tbs_ret, picked = play(args.layout, tbs, firsts, seconds)
        print(f"\n{name} ({N} pairs; clusters {clusters})")
        print("pair seat | " + " ".join(f"br_{j:<3d}" for j in range(k)) + " br_all | TBS  share per BR"
              " (switches)")  # fmt: skip
        for s in range(2):
            for i in range(N):
                share = np.bincount(picked[:, s, i], minlength=k) / picked.shape[0]
                switches = int((picked[1:, s, i] != picked[:-1, s, i]).sum())
                returns = " ".join(f"{fixed[j, s, i]:6.0f}" for j in range(k))
                tbs_part = f"{tbs_ret[s, i]:4.0f} {np.round(share, 2)} ({switches})"
                print(f"{i:4d} {s:4d} | {returns} {single_ret[s, i]:6.0f} | {tbs_part}")
        row = {"TBS": float(tbs_ret.mean()), "BR (single)": float(single_ret.mean()),
               "cluster BR, random pick": float(fixed.mean()),
               "selection upper bound": float(fixed.max(0).mean())}  # fmt: skip
        if name == "training pool":
            row["identification accuracy"] = float((picked == label[None, None, :]).mean())
        summary[name] = row
    print("\n" + json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
