"""A cluster ToM model of a finished TBS chain retrained with and without the prior bias.

Re-collects cluster J's ToM episodes exactly as the chain's ego job did (the same best response,
partners, exploration, episode count and seeds, read from ``ego/DONE.json``), then trains the
model on them as the ego job does (the same epochs, step size, holdout and minibatch order) twice
per ToM seed: once from PyTorch's default output bias (small, near zero; the chains before 2026-11-28) and
once with the bias at the labels' log-odds (``algo.tom_prior_bias``, :func:`~zsceval.algorithms.
tbs.tom.prior_logits`). For each it prints the last training loss, the best held-out loss, the
first epoch whose training loss is below 0.9 x the constant predictor's, and the spread of the
kept model's GRU state over all the steps of the episodes (0: a state that never changes, the
saturated GRU of a model that cannot learn).

    python benchmarks/learning/tbs_tom_init.py CHAIN --cluster 1
    python benchmarks/learning/tbs_tom_init.py CHAIN --cluster 1 --tom-seeds 0 1 --json out.json

``--tom-seeds`` are ``algo.tom_seed`` values (model j starts from ``seed x 1009 + j``; default the
chain's). About 6 minutes per training on one core for a 7-pair cluster of the quick preset.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import torch

from zsceval.algorithms.tbs.concepts import build_concept_set
from zsceval.algorithms.tbs.jobs import ToMTraining, _horizon, _tom_episodes
from zsceval.algorithms.tbs.tom import ToMModel

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the chain loader of tbs_selection.py
import tbs_selection  # noqa: E402


@torch.no_grad()
def state_spread(model: ToMModel, obs: torch.Tensor, starts: torch.Tensor) -> float:
    """Mean over GRU units of the state's standard deviation over all steps of ``obs``
    (``uint8 [T, B, *obs_shape]``)."""
    h, states = model.initial_state(obs.shape[1], "cpu"), []
    for t in range(obs.shape[0]):
        _, h = model.step(obs[t], h, starts[t])
        states.append(h)
    return float(torch.stack(states).reshape(-1, model.hidden_size).std(0).mean())


def main(argv: list[str] | None = None) -> list[dict]:
    """Run the comparison (module docstring) and return one row per (ToM seed, output bias):
    ``tom_seed, prior_bias, final_loss, best_heldout_loss, baseline`` (nats per step),
    ``first_below`` (epoch, or None) and ``state_spread``.

    Raises:
        SystemExit: not a finished chain (:func:`tbs_selection.load_chain`), or ``--cluster`` out of range.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chain", help="a finished chain's --out folder")
    parser.add_argument(
        "--cluster", type=int, required=True, help="the cluster J whose ToM model is retrained"
    )
    parser.add_argument("--tom-seeds", type=int, nargs="+", help="ToM seeds (default: the chain's)")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    chain = tbs_selection.load_chain(args.chain)
    folder = Path(args.chain)
    params = json.loads((folder / "ego" / "DONE.json").read_text())["job"]["params"]
    k, j = len(chain.clusters), args.cluster
    if not 0 <= j < k:
        raise SystemExit(f"--cluster takes 0..{k - 1} for this chain (k = {k}), got {j}")
    seed, chain_training = int(params["seed"]), ToMTraining.from_params(params)
    firsts, seconds = chain.pools["training"]
    concepts = build_concept_set(chain.layout, params.get("granularity", "fine"))
    members = chain.clusters[j]
    games = chain_training.games
    data = _tom_episodes(chain.layout, chain.brs[j], firsts, seconds, members, games * len(members),
                         seed + j, "cpu", concepts, chain.view_radius, chain_training.epsilon,
                         _horizon(params))  # fmt: skip
    # as the ego job: cluster j's passes among all the clusters' (episodes per cluster: games x pairs)
    passes = chain_training.cluster_passes([games * len(c) for c in chain.clusters])[j]
    mask = data.known & data.mask
    spec = chain_training.spec(data.obs, concepts, chain.layout)
    rows = []
    print(f"{folder} cluster {j} (pairs {members}): {data.obs.shape[1]} episodes, {passes} epochs")
    print(f"{'tom seed':>8} {'output bias':<12} {'final':>7} {'best held-out':>13} {'baseline':>8} "
          f"{'first < 0.9 b':>13} {'state spread':>12}")  # fmt: skip
    for tom_seed in args.tom_seeds or [chain_training.seed]:
        for prior in (False, True):
            training = dataclasses.replace(chain_training, seed=tom_seed, prior_bias=prior)
            model = training.new_model(spec, j)
            curve = training.train(model, data.obs, data.starts, data.labels, mask, passes)
            b = curve["baseline"][0]
            first = next((e + 1 for e, x in enumerate(curve["loss"]) if x < 0.9 * b), None)
            row = {"tom_seed": tom_seed, "prior_bias": prior, "final_loss": curve["loss"][-1],
                   "best_heldout_loss": min(curve["val_loss"]), "baseline": b, "first_below": first,
                   "state_spread": state_spread(model, data.obs, data.starts)}  # fmt: skip
            rows.append(row)
            print(f"{tom_seed:>8} {'log-odds' if prior else 'default':<12} {row['final_loss']:7.3f} "
                  f"{row['best_heldout_loss']:13.3f} {b:8.3f} {str(first or 'never'):>13} "
                  f"{row['state_spread']:12.3f}", flush=True)  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
