"""Evaluation partners kept out of training, by construction.

A ZSC score is only meaningful when the ego never trained with the partners it is scored with
(ZSC-Eval Sec. 4: the evaluation partners are held out; HSP, Yu et al. 2023, trains with biased
agents drawn from the same space of hidden utilities, so the overlap has to be excluded, not hoped
away). Two guards follow from a partner set's manifest, whose partners record their candidate run
(:class:`~zsceval.evaluation.manifest.CandidateRecord`: reward weights, seed, suite, layout and the
partner's parameter digest):

* :func:`training_guard`: every training job of a layout refuses to load a checkpoint that holds an
  evaluation partner of that layout (by the partner's parameters, so a re-saved copy is caught too,
  or by the exported ``meta.json``'s SHA-256), naming the checkpoint and the partner
  (:func:`zsceval.rl.checkpoint.refusing`). The evaluation partners are the ``test`` splits of every
  listed set of the layout, every version, and any manifest the job names. A set that is not
  downloaded is read from the copy of its manifest that the package installs; an installed
  acting-only copy adds its checkpoints' own digests (its ``meta.json`` and the actor's parameters).
* :func:`excluded_weights` and :data:`OWN_CANDIDATE_SEED`: candidates an algorithm trains for itself
  (HSP's biased agents when no bench gives it candidates) draw their reward weights from the grid
  without any evaluation partner's weight vector, and their seeds from a stream that no bench uses,
  so they share no (weights, seed) with an evaluation partner.

A bench that generates its own partners excludes them by candidate id (HSP's ``select_biased``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zsceval.envs.scenarios import resolve_scenario
from zsceval.rl.checkpoint import agent_fingerprint, load_checkpoint, policy_weights, refusing

from .manifest import ManifestError, PartnerSetManifest, load_manifest

__all__ = [
    "OWN_CANDIDATE_SEED",
    "EvaluationPartner",
    "evaluation_partners",
    "excluded_weights",
    "partner_fingerprint",
    "training_guard",
]

OWN_CANDIDATE_SEED = 1_000_000
"""First training seed of the candidates an algorithm trains for itself (HSP alone or beside a
shipped set): candidate ``i`` trains with seed ``OWN_CANDIDATE_SEED + i``. A bench's seeds are its
suite seed plus offsets below 1,000 (candidates ``+ i``, mid BRs ``+ 500``, set BRs ``+ 600``, egos
``+ 1000 + s``), so the two streams do not meet for suite seeds below 990,000."""

RULE = "no evaluation partner, its checkpoints or a copy of them may enter training"


@dataclass(frozen=True)
class EvaluationPartner:
    """One evaluation partner as training must avoid it.

    Attributes:
        source: the set it belongs to (a set's full name, or a manifest path).
        partner_id: its id in that set (``c004_mid``).
        policy_sha256: :func:`~zsceval.rl.checkpoint.agent_fingerprint` of its parameters.
        checkpoint_sha256: SHA-256 of its exported ``meta.json``.
        weights: its candidate's reward weight vector (None when the manifest predates the record).
        seed: its candidate's training seed (likewise).
        other_sha256: further digests of copies of it (an acting-only copy's ``meta.json`` and
            parameters, the full export's ``meta.json``).
    """

    source: str
    partner_id: str
    policy_sha256: str
    checkpoint_sha256: str
    weights: tuple[float, ...] | None
    seed: int | None
    other_sha256: tuple[str, ...] = ()

    def describe(self) -> str:
        """``evaluation partner <id> of <set>``."""
        return f"evaluation partner {self.partner_id} of {self.source}"


def partner_fingerprint(manifest: PartnerSetManifest, partner_id: str) -> str:
    """The parameter digest of one partner: its manifest's record, else computed from its checkpoint.

    Raises:
        KeyError: no partner of that id.
        CheckpointError: its checkpoint cannot be read.
    """
    p = next(p for p in manifest.partners if p.id == partner_id)
    if p.candidate is not None:
        return p.candidate.policy_sha256
    return _checkpoint_fingerprint(str(manifest.resolve(p.checkpoint)))


@functools.lru_cache(maxsize=512)
def _checkpoint_fingerprint(meta_path: str) -> str:
    _, meta, weights, _ = load_checkpoint(meta_path, guarded=False)
    return agent_fingerprint(policy_weights(weights, meta.get("ego") or next(iter(meta.get("agents", {})))))


def _from_manifest(manifest: PartnerSetManifest, source: str) -> list[EvaluationPartner]:
    out = []
    for p in manifest.partners:
        c = p.candidate
        other = ()
        if p.br.checkpoint is None and c is not None and manifest.resolve(p.checkpoint).is_file():
            other = (_checkpoint_fingerprint(str(manifest.resolve(p.checkpoint))),)  # acting-only copy
        out.append(
            EvaluationPartner(
                source=source,
                partner_id=p.id,
                policy_sha256=partner_fingerprint(manifest, p.id),
                checkpoint_sha256=p.checkpoint.sha256,
                weights=None if c is None else c.weights,
                seed=None if c is None else c.seed,
                other_sha256=other,
            )
        )
    return out


def _merge(first: list[EvaluationPartner], second: list[EvaluationPartner]) -> list[EvaluationPartner]:
    """The partners of two manifests of one set (its folder's and the installed copy of its full
    manifest), one record per partner with the other's digests added."""
    extra = {p.partner_id: p for p in second}
    out = []
    for p in first:
        q = extra.pop(p.partner_id, None)
        if q is not None:
            digests = (*p.other_sha256, q.policy_sha256, q.checkpoint_sha256, *q.other_sha256)
            mine = {p.policy_sha256, p.checkpoint_sha256}
            p = dataclasses.replace(p, other_sha256=tuple(dict.fromkeys(d for d in digests if d not in mine)))
        out.append(p)
    return out + list(extra.values())


def evaluation_partners(layout: str, manifests: Sequence[str | Path] = ()) -> list[EvaluationPartner]:
    """The evaluation partners of ``layout``: the ``test`` split of every installed partner set of
    that layout (every collection, every version), then the partners of each given manifest.

    Args:
        layout: layout name or alias.
        manifests: further partner-set manifests (a bench's own set).

    Raises:
        ManifestError: an installed or given manifest cannot be read.
    """
    from .shipped_sets import list_sets

    try:
        lay = resolve_scenario(layout)
    except ValueError:  # an unknown name: no set is for it (the caller reports the name itself)
        lay = layout
    out: list[EvaluationPartner] = []
    for entry in list_sets():
        if entry.split == "test" and entry.layout == lay:
            found = [m for m in (entry.manifest, entry.manifest_copy) if m is not None and m.is_file()]
            if not found:
                raise ManifestError(
                    f"partner set {entry.full_name}: neither {entry.manifest} nor a copy of its "
                    "manifest is installed; training cannot exclude its partners"
                )
            records = [_from_manifest(load_manifest(m, verify=False), entry.full_name) for m in found]
            out += records[0] if len(records) == 1 else _merge(*records)
    for path in manifests:
        out += _from_manifest(load_manifest(path, layout=lay, verify=False), str(path))
    return out


def excluded_weights(partners: Sequence[EvaluationPartner]) -> np.ndarray:
    """The distinct candidate weight vectors of ``partners`` (``float32 [N, E + 1]``; ``[0, 0]``
    when none records its weights)."""
    rows = sorted({p.weights for p in partners if p.weights is not None})
    if not rows:
        return np.zeros((0, 0), dtype=np.float32)
    return np.asarray(rows, dtype=np.float32)


@contextlib.contextmanager
def training_guard(layout: str, manifests: Sequence[str | Path] = ()) -> Iterator[list[EvaluationPartner]]:
    """Inside the block, every checkpoint load refuses the evaluation partners of ``layout``
    (:func:`evaluation_partners`) with :class:`~zsceval.rl.checkpoint.RefusedCheckpointError`
    naming the checkpoint and the partner. Yields the partners it holds.

    Raises:
        ManifestError: as :func:`evaluation_partners`.
    """
    partners = evaluation_partners(layout, manifests)
    digests = {}
    for p in partners:
        for digest in (p.policy_sha256, p.checkpoint_sha256, *p.other_sha256):
            digests.setdefault(digest, p.describe())
    with refusing(digests, RULE):
        yield partners
