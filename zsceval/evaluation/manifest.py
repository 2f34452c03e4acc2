"""Partner-set manifests: the versioned record of a selected evaluation-partner set.

A manifest is what DPP selection writes and evaluation reads (design: "artifacts, not pasted
constants"; the reference copied selections by hand into a Python file). It is a UTF-8 JSON file::

    {
      "format": "zsceval-partner-set",
      "format_version": 1,
      "layout": "counter_circuit",
      "created_by": "zsceval 0.1.0",
      "seed": 0,
      "feature_names": ["put_onion_on_X", ..., "sparse_reward"],
      "selection": {"method": "k-dpp", "criterion": "BR-Div", "determinant": 12.5, "k": 10,
                    "num_samples": 1000000, "candidate_ids": ["hsp1", ...], "selected_ids": ["hsp3", ...]},
      "partners": [
        {"id": "hsp3_final", "candidate_id": "hsp3", "level": "final",
         "checkpoint": {"path": "partners/hsp3_final.pt", "sha256": "..."},
         "br": {"checkpoint": {"path": "brs/hsp3_final.pt", "sha256": "..."}, "return": 212.5},
         "features": [0.0, 3.2, ...],
         "candidate": {"weights": [0.0, ...], "seed": 3, "suite": "overcooked-s12",
                       "layout": "counter_circuit", "policy_sha256": "..."}},
        ...
      ],
      "tables": [{"path": "br_returns.parquet", "sha256": "..."}]
    }

Paths are relative to the manifest's folder (POSIX separators) so a partner set moves as one folder.
An acting-only copy of a set (:mod:`zsceval.evaluation.set_archives`) writes ``"br": {"checkpoint":
null, "return": 212.5}``: it keeps the BR returns that scores read, not the BRs.
``candidate_ids`` are all candidates in the row order of the selection kernel; ``selected_ids`` the chosen
ones. ``level`` is ``final`` or ``mid`` (ZSC-Eval Alg. 1 line 7); each partner carries its own BR
reference (checkpoint and BR return, the denominator of BR-Prox) and its BR's behavior ``features``
(in ``feature_names`` order). The optional ``candidate`` record says which training run the partner
comes from: the candidate's reward weight vector (the hidden utility, ZSC-Eval Eq. 1) and training
seed, the suite and layout of that run, and ``policy_sha256``, the partner's
:func:`~zsceval.rl.checkpoint.agent_fingerprint` (the same in the run's checkpoints and in this
export). Training jobs refuse every evaluation partner by it, and HSP's own candidates avoid its
(weights, seed) (:mod:`zsceval.evaluation.exclusion`). Files are written atomically (temp file +
``os.replace``).

Games of more than two players (Football) pair the ego with *combinations* of partners
(:mod:`zsceval.evaluation.combinations`); the BR reference of a combination is the BR of its set of
distinct partners. A single partner's set uses the partner's own ``br``; larger sets are listed in an
optional ``"combination_brs"`` array (absent for two-player layouts)::

      "combination_brs": [
        {"partners": ["c001_final", "c003_mid"],
         "checkpoint": {"path": "combination_brs/c001_final+c003_mid/...", "sha256": "..."},
         "return": 0.4}, ...]
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from zsceval import __version__
from zsceval.envs.scenarios import resolve_scenario
from zsceval.io import atomic_write_text
from zsceval.io import sha256_file as file_sha256

MANIFEST_FORMAT = "zsceval-partner-set"
MANIFEST_VERSION = 1
PARTNER_LEVELS_CHECKPOINT: tuple[str, ...] = ("final", "mid")


class ManifestError(ValueError):
    """A partner-set manifest is unreadable, malformed, or does not match what it describes."""


class LayoutMismatchError(ManifestError):
    """The manifest describes a partner set of another layout."""


class MissingFilesError(ManifestError):
    """Files the manifest references do not exist."""


class ChecksumMismatchError(ManifestError):
    """Files the manifest references have changed since it was written."""


@dataclass(frozen=True)
class FileRef:
    """A file referenced by a manifest.

    Attributes:
        path: path relative to the manifest's folder, POSIX separators.
        sha256: hex SHA-256 of the file's bytes.
    """

    path: str
    sha256: str


@dataclass(frozen=True)
class BRReference:
    """A partner's approximate best response: its checkpoint and its return with the partner.

    Attributes:
        checkpoint: the BR's checkpoint file; None in an acting-only copy of a set, which keeps
            the BR returns that scores read but not the BRs (``"checkpoint": null`` in the file).
        br_return: mean team sparse return of (BR, partner), the BR-Prox denominator.
    """

    checkpoint: FileRef | None
    br_return: float


@dataclass(frozen=True)
class CandidateRecord:
    """The training run an evaluation partner is a checkpoint of.

    Attributes:
        weights: the candidate's reward weight vector, ``float [E + 1]`` (events, then sparse reward).
        seed: its training seed.
        suite: the suite of the run that trained it (None when not known).
        layout: canonical layout name.
        policy_sha256: :func:`~zsceval.rl.checkpoint.agent_fingerprint` of the partner's parameters.
    """

    weights: tuple[float, ...]
    seed: int
    suite: str | None
    layout: str
    policy_sha256: str

    def to_dict(self) -> dict:
        """The manifest's ``candidate`` record."""
        return {"weights": list(self.weights), "seed": self.seed, "suite": self.suite,
                "layout": self.layout, "policy_sha256": self.policy_sha256}  # fmt: skip


