"""Shipped partner sets end to end: a tiny real set made by the pipeline, added to a collection with
`zsceval partners export`, registered as a shipped collection, listed, played by name and refused
when corrupted, of another layout or engine, or unknown."""

import dataclasses
import json
import shutil

import pandas as pd
import pytest
import scipy.stats
import yaml
from click.testing import CliRunner

from zsceval.bench.partner_runs import partner_suite, select_partners, write_settings
from zsceval.cli import main
from zsceval.evaluation import shipped_sets
from zsceval.evaluation.manifest import ChecksumMismatchError
from zsceval.evaluation.partner_set import evaluate_partner_set
from zsceval.evaluation.shipped_sets import EngineMismatchError, UnknownPartnerSetError
from zsceval.generation import set_export

SETTINGS = {"layout": "cramped_room", "seed": 0, "preset": "quick", "device": "cpu", "steps": 6400,
            "weight_sampling": "reference", "candidates": 3}  # fmt: skip


def tiny_suite():
    """`partners select -k 1` on 3 candidates, with budgets of seconds (as the tiny bench's)."""
    suite = partner_suite(SETTINGS, k=1, min_return=-1)
    budget = dataclasses.replace(
        suite.partners, checkpoints=2, feature_episodes=2, mid_br_steps=3200, dpp_samples=50
    )
    return dataclasses.replace(
        suite, partners=budget, overrides=("env.num_envs=8", "run.eval_episodes=2"), evaluation_episodes=2
    )


@pytest.fixture(scope="module")
def collection(tmp_path_factory, tiny_bench):
    """A collection holding zsceval:cramped_room@1 (test and validation), registered as the label
    ``zsceval`` in place of the installed eval_partners; and an agent (a candidate's BR).

    The tiny bench (``tests/evaluation/conftest.py``) trained the same candidates and the same
    mid-checkpoint best response (the same jobs: budgets, overrides and seeds): their finished jobs
    are copied in and kept, and only the selection (k = 1) and the set are made here."""
    root = tmp_path_factory.mktemp("shipped")
    work, coll = root / "work", root / "collection"
    bench = tiny_bench[1] / "cramped_room"
    for part in ("candidates", "partners/mid_br/c000"):
        shutil.copytree(bench / part, work / "cramped_room" / part)
    reused = {p: p.stat().st_mtime_ns for p in work.rglob("DONE.json")}
    write_settings(work, SETTINGS)
    select_partners(tiny_suite(), work)
    assert len(reused) == 7 and all(p.stat().st_mtime_ns == t for p, t in reused.items())  # not redone
    args = ["partners", "export", "--from", str(work), "--layout", "cramped_room", "--into", str(coll),
            "--episodes", "2"]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert "cramped_room@1/test: 2 partners" in res.output and "cramped_room@1/validation: 2" in res.output
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(shipped_sets, "registry_roots", lambda: {"zsceval": coll})
        yield coll, f"{work / 'cramped_room/candidates/c000/train/run'}#br"


INSTALLED_ROOTS = shipped_sets.registry_roots  # the module fixture `collection` patches it while active


@pytest.fixture
def installed(monkeypatch):
    """The sets of zsceval's own installed collection (eval_partners/index.yaml), with the installed
    collections registered (even while the fixture `collection` has replaced them)."""
    monkeypatch.setattr(shipped_sets, "registry_roots", INSTALLED_ROOTS)
    return [s for s in shipped_sets.list_sets() if s.label == "zsceval"]


def test_every_installed_set_verifies_and_records_its_provenance(installed):
    index = yaml.safe_load((shipped_sets.registry_roots()["zsceval"] / "index.yaml").read_text())
    assert len(installed) == len(index["sets"]) >= 2  # each set: a test and a validation split
    listing = CliRunner().invoke(main, ["partners", "list"])
    assert listing.exit_code == 0, listing.output
    by_version = {}
    for entry in installed:
        manifest = shipped_sets.verify_set(entry)  # index, manifest and weight checksums; the engine
        assert entry.layout == manifest.layout and entry.partners == len(manifest.partners) > 0
        assert entry.full_name in listing.output and entry.provenance.suite in listing.output
        prov = entry.provenance
        assert prov.suite and prov.commit and prov.date and prov.budgets["candidates"] >= entry.partners // 2
        ids = {p.candidate_id for p in manifest.partners}
        by_version.setdefault((entry.name, entry.version), {})[entry.split] = ids
    for splits in by_version.values():
        assert set(splits) == {"test", "validation"} and not splits["test"] & splits["validation"]


