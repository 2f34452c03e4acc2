"""Adding a finished pipeline folder's partner sets to a collection (``zsceval partners export``).

The collection's format, reading and verification are :mod:`zsceval.evaluation.shipped_sets`'s;
this module writes: :func:`export_sets` copies ``<source>/<layout>/partners/set`` as the ``test``
split, builds the ``validation`` split (:func:`build_validation_set`: every candidate the BR-Div
selection kept but did not select, with the BR it was trained with) and adds both to the
collection's ``index.yaml`` with their provenance. A published (name, version, split) never changes.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
import shutil
from pathlib import Path

import numpy as np
import torch
import yaml

from zsceval import __version__
from zsceval.envs.scenarios import num_players, resolve_scenario
from zsceval.evaluation.manifest import (
    BRReference,
    PartnerEntry,
    PartnerSetManifest,
    SelectionRecord,
    load_manifest,
    make_file_ref,
    write_manifest,
)
from zsceval.evaluation.matches import PartnerSpec, evaluate_br_references
from zsceval.evaluation.set_archives import acting_only_copy, folder_bytes
from zsceval.evaluation.shipped_sets import (
    _NAME,
    INDEX,
    PROTOCOLS,
    SET_DIRS,
    SET_FILES,
    PartnerSetError,
    Provenance,
    ShippedSet,
    _write_index,
    read_index,
)
from zsceval.execution import job_ids
from zsceval.io import atomic_directory, sha256_file

from .export import candidate_record, export_agent
from .selection import br_div, similarity_kernel

__all__ = ["build_validation_set", "export_sets"]


def _job_result(folder: Path) -> dict:
    return json.loads((folder / "DONE.json").read_text())["result"]


def _provenance(source: Path, layout: str, manifest: PartnerSetManifest, **given) -> Provenance:
    """Provenance of a pipeline folder: ``suite.yaml`` (bench) or ``partners.yaml`` (``partners``)."""
    budgets, suite, source_cmd = {}, None, ""
    if (source / "suite.yaml").is_file():
        record = yaml.safe_load((source / "suite.yaml").read_text()) or {}
        suite, source_cmd = record.get("name"), "zsceval bench"
        budgets = dict((record.get("layout_partners") or {}).get(layout) or record.get("partners") or {})
        budgets["evaluation_episodes"] = (record.get("evaluation") or {}).get("episodes")
        budgets["preset"] = record.get("preset")
    elif (source / "partners.yaml").is_file():
        record = yaml.safe_load((source / "partners.yaml").read_text()) or {}
        suite, source_cmd = "partners", "zsceval partners"
        budgets = {k: record.get(k) for k in ("candidates", "steps", "preset", "weight_sampling")}
        budgets["k"] = manifest.selection.k
    first = manifest.resolve(manifest.partners[0].checkpoint)
    commit = json.loads(first.read_text()).get("git_revision")
    values = {
        "suite": suite,
        "seed": manifest.seed,
        "commit": commit,
        "budgets": budgets,
        "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
        "source": source_cmd,
    }
    values.update({k: v for k, v in given.items() if v is not None})
    return Provenance(**values)


def _levels(manifest: PartnerSetManifest) -> dict[str, int]:
    names = {"mid": "moderate", "final": "expert"}
    counts = {}
    for p in manifest.partners:
        counts[names[p.level]] = counts.get(names[p.level], 0) + 1
    return {lvl: counts[lvl] for lvl in ("moderate", "expert") if lvl in counts}


def build_validation_set(
    source: str | Path,
    layout: str,
    out: str | Path,
    *,
    episodes: int,
    seed: int = 0,
    device: str = "cpu",
    suite: str | None = None,
) -> Path | None:
    """The validation split of a pipeline folder: every candidate the BR-Div selection kept but did
    not select, at its ``final`` checkpoint with the BR it was trained with (expert level), with
    their BR returns measured in every seat. Disjoint from the test split by construction.

    Args:
        source: the pipeline folder (``<layout>/candidates/...``, ``<layout>/partners/select``).
        layout: its layout.
        out: the set folder to write (``manifest.json``, ``policies/``, ``brs/``, ``br_returns.parquet``).
        episodes: episodes per (partner, seat) for the BR returns.
        seed: seed of the BR-return games.
        device: torch device.
        suite: the suite recorded in each partner's candidate record.

    Returns:
        ``out/manifest.json``, or None when every kept candidate was selected.

    Raises:
        PartnerSetError: a game of more than two players (its validation set needs combination BRs).
    """
    from zsceval.rl.checkpoint import load_policy

    lay, out = resolve_scenario(layout), Path(out)
    if num_players(lay) > 2:
        raise PartnerSetError(f"{lay}: validation sets of games of more than two players are not supported")
    select = _job_result(Path(source) / job_ids.select(lay))
    kept, chosen = list(select["candidate_ids"]), set(select["selected_ids"])
    rest = [c for c in kept if c not in chosen]
    if not rest:
        return None
    evals = {c: _job_result(Path(source) / job_ids.candidate_evaluate(lay, c)) for c in kept}
    specs, entries = [], []
    for cid in rest:
        ckpt = Path(source) / job_ids.candidate_train(lay, cid) / evals[cid]["final_checkpoint"]
        pid = f"{cid}_final"
        specs.append((pid, cid, export_agent(out / "policies" / pid, ckpt, "biased", device),
                      export_agent(out / "brs" / pid, ckpt, "br", device)))  # fmt: skip
    partners = [
        PartnerSpec(pid, "expert", load_policy(p, "biased", device)[0], load_policy(b, "br", device)[0])
        for pid, _, p, b in specs
    ]
    gen = torch.Generator(device=device).manual_seed(seed)
    frame = evaluate_br_references(lay, partners, episodes=episodes, generator=gen, device=device)
    frame.to_parquet(out / "br_returns.parquet")
    br_mean = frame.groupby("partner")["br_return"].mean()
    for pid, cid, p_meta, b_meta in specs:
        entries.append(PartnerEntry(pid, "final", make_file_ref(p_meta, out),
                                    BRReference(make_file_ref(b_meta, out), float(br_mean[pid])),
                                    tuple(evals[cid]["features"]), cid,
                                    candidate_record(lay, evals[cid], p_meta, suite)))  # fmt: skip
    features = np.array([evals[c]["features"] for c in kept], dtype=float)
    det = br_div(similarity_kernel(features), [kept.index(c) for c in rest])
    manifest = PartnerSetManifest(
        layout=lay,
        seed=seed,
        feature_names=tuple(evals[kept[0]]["feature_names"]),
        selection=SelectionRecord("complement", "BR-Div", float(det), len(rest), 0, tuple(kept), tuple(rest)),
        partners=tuple(entries),
        tables=(make_file_ref(out / "br_returns.parquet", out),),
    )
    return write_manifest(manifest, out / "manifest.json")


def _stamp_suite(path: Path, suite: str | None) -> None:
    """Write the provenance suite into every partner's candidate record of the manifest at ``path``."""
    manifest = load_manifest(path, verify=False)
    partners = tuple(
        p
        if p.candidate is None
        else dataclasses.replace(p, candidate=dataclasses.replace(p.candidate, suite=suite))
        for p in manifest.partners
    )
    write_manifest(dataclasses.replace(manifest, partners=partners), path)


