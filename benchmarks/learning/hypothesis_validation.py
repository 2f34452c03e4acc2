"""When the hypothesis agent validates a hypothesis, in finished TBS chains (Hypothetical Minds'
Rescorla-Wagner loop over a chain's cluster ToM models and best responses).

For each chain, the chain's ``hypothesis`` agent plays one greedy episode with every pair of the
training and the held-out pool in both seats (the games of ``tbs_selection.py``, the chain's env
and evaluation horizon) and the script records at each step whether a validated hypothesis acts
(``V >= v_thr``). It prints per pool:

- the distribution of the **steps to validation**: the first step t at which a validated hypothesis
  acts (quartiles and mean over the games that validate one) and the share of games that never do;
- the share of steps with a validated hypothesis;
- on the training pool, where each pair's cluster is known, the share of validated steps whose
  hypothesis is the partner's own cluster;
- the share of steps on which each hypothesis's BR acts, over all steps and over the steps with
  none validated (the fallback's choices);
- each hypothesis' mean Rescorla-Wagner value over the steps, and on the steps where one hypothesis
  alone holds the highest value (what the ``highest`` fallback follows) the share of each; the
  share of tied steps;
- the mean team sparse return.

With several chains of one layout it also prints the pooled distribution of the steps to validation
per pool (every game of every chain), and ``--figure F`` draws, per layout and pool, the share of
games validated by step t (an empirical CDF; the curve ends below 1 by the share that never
validates), pooled and per chain.

    python benchmarks/learning/hypothesis_validation.py CHAIN [CHAIN ...] [--json F] [--figure F.png]

A chain whose ego checkpoint predates the hypothesis agent has none; the script says so and skips it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

from zsceval.io import atomic_path, atomic_write_text
from zsceval.rl.checkpoint import CheckpointError, load_agent

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the chain loader and games of tbs_selection.py
import tbs_selection  # noqa: E402


def steps_to_validation(validated: np.ndarray) -> np.ndarray:
    """The first step at which each game has a validated hypothesis acting.

    Args:
        validated: ``bool [T, ...]``, step first.

    Returns:
        ``int64 [...]``: the step index, -1 where no step is validated.

    Example: ``validated[:, 0] = [F, F, T, T]`` gives 2; all False gives -1.
    """
    validated = np.asarray(validated, dtype=bool)
    first = validated.argmax(axis=0)
    return np.where(validated.any(axis=0), first, -1).astype(np.int64)


def choice_shares(choice: np.ndarray, k: int, mask: np.ndarray | None = None) -> list[float] | None:
    """Share of the (masked) steps on which each of the k hypotheses acts; None with no step.

    Example: ``choice = [0, 0, 1, 2]``, k = 3 gives ``[0.5, 0.25, 0.25]``; with ``mask = [T, T, F, F]``
    it gives ``[1.0, 0.0, 0.0]``.
    """
    picked = np.asarray(choice).reshape(-1)
    if mask is not None:
        picked = picked[np.asarray(mask, dtype=bool).reshape(-1)]
    if picked.size == 0:
        return None
    return (np.bincount(picked, minlength=k)[:k] / picked.size).tolist()


def value_summary(values: np.ndarray) -> dict[str, Any]:
    """Each hypothesis' mean value, and which one holds the highest value where one does alone.

    The agent keeps its current hypothesis on a tie (at an episode's start every value is 0 until a
    prediction is scored), so tied steps are counted apart, not given to one hypothesis.

    Args:
        values: ``float [T, ..., k]`` values after each step's update.

    Returns:
        ``mean_value`` (k floats), ``highest_share`` (k floats: of the steps with a unique maximum,
        the share on which each hypothesis holds it) and ``tied_share`` (the share of steps whose
        maximum is shared).

    Example: values ``[[0.5, 0.1], [0.2, 0.2], [0.0, 0.3]]`` (three steps, k = 2) give means
    ``[0.233, 0.2]``, highest shares ``[0.5, 0.5]`` and a tied share of 1/3.
    """
    v = np.asarray(values, dtype=np.float64)
    k = v.shape[-1]
    flat = v.reshape(-1, k)
    unique = (flat == flat.max(-1, keepdims=True)).sum(-1) == 1
    top = np.bincount(flat[unique].argmax(-1), minlength=k) / max(int(unique.sum()), 1)
    return {"mean_value": flat.mean(0).tolist(), "highest_share": top.tolist(),
            "tied_share": float(1.0 - unique.mean())}  # fmt: skip


def quartiles(first) -> dict[str, float] | None:
    """``q25, median, q75, mean`` of the steps to validation of the games that validate (``first >= 0``),
    None if none does.

    Example: ``first = [2, -1, 0, 4]`` gives q25 1, median 2, q75 3, mean 2.
    """
    hit = np.asarray(first).reshape(-1)
    hit = hit[hit >= 0]
    if hit.size == 0:
        return None
    q25, med, q75 = np.percentile(hit, [25, 50, 75])
    return {"q25": float(q25), "median": float(med), "q75": float(q75), "mean": float(hit.mean())}


def pooled(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The steps to validation of every game, pooled per (layout, pool) over the chains given.

    Args:
        results: :func:`analyse`'s records; each pool's ``first_steps`` (one int per game, -1 if the
            game never validates).

    Returns:
        One record per (layout, pool), layouts sorted: ``layout, pool, chains, games,
        never_validated`` (share) and ``steps_to_validation`` (:func:`quartiles`).
    """
    out = []
    for layout in sorted({r["layout"] for r in results}):
        runs = [r for r in results if r["layout"] == layout]
        for pool in ("training", "held-out"):
            first = np.concatenate([np.asarray(r[pool]["first_steps"], dtype=np.int64) for r in runs])
            out.append({"layout": layout, "pool": pool, "chains": [r["chain"] for r in runs],
                        "games": int(first.size), "never_validated": float((first < 0).mean()),
                        "steps_to_validation": quartiles(first)})  # fmt: skip
    return out


