"""Write into each shipped set's manifest what manifests record since it was exported: every
partner's candidate record and the checksums of the set's tables (then the manifest's new checksum
into ``eval_partners/index.yaml``).

The sets exported before manifests carried a ``candidate`` record (weights, seed, suite, layout,
parameter digest; :class:`zsceval.evaluation.manifest.CandidateRecord`) get it from their
provenance: candidate ``cNNN`` of a bench with suite seed ``s`` trained with seed ``s + NNN`` and
the weight vector :func:`zsceval.generation.candidates.candidate_weights` gives row ``NNN`` for the
recorded budget (``candidates``, ``weight_sampling``); that code has not changed since the first
set was made. Each partner's exported checkpoint records its training seed, which is checked
against ``s + NNN``. The tables (``br_returns.parquet``) are recorded with the SHA-256 the index
already holds for them, so a table altered since the export is refused, not recorded. The
partners, their checkpoints and BR returns are untouched.

    python benchmarks/sets/backfill_manifests.py [--root eval_partners] [--check]

``--check`` writes nothing and exits 1 when a manifest lacks or disagrees with its records.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import yaml

from zsceval.evaluation.exclusion import partner_fingerprint
from zsceval.evaluation.manifest import CandidateRecord, FileRef, load_manifest, write_manifest
from zsceval.generation.candidates import PartnerBudget, candidate_weights
from zsceval.io import sha256_file

ROOT = Path(__file__).resolve().parents[2] / "eval_partners"


def records(manifest, prov: dict) -> dict[str, CandidateRecord]:
    """``{partner id: record}`` of one set, from its index provenance."""
    budgets = prov["budgets"]
    budget = PartnerBudget(candidates=int(budgets["candidates"]), weight_sampling=budgets["weight_sampling"])
    weights = candidate_weights(manifest.layout, budget, int(prov["seed"]))
    out = {}
    for p in manifest.partners:
        i = int(p.candidate_id.lstrip("c"))
        seed = int(prov["seed"]) + i
        meta = json.loads(manifest.resolve(p.checkpoint).read_text())
        if int(meta["seed"]) != seed:
            raise SystemExit(f"{manifest.root}: {p.id} was trained with seed {meta['seed']}, not {seed}")
        out[p.id] = CandidateRecord(
            weights=tuple(float(x) for x in weights[i]),
            seed=seed,
            suite=prov.get("suite"),
            layout=manifest.layout,
            policy_sha256=partner_fingerprint(manifest, p.id),
        )
    return out


def tables_of(folder: Path, entry: dict) -> tuple[FileRef, ...]:
    """The set's ``br_returns.parquet`` with the SHA-256 the index recorded at export.

    Raises:
        SystemExit: the file no longer has that checksum.
    """
    name = "br_returns.parquet"
    if sha256_file(folder / name) != entry["files"][name]:
        raise SystemExit(f"{folder / name} differs from the checksum {entry['files'][name]} in the index")
    return (FileRef(name, entry["files"][name]),)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=ROOT, help="the collection folder (holds index.yaml)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 on a missing record")
    args = ap.parse_args(argv)
    index_path = args.root / "index.yaml"
    text = index_path.read_text()
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
    index = yaml.safe_load(text)
    stale = []
    for entry in index["sets"]:
        folder = args.root / entry["path"]
        manifest = load_manifest(folder / "manifest.json", verify=True)
        wanted = records(manifest, entry["provenance"])
        tables = tables_of(folder, entry)
        if all(p.candidate == wanted[p.id] for p in manifest.partners) and manifest.tables == tables:
            continue
        stale.append(f"{entry['name']}@{entry['version']}/{entry['split']}")
        if args.check:
            continue
        partners = tuple(dataclasses.replace(p, candidate=wanted[p.id]) for p in manifest.partners)
        updated = dataclasses.replace(manifest, partners=partners, tables=tables)
        write_manifest(updated, folder / "manifest.json")
        entry["files"]["manifest.json"] = sha256_file(folder / "manifest.json")
    if stale and not args.check:
        index_path.write_text(header + yaml.safe_dump(index, sort_keys=False))
    print(("missing or stale: " if args.check else "recorded: ") + (", ".join(stale) or "none"))
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
