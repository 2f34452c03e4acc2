"""Partner sets small by default, the rest on demand: the acting-only copies the package installs score
as the full sets do, release archives are reproducible, and `zsceval partners fetch` takes a set from
a `file://` mirror built here (never the network), refusing a corrupted or missing download."""

import dataclasses
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml
from click.testing import CliRunner
from safetensors.torch import load_file

import zsceval
from zsceval.cli import main
from zsceval.evaluation import set_archives, shipped_sets
from zsceval.evaluation.exclusion import evaluation_partners, training_guard
from zsceval.evaluation.manifest import ChecksumMismatchError, load_manifest
from zsceval.evaluation.partner_set import evaluate_partner_set, partner_set_play
from zsceval.evaluation.shipped_sets import NotDownloadedError, PartnerSetError
from zsceval.io import sha256_file
from zsceval.rl.checkpoint import (
    CheckpointError,
    RefusedCheckpointError,
    load_checkpoint,
    load_policy,
    strip_checkpoint,
)

REPO = Path(zsceval.__file__).resolve().parents[1] / "eval_partners"
FULL = REPO / "sets"
CC_VALIDATION = "zsceval:counter_circuit@2/validation"


def _first_partner_meta(folder: Path) -> Path:
    return next((folder / "policies").rglob("meta.json"))


def test_a_stripped_checkpoint_keeps_the_actor_and_acts_the_same(tmp_path):
    src = _first_partner_meta(FULL / "cramped_room/v1/test")
    meta = strip_checkpoint(src, tmp_path / "copy")
    keys = set(load_file(str(meta.parent / "policies.safetensors")))
    assert keys and all(".actor." in k for k in keys)  # no critic, no value normalizer
    assert json.loads(meta.read_text())["agents"]["biased"]["stripped"] == ["critic", "value_norm"]
    assert json.loads(meta.read_text())["git_revision"] == json.loads(src.read_text())["git_revision"]
    full, _ = load_policy(src, "biased")
    copy, _ = load_policy(meta, "biased")
    for name, value in copy.actor.state_dict().items():
        assert torch.equal(value, full.actor.state_dict()[name])
    # the same source gives the same bytes (the release's checksums can be re-made)
    again = strip_checkpoint(src, tmp_path / "again")
    assert again.read_bytes() == meta.read_bytes()


def test_a_stripped_checkpoint_missing_an_actor_parameter_is_refused(tmp_path):
    meta = strip_checkpoint(_first_partner_meta(FULL / "cramped_room/v1/test"), tmp_path / "copy")
    record = json.loads(meta.read_text())
    record["agents"]["biased"]["stripped"] = ["critic"]  # the value normalizer is now expected
    meta.write_text(json.dumps(record))
    with pytest.raises(CheckpointError, match="value_norm"):
        load_policy(meta, "biased")


def test_the_acting_only_copy_scores_every_unit_as_the_full_set():
    """zsceval:cramped_room@1/test: the installed acting-only copy and the full folder give the same
    games and the same per-unit BR-Prox (the stored BR returns are the same table)."""
    entry = shipped_sets.resolve_set("zsceval:cramped_room@1/test")
    assert entry.acting_only and entry.folder == (REPO / "shipped/cramped_room/v1/test").resolve()
    copy = load_manifest(entry.manifest, layout="cramped_room")
    assert all(p.br.checkpoint is None for p in copy.partners)
    assert not (entry.folder / "brs").exists()
    full_dir = FULL / "cramped_room/v1/test"
    pd.testing.assert_frame_equal(
        pd.read_parquet(entry.folder / "br_returns.parquet"), pd.read_parquet(full_dir / "br_returns.parquet")
    )
    validation = load_manifest(FULL / "cramped_room/v1/validation/manifest.json")
    agent = str(validation.resolve(validation.partners[0].br.checkpoint))
    from_copy = evaluate_partner_set(agent, "zsceval:cramped_room@1/test", episodes=1, reps=50)
    from_full = partner_set_play(agent, str(full_dir / "manifest.json"), "cramped_room", 1, "cpu", 0, reps=50)
    assert from_copy["units"] == from_full["units"] and len(from_copy["units"]) == 2 * entry.partners
    assert from_copy["br_prox_iqm"] == from_full["br_prox_iqm"]
    assert from_copy["summary"] == from_full["summary"]


def test_an_acting_only_copy_of_an_acting_only_set_is_the_same_set(tmp_path):
    """A set exported acting-only is released as it is: its stripped partners are copied, not
    stripped again, and the copy's manifest lists the same files."""
    entry = shipped_sets.resolve_set("zsceval:cramped_room@1/test")
    again = set_archives.acting_only_copy(entry.folder, tmp_path / "again")
    assert again.read_bytes() == entry.manifest.read_bytes()
    kept = set_archives.acting_only_copy(FULL / "cramped_room/v1/validation", tmp_path / "val", keep_brs=True)
    manifest = load_manifest(kept, verify=True)
    assert all(p.br.checkpoint is not None for p in manifest.partners)
    assert set_archives.folder_bytes(tmp_path / "val") < set_archives.folder_bytes(
        FULL / "cramped_room/v1/validation"
    )


