"""Human-proxy partners end to end on the real 2019 trials: BC beats the majority baseline on the
held-out split, `zsceval partners human-proxy` writes a set that `zsceval eval --partner-set
human-proxy` plays (with interdependence counts), and the bench's job kinds use it."""

import json

import pytest
import torch
from click.testing import CliRunner

from zsceval.cli import main
from zsceval.human.bc import BCConfig, train_bc
from zsceval.human.partners import (
    ROLES,
    HumanProxyError,
    load_human_model,
    load_human_proxy,
    resolve_proxy_dir,
    shipped_model_dir,
)

from . import cached_trials, require_data

LAYOUTS = (
    "cramped_room",
    "asymmetric_advantages",
    "coordination_ring",
    "forced_coordination",
    "counter_circuit",
)

TINY = ["--preset", "quick", "--steps", "3200", "--no-progress",
        "--set", "env.num_envs=8", "--set", "run.checkpoint_every=3200", "--set", "run.eval_episodes=2",
        "--set", "ppo.epochs=1", "--set", "ppo.num_minibatches=1"]  # fmt: skip


def test_bc_beats_the_majority_baseline_on_the_test_split():
    """Class-balanced BC (the default): its balanced accuracy on the held-out test split is far above
    the majority-class predictor's (1 / number of classes present)."""
    train = cached_trials("train", ("cramped_room",))
    test = cached_trials("test", ("cramped_room",))
    torch.set_num_threads(1)
    result = train_bc(train, "cramped_room", BCConfig(epochs=3, batch_size=256), held_out_trials=test)
    t = result.metrics["held_out"]
    assert t["examples"] == 2 * sum(len(x.actions) for x in test)
    assert t["balanced_accuracy"] > t["majority_balanced_accuracy"] + 0.15
    assert 0 < result.metrics["best_epoch"] <= 3


@pytest.fixture(scope="module")
def proxy_and_agent(tmp_path_factory):
    require_data()
    root = tmp_path_factory.mktemp("human")
    runner = CliRunner()
    res = runner.invoke(main, ["partners", "human-proxy", "--layout", "cramped_room", "--epochs", "2",
                               "--out", str(root / "proxy")])  # fmt: skip
    assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["train", "--algo", "sp", "--layout", "cramped_room", "--out", str(root / "sp"),
                               *TINY])  # fmt: skip
    assert res.exit_code == 0, res.output
    return root, res


def test_partners_human_proxy_writes_a_loadable_set(proxy_and_agent):
    """H_proxy is fitted on the test split and scored on the train split (Carroll et al. 2019;
    human_aware_rl ppo/evaluate.py loads the proxy from bc_runs/test)."""
    root, _ = proxy_and_agent
    record = json.loads((root / "proxy" / "human-proxy.json").read_text())
    assert record["layout"] == "cramped_room" and record["role"] == "human-proxy"
    assert (record["trained_on"], record["held_out"]) == ("test", "train")
    test = cached_trials("test", ("cramped_room",))
    train = cached_trials("train", ("cramped_room",))
    assert record["data"]["test_trials"] == len(test) and record["data"]["train_trials"] == len(train)
    fit_examples = record["metrics"]["fit"]["examples"] + record["metrics"]["validation"]["examples"]
    assert fit_examples == 2 * sum(len(t.actions) for t in test)
    assert record["metrics"]["held_out"]["examples"] == 2 * sum(len(t.actions) for t in train)
    assert len(record["history"]) == 2
    agent, rec = load_human_proxy(root / "proxy", "cramped_room")
    assert rec == record and agent.spec["stuck_time"] == 3
    with pytest.raises(HumanProxyError, match="trained on layout 'cramped_room'"):
        load_human_proxy(root / "proxy", "counter_circuit")
    with pytest.raises(HumanProxyError, match="zsceval partners human-proxy"):
        load_human_proxy(root / "nowhere", "cramped_room")


