"""Diagnostics of TBS's online selection in finished TBS chains (TBS paper, Sec. 3.3, Eq. 8).

Reads the ``--out`` folder of ``zsceval train --algo tbs`` (the pools, the clustering, the best
responses and the TBS agent with its ToM models) and plays, for the training pool (whose clusters
are known) and the held-out pool, every pair in both seats, one greedy episode of:

- each cluster best response BR_j **forced** to act for the whole episode, and the single BR;
- the TBS agent (its own Eq. 8 selection acting).

In every episode the TBS agent's ToM models run on the ego's observations, as they would inside the
agent, giving at each step t the distances ``D_i(t) = sum_{t' <= t} sum_m KL(Bern(c^i_t'[m]) ||
Bern(c^g_t'[m]))`` of Eq. 8 (over the agent's window when it has one, Eq. 9) between cluster model i
and the global model, and ``argmin_i D_i(t)``: the best response TBS would pick. Step shares count
the steps t >= 1 (at t = 0 TBS picks at random). Printed per chain:

1. **Returns**: per (pair, seat) the return of each forced BR, the single BR and TBS, TBS's share of
   steps with each BR and its number of switches; per pool the mean return of TBS, of the single BR,
   of a uniformly picked cluster BR, and the **selection upper bound** (the best cluster BR per pair
   and seat).
2. **Confusion on held-out pairs**: rows j = the forced BR, columns i = ``argmin_i D_i``; as the
   share of steps (each row sums to 1) and as counts of episodes by the arg-min at the last step
   (each row sums to 2 x held-out pairs). The held-out partners belong to no cluster, so a diagonal
   matrix says that the selection follows the ego's own behaviour (which the ToM models see in the
   ego's observations) rather than the partner's.
3. **Entropy and selection**: per cluster model i its mean predictive entropy (nats per step,
   summed over the M Bernoulli concepts) and how often i is selected, on held-out pairs: with TBS
   acting (its share of steps with BR i) and over the forced episodes (the share of steps with
   ``argmin D = i``); Pearson's r and Spearman's rho across the k models (k points: with k = 2 they
   are +-1, with k = 1 undefined); and the global model's entropy on the same steps (Eq. 8's D_i
   is each cluster model's KL to it).
4. **Identification accuracy on training pairs**: the share of steps at which the selection names the
   partner's own cluster, with TBS acting and with each BR forced (mean over the k forced BRs), per
   cluster and overall. Given several chains (e.g. trained with ``--set algo.fixed_k=2``, ``=3``, ...)
   a last table lists the accuracy for each chain's k.

Usage (from the repository root)::

    python benchmarks/learning/tbs_selection.py runs/tbs_cr10
    python benchmarks/learning/tbs_selection.py runs/tbs_k2 runs/tbs_k3 runs/tbs_k4 --json sel.json

The partial variant (``--set algo.partial=true``) is read from the ego's checkpoint (its env spec's
``view_radius``): every episode here plays the chain's view.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from zsceval.algorithms.tbs.jobs import _horizon, read_clusters
from zsceval.algorithms.tbs.pool import GreedyPool, load_pool_agents
from zsceval.algorithms.tbs.selection import accumulate_distances, cluster_distances
from zsceval.envs.overcooked import OvercookedEnv
from zsceval.rl.checkpoint import load_agent
from zsceval.rl.population.pool import PolicyPool


# -- the chain ----------------------------------------------------------------------------------------
@dataclass
class Chain:
    """A finished TBS chain (the ``--out`` folder of ``zsceval train --algo tbs``)."""

    folder: Path
    layout: str
    view_radius: int
    """0: fully observable."""
    clusters: list[list[int]]
    """Training-pool pair indices per cluster."""
    clustering: dict[str, Any]
    """``clustering.json`` of the ``tbs.cluster`` job (``k``, ``costs``, the options used)."""
    brs: list[Any]
    single: Any
    tbs: Any
    pools: dict[str, tuple[list[Any], list[Any]]] = field(default_factory=dict)
    """``{"training": (agent 1s, agent 2s), "held-out": ...}``."""
    horizon: int | None = None
    """The episode length its ``tbs.evaluate`` job played (its ``horizon`` param, set where the chain
    ran with ``env.horizon``); None: the layout's."""

    @property
    def k(self) -> int:
        """Number of clusters."""
        return len(self.clusters)

    @property
    def labels(self) -> np.ndarray:
        """``int64 [N]``: the cluster of each training pair."""
        label = np.zeros(sum(len(c) for c in self.clusters), dtype=np.int64)
        for j, members in enumerate(self.clusters):
            label[members] = j
        return label


