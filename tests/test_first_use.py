"""First use: no silent wrong result and no traceback for what a new user tries, and help that a
user can act on (bad plug-in options, partner-set files altered or truncated when the set is used by
path, a broken run config on resume, a bench into another kind of folder, help texts)."""

import json
import re
import shutil
from pathlib import Path

import click
import pandas as pd
import pytest

from tests.cli_helpers import clean_error, invoke
from zsceval import registry
from zsceval.bench.training import TrainRequest, plan_training
from zsceval.evaluation.shipped_sets import resolve_set
from zsceval.rl.config import ConfigError

REPO = Path(__file__).resolve().parents[1]


# -- every plug-in's options are checked before any job starts ---------------------------------------
@pytest.mark.parametrize("algo", sorted(registry.names()))
def test_every_algorithm_refuses_a_misspelled_option_before_anything_runs(algo, tmp_path):
    out = tmp_path / "run"
    req = TrainRequest(algo=algo, layout="cramped_room", overrides=("algo.nopee=1",), out=str(out))
    with pytest.raises(ConfigError, match="nopee"):
        plan_training(req)
    assert not out.exists()


def test_tbs_lists_its_options_and_names_a_bad_value_in_one_line(tmp_path):
    res = invoke("train", "--algo", "tbs", "--layout", "cramped_room", "--set", "algo.nope=1",
                 "--out", tmp_path / "tbs")  # fmt: skip
    clean_error(res, "algo.nope", "pool_size", "tom_epochs")
    res = invoke("train", "--algo", "tbs", "--layout", "cramped_room", "--set", "algo.pool_size=abc",
                 "--out", tmp_path / "tbs")  # fmt: skip
    clean_error(res, "algo.pool_size", "'abc'")
    assert not (tmp_path / "tbs").exists()


# -- every file a score depends on is verified, by name or by path ------------------------------------
def _set_copy(tmp_path: Path) -> tuple[Path, str]:
    entry = resolve_set("zsceval:cramped_room@1")
    copy = tmp_path / "set"
    shutil.copytree(entry.folder, copy)
    agent = next((copy / "policies" / "c002_final").glob("step_*"))
    return copy, str(agent)


def test_an_altered_br_returns_table_is_refused_when_the_set_is_used_by_path(tmp_path):
    copy, agent = _set_copy(tmp_path)
    table = pd.read_parquet(copy / "br_returns.parquet")
    table["br_return"] *= 3  # the edit that moved the IQM from 0.672 to 0.348 without a word
    table.to_parquet(copy / "br_returns.parquet")
    res = invoke("eval", "--agent", agent, "--partner-set", copy / "manifest.json",
                 "--layout", "cramped_room", "--episodes", "1")  # fmt: skip
    clean_error(res, "br_returns.parquet", "sha256")