@dataclass(frozen=True)
class PartnerEntry:
    """One evaluation partner.

    Attributes:
        id: unique partner id (e.g. ``"hsp3_final"``).
        level: ``"final"`` or ``"mid"`` checkpoint.
        checkpoint: the partner's checkpoint file.
        br: its BR reference.
        features: behavior features of its BR, in the manifest's ``feature_names`` order.
        candidate_id: the candidate (biased-agent run) this partner is a checkpoint of.
        candidate: that run's weights, seed, suite and the partner's parameter digest (None in
            manifests written before they were recorded).
    """

    id: str
    level: str
    checkpoint: FileRef
    br: BRReference
    features: tuple[float, ...]
    candidate_id: str
    candidate: CandidateRecord | None = None


@dataclass(frozen=True)
class CombinationBR:
    """The BR of a set of two or more distinct partners (games of n > 2 players).

    Attributes:
        partners: the partner ids of the set, sorted.
        checkpoint: the BR's checkpoint file.
        br_return: its mean team sparse return with that set over the set's seatings.
    """

    partners: tuple[str, ...]
    checkpoint: FileRef
    br_return: float


@dataclass(frozen=True)
class SelectionRecord:
    """How the partners were selected (see :mod:`zsceval.generation.selection`).

    Attributes:
        method: ``"exact"`` or ``"k-dpp"``.
        criterion: ``"BR-Div"`` or ``"P-Div"``.
        determinant: ``det(L_S)`` of the selection.
        k: number of selected candidates.
        num_samples: subsets evaluated.
        candidate_ids: every candidate, in kernel row order.
        selected_ids: the selected candidates.
    """

    method: str
    criterion: str
    determinant: float
    k: int
    num_samples: int
    candidate_ids: tuple[str, ...]
    selected_ids: tuple[str, ...]


@dataclass(frozen=True)
class PartnerSetManifest:
    """A selected evaluation-partner set for one layout.

    Attributes:
        layout: canonical layout name.
        seed: seed of the selection.
        feature_names: names of the behavior-feature columns.
        selection: the selection record.
        partners: the partners (``final`` and ``mid``).
        combination_brs: BRs of partner sets of two or more (n > 2 players; empty otherwise).
        tables: the set's tables that scores read (``br_returns.parquet``: the BR-Prox
            denominators per seat), verified like the checkpoints (empty in manifests written
            before they were recorded).
        created_by: package and version that wrote it.
        format_version: manifest format version.
        root: folder the relative paths resolve against (set by :func:`load_manifest`; not stored).
    """

    layout: str
    seed: int
    feature_names: tuple[str, ...]
    selection: SelectionRecord
    partners: tuple[PartnerEntry, ...]
    combination_brs: tuple[CombinationBR, ...] = ()
    tables: tuple[FileRef, ...] = ()
    created_by: str = f"zsceval {__version__}"
    format_version: int = MANIFEST_VERSION
    root: Path | None = field(default=None, compare=False)

    def resolve(self, ref: FileRef) -> Path:
        """Absolute path of a referenced file (needs ``root``, which :func:`load_manifest` sets)."""
        if self.root is None:
            raise ManifestError("manifest has no root folder; load it with load_manifest()")
        return self.root / ref.path

    def checkpoint_refs(self) -> list[FileRef]:
        """The checkpoints' ``meta.json`` files: each partner's, then its BR's, then the combination
        BRs'."""
        refs = [ref for p in self.partners for ref in (p.checkpoint, p.br.checkpoint) if ref is not None]
        return refs + [c.checkpoint for c in self.combination_brs]

    def file_refs(self) -> list[FileRef]:
        """Every referenced file: :meth:`checkpoint_refs`, then the tables."""
        return self.checkpoint_refs() + list(self.tables)


def make_file_ref(file: str | Path, manifest_dir: str | Path) -> FileRef:
    """Reference ``file`` from a manifest in ``manifest_dir``: relative path plus its SHA-256.

    Raises:
        FileNotFoundError: ``file`` does not exist.
    """
    file = Path(file)
    if not file.is_file():
        raise FileNotFoundError(f"cannot reference {file}: no such file")
    relative = os.path.relpath(file.resolve(), Path(manifest_dir).resolve())
    return FileRef(Path(relative).as_posix(), file_sha256(file))