def _one(base: Path, pattern: str) -> Path:
    found = sorted(p for p in base.glob(pattern) if p.is_dir())
    if len(found) != 1:
        names = ", ".join(p.name for p in found) or "none"
        raise SystemExit(f"{base}: expected one stage folder {pattern!r}, found {names}")
    return found[0]


def load_chain(folder: str | Path) -> Chain:
    """Load a finished TBS chain.

    Raises:
        SystemExit: not a TBS chain folder, or a stage folder missing or ambiguous (the message names it).
    """
    folder = Path(folder)
    try:
        params = json.loads((folder / "chain.json").read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"{folder} is not the --out folder of a chain (chain.json: {exc})") from None
    if params.get("algo") != "tbs":
        raise SystemExit(f"{folder} holds a {params.get('algo')!r} chain, not tbs")
    layout = params["layout"]
    ego_run = folder / "ego" / "run"
    if not (folder / "ego" / "DONE.json").is_file():
        raise SystemExit(f"{folder}: the ego job has not finished (no ego/DONE.json); resume the chain")
    tbs, meta = load_agent(ego_run, "tbs", "cpu")
    radius = int(meta.get("env_spec", {}).get("view_radius", 0))
    base = folder / layout / (f"tbs_partial{radius}" if radius else "tbs")
    cluster_dir = _one(base, "cluster_*")
    clusters = read_clusters(cluster_dir)
    if meta.get("clusters") not in (None, clusters):
        raise SystemExit(f"{folder}: the ego's clusters {meta['clusters']} differ from {cluster_dir}")
    brs_run = _one(base, "brs_*") / "run"
    brs = [load_agent(brs_run, f"br_{j}", "cpu")[0].eval() for j in range(len(clusters))]
    single = load_agent(brs_run, "br_all", "cpu")[0].eval()
    chain = Chain(folder, layout, radius, clusters, json.loads((cluster_dir / "clustering.json").read_text()),
                  brs, single, tbs.eval())  # fmt: skip
    chain.pools["training"] = load_pool_agents(_one(base, "pool_*") / "run")
    chain.pools["held-out"] = load_pool_agents(_one(base, "heldout_*") / "run")
    done = folder / "ego" / "tbs_eval" / "DONE.json"
    if done.is_file():
        chain.horizon = _horizon(json.loads(done.read_text())["job"]["params"])
    return chain


# -- one episode per (pair, seat), with the selection tracked ----------------------------------------
@dataclass
class Episodes:
    """One greedy episode of an ego with every pair of a pool, both seats (seat s: the ego in seat s,
    its partner the pair's other agent)."""

    returns: np.ndarray
    """``float [2, N]`` team sparse return."""
    argmin: np.ndarray
    """``int64 [T, 2, N]``: ``argmin_i D_i(t)`` of the TBS agent's ToM models (first index on ties)."""
    entropy: np.ndarray
    """``float [k + 1, 2, N]``: each cluster model's predictive entropy (nats, summed over concepts),
    mean over the episode's steps; row k is the global model's."""
    choice: np.ndarray | None = None
    """``int64 [T, 2, N]``: the acting BR of a composite ego (``extras["choice"]``), else None."""
    validated: np.ndarray | None = None
    """``bool [T, 2, N]``: a validated hypothesis acts (the hypothesis agent's ``extras["validated"]``),
    else None."""
    values: np.ndarray | None = None
    """``float [T, 2, N, k]``: each hypothesis' Rescorla-Wagner value after step t's update (the
    hypothesis agent's ``extras["values"]``), else None."""