def validated_by(first, horizon: int) -> np.ndarray:
    """Share of games whose first validated step is <= t, for t = 0 .. horizon - 1.

    Example: ``first = [2, -1, 0, 4]``, horizon 5 gives ``[0.25, 0.25, 0.5, 0.5, 0.75]``.
    """
    first = np.asarray(first).reshape(-1)
    t = np.arange(horizon)
    return ((first[None, :] >= 0) & (first[None, :] <= t[:, None])).mean(axis=1)


def figure(results: list[dict[str, Any]], path: Path) -> None:
    """Per layout (rows) and pool (columns): the share of games validated by step t, pooled (thick)
    and per chain (thin), written atomically as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    layouts = sorted({r["layout"] for r in results})
    fig, axes = plt.subplots(len(layouts), 2, figsize=(9, 3 * len(layouts)), squeeze=False, sharey=True)
    for row, layout in zip(axes, layouts):
        runs = [r for r in results if r["layout"] == layout]
        for ax, pool in zip(row, ("training", "held-out")):
            horizon = max(int(r[pool]["horizon"]) for r in runs)
            t = np.arange(horizon)
            for r in runs:
                ax.plot(t, validated_by(r[pool]["first_steps"], horizon), lw=0.8, alpha=0.5,
                        label=Path(r["chain"]).name)  # fmt: skip
            every = np.concatenate([np.asarray(r[pool]["first_steps"]) for r in runs])
            ax.plot(t, validated_by(every, horizon), lw=2.2, color="k", label=f"pooled ({every.size} games)")
            ax.set_title(f"{layout}, {pool} pool")
            ax.set_xlabel("step t")
            ax.set_xscale("symlog", linthresh=10)
            ax.set_ylim(0, 1)
            ax.grid(alpha=0.3)
        row[0].set_ylabel("games validated by t")
        row[1].legend(fontsize=7, loc="lower right")
    fig.suptitle("Hypothesis agent: steps to the first validated hypothesis (V >= V_thr)")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)


def summary(validated: np.ndarray, choice: np.ndarray, returns: np.ndarray,
            labels: np.ndarray | None = None, k: int | None = None) -> dict[str, Any]:  # fmt: skip
    """The numbers printed for one pool (module docstring).

    Args:
        validated: ``bool [T, 2, N]``; choice: ``int64 [T, 2, N]`` (the acting hypothesis);
        returns: ``float [2, N]``; labels: ``int64 [N]``, each pair's cluster (training pool), or None;
        k: the number of hypotheses (default: the largest choice + 1).

    Returns:
        ``games, never_validated`` (share), ``steps_to_validation`` (``q25, median, q75, mean`` over
        the games that validate, None if none does), ``validated_share`` (of all steps),
        ``own_cluster_share`` (of validated steps; None without labels or validated steps),
        ``choice_share`` and ``fallback_choice_share`` (:func:`choice_shares` over all steps and over
        the steps with none validated), ``mean_return``, ``first_steps`` (each game's step to
        validation, -1 if never; games ordered seat-major) and ``horizon`` (T).
    """
    k = int(np.max(choice)) + 1 if k is None else k
    validated = np.asarray(validated, dtype=bool)
    first = steps_to_validation(validated).reshape(-1)
    out: dict[str, Any] = {"games": int(first.size), "never_validated": float((first < 0).mean()),
                           "steps_to_validation": quartiles(first),
                           "validated_share": float(validated.mean()),
                           "own_cluster_share": None, "mean_return": float(np.mean(returns)),
                           "choice_share": choice_shares(choice, k),
                           "fallback_choice_share": choice_shares(choice, k, ~validated),
                           "first_steps": first.tolist(), "horizon": int(validated.shape[0])}  # fmt: skip
    if labels is not None and validated.any():
        own = choice == np.asarray(labels)[None, None, :]
        out["own_cluster_share"] = float(own[validated].mean())
    return out


def analyse(sel, folder: str) -> dict[str, Any] | None:
    """One chain's numbers (printed); None if its ego has no hypothesis agent."""
    chain = sel.load_chain(folder)
    try:
        hyp = load_agent(Path(folder) / "ego" / "run", "hypothesis", "cpu")[0].eval()
    except CheckpointError as exc:
        print(f"{folder}: skipped ({exc})")
        return None
    out = {"chain": str(folder), "layout": chain.layout, "k": chain.k, "clusters": chain.clusters,
           "v_thr": float(hyp.v_thr), "alpha": float(hyp.alpha)}  # fmt: skip
    print(
        f"\n=== {folder} ({chain.layout}, k = {chain.k}, alpha {hyp.alpha}, V_thr {hyp.v_thr}, "
        f"horizon {chain.horizon or 'the layout'})"
    )
    for pool in ("training", "held-out"):
        ep = sel.play(chain, hyp, pool, horizon=chain.horizon)
        labels = chain.labels if pool == "training" else None
        s = summary(ep.validated, ep.choice, ep.returns, labels, k=chain.k)
        if ep.values is not None:
            s.update(value_summary(ep.values))
        out[pool] = s
        q = s["steps_to_validation"]
        steps = "none validates" if q is None else (
            f"q25 {q['q25']:.0f}, median {q['median']:.0f}, q75 {q['q75']:.0f}, mean {q['mean']:.1f}"
        )  # fmt: skip
        share = s["own_cluster_share"]
        own = "" if share is None else f"; partner's own cluster on {share:.0%}"
        print(
            f"{pool:9s} ({s['games']} games): steps to validation {steps}; "
            f"never {s['never_validated']:.0%}; validated on {s['validated_share']:.0%} of steps{own}; "
            f"mean return {s['mean_return']:.1f}"
        )
        shares = lambda v: "none" if v is None else " ".join(f"{x:.2f}" for x in v)  # noqa: E731
        print(
            f"{'':9s} BR share per hypothesis: all steps [{shares(s['choice_share'])}], "
            f"steps with none validated [{shares(s['fallback_choice_share'])}]"
        )
        if "mean_value" in s:
            print(
                f"{'':9s} value per hypothesis: mean [{shares(s['mean_value'])}], highest alone on "
                f"[{shares(s['highest_share'])}] of the untied steps ({s['tied_share']:.0%} tied)"
            )
    return out


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("chains", nargs="+", help="--out folders of `zsceval train --algo tbs`")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers to this file")
    parser.add_argument("--figure", type=Path, default=None,
                        help="also draw the share of games validated by step t (PNG)")  # fmt: skip
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    sel = tbs_selection
    results = [r for r in (analyse(sel, c) for c in args.chains) if r is not None]
    pools = pooled(results)
    if any(len(p["chains"]) > 1 for p in pools):
        print("\n=== pooled over the chains of each layout")
        for p in (p for p in pools if len(p["chains"]) > 1):
            q = p["steps_to_validation"]
            steps = "none validates" if q is None else (
                f"q25 {q['q25']:.0f}, median {q['median']:.0f}, q75 {q['q75']:.0f}, mean {q['mean']:.1f}"
            )  # fmt: skip
            print(f"{p['layout']} {p['pool']:9s} ({len(p['chains'])} chains, {p['games']} games): "
                  f"steps to validation {steps}; never {p['never_validated']:.0%}")  # fmt: skip
    if args.json:
        atomic_write_text(args.json, json.dumps({"chains": results, "pooled": pools}, indent=1))
    if args.figure and results:
        figure(results, args.figure)
    return results


if __name__ == "__main__":
    main()