def test_a_truncated_br_returns_table_is_one_message(tmp_path):
    copy, agent = _set_copy(tmp_path)
    data = (copy / "br_returns.parquet").read_bytes()
    (copy / "br_returns.parquet").write_bytes(data[: len(data) // 2])
    args = ("eval", "--agent", agent, "--partner-set", copy / "manifest.json", "--layout", "cramped_room",
            "--episodes", "1")  # fmt: skip
    clean_error(invoke(*args), "br_returns.parquet")
    # a manifest written before it recorded its tables: the unreadable table is still one message
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest.pop("tables")
    (copy / "manifest.json").write_text(json.dumps(manifest))
    res = invoke(*args)
    clean_error(res, "br_returns.parquet", "corrupt or truncated")


# -- no traceback on resume, no bench inside another kind of folder -----------------------------------
def test_a_broken_config_on_resume_names_the_file_and_line(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("run:\n  algo: sp\n  seed: [1\n")
    clean_error(invoke("train", "--resume", "--out", run), "config.yaml:4:", "not valid YAML")


@pytest.mark.parametrize(("record", "what"), [("config.yaml", "a training run"),
                                              ("chain.json", "multi-stage"),
                                              ("partners.yaml", "evaluation-partner folder")])  # fmt: skip
def test_a_bench_refuses_a_folder_that_holds_another_kind_of_run(tmp_path, record, what):
    out = tmp_path / "out"
    out.mkdir()
    (out / record).write_text("{}\n")
    res = invoke("bench", "--suite", "overcooked-quick", "--out", out, "--plan")
    clean_error(res, str(out / record), what)
    assert sorted(p.name for p in out.iterdir()) == [record]  # nothing written beside it


# -- help and messages a user can act on ----------------------------------------------------------------
def _commands(group: click.Group, prefix=()):
    for name, cmd in sorted(group.commands.items()):
        yield (*prefix, name), cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*prefix, name))


REPO_DIRS = ("eval_partners/", "benchmarks/", "docs/", "layouts/", "zsceval/")
"""A path in help text under one of these must exist; others (runs/, bench/, /tmp/...) are the
user's own output folders, and CAPITALS are placeholders."""


def test_no_help_text_names_an_issue_a_paper_number_or_a_missing_repository_path():
    from zsceval.cli import main

    for path, _ in _commands(main):
        text = invoke(*path, "--help").output
        assert not re.search(r"\bissue [0-9]|\bpaper 00[0-9]", text, re.I), (path, text)
        for token in re.findall(r"[\w./<>-]+/[\w./<>-]+", text):
            if token.startswith(REPO_DIRS) and not re.search(r"[A-Z<]", token):
                assert (REPO / token.rstrip(".,")).exists(), (path, token)


def test_episodes_take_what_steps_take_and_counts_read_in_the_singular():
    from zsceval.commands._common import COUNT, plural

    assert COUNT.convert("1e3", None, None) == 1000 and COUNT.convert(7, None, None) == 7
    for bad in ("0", "1.5", "abc"):
        with pytest.raises(click.BadParameter):
            COUNT.convert(bad, None, None)
    assert plural(1, "partner") == "1 partner" and plural(3, "job") == "3 jobs"
    res = invoke("partners", "list")
    assert "1 partner (" in res.output and "1 partners" not in res.output


def test_an_unknown_suite_algorithm_does_not_call_implemented_ones_pending(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\nlayouts: [cramped_room]\nalgorithms: [spp]\n")
    res = invoke("bench", "--suite", suite, "--plan")
    clean_error(res, "unknown algorithm 'spp'", "did you mean 'sp'")
    assert "not implemented yet" not in res.output and "skipped until implemented" not in res.output


# -- a diverged run stops, and nothing scores its weights ---------------------------------------------------
@pytest.mark.parametrize("algo", ["sp", "vdn"])
def test_a_diverged_run_stops_with_one_message_and_is_not_marked_done(tmp_path, algo):
    core = "pqn" if algo == "vdn" else "ppo"
    out = tmp_path / "run"
    res = invoke("train", "--algo", algo, "--layout", "cramped_room", "--no-progress", "--out", out,
                 "--set", f"{core}.lr=1e12", "--set", "env.num_envs=8", "--set", "run.eval_episodes=0",
                 "--steps", "30000")  # fmt: skip
    clean_error(res, "training diverged at iteration", "not finite", f"{core}.lr")
    assert not (out / "eval.json").exists()
    rows = pd.read_csv(out / "metrics.csv")
    assert len(rows) >= 1  # the row that shows the divergence is kept


def test_a_checkpoint_with_non_finite_weights_is_refused_by_name(tmp_path):
    import torch

    from zsceval.rl.checkpoint import CheckpointError, load_agent, save_checkpoint

    entry = resolve_set("zsceval:cramped_room@1")
    agent, meta = load_agent(next((entry.folder / "policies" / "c002_final").glob("step_*")))
    with torch.no_grad():
        next(agent.parameters()).fill_(float("nan"))
    path = save_checkpoint(tmp_path / "nan", 100, {"biased": agent},
                           {k: meta[k] for k in ("layout", "env_spec")} | {"ego": "biased"})  # fmt: skip
    with pytest.raises(CheckpointError, match="non-finite weights"):
        load_agent(path)
    res = invoke("eval", "--agent", path, "--partner-set", "zsceval:cramped_room", "--episodes", "1")
    clean_error(res, str(path), "non-finite")


# -- what a score means --------------------------------------------------------------------------------------
def test_a_set_score_comes_with_its_definition_the_baselines_and_a_small_set_note(tmp_path):
    _, agent = _set_copy(tmp_path)
    base = ("eval", "--agent", agent, "--partner-set", "zsceval:cramped_room", "--episodes", "1")
    res = invoke(*base)
    assert res.exit_code == 0, res.output
    assert "BR-Prox = min(1, R(agent, partner) / R(BR, partner))" in res.output
    assert "> this agent" in res.output and "SP             0.673" in res.output  # the shipped baselines
    assert "3 candidates per level: too few for these intervals to inform" in res.output
    out = json.loads(invoke(*base, "--json").output)
    assert out["definition"].startswith("BR-Prox = ") and out["baselines"]["iqm"]["sp"] == 0.673
    assert out["summary"]["all"]["num_candidates"] == 3 and out["summary"]["all"]["informative"] is False


def test_an_interval_of_returns_never_reaches_below_zero():
    import torch

    from zsceval.rl.play import mean_ci

    returns = torch.tensor([0.0] * 9 + [20.0])  # a partner that only stays: mostly nothing
    mean, lo, hi = mean_ci(returns)
    assert lo < 0  # the plain t interval
    assert mean_ci(returns, low_bound=0.0) == (mean, 0.0, hi)


# -- time before work -------------------------------------------------------------------------------
PLANS = [
    ("sp", ["ego: sp"]),
    ("tbs", ["tbs/pool_n6_s0", "tbs/heldout_n6_s1000"]),
    ("hsp", ["stage 1: mep-stage1", "HSP's own candidates", "ego: hsp"]),
]


@pytest.mark.parametrize(("algo", "stages"), PLANS)
def test_train_plan_prints_each_jobs_env_steps_and_the_hours_and_trains_nothing(tmp_path, algo, stages):
    out = tmp_path / "run"
    res = invoke("train", "--algo", algo, "--layout", "cramped_room", "--plan", "--out", out)
    assert res.exit_code == 0, res.output
    assert all(s in res.output for s in stages) and "left h" in res.output
    assert re.search(r"training left: about (\d+ min|[\d.]+ h)", res.output)
    assert not out.exists()


def test_seats_are_numbered_from_zero_in_the_browser_game_as_in_text():
    from zsceval.play.page import render_page

    page = render_page({"layout": "cramped_room", "agent": "runs/x", "seat": 0, "horizon": 400, "fps": 5,
                        "keys": {}})  # fmt: skip
    assert "You are the chef of seat 0 (blue)" in page
    assert "chef of seat 1 (purple)" in render_page({"layout": "l", "agent": "a", "seat": 1, "horizon": 1,
                                                      "fps": 1, "keys": {}})  # fmt: skip