def bernoulli_entropy(p: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Elementwise ``H(Bern(p)) = -p log p - (1 - p) log(1 - p)`` in nats (``p`` clamped to
    ``[eps, 1 - eps]``)."""
    p = p.float().clamp(eps, 1 - eps)
    return -(p * p.log() + (1 - p) * (1 - p).log())


@torch.no_grad()
def play(chain: Chain, ego, pool: str, *, seed: int = 0, horizon: int | None = None) -> Episodes:
    """One greedy episode of ``ego`` with every pair of ``chain.pools[pool]``, both seats, in the
    chain's env (its view radius), tracking ``D_i`` of Eq. 8 with the chain's TBS agent's models.

    Args:
        horizon: episode length (None: the layout's; :func:`analyse` passes the chain's evaluation's).
    """
    firsts, seconds = chain.pools[pool]
    tbs, k, N = chain.tbs, chain.k, len(firsts)
    B = 2 * N
    env = OvercookedEnv(chain.layout, num_envs=B, device="cpu", seed=seed, view_radius=chain.view_radius,
                        horizon=horizon)  # fmt: skip
    step = env.reset()
    rows = torch.arange(B)
    seat = rows // N  # game g: pair g % N, the ego in seat g // N
    member = torch.where(seat == 0, N + rows % N, rows % N)  # the partner: agent 2 or agent 1
    partners = GreedyPool(PolicyPool.from_policies([*firsts, *seconds]))
    ego_h, partner_h = ego.initial_state(B, "cpu"), partners.initial_state(B, "cpu")
    models = [*tbs.toms, tbs.global_tom]
    tom_h = [m.initial_state(B, "cpu") for m in models]
    total = torch.zeros(B, k)
    ring = torch.zeros(B, tbs.window or 0, k)
    starts = torch.ones(B, dtype=torch.bool)
    gen = torch.Generator().manual_seed(seed)
    returns = torch.zeros(B)
    argmins, entropy, choices, validated, values = [], torch.zeros(B, k + 1), [], [], []
    for t in range(env.horizon):
        obs = step.obs[rows, seat]
        probs = []
        for i, model in enumerate(models):
            p, tom_h[i] = model.step(obs, tom_h[i], starts)
            probs.append(p)
        c = torch.stack(probs[:k], 1)  # [B, k, M]
        d = cluster_distances(c, probs[k], tbs.kl_eps)
        total, ring, D = accumulate_distances(total, ring, d, torch.full((B,), t), tbs.window)
        argmins.append(D.argmin(-1))
        entropy += bernoulli_entropy(torch.stack(probs, 1)).sum(-1)  # k cluster models, then the global
        mine = ego.act(obs, step.avail_actions[rows, seat], ego_h, starts, gen, True)
        theirs = partners.act(step.obs[rows, 1 - seat], step.avail_actions[rows, 1 - seat], partner_h, starts,
                              member=member)  # fmt: skip
        ego_h, partner_h = mine.state, theirs.state
        if "choice" in mine.extras:
            choices.append(mine.extras["choice"].clone())
        if "validated" in mine.extras:
            validated.append(mine.extras["validated"].clone())
        if "values" in mine.extras:
            values.append(mine.extras["values"].clone())
        actions = torch.zeros(B, 2, dtype=torch.int64)
        actions[rows, seat], actions[rows, 1 - seat] = mine.actions, theirs.actions
        step = env.step(actions)
        returns += step.reward
        starts = torch.zeros(B, dtype=torch.bool)
    T = env.horizon
    picked = torch.stack(choices).view(T, 2, N).numpy() if choices else None
    valid = torch.stack(validated).view(T, 2, N).numpy() if validated else None
    vals = torch.stack(values).view(T, 2, N, -1).numpy() if values else None
    return Episodes(returns=returns.view(2, N).numpy(), argmin=torch.stack(argmins).view(T, 2, N).numpy(),
                    entropy=(entropy / T).T.reshape(k + 1, 2, N).numpy(), choice=picked,
                    validated=valid, values=vals)  # fmt: skip


# -- the statistics (pure functions of the recorded arrays) ------------------------------------------
def confusion(forced: list[np.ndarray], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Confusion of (forced BR j, ``argmin_i D_i``).

    Args:
        forced: per forced BR j, its episodes' ``argmin`` (``int [T, ...]``, step 0 first).
        k: number of clusters.

    Returns:
        ``(shares float [k, k], counts int64 [k, k])``: row j, column i; ``shares`` over the steps
        t >= 1 of all of j's episodes (rows sum to 1), ``counts`` of episodes by the arg-min at the
        last step.

    Raises:
        ValueError: ``len(forced) != k`` or an arg-min outside ``0 .. k-1``.
    """
    if len(forced) != k:
        raise ValueError(f"need the episodes of all k = {k} forced BRs, got {len(forced)}")
    shares, counts = np.zeros((k, k)), np.zeros((k, k), dtype=np.int64)
    for j, a in enumerate(forced):
        a = np.asarray(a)
        if a.min() < 0 or a.max() >= k:
            raise ValueError(f"arg-min outside 0..{k - 1}")
        shares[j] = np.bincount(a[1:].ravel(), minlength=k) / a[1:].size
        counts[j] = np.bincount(a[-1].ravel(), minlength=k)
    return shares, counts


def identification(selected: np.ndarray, labels: np.ndarray, k: int) -> tuple[float, np.ndarray]:
    """Share of steps t >= 1 at which the selection names the partner's own cluster.

    Args:
        selected: ``int [T, 2, N]`` the selected cluster per step, seat and training pair.
        labels: ``int [N]`` each training pair's cluster.
        k: number of clusters.

    Returns:
        ``(overall, per_cluster float [k])``: per cluster over its pairs' rows (NaN for an empty one).
    """
    hit = np.asarray(selected)[1:] == np.asarray(labels)[None, None, :]  # [T-1, 2, N]
    per = np.array([hit[..., labels == i].mean() if (labels == i).any() else np.nan for i in range(k)])
    return float(hit.mean()), per


def correlations(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Pearson's r and Spearman's rho (average ranks on ties) of two ``float [k]`` vectors; NaN when
    k < 2 or a vector is constant."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan"), float("nan")
    from scipy.stats import rankdata

    return float(np.corrcoef(x, y)[0, 1]), float(np.corrcoef(rankdata(x), rankdata(y))[0, 1])


# -- printing -------------------------------------------------------------------------------------------
def _matrix(title: str, m: np.ndarray, fmt: str) -> str:
    k = m.shape[0]
    lines = [title, "forced BR | " + " ".join(f"{f'argmin={i}':>9}" for i in range(k))]
    lines += [f"br_{j:<6d} | " + " ".join(f"{m[j, i]:{fmt}}" for i in range(k)) for j in range(k)]
    return "\n".join(lines)


def analyse(chain: Chain, *, seed: int = 0, horizon: int | None = None) -> dict[str, Any]:
    """Play the episodes of one chain (``horizon`` None: the chain's evaluation's), print its tables
    and return the numbers (JSON-able)."""
    horizon = chain.horizon if horizon is None else horizon
    k = chain.k
    print(f"\n=== {chain.folder}  ({chain.layout}, k = {k}: clusters {chain.clusters}, "
          f"{_rule(chain)}, view radius {chain.view_radius or 'full'})")  # fmt: skip
    out: dict[str, Any] = {"chain": str(chain.folder), "layout": chain.layout, "k": k,
                           "clusters": chain.clusters, "rule": _rule(chain),
                           "view_radius": chain.view_radius}  # fmt: skip
    episodes = {}
    for pool in ("training", "held-out"):
        forced = [play(chain, br, pool, seed=seed, horizon=horizon) for br in chain.brs]
        single = play(chain, chain.single, pool, seed=seed, horizon=horizon)
        tbs = play(chain, chain.tbs, pool, seed=seed, horizon=horizon)
        episodes[pool] = (forced, single, tbs)
        out[pool] = _returns_table(pool, chain, forced, single, tbs)
    forced, _, tbs = episodes["held-out"]
    shares, counts = confusion([e.argmin for e in forced], k)
    print(
        "\n"
        + _matrix("held-out pairs, BR j forced: share of steps t >= 1 with argmin_i D_i = i", shares, "9.2f")
    )
    print(
        "\n" + _matrix("held-out pairs, BR j forced: episodes by argmin_i D_i at the last step", counts, "9d")
    )
    out["held-out"]["confusion_steps"], out["held-out"]["confusion_end"] = shares.tolist(), counts.tolist()
    out["held-out"]["entropy"] = _entropy_table(k, forced, tbs)
    labels = chain.labels
    forced, _, tbs = episodes["training"]
    acting, acting_per = identification(tbs.choice, labels, k)
    tracked = [identification(e.argmin, labels, k) for e in forced]
    forced_acc = float(np.mean([a for a, _ in tracked]))
    forced_per = np.mean([p for _, p in tracked], axis=0)
    print("\nidentification accuracy on training pairs (share of steps t >= 1 naming the partner's cluster)")
    print("cluster | pairs | TBS acting | BR forced (mean over j)")
    for i in range(k):
        print(f"{i:7d} | {len(chain.clusters[i]):5d} | {acting_per[i]:10.3f} | {forced_per[i]:10.3f}")
    print(f"{'all':>7} | {len(labels):5d} | {acting:10.3f} | {forced_acc:10.3f}")
    agree = (tbs.choice[1:] == tbs.argmin[1:]).mean()
    print(f"(check: the tracked argmin_i D_i equals TBS's own choice at {agree:.1%} of its steps t >= 1)")
    out["training"]["identification"] = {"tbs_acting": acting, "tbs_acting_per_cluster": acting_per.tolist(),
                                         "forced": forced_acc, "forced_per_cluster": forced_per.tolist(),
                                         "forced_per_br": [a for a, _ in tracked]}  # fmt: skip
    out["tracker_agreement"] = float(agree)
    return out


def _rule(chain: Chain) -> str:
    c = chain.clustering
    if c.get("fixed_k"):
        return f"fixed k ({c.get('fixed_k_assign') or 'rotation'})"
    return f"k rule {c.get('k_rule') or 'not recorded (older chain: normalized)'}"


def _returns_table(pool: str, chain: Chain, forced: list[Episodes], single: Episodes, tbs: Episodes) -> dict:
    k, N = chain.k, single.returns.shape[1]
    fixed = np.stack([e.returns for e in forced])  # [k, 2, N]
    print(f"\n{pool} pool ({N} pairs): returns of each BR forced, the single BR and TBS")
    print(
        "pair seat | " + " ".join(f"br_{j:<3d}" for j in range(k)) + " br_all | TBS  share per BR (switches)"
    )
    for s in range(2):
        for i in range(N):
            share = np.bincount(tbs.choice[:, s, i], minlength=k) / tbs.choice.shape[0]
            switches = int((tbs.choice[1:, s, i] != tbs.choice[:-1, s, i]).sum())
            returns = " ".join(f"{fixed[j, s, i]:6.0f}" for j in range(k))
            print(f"{i:4d} {s:4d} | {returns} {single.returns[s, i]:6.0f} | "
                  f"{tbs.returns[s, i]:4.0f} {np.round(share, 2)} ({switches})")  # fmt: skip
    row = {"TBS": float(tbs.returns.mean()), "BR (single)": float(single.returns.mean()),
           "cluster BR, random pick": float(fixed.mean()),
           "selection upper bound": float(fixed.max(0).mean())}  # fmt: skip
    print("mean return: " + ", ".join(f"{name} {value:.1f}" for name, value in row.items()))
    return {"returns": row}


def _entropy_table(k: int, forced: list[Episodes], tbs: Episodes) -> dict:
    h_tbs_all = tbs.entropy.reshape(k + 1, -1).mean(1)
    h_forced_all = np.mean([e.entropy.reshape(k + 1, -1).mean(1) for e in forced], axis=0)
    h_tbs, h_forced = h_tbs_all[:k], h_forced_all[:k]
    sel_tbs = np.bincount(tbs.choice[1:].ravel(), minlength=k) / tbs.choice[1:].size
    sel_forced = np.bincount(np.concatenate([e.argmin[1:].ravel() for e in forced]), minlength=k)
    sel_forced = sel_forced / sel_forced.sum()
    print(
        "\nheld-out pairs: cluster ToM model i, its mean predictive entropy (nats/step) and selection share"
    )
    print("model | entropy (TBS acting) | selected (TBS acting) | entropy (forced) | argmin share (forced)")
    for i in range(k):
        print(f"{i:5d} | {h_tbs[i]:20.3f} | {sel_tbs[i]:21.3f} | {h_forced[i]:16.3f} | {sel_forced[i]:21.3f}")
    print(f"global | {h_tbs_all[k]:19.3f} | {'':21s} | {h_forced_all[k]:16.3f} |")
    r_tbs, rho_tbs = correlations(h_tbs, sel_tbs)
    r_forced, rho_forced = correlations(h_forced, sel_forced)
    note = "  (k = 2: +-1 by construction)" if k == 2 else ""
    print(f"entropy vs selection: TBS acting r = {r_tbs:.2f}, rho = {rho_tbs:.2f}; "
          f"forced r = {r_forced:.2f}, rho = {rho_forced:.2f}{note}")  # fmt: skip
    return {"entropy_tbs": h_tbs.tolist(), "selected_tbs": sel_tbs.tolist(),
            "entropy_forced": h_forced.tolist(), "selected_forced": sel_forced.tolist(),
            "entropy_global_tbs": float(h_tbs_all[k]), "entropy_global_forced": float(h_forced_all[k]),
            "pearson_tbs": r_tbs, "spearman_tbs": rho_tbs,
            "pearson_forced": r_forced, "spearman_forced": rho_forced}  # fmt: skip


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Command line (``--help``)."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Tables: returns per (pair, seat); the held-out confusion of (forced BR j, argmin_i D_i); "
        "entropy vs selection per cluster ToM model; identification accuracy on training pairs "
        "(per chain, and per k over several chains). See the module docstring for the definitions.",
    )
    parser.add_argument("chains", type=Path, nargs="+", help="--out folders of `zsceval train --algo tbs`")
    parser.add_argument("--layout", default=None,
                        help="the chains' layout (read from chain.json; if given, must match)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="seed of TBS's first random pick (default 0)")
    parser.add_argument("--horizon", type=int, default=None,
                        help="episode length (default: the chain's evaluation's)")  # fmt: skip
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers to this file")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    chains = [load_chain(c) for c in args.chains]
    wrong = [str(c.folder) for c in chains if args.layout not in (None, c.layout)]
    if wrong:
        raise SystemExit(f"--layout {args.layout} does not match the layout of {', '.join(wrong)}")
    results = [analyse(c, seed=args.seed, horizon=args.horizon) for c in chains]
    if len(results) > 1:
        print("\nidentification accuracy on training pairs by k")
        print("  k | TBS acting | BR forced | chain (clustering)")
        for r in sorted(results, key=lambda r: r["k"]):
            ident = r["training"]["identification"]
            print(f"{r['k']:3d} | {ident['tbs_acting']:10.3f} | {ident['forced']:9.3f} | "
                  f"{r['chain']} ({r['rule']})")  # fmt: skip
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
