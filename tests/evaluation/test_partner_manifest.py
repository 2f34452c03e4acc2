"""Partner-set manifests: round trip, atomic write, and the errors raised before any compute."""

import json

import pytest

from zsceval.evaluation.manifest import (
    BRReference,
    ChecksumMismatchError,
    LayoutMismatchError,
    ManifestError,
    MissingFilesError,
    PartnerEntry,
    PartnerSetManifest,
    SelectionRecord,
    file_sha256,
    load_manifest,
    make_file_ref,
    write_manifest,
)


def build_manifest(root):
    """A 2-candidate partner set (final + mid of each) with checkpoint files under ``root``."""
    partners = []
    for cand, level, br_return in [
        ("hsp3", "final", 200.0),
        ("hsp3", "mid", 100.0),
        ("hsp7", "final", 160.0),
    ]:
        pid = f"{cand}_{level}"
        ckpt = root / "partners" / f"{pid}.pt"
        br = root / "brs" / f"{pid}.pt"
        for path, payload in [(ckpt, f"weights of {pid}"), (br, f"weights of BR({pid})")]:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(payload.encode())
        partners.append(
            PartnerEntry(
                id=pid,
                level=level,
                checkpoint=make_file_ref(ckpt, root),
                br=BRReference(make_file_ref(br, root), br_return),
                features=(1.0, 2.5, br_return),
                candidate_id=cand,
            )
        )
    selection = SelectionRecord(
        method="exact",
        criterion="BR-Div",
        determinant=0.75,
        k=2,
        num_samples=10,
        candidate_ids=("hsp1", "hsp3", "hsp5", "hsp7", "hsp9"),
        selected_ids=("hsp3", "hsp7"),
    )
    return PartnerSetManifest(
        layout="counter_circuit",
        seed=3,
        feature_names=("pickup_onion_from_O", "delivery", "sparse_reward"),
        selection=selection,
        partners=tuple(partners),
    )


def test_round_trip(tmp_path):
    manifest = build_manifest(tmp_path)
    path = write_manifest(manifest, tmp_path / "partners.json")
    loaded = load_manifest(path, layout="counter_circuit")
    assert loaded == manifest
    assert loaded.root == tmp_path.resolve()
    assert loaded.resolve(loaded.partners[0].checkpoint).read_bytes() == b"weights of hsp3_final"
    data = json.loads(path.read_text())
    assert data["format_version"] == 1
    assert data["created_by"].startswith("zsceval ")
    assert data["partners"][0]["checkpoint"]["path"] == "partners/hsp3_final.pt"  # relative, POSIX
    assert data["partners"][1]["br"]["return"] == 100.0
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []  # no temp file left


def test_manifest_folder_can_move(tmp_path):
    write_manifest(build_manifest(tmp_path / "a"), tmp_path / "a" / "partners.json")
    (tmp_path / "a").rename(tmp_path / "b")
    loaded = load_manifest(tmp_path / "b" / "partners.json")
    assert len(loaded.partners) == 3


def test_alias_of_the_same_layout_is_accepted(tmp_path):
    path = write_manifest(build_manifest(tmp_path), tmp_path / "partners.json")
    assert load_manifest(path, layout="random3").layout == "counter_circuit"


def test_other_layout_names_both(tmp_path):
    path = write_manifest(build_manifest(tmp_path), tmp_path / "partners.json")
    with pytest.raises(LayoutMismatchError, match="counter_circuit") as info:
        load_manifest(path, layout="coordination_ring")
    assert "coordination_ring" in str(info.value)


def test_missing_file(tmp_path):
    path = write_manifest(build_manifest(tmp_path), tmp_path / "partners.json")
    (tmp_path / "brs" / "hsp7_final.pt").unlink()
    with pytest.raises(MissingFilesError, match="hsp7_final.pt"):
        load_manifest(path)
    assert load_manifest(path, verify=False).partners[2].id == "hsp7_final"


def test_altered_file(tmp_path):
    path = write_manifest(build_manifest(tmp_path), tmp_path / "partners.json")
    target = tmp_path / "partners" / "hsp3_mid.pt"
    expected = file_sha256(target)
    target.write_bytes(b"retrained")
    with pytest.raises(ChecksumMismatchError, match="hsp3_mid.pt") as info:
        load_manifest(path)
    assert expected in str(info.value)
    assert "hsp3_final" not in str(info.value)  # unchanged files are not blamed


def test_malformed_manifest_names_the_file(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text("{not json")
    with pytest.raises(ManifestError, match="broken.json"):
        load_manifest(bad)
    path = write_manifest(build_manifest(tmp_path), tmp_path / "partners.json")
    data = json.loads(path.read_text())
    del data["partners"][0]["br"]
    path.write_text(json.dumps(data))
    with pytest.raises(ManifestError, match="missing field 'br'"):
        load_manifest(path)
    data = json.loads(path.read_text())
    data["format_version"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(ManifestError, match="format_version 99"):
        load_manifest(path)


def test_write_rejects_inconsistent_manifest(tmp_path):
    manifest = build_manifest(tmp_path)
    bad = PartnerSetManifest(
        layout=manifest.layout,
        seed=manifest.seed,
        feature_names=manifest.feature_names[:2],  # partners carry 3 features
        selection=manifest.selection,
        partners=manifest.partners,
    )
    with pytest.raises(ManifestError, match="3 features for 2 names"):
        write_manifest(bad, tmp_path / "partners.json")
    assert not (tmp_path / "partners.json").exists()


def test_combination_brs_round_trip_are_verified_and_absent_for_two_players(tmp_path):
    import dataclasses

    from zsceval.evaluation.manifest import CombinationBR, manifest_to_dict

    base = build_manifest(tmp_path)
    assert "combination_brs" not in manifest_to_dict(base), "two-player manifests are unchanged"
    br = tmp_path / "combination_brs" / "pair.pt"
    br.parent.mkdir(parents=True)
    br.write_bytes(b"weights of BR(hsp3_final, hsp7_final)")
    pair = CombinationBR(("hsp3_final", "hsp7_final"), make_file_ref(br, tmp_path), 0.25)
    manifest = dataclasses.replace(base, layout="academy_3_vs_1_with_keeper", combination_brs=(pair,))
    path = write_manifest(manifest, tmp_path / "manifest.json")
    loaded = load_manifest(path, layout="football")  # the alias matches the canonical scenario
    assert loaded.combination_brs == (pair,)
    assert loaded.resolve(loaded.combination_brs[0].checkpoint) == br.resolve()
    br.write_bytes(b"altered")
    with pytest.raises(ChecksumMismatchError, match="pair.pt"):
        load_manifest(path)
    bad = dataclasses.replace(
        manifest, combination_brs=(dataclasses.replace(pair, partners=("hsp7_final", "nope")),)
    )
    with pytest.raises(ManifestError, match="sorted.*unknown partner ids|unknown partner ids"):
        write_manifest(bad, tmp_path / "bad.json")
