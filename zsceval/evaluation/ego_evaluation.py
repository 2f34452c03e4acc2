"""An ego agent against a partner set, as the bench's ``ego.evaluate`` job (ZSC-Eval Alg. 1, step 6).

:func:`load_partner_set` reads the partners and their BRs of a verified manifest
(:mod:`zsceval.evaluation.manifest`); :func:`ego_evaluate` plays the ego's scored checkpoint
(:mod:`zsceval.evaluation.ego_checkpoint`) with every partner in every seat and writes
``results.parquet`` rows in the schema of :mod:`zsceval.stats.metrics`. The set itself comes from
the partner pipeline (:mod:`zsceval.generation.pipeline`) or a shipped set
(:mod:`zsceval.evaluation.shipped_sets`).
"""

from __future__ import annotations

from pathlib import Path

import torch

from zsceval.execution.jobs import job_kind
from zsceval.rl.checkpoint import load_policy

from .ego_checkpoint import load_scored_ego
from .manifest import load_manifest
from .matches import PartnerSpec, evaluate_agent

__all__ = ["ego_evaluate", "load_partner_set"]


def load_partner_set(manifest_path: str | Path, layout: str, device: str = "cpu") -> list[PartnerSpec]:
    """Partners (with their BRs, where the set holds them) of a verified manifest.

    Raises:
        ManifestError: another layout, missing or altered files (before any compute).
    """
    manifest = load_manifest(manifest_path, layout=layout, verify=True)
    out = []
    for p in manifest.partners:
        policy, _ = load_policy(manifest.resolve(p.checkpoint), "biased", device)
        ref = p.br.checkpoint  # None in an acting-only copy (scores read the stored BR returns)
        br = None if ref is None else load_policy(manifest.resolve(ref), "br", device)[0]
        out.append(PartnerSpec(p.id, "expert" if p.level == "final" else "moderate", policy, br))
    return out


@job_kind("ego.evaluate")
def ego_evaluate(params: dict, out: Path, needs: dict) -> dict:
    """An ego agent vs the partner set (params: ``layout, algorithm, ego_seed, episodes, seed, device,
    ego`` (train-job id) or ``agent`` (an external ``module:attr``, :mod:`zsceval.rl.external`),
    ``partners`` (manifest-job id)); writes ``results.parquet``.

    The ego's scored checkpoint follows ZSC-Eval
    (:func:`~zsceval.evaluation.ego_checkpoint.scored_ego_checkpoint`), not simply its last one; the
    result's ``scored_checkpoint`` records which (step, training return, rule, fallback); None for an
    external agent."""
    device = params.get("device", "cpu")
    ego, scored = load_scored_ego(params, needs, device)
    partners = load_partner_set(Path(needs[params["partners"]]) / "manifest.json", params["layout"], device)
    gen = torch.Generator(device=device).manual_seed(int(params.get("seed", 0)))
    labels = {"algorithm": params["algorithm"], "ego_seed": int(params["ego_seed"])}
    frame = evaluate_agent(
        params["layout"],
        ego,
        partners,
        episodes=int(params["episodes"]),
        generator=gen,
        device=device,
        labels=labels,
    )
    frame.to_parquet(out / "results.parquet")
    return {
        "rows": len(frame),
        "mean_sparse_return": float(frame["sparse_return"].mean()),
        "scored_checkpoint": scored,
    }
