"""Named, versioned evaluation-partner sets shipped with a package, verified before any game.

A shipped set is a partner-set folder (:mod:`zsceval.evaluation.manifest`: ``manifest.json``,
``policies/``, ``brs/``, ``br_returns.parquet``) inside a *collection*: a package folder holding
``index.yaml`` and the sets under ``sets/<name>/v<version>/<split>/``. zsceval's own collection is
``eval_partners/``, installed as ``zsceval.partner_sets``; other packages add theirs through the
entry-point group ``zsceval.partner_sets`` (name = the collection's label, value = its package), as
suites do (:mod:`zsceval.plugins`).

Names: ``LABEL:NAME[@VERSION][/SPLIT]``, e.g. ``zsceval:counter_circuit@1/validation``. Without
``@VERSION`` the newest version, without ``/SPLIT`` the ``test`` split. Per (name, version) the
``test`` split holds the partners selected by BR-Div (``mid`` = moderate, ``final`` = expert) and the
``validation`` split the layout's other candidates (their ``final`` checkpoints with the BRs they
were trained with), disjoint from ``test``: tune on validation, report on test.

``index.yaml``::

    format: zsceval-partner-set-index
    format_version: 1
    sets:
      - name: counter_circuit
        version: 1
        split: test
        layout: counter_circuit
        path: sets/counter_circuit/v1/test          # the set's folder, relative to index.yaml
        files: {manifest.json: <sha256>, br_returns.parquet: <sha256>}
        partners: 20
        levels: {moderate: 10, expert: 10}
        engine: {zsceval: 0.1.0, env_spec: {...}}    # what the partners were trained on
        provenance: {suite: overcooked-s12, seed: 0, commit: <git sha>, budgets: {...},
                     date: 2025-01-31, source: zsceval bench}
        archive: {file: counter_circuit-v1-test.tar.gz, sha256: <sha256>, size: <bytes>}  # optional
        shipped: {path: shipped/counter_circuit/v1/test, files: {...}}   # optional: installed copy
        manifest_copy: manifests/counter_circuit/v1/test.json           # optional
    mirror: {url: https://..., env: ZSCEVAL_PARTNERS_URL}                # optional: where archives are

Where a set is read from (:func:`read_index`): the installed acting-only copy (``shipped``: partner
actors and the stored BR returns, no critics and no BR checkpoints, all that scoring needs), else the
full folder ``path`` (a source checkout holds it), else the user's cache, where ``zsceval partners
fetch`` unpacks the set's ``archive`` from the ``mirror``
(:mod:`zsceval.evaluation.set_archives`). ``manifest_copy`` is the full test split's manifest, kept
installed so that training refuses its partners even where the set itself is not downloaded.

:func:`verify_set` checks, before any game: the index's checksums of ``manifest.json`` and
``br_returns.parquet``, the engine (the zsceval version that made the set must be caret-compatible
with the running one, and the recorded env spec must equal the running engine's: dynamics,
observation encoding and shapes, events, horizon), the layout asked for, and the manifest's
checksum of every checkpoint file. Every refusal names what differs or which file.

:func:`zsceval.generation.set_export.export_sets` adds a finished pipeline folder (``zsceval bench``
or ``zsceval partners select``) to a collection: the test split copied, the validation split built
from the candidates the selection left out, and the index entries with provenance.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import yaml

from zsceval import __version__
from zsceval.envs.scenarios import is_football, resolve_scenario
from zsceval.execution.jobs import job_kind
from zsceval.io import atomic_write_text, sha256_file
from zsceval.plugins import Registry, UnknownPluginError, unknown_name
from zsceval.stats.records import differences

from .manifest import (
    ChecksumMismatchError,
    LayoutMismatchError,
    ManifestError,
    MissingFilesError,
    PartnerSetManifest,
    load_manifest,
)

__all__ = [
    "COLLECTIONS",
    "GROUP",
    "INDEX",
    "SPLITS",
    "EngineMismatchError",
    "NotDownloadedError",
    "PartnerSetError",
    "Provenance",
    "ShippedSet",
    "UnknownPartnerSetError",
    "cache_folder",
    "cache_root",
    "is_set_name",
    "list_sets",
    "parse_set_name",
    "registry_roots",
    "resolve_set",
    "verify_set",
]

GROUP = "zsceval.partner_sets"
"""Entry-point group of set collections: name = label, value = a package whose folder holds ``index.yaml``."""
INDEX = "index.yaml"
INDEX_FORMAT = "zsceval-partner-set-index"
INDEX_VERSION = 1
SPLITS: tuple[str, ...] = ("test", "validation")
"""``test``: the BR-Div selection (report on it); ``validation``: other candidates (tune on it)."""
SET_FILES: tuple[str, ...] = ("manifest.json", "br_returns.parquet")
"""Files of a set folder whose checksums the index records (the manifest records the checkpoints')."""
SET_DIRS: tuple[str, ...] = ("policies", "brs", "combination_brs")
"""Checkpoint folders of a set (copied whole: a checkpoint's meta.json lists its other files)."""

_NAME = r"[a-z0-9][a-z0-9_.-]*"
_SET_NAME = re.compile(rf"^(?P<label>{_NAME}):(?P<name>{_NAME})(?:@(?P<version>\d+))?(?:/(?P<split>\w+))?$")
COLLECTIONS = Registry(GROUP, "partner-set collection", kind="package")
"""The registry of partner-set collections (:class:`zsceval.plugins.Registry`): label -> package."""


class PartnerSetError(ManifestError):
    """A named partner set is unknown, its index entry malformed, or it cannot be added."""


class UnknownPartnerSetError(UnknownPluginError, PartnerSetError):
    """No installed collection holds a set of that name (the message lists the valid names)."""


class EngineMismatchError(PartnerSetError):
    """The set was made by an incompatible zsceval or on other dynamics / observation spec."""


class NotDownloadedError(PartnerSetError, MissingFilesError):
    """The set is listed in its collection's index but neither installed nor downloaded yet (the
    message gives the ``zsceval partners fetch`` command)."""


PROTOCOL_REFERENCE = "reference"
"""An index entry's ``protocol`` for a set made by ZSC-Eval's protocol at the reference's budgets
(docs/reference-protocol.md); ``quick`` marks reduced budgets."""
PROTOCOLS = (PROTOCOL_REFERENCE, "quick")


@dataclass(frozen=True)
class Provenance:
    """Where a shipped set comes from.

    Attributes:
        suite: the suite of the run that made it (``overcooked-s12``), or ``partners`` for a
            ``zsceval partners generate/select`` folder.
        seed: the run's seed (candidate weights, selection, BR returns).
        commit: git revision of the code that trained the partners (their checkpoints' record).
        budgets: the partner budget of the layout (candidates, env steps, k, ...).
        date: UTC date the set was exported, ``YYYY-MM-DD``.
        source: the command that ran the pipeline (``zsceval bench`` or ``zsceval partners``).
    """

    suite: str | None
    seed: int
    commit: str | None
    budgets: dict = field(default_factory=dict)
    date: str = ""
    source: str = ""


@dataclass(frozen=True)
class ShippedSet:
    """One entry of a collection's index (see the module docstring for the fields).

    Attributes:
        label: the collection's entry-point name (``zsceval`` for the built-in one).
        name: the set's name, usually its layout.
        version: the set's version (a regenerated set is a new version; old ones stay).
        split: ``test`` or ``validation``.
        layout: canonical layout name.
        folder: the set's folder (absolute).
        files: SHA-256 of ``manifest.json`` and ``br_returns.parquet``.
        partners: number of partners.
        levels: partners per level (``moderate``, ``expert``).
        engine_version: the zsceval version that made the set.
        env_spec: the env spec its partners were trained on (a checkpoint's ``env_spec``).
        provenance: where it comes from.
        baselines: the published baselines' scores on the set (``metric``, ``egos``: the suite
            and budgets they were trained at, ``iqm``: ``{algorithm: IQM BR-Prox}``); empty when
            none were scored on it.
        archive: the full set's release archive, ``{file, sha256, size}`` (bytes); empty when the
            collection publishes none.
        mirror: ``{url, env}``: the base URL the archives are fetched from and the environment
            variable that overrides it; empty when none.
        acting_only: ``folder`` is the installed acting-only copy (partner actors and the stored
            BR returns; no critics, no BR checkpoints).
        manifest_copy: the installed copy of the full set's manifest (test splits), or None.
        bytes: the set's size on disk as published (its ``index.yaml`` entry's ``bytes``), or None
            where the index does not record it.
        protocol: how it was made, as the index states it: ``reference`` (ZSC-Eval's protocol at
            the reference's env-step budgets), ``quick`` (reduced budgets), or None (unstated).
            ``NAME`` without ``@VERSION`` names the newest ``reference`` version where there is one.
    """

    label: str
    name: str
    version: int
    split: str
    layout: str
    folder: Path
    files: dict[str, str]
    partners: int
    levels: dict[str, int]
    engine_version: str
    env_spec: dict | None
    provenance: Provenance
    baselines: dict = field(default_factory=dict)
    archive: dict = field(default_factory=dict)
    mirror: dict = field(default_factory=dict)
    acting_only: bool = False
    manifest_copy: Path | None = None
    bytes: int | None = None
    protocol: str | None = None

    @property
    def installed(self) -> bool:
        """Whether the set's folder is on this machine (installed, in the source tree or fetched)."""
        return (self.folder / "manifest.json").is_file()

    @property
    def full_name(self) -> str:
        """``label:name@version/split``."""
        return f"{self.label}:{self.name}@{self.version}/{self.split}"

    @property
    def manifest(self) -> Path:
        """The set's ``manifest.json``."""
        return self.folder / "manifest.json"

    def to_dict(self) -> dict:
        """JSON-able record (for ``zsceval partners list --json``)."""
        return {
            "name": self.full_name,
            "layout": self.layout,
            "split": self.split,
            "version": self.version,
            "partners": self.partners,
            "levels": dict(self.levels),
            "engine": {"zsceval": self.engine_version},
            "provenance": dataclasses.asdict(self.provenance),
            "baselines": dict(self.baselines),
            "manifest": str(self.manifest),
            "installed": self.installed,
            "acting_only": self.acting_only,
            "archive": dict(self.archive),
            "bytes": self.bytes,
            "protocol": self.protocol,
        }


# -- names and lookup -------------------------------------------------------------------------------
def is_set_name(value: str) -> bool:
    """Whether ``value`` is written as a set name (``label:name[@version][/split]``), not a path."""
    return bool(_SET_NAME.match(str(value))) and not Path(str(value)).exists()


def parse_set_name(value: str) -> tuple[str, str, int | None, str]:
    """``(label, name, version or None, split)`` of a set name; the split defaults to ``test``.

    Raises:
        UnknownPartnerSetError: not of the form ``label:name[@version][/split]``, or an unknown split.
    """
    match = _SET_NAME.match(str(value))
    if not match:
        raise UnknownPartnerSetError(
            f"{value!r} is not a partner-set name; names read LABEL:NAME[@VERSION][/SPLIT], "
            "e.g. zsceval:counter_circuit@1/validation"
        )
    split = match["split"] or "test"
    if split not in SPLITS:
        raise UnknownPartnerSetError(f"{value!r}: unknown split {split!r}; splits: {', '.join(SPLITS)}")
    version = int(match["version"]) if match["version"] else None
    return match["label"], match["name"], version, split


def registry_roots() -> dict[str, Path]:
    """Collection label -> the folder holding its ``index.yaml``, from the entry points of
    :data:`GROUP` (collections that fail to load are left out; :func:`list_sets` names them)."""
    COLLECTIONS.load_all()
    return {label: Path(str(resources.files(pkg))) for label, pkg in sorted(COLLECTIONS.objects.items())}


def read_index(root: str | Path, label: str, *, full: bool = False) -> list[ShippedSet]:
    """The entries of one collection's ``index.yaml`` (none when it has no index).

    Args:
        root: the collection's folder.
        label: its label.
        full: describe the full sets, never an installed acting-only copy (what ``zsceval
            partners fetch`` downloads).

    Raises:
        PartnerSetError: a malformed index (names the file and the entry).
    """
    path = Path(root) / INDEX
    if not path.is_file():
        return []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise PartnerSetError(f"cannot read the partner-set index {path}: {exc}") from None
    if data.get("format") != INDEX_FORMAT or data.get("format_version") != INDEX_VERSION:
        raise PartnerSetError(
            f"{path} is not a {INDEX_FORMAT} file of format_version {INDEX_VERSION} (this zsceval's)"
        )
    out = []
    mirror = dict(data.get("mirror") or {})
    for i, e in enumerate(data.get("sets") or []):
        try:
            prov = dict(e.get("provenance") or {})
            folder, files, acting_only = _set_folder(path.parent, label, e, full)
            copy = e.get("manifest_copy")
            out.append(
                ShippedSet(
                    label=label,
                    name=str(e["name"]),
                    version=int(e["version"]),
                    split=str(e["split"]),
                    layout=str(e["layout"]),
                    folder=folder,
                    files=files,
                    partners=int(e["partners"]),
                    levels={str(k): int(v) for k, v in (e.get("levels") or {}).items()},
                    engine_version=str(e["engine"]["zsceval"]),
                    env_spec=e["engine"].get("env_spec"),
                    provenance=Provenance(**{k: prov.get(k) for k in Provenance.__dataclass_fields__}),
                    baselines=dict(e.get("baselines") or {}),
                    archive=dict(e.get("archive") or {}),
                    mirror=mirror,
                    acting_only=acting_only,
                    manifest_copy=None if copy is None else (path.parent / str(copy)).resolve(),
                    bytes=None if e.get("bytes") is None else int(e["bytes"]),
                    protocol=None if e.get("protocol") is None else str(e["protocol"]),
                )
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PartnerSetError(f"{path}: sets[{i}] is malformed ({type(exc).__name__}: {exc})") from None
        if out[-1].split not in SPLITS or not re.fullmatch(_NAME, out[-1].name):
            raise PartnerSetError(f"{path}: sets[{i}]: bad name {out[-1].name!r} or split {out[-1].split!r}")
    return out


def _set_folder(root: Path, label: str, e: dict, full: bool) -> tuple[Path, dict[str, str], bool]:
    """``(folder, its files' SHA-256, acting-only)`` of an index entry: the installed acting-only
    copy (unless ``full``), else the full folder ``path`` where it exists (a source checkout) or
    where the entry has no archive, else the cache folder that ``zsceval partners fetch`` fills."""
    shipped = e.get("shipped") or {}
    if shipped and not full and (root / str(shipped["path"]) / "manifest.json").is_file():
        files = {str(k): str(v) for k, v in shipped["files"].items()}
        return (root / str(shipped["path"])).resolve(), files, True
    files = {str(k): str(v) for k, v in e["files"].items()}
    source = (root / str(e["path"])).resolve()
    if (source / "manifest.json").is_file() or not e.get("archive"):
        return source, files, False
    return cache_folder(label, str(e["name"]), int(e["version"]), str(e["split"])), files, False


def cache_root() -> Path:
    """The folder downloaded sets are kept in: ``pooch.os_cache("zsceval") / "partner_sets"`` (e.g.
    ``~/.cache/zsceval/partner_sets`` on Linux)."""
    import pooch

    return Path(pooch.os_cache("zsceval")) / "partner_sets"


def cache_folder(label: str, name: str, version: int, split: str) -> Path:
    """Where a fetched set is unpacked: ``cache_root()/<label>/<name>/v<version>/<split>``."""
    return cache_root() / label / name / f"v{version}" / split


def list_sets() -> list[ShippedSet]:
    """Every set of every installed collection, sorted by (label, name, version, split)."""
    found = [s for label, root in registry_roots().items() for s in read_index(root, label)]
    return sorted(found, key=lambda s: (s.label, s.name, s.version, s.split))


def resolve_set(value: str) -> ShippedSet:
    """The installed set a name designates (without ``@VERSION``: the newest version made by the
    reference protocol, else the newest version; ``test`` split without ``/SPLIT``).

    Raises:
        UnknownPartnerSetError: no such set; the message lists the valid names and the closest one.
    """
    label, name, version, split = parse_set_name(value)
    sets = list_sets()
    same = [s for s in sets if (s.label, s.name, s.split) == (label, name, split)]
    if version is not None:
        same = [s for s in same if s.version == version]
    if same:
        reference = [s for s in same if s.protocol == PROTOCOL_REFERENCE]
        return max(reference or same, key=lambda s: s.version)
    valid = sorted({n for s in sets for n in (s.full_name, f"{s.label}:{s.name}")})
    advice = "" if valid else "No partner set is installed yet; see docs/partner-sets.md."
    raise unknown_name(
        "partner set", value, valid, listing="Installed", advice=advice, error=UnknownPartnerSetError
    )


# -- verification ---------------------------------------------------------------------------------------
def engine_spec(layout: str) -> dict | None:
    """The running engine's env spec of ``layout`` (what a checkpoint's ``env_spec`` must equal);
    None for Football, whose engine is external."""
    if is_football(layout):
        return None
    from zsceval.envs.overcooked import OvercookedEnv

    return json.loads(json.dumps(OvercookedEnv(layout, num_envs=1).spec_dict()))


def _caret_compatible(made: str, running: str) -> bool:
    """Whether a set made by zsceval ``made`` may be used by ``running``: the same leading version
    numbers up to and including the first non-zero one (Cargo's caret rule: 0.1.x with 0.1.y, 1.x
    with 1.y)."""

    def parts(v: str) -> list[int]:
        return [int(p) for p in re.findall(r"\d+", v.split("+")[0])[:3]] + [0, 0, 0]

    a, b = parts(made)[:3], parts(running)[:3]
    for x, y in zip(a, b):
        if x != y:
            return False
        if x != 0:
            return True
    return True


def _spec_lines(old: dict, new: dict) -> list[str]:
    return [line if len(line) <= 160 else line[:157] + "..." for line in differences(old, new)]


def verify_set(entry: ShippedSet, layout: str | None = None) -> PartnerSetManifest:
    """Check a shipped set before any game: index checksums, engine, layout, checkpoint checksums.

    Args:
        entry: the set (:func:`resolve_set`).
        layout: the layout the caller evaluates on (None: the set's own).

    Returns:
        The set's manifest (verified, ``root`` set).

    Raises:
        NotDownloadedError: the set is listed but not on this machine (the ``zsceval partners
            fetch`` command named).
        MissingFilesError: a file of the set is missing (named).
        ChecksumMismatchError: a file differs from its recorded SHA-256 (named, both hashes).
        EngineMismatchError: made by an incompatible zsceval version (both named), or on another
            env spec (each differing field: ``field: set -> engine``).
        LayoutMismatchError: ``layout`` is another layout (the set's and the requested layout's
            differing spec fields named).
        ManifestError: a malformed manifest.
    """
    if not entry.installed and entry.archive:
        size = int(entry.archive.get("size") or 0) / 1e6
        raise NotDownloadedError(
            f"partner set {entry.full_name} is not downloaded yet (the package installs the test split "
            f"of each set's newest version): `zsceval partners fetch {entry.full_name}` downloads it "
            f"({size:.1f} MB, {entry.archive['file']}) into {entry.folder}"
        )
    missing = [str(entry.folder / f) for f in entry.files if not (entry.folder / f).is_file()]
    if missing:
        raise MissingFilesError(f"partner set {entry.full_name}: missing files: {', '.join(missing)}")
    for name, expected in sorted(entry.files.items()):
        actual = sha256_file(entry.folder / name)
        if actual != expected:
            raise ChecksumMismatchError(
                f"partner set {entry.full_name}: {entry.folder / name} was altered "
                f"(expected sha256 {expected}, found {actual})"
            )
    if not _caret_compatible(entry.engine_version, __version__):
        raise EngineMismatchError(
            f"partner set {entry.full_name} was made by zsceval {entry.engine_version}, which is not "
            f"compatible with this zsceval {__version__}; use a set made by zsceval {__version__} "
            "(`zsceval partners list`) or install the version that made it"
        )
    current = engine_spec(entry.layout)
    if entry.env_spec is not None and current is not None and entry.env_spec != current:
        raise EngineMismatchError(
            f"partner set {entry.full_name} was trained on another engine spec than this zsceval's "
            "(dynamics or observation spec; set -> engine):\n  "
            + "\n  ".join(_spec_lines(entry.env_spec, current))
        )
    if layout is not None and resolve_scenario(layout) != entry.layout:
        asked = engine_spec(resolve_scenario(layout))
        diffs = _spec_lines(entry.env_spec or {}, asked or {}) if asked is not None else []
        raise LayoutMismatchError(
            f"partner set {entry.full_name} is for layout {entry.layout!r}, not {layout!r}"
            + (" (set -> requested):\n  " + "\n  ".join(diffs) if diffs else "")
        )
    manifest = load_manifest(entry.manifest, layout=entry.layout, verify=True)
    _verify_checkpoint_files(entry, manifest)
    return manifest


def _verify_checkpoint_files(entry: ShippedSet, manifest: PartnerSetManifest) -> None:
    """Check the files each checkpoint's ``meta.json`` lists (weights) against their SHA-256 there
    (the manifest's checksums cover the meta.json files themselves)."""
    for ref in manifest.checkpoint_refs():
        meta_path = manifest.resolve(ref)
        for name, expected in sorted(json.loads(meta_path.read_text()).get("files", {}).items()):
            f = meta_path.parent / name
            if not f.is_file():
                raise MissingFilesError(f"partner set {entry.full_name}: missing file {f}")
            actual = sha256_file(f)
            if actual != expected:
                raise ChecksumMismatchError(
                    f"partner set {entry.full_name}: {f} was altered "
                    f"(expected sha256 {expected}, found {actual})"
                )


def resolve_partner_set(value: str, layout: str | None = None) -> tuple[Path, str, ShippedSet | None]:
    """A ``--partner-set`` value as ``(manifest path, layout, shipped set or None)``.

    A set name is resolved and verified (:func:`verify_set`); anything else is a manifest path,
    returned as is with ``layout`` (checked when the set is loaded).

    Raises:
        UnknownPartnerSetError: an unknown set name (valid names listed).
        ManifestError: the set fails verification (see :func:`verify_set`).
        ValueError: a path without a layout.
    """
    if is_set_name(value):
        entry = resolve_set(value)
        verify_set(entry, layout)
        return entry.manifest, entry.layout, entry
    if layout is None:
        raise ValueError(f"--partner-set {value}: a manifest path needs --layout")
    return Path(value), layout, None


def _write_index(root: Path, entries: list[dict], mirror: dict | None = None) -> None:
    header = (
        "# Evaluation-partner sets of this collection (zsceval/evaluation/shipped_sets.py).\n"
        "# Written by `zsceval partners export` and `zsceval partners release`; a published\n"
        "# (name, version, split) never changes.\n"
    )
    body = {"format": INDEX_FORMAT, "format_version": INDEX_VERSION}
    if mirror:
        body["mirror"] = dict(mirror)
    body["sets"] = entries
    atomic_write_text(root / INDEX, header + yaml.safe_dump(body, sort_keys=False))


# -- bench job ----------------------------------------------------------------------------------------------
@job_kind("partners.shipped")
def partners_shipped(params: dict, out: Path, needs: dict) -> dict:
    """A shipped set, verified and copied into the job's folder, where ``ego.evaluate`` reads the
    partners of a bench layout that evaluates on a shipped set instead of generating its own.

    params: ``set`` (a set name), ``layout``.
    """
    entry = resolve_set(params["set"])
    verify_set(entry, params["layout"])
    for f in SET_FILES:
        shutil.copy2(entry.folder / f, out / f)
    for d in SET_DIRS:
        if (entry.folder / d).is_dir():
            shutil.copytree(entry.folder / d, out / d, dirs_exist_ok=True)
    return {"set": entry.full_name, "manifest": "manifest.json", "partners": entry.partners}
