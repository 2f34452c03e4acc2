"""Human-proxy partners end to end on the real 2019 trials: BC beats the majority baseline on the
held-out split, `zsceval partners human-proxy` writes a set that `zsceval eval --partner-set
human-proxy` plays (with interdependence counts), and the bench's job kinds use it."""

import json

import pytest
import torch
from click.testing import CliRunner

from zsceval.cli import main
from zsceval.human.bc import BCConfig, train_bc
from zsceval.human.partners import HumanProxyError, load_human_proxy

from . import cached_trials, require_data

TINY = ["--preset", "quick", "--steps", "3200", "--no-progress",
        "--set", "env.num_envs=8", "--set", "run.checkpoint_every=3200", "--set", "run.eval_episodes=2",
        "--set", "ppo.epochs=1", "--set", "ppo.num_minibatches=1"]  # fmt: skip


def test_bc_beats_the_majority_baseline_on_the_test_split():
    """Class-balanced BC (the default): its balanced accuracy on the held-out test split is far above
    the majority-class predictor's (1 / number of classes present)."""
    train = cached_trials("train", ("cramped_room",))
    test = cached_trials("test", ("cramped_room",))
    torch.set_num_threads(1)
    result = train_bc(train, "cramped_room", BCConfig(epochs=3, batch_size=256), test_trials=test)
    t = result.metrics["test"]
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
    root, _ = proxy_and_agent
    record = json.loads((root / "proxy" / "human-proxy.json").read_text())
    assert record["layout"] == "cramped_room" and record["data"]["train_trials"] > 0
    assert {"train", "validation", "test"} <= set(record["metrics"]) and len(record["history"]) == 2
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
