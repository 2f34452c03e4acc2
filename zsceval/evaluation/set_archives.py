"""Partner sets small by default, the rest on demand: acting-only copies, release archives, fetching.

The package installs the ``test`` split of each set's newest version as an *acting-only* copy: the
partners' actors and the stored BR returns (``br_returns.parquet``), the two things a score reads
(BR-Prox divides the ego's return with a partner by the stored return of the partner's BR,
ZSC-Eval Sec. 4.3; the BR itself never plays at scoring time). Critics, value normalizers and BR
checkpoints stay out (:func:`~zsceval.rl.checkpoint.strip_checkpoint`).

Every (name, version, split), the newest test split included, is also published whole as one
archive, ``<name>-v<version>-<split>.tar.gz``, whose SHA-256 the collection's ``index.yaml`` records
(:func:`release_sets` writes them, byte for byte the same from the same folders).
:func:`fetch_set` downloads one with pooch from the index's ``mirror.url`` (or the URL in the
environment variable ``mirror.env``, ``ZSCEVAL_PARTNERS_URL`` for zsceval's own sets, or a given
one; ``file://`` URLs name a local mirror), checks its SHA-256 and unpacks it into
:func:`~zsceval.evaluation.shipped_sets.cache_folder` (under ``pooch.os_cache("zsceval")``), where
:func:`~zsceval.evaluation.shipped_sets.read_index` finds it.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import shutil
import tarfile
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

from zsceval.io import atomic_directory, sha256_file
from zsceval.rl.checkpoint import strip_checkpoint

from . import shipped_sets
from .manifest import ChecksumMismatchError, ManifestError, load_manifest, make_file_ref, write_manifest
from .shipped_sets import (
    INDEX,
    SET_FILES,
    PartnerSetError,
    ShippedSet,
    _write_index,
    resolve_set,
    verify_set,
)

__all__ = [
    "ARCHIVE_SUFFIX",
    "MIRROR_ENV",
    "acting_only_copy",
    "archive_name",
    "folder_bytes",
    "fetch_set",
    "release_sets",
    "write_archive",
]

ARCHIVE_SUFFIX = ".tar.gz"
MIRROR_ENV = "ZSCEVAL_PARTNERS_URL"
"""Environment variable that overrides the base URL of zsceval's own set archives."""
DEFAULT_MIRROR = "https://github.com/zsceval/zsceval/releases/download/partner-sets-1/"
"""Where ``zsceval partners release`` says zsceval's archives are published (``index.yaml``'s
``mirror.url``) when the index names no mirror yet."""


def archive_name(name: str, version: int, split: str) -> str:
    """``<name>-v<version>-<split>.tar.gz``."""
    return f"{name}-v{version}-{split}{ARCHIVE_SUFFIX}"


# -- writing -------------------------------------------------------------------------------------------
def write_archive(folder: str | Path, dst: str | Path) -> str:
    """Pack a set folder into a gzip-compressed tar whose bytes depend on the files alone (sorted
    members, times, owners and modes zeroed), written to a temp file and renamed.

    Args:
        folder: the set folder (``manifest.json`` at its top).
        dst: the archive to write.

    Returns:
        The archive's SHA-256 (hex).
    """
    folder, dst = Path(folder), Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".tmp-{dst.name}")
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    try:
        with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
            with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for f in files:
                    info = tarfile.TarInfo(f.relative_to(folder).as_posix())
                    info.size, info.mode, info.mtime = f.stat().st_size, 0o644, 0
                    with open(f, "rb") as fh:
                        tar.addfile(info, fh)
        os.replace(tmp, dst)
    finally:
        tmp.unlink(missing_ok=True)
    return sha256_file(dst)


def _is_stripped(meta_file: Path) -> bool:
    meta = json.loads(meta_file.read_text())
    return any(e.get("stripped") for e in (meta.get("agents") or {}).values())