@pytest.mark.slow
def test_eval_against_the_human_proxy_with_interdependence(proxy_and_agent):
    root, _ = proxy_and_agent
    args = ["eval", "--agent", str(root / "sp"), "--layout", "cramped_room", "--episodes", "2",
            "--partner-set", str(root / "proxy"), "--interdependence"]  # fmt: skip
    res = CliRunner().invoke(main, [*args, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["partner"].endswith("#human_proxy") and out["human_proxy"]["layout"] == "cramped_room"
    assert [s["agent_seat"] for s in out["seatings"]] == [0, 1]
    inter = out["interdependence"]
    assert [s["seat"] for s in inter["seatings"]] == [0, 1] and inter["pooled"]["episodes"] == 4
    text = CliRunner().invoke(main, args)
    assert text.exit_code == 0, text.output
    assert "behavior-cloned human model" in text.output and "constructive" in text.output


def test_bench_job_kinds_train_and_use_the_proxy(proxy_and_agent, tmp_path):
    from zsceval.evaluation.human_proxy import HUMAN_PROXY_TABLE, ego_human_proxy

    root, _ = proxy_and_agent
    (tmp_path / "ego").mkdir()
    (tmp_path / "ego" / "run").symlink_to(root / "sp")
    params = {"layout": "cramped_room", "algorithm": "sp", "ego_seed": 0, "episodes": 2, "seed": 0,
              "device": "cpu", "ego": "e", "proxy": "p"}  # fmt: skip
    out = tmp_path / "job"
    out.mkdir()
    result = ego_human_proxy(params, out, {"e": str(tmp_path / "ego"), "p": str(root / "proxy")})
    import pandas as pd

    frame = pd.read_parquet(out / HUMAN_PROXY_TABLE)
    assert result["rows"] == len(frame) == 4
    assert set(frame["seat"]) == {0, 1} and (frame["algorithm"] == "sp").all()
    assert {"constructive", "ego_triggered_constructive", "partner_accepted_looping"} <= set(frame.columns)
    # non-constructive is looping + irrelevant in every episode
    assert (frame["non_constructive"] == frame["looping"] + frame["irrelevant"]).all()


def test_bc_is_fitted_on_the_train_split_and_is_no_evaluation_partner(tmp_path):
    """`zsceval partners bc` fits the train split and reports the test split; the BC model is
    refused where H_proxy is needed (scoring), and H_proxy where BC is, each naming the rebuild."""
    require_data()
    res = CliRunner().invoke(
        main,
        [
            "partners",
            "bc",
            "--layout",
            "cramped_room",
            "--epochs",
            "1",
            "--out",
            str(tmp_path / "bc"),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    record = json.loads(res.output)
    assert (record["role"], record["trained_on"], record["held_out"]) == ("bc", "train", "test")
    train = cached_trials("train", ("cramped_room",))
    test = cached_trials("test", ("cramped_room",))
    assert record["metrics"]["held_out"]["examples"] == 2 * sum(len(t.actions) for t in test)
    fit = record["metrics"]["fit"]["examples"] + record["metrics"]["validation"]["examples"]
    assert fit == 2 * sum(len(t.actions) for t in train)
    _, rec = load_human_model(tmp_path / "bc", "cramped_room", role="bc")
    assert rec["role"] == "bc"
    with pytest.raises(HumanProxyError, match="train split .*BC, a training partner.*partners human-proxy"):
        load_human_proxy(tmp_path / "bc", "cramped_room")
    args = ["eval", "--agent", "x", "--layout", "cramped_room", "--partner-set", str(tmp_path / "bc")]
    out = CliRunner().invoke(main, args)
    assert out.exit_code != 0 and "train split" in out.output


def test_a_format_1_proxy_fitted_on_the_train_split_is_refused(tmp_path):
    """Proxies written before the split fix carry no `trained_on` and were fitted on the train
    split: loading one as H_proxy fails with the rebuild command instead of scoring with it."""
    folder = tmp_path / "old"
    folder.mkdir()
    record = {"format": "zsceval-human-proxy", "format_version": 1, "layout": "cramped_room",
              "checkpoint": "checkpoints/step_000000000000"}  # fmt: skip
    (folder / "human-proxy.json").write_text(json.dumps(record))
    with pytest.raises(
        HumanProxyError, match=r"fitted on the 2019 trials' train split.*zsceval partners human-proxy"
    ):
        load_human_proxy(folder, "cramped_room")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_shipped_models_load_and_are_fitted_on_their_split(layout):
    """Every classic layout ships H_proxy (test split) and BC (train split), sha256-verified,
    each with its accuracy on the other split above the majority predictor's balanced accuracy."""
    for role, split in ROLES.items():
        folder = shipped_model_dir(layout, role)
        agent, record = load_human_model(folder, layout, role=role)
        assert record["trained_on"] == split and record["held_out"] != split
        m = record["metrics"]["held_out"]
        assert m["balanced_accuracy"] > m["majority_balanced_accuracy"] + 0.15
    assert resolve_proxy_dir("human-proxy", layout) == shipped_model_dir(layout, "human-proxy")


def test_a_corrupted_shipped_model_is_refused_with_the_file_named(tmp_path, monkeypatch):
    import shutil

    from zsceval.human import partners as hp

    root = tmp_path / "sets"
    shutil.copytree(hp._shipped_root() / "human", root / "human")
    ckpt = next((root / "human" / "cramped_room" / "human-proxy" / "checkpoints").rglob("*.safetensors"))
    ckpt.write_bytes(ckpt.read_bytes()[:-1] + b"\0")
    monkeypatch.setattr(hp, "_shipped_root", lambda: root)
    with pytest.raises(HumanProxyError, match=rf"{ckpt.name} does not match its sha256"):
        shipped_model_dir("cramped_room", "human-proxy")
    with pytest.raises(HumanProxyError, match="no shipped human-proxy model for layout 'large_room'"):
        shipped_model_dir("large_room", "human-proxy")