def test_an_agent_scores_on_an_installed_set_against_its_stored_br_returns(installed):
    """End to end on every shipped set: one of the validation split's best responses plays the test
    split; each unit's BR-Prox is its return over the test split's stored BR return."""
    tests = [s for s in installed if s.split == "test"]
    assert tests
    for entry in tests:
        name = f"zsceval:{entry.name}@{entry.version}"  # every version, not only the newest
        validation = shipped_sets.verify_set(shipped_sets.resolve_set(f"{name}/validation"))
        agent = validation.resolve(validation.partners[0].br.checkpoint)
        out = evaluate_partner_set(str(agent), name, episodes=1, reps=50)
        assert out["shipped_set"] == entry.full_name and out["layout"] == entry.layout
        assert len(out["units"]) == 2 * entry.partners
        _check_br_prox_against_stored_returns(out, entry.folder)


def _check_br_prox_against_stored_returns(out: dict, folder) -> None:
    """Each (partner, seat) unit of an evaluation ``out`` divides its return by the set's stored BR
    return (``folder/br_returns.parquet``, mean over episodes), clipped at 1; the IQM is theirs."""
    br = pd.read_parquet(folder / "br_returns.parquet").groupby(["partner", "seat"])["br_return"].mean()
    assert len(br) == len(out["units"])
    by_hand = []
    for u in out["units"]:
        b = br[(u["partner"], u["seat"])]
        assert u["br_return"] == pytest.approx(b)
        by_hand.append(1.0 if b <= 0 else min(1.0, u["sparse_return"] / b))
        assert u["br_prox"] == pytest.approx(by_hand[-1])
    assert out["br_prox_iqm"] == pytest.approx(scipy.stats.trim_mean(by_hand, 0.25))
    # the units whose BR return is <= 0 score 1 for any agent: counted, named, and the IQM without them
    free = [u["partner"] for u in out["units"] if br[(u["partner"], u["seat"])] <= 0]
    rest = [b for u, b in zip(out["units"], by_hand, strict=True) if br[(u["partner"], u["seat"])] > 0]
    assert out["nonpositive_br"]["units"] == len(free)
    assert out["nonpositive_br"]["partners"] == sorted(set(free))
    if rest:
        assert out["nonpositive_br"]["br_prox_iqm_without"] == pytest.approx(
            scipy.stats.trim_mean(rest, 0.25)
        )