def _index_entry(name: str, version: int, split: str, folder: Path, root: Path, prov: Provenance) -> dict:
    manifest = load_manifest(folder / "manifest.json", verify=True)
    meta = json.loads(manifest.resolve(manifest.partners[0].checkpoint).read_text())
    return {
        "name": name,
        "version": version,
        "split": split,
        "layout": manifest.layout,
        "path": folder.relative_to(root).as_posix(),
        "files": {f: sha256_file(folder / f) for f in SET_FILES},
        "partners": len(manifest.partners),
        "bytes": folder_bytes(folder),
        "levels": _levels(manifest),
        "engine": {"zsceval": __version__, "env_spec": meta.get("env_spec")},
        "provenance": dataclasses.asdict(prov),
    }


def export_sets(
    source: str | Path,
    layout: str,
    root: str | Path,
    *,
    name: str | None = None,
    version: int = 1,
    episodes: int = 50,
    device: str = "cpu",
    validation: bool = True,
    suite: str | None = None,
    commit: str | None = None,
    label: str = "local",
    acting_only: bool = True,
    protocol: str | None = None,
) -> list[ShippedSet]:
    """Add a finished pipeline folder's partner sets to the collection in ``root``.

    Copies ``<source>/<layout>/partners/set`` as the ``test`` split, builds the ``validation`` split
    (:func:`build_validation_set`), and adds both to ``root/index.yaml`` with their provenance
    (suite, seed and budgets from the folder's ``suite.yaml`` or ``partners.yaml``, the commit from
    the partners' checkpoints).

    Args:
        source: a ``zsceval bench`` or ``zsceval partners select`` output folder.
        layout: the layout whose set to add.
        root: the collection folder (``eval_partners`` for zsceval's own).
        name: the set's name (default: the layout).
        version: its version; an existing (name, version) is refused (published sets never change).
        episodes: episodes per (partner, seat) for the validation set's BR returns.
        device: torch device of those games.
        validation: also build the validation split.
        suite, commit: provenance values that replace what the folder records.
        label: the label the returned entries carry (the collection's entry-point name).
        acting_only: keep only what playing and tuning need
            (:func:`~zsceval.evaluation.set_archives.acting_only_copy`): the partners' actors and the
            BR returns in both splits, and the validation split's BR checkpoints; without it, the
            partners' critics and the test split's BR checkpoints are kept too.
        protocol: the index entries' ``protocol`` (``reference`` or ``quick``; None: unstated).
            ``NAME`` without ``@VERSION`` names the newest ``reference`` version.

    Returns:
        The added entries.

    Raises:
        PartnerSetError: no finished partner set in ``source``, a bad name, or the version exists.
        ManifestError: the source set fails verification.
    """
    if protocol is not None and protocol not in PROTOCOLS:
        raise PartnerSetError(f"unknown protocol {protocol!r}; valid: {', '.join(PROTOCOLS)}")
    source, root, lay = Path(source), Path(root), resolve_scenario(layout)
    name = name or lay
    if not re.fullmatch(_NAME, name):
        raise PartnerSetError(f"bad set name {name!r}: lowercase letters, digits, '_', '.', '-'")
    src = source / job_ids.partner_set(lay)
    if not (src / "DONE.json").is_file():
        raise PartnerSetError(
            f"{src} holds no finished partner set; run `zsceval partners select` or a bench first"
        )
    manifest = load_manifest(src / "manifest.json", layout=lay, verify=True)
    index = yaml.safe_load((root / INDEX).read_text()) if (root / INDEX).is_file() else None
    entries = list((index or {}).get("sets") or [])
    if any((e["name"], int(e["version"])) == (name, version) for e in entries):
        raise PartnerSetError(f"{root / INDEX} already holds {name}@{version}; a new set is a new --version")
    prov = _provenance(source, lay, manifest, suite=suite, commit=commit)
    added = []
    test_dir = root / "sets" / name / f"v{version}" / "test"
    with atomic_directory(test_dir) as tmp:
        for f in SET_FILES:
            shutil.copy2(src / f, tmp / f)
        for d in SET_DIRS:
            if (src / d).is_dir():
                shutil.copytree(src / d, tmp / d)
        _stamp_suite(tmp / "manifest.json", prov.suite)
    if acting_only:
        acting_only_copy(test_dir, test_dir)
    added.append(_index_entry(name, version, "test", test_dir, root, prov))
    if validation:
        val_dir = root / "sets" / name / f"v{version}" / "validation"
        with atomic_directory(val_dir) as tmp:
            made = build_validation_set(
                source, lay, tmp, episodes=episodes, seed=manifest.seed, device=device, suite=prov.suite
            )
        if made is None:
            shutil.rmtree(val_dir, ignore_errors=True)
        else:
            if acting_only:
                acting_only_copy(val_dir, val_dir, keep_brs=True)
            added.append(_index_entry(name, version, "validation", val_dir, root, prov))
    if protocol is not None:
        added = [{**e, "protocol": protocol} for e in added]
    _write_index(root, entries + added, (index or {}).get("mirror"))
    return [s for s in read_index(root, label) if (s.name, s.version) == (name, version)]
