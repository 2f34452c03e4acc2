"""Exporting one agent of a training checkpoint into a partner set, and the record of the run it
came from (:class:`~zsceval.evaluation.manifest.CandidateRecord`)."""

from __future__ import annotations

from pathlib import Path

from zsceval.envs.scenarios import resolve_scenario
from zsceval.evaluation.manifest import CandidateRecord
from zsceval.rl.checkpoint import (
    agent_fingerprint,
    load_checkpoint,
    load_policy,
    policy_weights,
    save_checkpoint,
)

__all__ = ["candidate_record", "export_agent"]


def candidate_record(
    layout: str, evaluate: dict, exported_meta: Path, suite: str | None = None
) -> CandidateRecord | None:
    """The manifest's record of the run an exported partner comes from: the weights of its
    ``candidate.evaluate`` result, the training seed and parameter digest of the exported checkpoint
    (None when the result holds no weights: an older job)."""
    if evaluate.get("weights") is None:
        return None
    _, meta, weights, _ = load_checkpoint(exported_meta, guarded=False)
    return CandidateRecord(
        weights=tuple(float(x) for x in evaluate["weights"]),
        seed=int(meta.get("seed", 0)),
        suite=suite,
        layout=resolve_scenario(layout),
        policy_sha256=agent_fingerprint(policy_weights(weights, meta["ego"])),
    )


def export_agent(policy_dir: Path, ckpt: Path, name: str, device: str) -> Path:
    """Copy one agent of a checkpoint into its own compact checkpoint (a partner set's export).

    Args:
        policy_dir: the folder of the new checkpoint.
        ckpt: the source checkpoint (run, checkpoint folder or meta.json).
        name: the agent to copy (``biased``, ``br``).
        device: torch device it is loaded on.

    Returns:
        the new checkpoint's ``meta.json``.

    Raises:
        CheckpointError: the source cannot be read or holds no such agent.
    """
    policy, meta = load_policy(ckpt, name, device)
    keep = {k: meta[k] for k in ("algo", "layout", "env_spec", "seed") if k in meta}
    path = save_checkpoint(policy_dir, int(meta.get("steps", 0)), {name: policy}, {**keep, "ego": name})
    return path / "meta.json"