def test_eval_says_which_units_score_1_for_any_agent(installed):
    """On zsceval:blocked_corridor@2 the BRs of 6 mid partners return 0 (docs/results.md): the text
    output counts those 12 units, names the partners and gives the IQM without them."""
    validation = shipped_sets.verify_set(shipped_sets.resolve_set("zsceval:blocked_corridor@2/validation"))
    agent = str(validation.resolve(validation.partners[0].br.checkpoint))
    res = CliRunner().invoke(main, ["eval", "--agent", agent, "--partner-set", "zsceval:blocked_corridor@2",
                                    "--episodes", "1"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert (
        "12 of 40 units have a BR return <= 0 and score BR-Prox 1 for any agent (partners c004_mid, "
        "c018_mid, c026_mid, c029_mid, c033_mid, c035_mid); without them the IQM is " in res.output
    )


def test_list_shows_the_sets_with_their_provenance(collection):
    res = CliRunner().invoke(main, ["partners", "list"])
    assert res.exit_code == 0, res.output
    assert (
        "zsceval:cramped_room@1/test: layout cramped_room, test split, 2 partners (1 moderate, 1 expert)"
        in (res.output)
    )
    assert (
        "zsceval:cramped_room@1/validation: layout cramped_room, validation split, 2 partners (2 expert)"
        in (res.output)
    )
    assert "suite partners, seed 0" in res.output and "candidates 3" in res.output
    sets = json.loads(CliRunner().invoke(main, ["partners", "list", "--json"]).output)
    test = sets[0]
    assert (
        test["provenance"]["budgets"]["steps"] == 6400 and test["provenance"]["source"] == "zsceval partners"
    )
    candidates = {s["split"]: {p["candidate_id"] for p in json.loads(open(s["manifest"]).read())["partners"]}
                  for s in sets}  # fmt: skip
    assert len(candidates["test"]) == 1 and len(candidates["validation"]) == 2
    assert not candidates["test"] & candidates["validation"]  # disjoint splits


def test_an_exported_set_keeps_what_playing_and_tuning_need(collection):
    """Exported acting-only: both splits' partners lack critics; the test split has no BR checkpoints
    (scores read its stored BR returns), the validation split keeps its BRs; the index and `partners
    list` state each set's size."""
    coll, _ = collection
    index = yaml.safe_load((coll / "index.yaml").read_text())
    for split, has_brs in (("test", False), ("validation", True)):
        folder = coll / "sets/cramped_room/v1" / split
        manifest = json.loads((folder / "manifest.json").read_text())
        for p in manifest["partners"]:
            meta = json.loads((folder / p["checkpoint"]["path"]).read_text())
            assert all(e["stripped"] == ["critic", "value_norm"] for e in meta["agents"].values())
            assert (p["br"]["checkpoint"] is not None) is has_brs and p["br"]["return"] is not None
        assert (folder / "brs").is_dir() is has_brs
        entry = next(e for e in index["sets"] if e["split"] == split)
        assert entry["bytes"] == sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) > 0
    listing = CliRunner().invoke(main, ["partners", "list"]).output
    assert f"2 partners (1 moderate, 1 expert), {index['sets'][0]['bytes'] / 1e6:.1f} MB" in listing


def test_eval_by_name_scores_br_prox_against_the_stored_br_returns(collection):
    coll, agent = collection
    args = ["eval", "--agent", agent, "--partner-set", "zsceval:cramped_room", "--episodes", "2", "--json"]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["shipped_set"] == "zsceval:cramped_room@1/test" and out["layout"] == "cramped_room"
    assert len(out["units"]) == 2 * 2  # 2 partners x 2 seats
    _check_br_prox_against_stored_returns(out, coll / "sets/cramped_room/v1/test")
    assert set(out["summary"]) == {"all", "moderate", "expert"}
    assert out["summary"]["all"]["iqm"] == pytest.approx(out["br_prox_iqm"])
    for r in out["summary"].values():
        assert r["ci_low"] <= r["iqm"] <= r["ci_high"]
    text = CliRunner().invoke(main, args[:-1])
    assert text.exit_code == 0 and "partner set zsceval:cramped_room@1/test" in text.output
    assert "BR-Prox IQM expert" in text.output and "95% CI" in text.output


def test_the_api_plays_the_validation_split_in_one_call(collection):
    _, agent = collection
    out = evaluate_partner_set(agent, "zsceval:cramped_room@1/validation", episodes=1, reps=50)
    assert out["shipped_set"] == "zsceval:cramped_room@1/validation"
    assert set(out["summary"]) == {"all", "expert"} and len(out["units"]) == 2 * 2


def test_unknown_names_list_the_valid_ones(collection):
    valid = r"Installed partner sets: .*zsceval:cramped_room@1/test.*zsceval:cramped_room@1/validation"
    with pytest.raises(UnknownPartnerSetError, match=valid + r".*Did you mean 'zsceval:cramped_room'"):
        shipped_sets.resolve_set("zsceval:cramped_rom")
    res = CliRunner().invoke(main, ["eval", "--agent", "x", "--partner-set", "zsceval:cramped_room@2"])
    assert res.exit_code != 0 and "zsceval:cramped_room@1/test" in res.output
    with pytest.raises(UnknownPartnerSetError, match="unknown split 'train'"):
        shipped_sets.resolve_set("zsceval:cramped_room/train")


def test_another_layout_is_refused_with_the_differing_fields(collection):
    _, agent = collection
    args = ["eval", "--agent", agent, "--partner-set", "zsceval:cramped_room", "--layout", "counter_circuit"]
    res = CliRunner().invoke(main, args)
    assert res.exit_code != 0
    assert "is for layout 'cramped_room', not 'counter_circuit'" in res.output
    assert "layout: 'cramped_room' -> 'counter_circuit'" in res.output and "obs_shape" in res.output


@pytest.fixture
def copy(collection, tmp_path, monkeypatch):
    """A copy of the collection, registered instead of it (for tests that damage it)."""
    dst = tmp_path / "collection"
    shutil.copytree(collection[0], dst)
    monkeypatch.setattr(shipped_sets, "registry_roots", lambda: {"zsceval": dst})
    return dst


def test_a_corrupted_file_is_refused_with_its_name(collection, copy):
    _, agent = collection
    victim = next((copy / "sets/cramped_room/v1/validation/brs").rglob("policies.safetensors"))
    intact = victim.read_bytes()
    victim.write_bytes(intact[:-1] + b"\0")
    with pytest.raises(ChecksumMismatchError, match="was altered") as err:
        shipped_sets.verify_set(shipped_sets.resolve_set("zsceval:cramped_room@1/validation"))
    assert str(victim) in str(err.value)
    victim.write_bytes(intact)
    entry = shipped_sets.resolve_set("zsceval:cramped_room")
    meta = next((copy / "sets/cramped_room/v1/test/policies").rglob("meta.json"))
    meta.write_text(meta.read_text() + " ")
    with pytest.raises(ChecksumMismatchError, match="files changed") as err:
        shipped_sets.verify_set(entry)
    assert str(meta) in str(err.value)
    parquet = copy / "sets/cramped_room/v1/validation/br_returns.parquet"
    parquet.write_bytes(parquet.read_bytes() + b"\0")
    res = CliRunner().invoke(
        main, ["eval", "--agent", agent, "--partner-set", "zsceval:cramped_room@1/validation"]
    )
    assert res.exit_code != 0 and str(parquet) in res.output and "was altered" in res.output


def test_another_engine_is_refused(copy):
    index = yaml.safe_load((copy / "index.yaml").read_text())
    index["sets"][0]["engine"]["env_spec"]["horizon"] = 123
    index["sets"][1]["engine"]["zsceval"] = "9.0.0"
    (copy / "index.yaml").write_text(yaml.safe_dump(index))
    with pytest.raises(EngineMismatchError, match=r"engine spec.*\n  horizon: 123 -> 400"):
        shipped_sets.verify_set(shipped_sets.resolve_set("zsceval:cramped_room"))
    with pytest.raises(EngineMismatchError, match="made by zsceval 9.0.0"):
        shipped_sets.verify_set(shipped_sets.resolve_set("zsceval:cramped_room@1/validation"))


def test_a_published_version_is_never_overwritten(collection, copy):
    source = collection[0].parent / "work"
    with pytest.raises(shipped_sets.PartnerSetError, match="already holds cramped_room@1"):
        set_export.export_sets(source, "cramped_room", copy, version=1, validation=False)


def test_a_bare_name_names_the_newest_reference_protocol_version(copy):
    """``zsceval:NAME`` skips a newer quick-budget version for the newest ``protocol: reference``
    one; with no reference version it names the newest; ``@VERSION`` names any."""
    index = yaml.safe_load((copy / "index.yaml").read_text())
    shutil.copytree(copy / "sets/cramped_room/v1", copy / "sets/cramped_room/v2")
    newer = [{**e, "version": 2, "path": e["path"].replace("/v1/", "/v2/"), "protocol": "quick"}
             for e in index["sets"]]  # fmt: skip
    for e in index["sets"]:
        e["protocol"] = "reference"
    shipped_sets._write_index(copy, index["sets"] + newer, index.get("mirror"))
    assert shipped_sets.resolve_set("zsceval:cramped_room").version == 1
    assert shipped_sets.resolve_set("zsceval:cramped_room@2").protocol == "quick"
    assert "reference protocol" in CliRunner().invoke(main, ["partners", "list"]).output
    for e in index["sets"]:
        e["protocol"] = "quick"
    shipped_sets._write_index(copy, index["sets"] + newer, index.get("mirror"))
    assert shipped_sets.resolve_set("zsceval:cramped_room/validation").version == 2


def test_caret_compatibility():
    ok = shipped_sets._caret_compatible
    assert ok("0.1.0", "0.1.7") and ok("1.2.0", "1.9.1") and ok("0.0.3", "0.0.3")
    assert not ok("0.1.0", "0.2.0") and not ok("1.0.0", "2.0.0") and not ok("0.0.3", "0.0.4")


def test_set_names_are_parsed():
    assert shipped_sets.parse_set_name("zsceval:counter_circuit") == (
        "zsceval",
        "counter_circuit",
        None,
        "test",
    )
    assert shipped_sets.parse_set_name("lab:cc@3/validation") == ("lab", "cc", 3, "validation")
    assert not shipped_sets.is_set_name("human-proxy") and not shipped_sets.is_set_name("a/manifest.json")


BENCH = """
name: shipped
seed: 0
layouts: [cramped_room]
algorithms: [sp]
ego_seeds: 1
ego_steps: 3200
preset: quick
overrides: [env.num_envs=8, run.eval_episodes=1]
layout_partner_sets:
  cramped_room: zsceval:cramped_room
evaluation:
  episodes: 1
"""


def test_a_bench_evaluates_its_egos_on_a_shipped_set(collection, tmp_path):
    from zsceval.bench.run import run_bench
    from zsceval.bench.suite import SuiteError, load_suite

    coll, _ = collection
    path = tmp_path / "shipped.yaml"
    path.write_text(BENCH)
    suite = load_suite(path)
    assert suite.partner_set("cramped_room") == "zsceval:cramped_room"
    tables = run_bench(suite, tmp_path / "out", progress=False, log=lambda *_: None)
    assert not (tmp_path / "out/cramped_room/candidates").exists()  # no partners generated
    results = pd.read_parquet(tables["results"])
    manifest = json.loads((coll / "sets/cramped_room/v1/test/manifest.json").read_text())
    assert set(results["partner"]) == {p["id"] for p in manifest["partners"]} and len(results) == 2 * 2
    assert "features" not in tables
    path.write_text(BENCH.replace("cramped_room: zsceval:cramped_room", "cramped_room: zsceval:cramped_rom"))
    with pytest.raises(SuiteError, match="layout_partner_sets.cramped_room: unknown partner set"):
        load_suite(path)


def test_egos_of_a_bench_folder_are_scored_on_a_set_into_report_tables(collection, tiny_bench, tmp_path):
    """benchmarks/learning/egos_on_set.py: every finished ego of a bench folder, at its scored
    checkpoint, plays a shipped set; the tables give the report each unit's return over the set's
    stored BR return; a rerun plays nothing again; unfinished egos are listed, not played."""
    import numpy as np

    from zsceval.bench.report import summarize
    from zsceval.evaluation.ego_checkpoint import scored_ego_checkpoint

    from ..algorithms.tbs.scripts import load_script

    coll, _ = collection
    script = load_script("egos_on_set.py")
    run = tmp_path / "run"
    shutil.copytree(tiny_bench[1] / "cramped_room" / "egos", run / "cramped_room" / "egos")
    (run / "cramped_room/egos/sp/s7").mkdir()  # started, not finished
    out = tmp_path / "scores"
    argv = [str(run), "--partner-set", "zsceval:cramped_room", "--out", str(out), "--episodes", "1"]
    assert script.main(argv) == 0
    results = pd.read_parquet(out / "results.parquet")
    assert sorted(results.groupby(["algorithm", "ego_seed"]).size().items()) == [
        (("sp", 0), 4),
        (("sp", 1), 4),
    ]
    set_br = pd.read_parquet(coll / "sets/cramped_room/v1/test/br_returns.parquet")
    br = pd.read_parquet(out / "br_returns.parquet")
    assert (br["layout"] == "cramped_room").all() and len(br) == len(set_br)
    assert br["br_return"].tolist() == set_br["br_return"].tolist()
    record = json.loads((out / "egos_on_set.json").read_text())
    assert record["partner_set"] == "zsceval:cramped_room@1/test" and record["episodes"] == 1
    for seed in (0, 1):
        _, chosen = scored_ego_checkpoint(run / f"cramped_room/egos/sp/s{seed}", "sp")
        assert record["egos"][f"sp_s{seed}"]["checkpoint"] == chosen["checkpoint"]
    # the report's IQM is that of min(1, return / stored BR return) over (seed, partner, seat) units
    mean_br = set_br.groupby(["partner", "seat"])["br_return"].mean()
    units = results.groupby(["ego_seed", "partner", "seat"])["sparse_return"].mean()
    by_hand = [
        1.0 if mean_br[(p, s)] <= 0 else min(1.0, r / mean_br[(p, s)]) for (_, p, s), r in units.items()
    ]
    table = summarize(results, br, reps=50)
    row = table[(table["algorithm"] == "sp") & (table["partner_level"] == "all")].iloc[0]
    assert row["iqm"] == pytest.approx(scipy.stats.trim_mean(np.array(by_hand), 0.25))
    mtimes = {p: p.stat().st_mtime_ns for p in (out / "egos").glob("*.parquet")}
    assert script.main(argv) == 0  # nothing played again
    assert {p: p.stat().st_mtime_ns for p in (out / "egos").glob("*.parquet")} == mtimes
    assert script.main([*argv[:-1], "2"]) == 2  # other episodes: refused, not mixed


def test_the_export_commands_protocol_choices_are_the_index_protocols():
    """``partners export --protocol`` lists the protocols by hand (the CLI does not import the
    heavy module that defines them); they must stay the same."""
    import click

    from zsceval.commands.partners import export
    from zsceval.evaluation.shipped_sets import PROTOCOLS

    (option,) = [p for p in export.params if p.name == "protocol"]
    assert isinstance(option.type, click.Choice) and tuple(option.type.choices) == PROTOCOLS