def acting_only_copy(src: str | Path, dst: str | Path, *, keep_brs: bool = False) -> Path:
    """An acting-only copy of a set folder: each partner's checkpoint without its critic and value
    normalizer (:func:`~zsceval.rl.checkpoint.strip_checkpoint`; a partner already stripped is copied
    as it is), the BR checkpoints only with ``keep_brs`` (otherwise the manifest's ``br.checkpoint``
    is null and ``br.return`` kept), the same tables (``br_returns.parquet``).

    Args:
        src: the set folder.
        dst: the copy's folder (written atomically; replaced if present).
        keep_brs: keep each partner's BR checkpoint, whole (a validation split, which tuning reads).

    Returns:
        ``dst/manifest.json``.

    Raises:
        ManifestError: ``src`` fails verification, or holds combination BRs (games of more than
            two players), which this copy does not cover.
    """
    manifest = load_manifest(Path(src) / "manifest.json", verify=True)
    if manifest.combination_brs:
        raise ManifestError(f"{src}: acting-only copies of sets with combination BRs are not supported")
    dst = Path(dst)
    with atomic_directory(dst) as tmp:
        partners = []
        for p in manifest.partners:
            source, folder = manifest.resolve(p.checkpoint), tmp / Path(p.checkpoint.path).parent
            if _is_stripped(source):
                shutil.copytree(source.parent, folder, dirs_exist_ok=True)
                meta = folder / source.name
            else:
                meta = strip_checkpoint(source, folder)
            br = dataclasses.replace(p.br, checkpoint=None)
            if keep_brs and p.br.checkpoint is not None:
                br_meta = manifest.resolve(p.br.checkpoint)
                shutil.copytree(br_meta.parent, tmp / Path(p.br.checkpoint.path).parent, dirs_exist_ok=True)
                br = dataclasses.replace(p.br, checkpoint=make_file_ref(tmp / p.br.checkpoint.path, tmp))
            partners.append(dataclasses.replace(p, checkpoint=make_file_ref(meta, tmp), br=br))
        for t in manifest.tables:
            (tmp / t.path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(manifest.resolve(t), tmp / t.path)
        for f in SET_FILES:  # a manifest written before it recorded its tables still has them beside it
            if f != "manifest.json" and (Path(src) / f).is_file() and not (tmp / f).exists():
                shutil.copyfile(Path(src) / f, tmp / f)
        tables = tuple(make_file_ref(tmp / t.path, tmp) for t in manifest.tables)
        copy = dataclasses.replace(manifest, partners=tuple(partners), tables=tables, root=None)
        write_manifest(copy, tmp / "manifest.json")
    return dst / "manifest.json"


def folder_bytes(folder: str | Path) -> int:
    """Bytes of every file under ``folder`` (a set's size on disk, as ``index.yaml`` records it)."""
    return sum(f.stat().st_size for f in Path(folder).rglob("*") if f.is_file())


def release_sets(root: str | Path, out: str | Path, *, mirror: str | None = None) -> list[dict]:
    """Make a collection's release: an archive of every set, the acting-only copy of each name's
    newest test split, a copy of every test split's manifest, and the index entries recording them.

    For each index entry, ``<out>/<name>-v<version>-<split>.tar.gz`` packs the full folder
    ``root/<path>`` (:func:`write_archive`) and the entry's ``archive`` records its file, SHA-256 and
    size. The newest version's test split of each name is copied acting-only to
    ``root/shipped/<name>/v<version>/test`` (the entry's ``shipped``: folder and checksums); copies
    of older versions are removed. Each test split's ``manifest.json`` is copied to
    ``root/manifests/<name>/v<version>/test.json`` (``manifest_copy``: training refuses those
    partners even where the set is not downloaded). The index keeps its ``mirror`` (default
    :data:`DEFAULT_MIRROR`, env :data:`MIRROR_ENV`), or takes ``mirror``.

    Args:
        root: the collection folder (``eval_partners``), with the full set folders.
        out: the folder the archives are written to (upload its files to the mirror).
        mirror: a new base URL to record.

    Returns:
        The index entries, as written; an entry whose archive's SHA-256 changed (the same files
        compressed by another zlib) carries the old one in ``archive["replaces"]`` for this call's
        caller only (upload that archive again); it is not written to the index.

    Raises:
        PartnerSetError: a set's full folder is missing.
        ManifestError: a set fails verification.
    """
    root, out = Path(root), Path(out)
    data = yaml.safe_load((root / INDEX).read_text()) or {}
    entries = list(data.get("sets") or [])
    newest = {}
    for e in entries:
        newest[e["name"]] = max(newest.get(e["name"], 0), int(e["version"]))
    keep_shipped = set()
    for e in entries:
        src = root / e["path"]
        if not (src / "manifest.json").is_file():
            raise PartnerSetError(f"{src}: the full set {e['name']}@{e['version']}/{e['split']} is missing")
        load_manifest(src / "manifest.json", verify=True)
        file = archive_name(e["name"], int(e["version"]), e["split"])
        digest = write_archive(src, out / file)
        before = (e.get("archive") or {}).get("sha256")
        e["archive"] = {"file": file, "sha256": digest, "size": (out / file).stat().st_size}
        e["bytes"] = folder_bytes(src)
        if before not in (None, digest):  # another zlib compresses the same files to other bytes
            e["archive"]["replaces"] = before
        e.pop("shipped", None)
        e.pop("manifest_copy", None)
        if e["split"] != "test":
            continue
        copy = Path("manifests") / e["name"] / f"v{e['version']}" / "test.json"
        (root / copy).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / "manifest.json", root / copy)
        e["manifest_copy"] = copy.as_posix()
        if int(e["version"]) == newest[e["name"]]:
            rel = Path("shipped") / e["name"] / f"v{e['version']}" / "test"
            acting_only_copy(src, root / rel)
            files = {f: sha256_file(root / rel / f) for f in SET_FILES}
            e["shipped"] = {"path": rel.as_posix(), "files": files}
            keep_shipped.add(root / rel)
    for stale in (root / "shipped").glob("*/v*/test") if (root / "shipped").is_dir() else []:
        if stale not in keep_shipped:
            shutil.rmtree(stale)
    mirror_record = dict(data.get("mirror") or {"url": DEFAULT_MIRROR, "env": MIRROR_ENV})
    if mirror:
        mirror_record["url"] = mirror
    _write_index(root, [{**e, "archive": {k: v for k, v in e["archive"].items() if k != "replaces"}}
                        for e in entries], mirror_record)  # fmt: skip
    return entries