def test_an_acting_only_copy_keeps_the_br_returns_of_a_manifest_without_tables(tmp_path):
    """A bench manifest written before manifests recorded their tables: the copy still carries
    ``br_returns.parquet``, the table every score reads."""
    src = tmp_path / "old"
    shutil.copytree(FULL / "cramped_room/v1/test", src)
    record = json.loads((src / "manifest.json").read_text())
    record.pop("tables", None)
    (src / "manifest.json").write_text(json.dumps(record))
    set_archives.acting_only_copy(src, tmp_path / "copy")
    assert (tmp_path / "copy/br_returns.parquet").read_bytes() == (src / "br_returns.parquet").read_bytes()


def test_release_writes_reproducible_archives_and_the_acting_only_copy(tmp_path):
    root = tmp_path / "collection"
    shutil.copytree(FULL / "cramped_room", root / "sets/cramped_room")
    index = yaml.safe_load((REPO / "index.yaml").read_text())
    index["sets"] = [e for e in index["sets"] if e["name"] == "cramped_room"]
    del index["mirror"]
    (root / "index.yaml").write_text(yaml.safe_dump(index, sort_keys=False))
    res = CliRunner().invoke(main, ["partners", "release", "--into", str(root), "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    assert "installed acting-only: shipped/cramped_room/v1/test" in res.output
    first = yaml.safe_load((root / "index.yaml").read_text())
    assert first["mirror"]["env"] == "ZSCEVAL_PARTNERS_URL"
    for e in first["sets"]:
        archive = tmp_path / "a" / e["archive"]["file"]
        assert sha256_file(archive) == e["archive"]["sha256"]
        assert ("shipped" in e) == (e["split"] == "test")
    assert (root / "manifests/cramped_room/v1/test.json").read_bytes() == (
        FULL / "cramped_room/v1/test/manifest.json"
    ).read_bytes()
    set_archives.release_sets(root, tmp_path / "b")
    assert yaml.safe_load((root / "index.yaml").read_text()) == first
    for e in first["sets"]:
        assert (tmp_path / "a" / e["archive"]["file"]).read_bytes() == (
            tmp_path / "b" / e["archive"]["file"]
        ).read_bytes()
    # the collection's own index records the archives of the sets it holds
    installed = yaml.safe_load((REPO / "index.yaml").read_text())
    assert {e["archive"]["sha256"] for e in installed["sets"] if e["name"] == "cramped_room"} == {
        e["archive"]["sha256"] for e in first["sets"]
    }


# -- the installed package's view: index, shipped/ and manifests/ only; a file:// mirror ------------------
@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """Archives of counter_circuit@2/validation and cramped_room@1 (both splits) in a local folder."""
    folder = tmp_path_factory.mktemp("mirror")
    sets = [
        ("counter_circuit", 2, "validation"),
        ("cramped_room", 1, "validation"),
        ("cramped_room", 1, "test"),
    ]
    for name, version, split in sets:
        set_archives.write_archive(
            FULL / name / f"v{version}" / split, folder / set_archives.archive_name(name, version, split)
        )
    return folder


@pytest.fixture
def wheel_view(tmp_path, monkeypatch, mirror):
    """zsceval's collection as the wheel installs it (no sets/), an empty cache, and a mirror copy
    that tests may damage; ZSCEVAL_PARTNERS_URL points at it."""
    root = tmp_path / "partner_sets"
    root.mkdir()
    for part in ("index.yaml", "shipped", "manifests"):
        (shutil.copytree if (REPO / part).is_dir() else shutil.copy)(REPO / part, root / part)
    copy = tmp_path / "mirror"
    shutil.copytree(mirror, copy)
    monkeypatch.setattr(shipped_sets, "registry_roots", lambda: {"zsceval": root})
    monkeypatch.setattr(shipped_sets, "cache_root", lambda: tmp_path / "cache")
    monkeypatch.setenv("ZSCEVAL_PARTNERS_URL", copy.as_uri())
    return copy


def test_a_set_not_downloaded_names_the_fetch_command(wheel_view):
    entry = shipped_sets.resolve_set(CC_VALIDATION)
    assert not entry.installed
    with pytest.raises(NotDownloadedError, match=f"`zsceval partners fetch {CC_VALIDATION}`"):
        shipped_sets.verify_set(entry)
    res = CliRunner().invoke(main, ["eval", "--agent", "x", "--partner-set", CC_VALIDATION])
    assert res.exit_code != 0 and f"zsceval partners fetch {CC_VALIDATION}" in res.output
    listing = CliRunner().invoke(main, ["partners", "list"]).output
    assert f"not downloaded: zsceval partners fetch {CC_VALIDATION}" in listing
    assert "zsceval:counter_circuit@2/test: layout counter_circuit, test split, 20 partners" in listing


def test_fetch_then_eval_on_the_validation_split(wheel_view, tmp_path):
    res = CliRunner().invoke(main, ["partners", "fetch", CC_VALIDATION])
    assert res.exit_code == 0, res.output
    entry = shipped_sets.resolve_set(CC_VALIDATION)
    assert entry.folder == tmp_path / "cache/zsceval/counter_circuit/v2/validation" and entry.installed
    assert not list((tmp_path / "cache/zsceval/archives").glob("*.tar.gz"))  # only the unpacked set is kept
    manifest = shipped_sets.verify_set(entry)
    agent = str(manifest.resolve(manifest.partners[0].br.checkpoint))  # a small MLP agent of the layout
    args = ["eval", "--agent", agent, "--partner-set", CC_VALIDATION, "--episodes", "1", "--json"]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["shipped_set"] == CC_VALIDATION and len(out["units"]) == 2 * entry.partners
    stored = (
        pd.read_parquet(entry.folder / "br_returns.parquet").groupby(["partner", "seat"])["br_return"].mean()
    )
    for u in out["units"]:
        assert u["br_return"] == pytest.approx(stored[(u["partner"], u["seat"])])
    again = CliRunner().invoke(main, ["partners", "fetch", CC_VALIDATION, "--url", "file:///nowhere"])
    assert again.exit_code == 0, again.output  # already downloaded: nothing is fetched


def test_a_corrupted_download_is_refused_with_its_name(wheel_view, tmp_path):
    name = "zsceval:cramped_room@1/validation"
    archive = wheel_view / "cramped_room-v1-validation.tar.gz"
    archive.write_bytes(archive.read_bytes()[:-10] + b"\0" * 10)
    with pytest.raises(ChecksumMismatchError, match="does not match its sha256") as err:
        set_archives.fetch_set(name)
    assert archive.as_uri() in str(err.value)
    assert not shipped_sets.resolve_set(name).installed
    archive.unlink()
    res = CliRunner().invoke(main, ["partners", "fetch", name])
    assert res.exit_code != 0 and "cannot download" in res.output and archive.name in res.output


def test_a_tampered_download_is_refused_like_an_installed_set(wheel_view):
    name = "zsceval:cramped_room@1/validation"
    entry = set_archives.fetch_set(name)
    victim = next((entry.folder / "brs").rglob("policies.safetensors"))
    victim.write_bytes(victim.read_bytes()[:-1] + b"\1")
    with pytest.raises(ChecksumMismatchError, match="was altered") as err:
        shipped_sets.verify_set(shipped_sets.resolve_set(name))
    assert str(victim) in str(err.value)


def test_fetching_an_installed_test_split_downloads_the_full_set(wheel_view, tmp_path):
    name = "zsceval:cramped_room@1/test"
    entry = set_archives.fetch_set(name)
    assert not entry.acting_only and entry.folder == tmp_path / "cache/zsceval/cramped_room/v1/test"
    assert len(list((entry.folder / "brs").rglob("meta.json"))) == entry.partners  # the BR checkpoints
    assert shipped_sets.resolve_set(name).acting_only  # scores keep reading the installed copy


def test_a_set_without_archive_or_mirror_is_refused(wheel_view, monkeypatch):
    monkeypatch.delenv("ZSCEVAL_PARTNERS_URL")
    entry = shipped_sets.resolve_set(CC_VALIDATION)
    with pytest.raises(PartnerSetError, match="names no mirror"):
        set_archives.base_url(dataclasses.replace(entry, mirror={}))
    assert set_archives.base_url(entry) == entry.mirror["url"]


def test_training_refuses_the_partners_of_sets_that_are_not_downloaded(wheel_view):
    """counter_circuit@1/test is read from the installed copy of its manifest; the acting-only copy
    of @2/test adds its own checkpoints' digests to the full export's."""
    found = evaluation_partners("counter_circuit")
    assert {(p.source, p.partner_id) for p in found} == {
        (f"zsceval:counter_circuit@{v}/test", p.id)
        for v in (1, 2)
        for p in load_manifest(FULL / f"counter_circuit/v{v}/test/manifest.json", verify=False).partners
    }
    newest = shipped_sets.resolve_set("zsceval:counter_circuit@2/test")
    meta = _first_partner_meta(newest.folder)
    with (
        training_guard("counter_circuit"),
        pytest.raises(RefusedCheckpointError, match="counter_circuit@2/test"),
    ):
        load_checkpoint(meta)
    full_meta = load_manifest(FULL / "counter_circuit/v2/test/manifest.json", verify=False).partners
    digests = {d for p in found for d in (p.policy_sha256, p.checkpoint_sha256, *p.other_sha256)}
    assert {p.checkpoint.sha256 for p in full_meta} <= digests