def manifest_to_dict(manifest: PartnerSetManifest) -> dict:
    """The JSON-ready dict of a manifest (format of the module docstring)."""
    sel = manifest.selection
    out = {
        "format": MANIFEST_FORMAT,
        "format_version": manifest.format_version,
        "layout": manifest.layout,
        "created_by": manifest.created_by,
        "seed": manifest.seed,
        "feature_names": list(manifest.feature_names),
        "selection": {
            "method": sel.method,
            "criterion": sel.criterion,
            "determinant": sel.determinant,
            "k": sel.k,
            "num_samples": sel.num_samples,
            "candidate_ids": list(sel.candidate_ids),
            "selected_ids": list(sel.selected_ids),
        },
        "partners": [_partner_to_dict(p) for p in manifest.partners],
    }
    if manifest.tables:
        out["tables"] = [_ref_to_dict(t) for t in manifest.tables]
    if manifest.combination_brs:
        out["combination_brs"] = [
            {"partners": list(c.partners), "checkpoint": _ref_to_dict(c.checkpoint), "return": c.br_return}
            for c in manifest.combination_brs
        ]
    return out


def write_manifest(manifest: PartnerSetManifest, path: str | Path) -> Path:
    """Validate and write a manifest as JSON, atomically (temp file in the same folder + ``os.replace``).

    Args:
        manifest: the manifest; its file references must be relative to ``path``'s folder.
        path: destination ``.json`` file.

    Returns:
        The written path.

    Raises:
        ManifestError: the manifest is inconsistent (duplicate ids, bad level, feature length...).
    """
    _validate(manifest, Path(path))
    text = json.dumps(manifest_to_dict(manifest), indent=2, allow_nan=False) + "\n"
    path = Path(path)
    atomic_write_text(path, text)
    return path