# -- fetching ------------------------------------------------------------------------------------------
def _file_downloader(url: str, output_file, pooch=None, check_only: bool = False):
    """A pooch downloader for ``file://`` URLs (a mirror on a local or shared disk)."""
    path = Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path))
    if check_only:
        return path.is_file()
    if not path.is_file():
        raise FileNotFoundError(f"no file {path} on the mirror")
    if hasattr(output_file, "write"):
        with open(path, "rb") as fh:
            shutil.copyfileobj(fh, output_file)
    else:
        shutil.copyfile(path, output_file)
    return None


def base_url(entry: ShippedSet, url: str | None = None) -> str:
    """The base URL of a set's archive: ``url``, else the environment variable the index names
    (``mirror.env``), else the index's ``mirror.url``.

    Raises:
        PartnerSetError: none of them is set.
    """
    env = entry.mirror.get("env")
    found = url or (os.environ.get(env) if env else None) or entry.mirror.get("url")
    if not found:
        raise PartnerSetError(f"the collection of {entry.full_name} names no mirror; pass --url")
    return found if found.endswith("/") else found + "/"


def fetch_set(value: str, *, url: str | None = None, progressbar: bool = False) -> ShippedSet:
    """Download a listed set (validation splits, older versions, the full test split) into the cache.

    Nothing is downloaded when the full set is already on this machine (an installed acting-only
    copy does not count: fetching its set downloads the critics and BR checkpoints, while scores
    keep reading the copy, which gives the same ones). Else the archive is fetched
    with pooch from :func:`base_url`, its SHA-256 checked against the index, unpacked into
    :func:`~zsceval.evaluation.shipped_sets.cache_folder` (atomically) and the set verified
    (:func:`~zsceval.evaluation.shipped_sets.verify_set`) before it is kept.

    Args:
        value: a set name (``zsceval:counter_circuit@2/validation``).
        url: a base URL that replaces the index's and the environment's.
        progressbar: show pooch's progress bar (needs tqdm).

    Returns:
        The full set's :class:`~zsceval.evaluation.shipped_sets.ShippedSet`, verified.

    Raises:
        UnknownPartnerSetError: an unknown name (the valid names listed).
        PartnerSetError: the set has no archive, or the download failed (the URL named).
        ChecksumMismatchError: the download differs from the index's SHA-256 (URL and both hashes).
        ManifestError: the unpacked set fails verification.
    """
    import pooch

    installed = resolve_set(value)
    roots = shipped_sets.registry_roots()
    entry = next(
        s
        for s in shipped_sets.read_index(roots[installed.label], installed.label, full=True)
        if (s.name, s.version, s.split) == (installed.name, installed.version, installed.split)
    )  # the full set, also where an acting-only copy of it is installed
    if entry.installed:
        verify_set(entry)
        return entry
    if not entry.archive:
        raise PartnerSetError(f"partner set {entry.full_name} is not installed and has no archive to fetch")
    source = base_url(entry, url) + entry.archive["file"]
    expected = entry.archive["sha256"]
    downloader = _file_downloader if source.startswith("file:") else None
    try:
        archive = pooch.retrieve(
            source,
            known_hash=f"sha256:{expected}",
            fname=entry.archive["file"],
            path=shipped_sets.cache_root() / entry.label / "archives",
            downloader=downloader,
            progressbar=progressbar,
        )
    except ValueError as exc:  # pooch: the SHA-256 of the downloaded file does not match
        raise ChecksumMismatchError(
            f"partner set {entry.full_name}: the download {source} does not match its sha256 in the "
            f"index (expected {expected}): {exc}"
        ) from None
    except OSError as exc:  # missing file, HTTP error (requests' errors are OSErrors), no network
        raise PartnerSetError(f"partner set {entry.full_name}: cannot download {source}: {exc}") from None
    with atomic_directory(entry.folder) as tmp:
        with tarfile.open(archive, "r:gz") as tar:
            tar.extractall(tmp, filter="data")  # no absolute paths, links out or devices
        verify_set(dataclasses.replace(entry, folder=tmp))
    Path(archive).unlink(missing_ok=True)  # the unpacked set is what is kept
    return entry