def load_manifest(path: str | Path, *, layout: str | None = None, verify: bool = True) -> PartnerSetManifest:
    """Read a partner-set manifest and check it before any compute is spent on it.

    Args:
        path: the manifest file.
        layout: if given, the layout the caller evaluates on; aliases (``random3``) match their
            canonical name (``counter_circuit``).
        verify: check that every referenced file exists and has the recorded SHA-256.

    Returns:
        The manifest, with ``root`` set to the manifest's folder.

    Raises:
        ManifestError: unreadable or malformed file (names the file and the problem).
        LayoutMismatchError: the manifest is for another layout (both names shown).
        MissingFilesError: referenced files are missing (all listed).
        ChecksumMismatchError: referenced files were altered (each named, expected vs actual hash).
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ManifestError(f"cannot read partner-set manifest {path}: {exc}") from exc
    manifest = _manifest_from_dict(data, path)
    if layout is not None and _canonical(layout) != _canonical(manifest.layout):
        raise LayoutMismatchError(
            f"partner set {path} was selected for layout {manifest.layout!r}, not {layout!r}"
        )
    if verify:
        verify_files(manifest)
    return manifest


def _canonical(layout: str) -> str:
    """The canonical name of a layout or Football scenario; an unknown name unchanged."""
    try:
        return resolve_scenario(layout)
    except ValueError:
        return layout


def verify_files(manifest: PartnerSetManifest) -> None:
    """Check that every file the manifest references exists and is unchanged.

    Raises:
        MissingFilesError: lists every missing file.
        ChecksumMismatchError: names every altered file with its expected and actual SHA-256.
    """
    refs = manifest.file_refs()
    missing = [str(manifest.resolve(r)) for r in refs if not manifest.resolve(r).is_file()]
    if missing:
        raise MissingFilesError(f"partner-set manifest references missing files: {', '.join(missing)}")
    altered = []
    for ref in refs:
        actual = file_sha256(manifest.resolve(ref))
        if actual != ref.sha256:
            altered.append(f"{manifest.resolve(ref)} (expected sha256 {ref.sha256}, found {actual})")
    if altered:
        raise ChecksumMismatchError(f"files changed since the manifest was written: {'; '.join(altered)}")


def _ref_to_dict(ref: FileRef | None) -> dict | None:
    return None if ref is None else {"path": ref.path, "sha256": ref.sha256}


def _ref_from_dict(ref: dict | None) -> FileRef | None:
    return None if ref is None else FileRef(str(ref["path"]), str(ref["sha256"]))


def _partner_to_dict(p: PartnerEntry) -> dict:
    out = {
        "id": p.id,
        "candidate_id": p.candidate_id,
        "level": p.level,
        "checkpoint": _ref_to_dict(p.checkpoint),
        "br": {"checkpoint": _ref_to_dict(p.br.checkpoint), "return": p.br.br_return},  # null: no BR
        "features": list(p.features),
    }
    if p.candidate is not None:
        out["candidate"] = p.candidate.to_dict()
    return out


def _candidate_from_dict(c: dict | None) -> CandidateRecord | None:
    if c is None:
        return None
    return CandidateRecord(
        weights=tuple(float(x) for x in c["weights"]),
        seed=int(c["seed"]),
        suite=None if c.get("suite") is None else str(c["suite"]),
        layout=str(c["layout"]),
        policy_sha256=str(c["policy_sha256"]),
    )


def _manifest_from_dict(data: object, path: Path) -> PartnerSetManifest:
    try:
        if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
            raise ValueError(f"not a {MANIFEST_FORMAT} file (missing or wrong `format`)")
        version = data["format_version"]
        if version != MANIFEST_VERSION:
            raise ValueError(
                f"format_version {version} is not supported (this zsceval reads {MANIFEST_VERSION})"
            )
        sel = data["selection"]
        selection = SelectionRecord(
            method=str(sel["method"]),
            criterion=str(sel["criterion"]),
            determinant=float(sel["determinant"]),
            k=int(sel["k"]),
            num_samples=int(sel["num_samples"]),
            candidate_ids=tuple(str(c) for c in sel["candidate_ids"]),
            selected_ids=tuple(str(c) for c in sel["selected_ids"]),
        )
        partners = tuple(
            PartnerEntry(
                id=str(p["id"]),
                level=str(p["level"]),
                checkpoint=FileRef(str(p["checkpoint"]["path"]), str(p["checkpoint"]["sha256"])),
                br=BRReference(_ref_from_dict(p["br"]["checkpoint"]), float(p["br"]["return"])),
                features=tuple(float(x) for x in p["features"]),
                candidate_id=str(p["candidate_id"]),
                candidate=_candidate_from_dict(p.get("candidate")),
            )
            for p in data["partners"]
        )
        combination_brs = tuple(
            CombinationBR(
                partners=tuple(str(x) for x in c["partners"]),
                checkpoint=FileRef(str(c["checkpoint"]["path"]), str(c["checkpoint"]["sha256"])),
                br_return=float(c["return"]),
            )
            for c in data.get("combination_brs", [])
        )
        manifest = PartnerSetManifest(
            layout=str(data["layout"]),
            seed=int(data["seed"]),
            feature_names=tuple(str(n) for n in data["feature_names"]),
            selection=selection,
            partners=partners,
            combination_brs=combination_brs,
            tables=tuple(FileRef(str(t["path"]), str(t["sha256"])) for t in data.get("tables", [])),
            created_by=str(data["created_by"]),
            format_version=int(version),
            root=path.resolve().parent,
        )
    except KeyError as exc:
        raise ManifestError(f"malformed partner-set manifest {path}: missing field {exc}") from exc
    except (TypeError, ValueError) as exc:
        raise ManifestError(f"malformed partner-set manifest {path}: {exc}") from exc
    _validate(manifest, path)
    return manifest


def _validate(manifest: PartnerSetManifest, path: Path) -> None:
    problems = []
    ids = [p.id for p in manifest.partners]
    if len(set(ids)) != len(ids):
        problems.append("duplicate partner ids")
    for p in manifest.partners:
        if p.level not in PARTNER_LEVELS_CHECKPOINT:
            problems.append(f"partner {p.id}: level {p.level!r} not in {list(PARTNER_LEVELS_CHECKPOINT)}")
        if len(p.features) != len(manifest.feature_names):
            problems.append(
                f"partner {p.id}: {len(p.features)} features for {len(manifest.feature_names)} names"
            )
        for ref in (p.checkpoint, p.br.checkpoint):
            if ref is not None and Path(ref.path).is_absolute():
                problems.append(f"partner {p.id}: path {ref.path} must be relative to the manifest")
    for c in manifest.combination_brs:
        if len(c.partners) < 2 or list(c.partners) != sorted(set(c.partners)):
            problems.append(f"combination BR {list(c.partners)}: needs two or more distinct ids, sorted")
        if not set(c.partners) <= set(ids):
            problems.append(f"combination BR {list(c.partners)}: unknown partner ids")
        if Path(c.checkpoint.path).is_absolute():
            problems.append(f"combination BR {list(c.partners)}: path must be relative to the manifest")
    for t in manifest.tables:
        if Path(t.path).is_absolute():
            problems.append(f"table {t.path}: path must be relative to the manifest")
    if not set(manifest.selection.selected_ids) <= set(manifest.selection.candidate_ids):
        problems.append("selection.selected_ids are not all in selection.candidate_ids")
    if problems:
        raise ManifestError(f"invalid partner-set manifest {path}: {'; '.join(problems)}")
