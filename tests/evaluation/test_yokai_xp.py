"""The Yōkai cross-play matrix and ``zsceval report`` on a folder of Yōkai runs."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from zsceval.cli import main
from zsceval.evaluation.yokai_xp import XPMatrix, cross_play_matrix, find_yokai_runs, xp_drop

EPISODES, SEED = 8, 3
LAYOUT = "yokai-3x3-2p"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two SP agents trained independently for 256 env steps (seeds 0 and 1) in one folder."""
    root = tmp_path_factory.mktemp("yokai_runs")
    sets = [
        "env.num_envs=16",
        "ppo.rollout_length=16",
        "run.eval_episodes=1",
        "run.num_threads=1",
        "model.recurrent=true",
        "model.chunk_length=8",
    ]
    for seed in (0, 1):
        args = [
            "train",
            "--algo",
            "sp",
            "--env",
            "yokai",
            "--steps",
            "256",
            "--seed",
            str(seed),
            "--out",
            str(root / f"sp_s{seed}"),
            "--no-progress",
        ]
        res = CliRunner().invoke(main, args + [x for k in sets for x in ("--set", k)])
        assert res.exit_code == 0, res.output
    return root


@pytest.fixture(scope="module")
def matrix(runs) -> XPMatrix:
    return cross_play_matrix(find_yokai_runs(runs), episodes=EPISODES, seed=SEED)


def test_every_cell_is_what_zsceval_eval_gives_for_the_pair_and_seed(runs, matrix):
    assert matrix.names == ("sp_s0", "sp_s1") and matrix.layout == LAYOUT and matrix.games == 2 * EPISODES
    for i, agent in enumerate(matrix.paths):
        for j, partner in enumerate(matrix.paths):
            args = [
                "eval",
                "--agent",
                agent,
                "--partner",
                partner,
                "--layout",
                LAYOUT,
                "--episodes",
                str(EPISODES),
                "--seed",
                str(SEED),
                "--json",
            ]
            res = CliRunner().invoke(main, args)
            assert res.exit_code == 0, res.output
            pooled = json.loads(res.output)["pooled"]
            assert matrix.cells[i][j] == pooled["yle_metrics"]
            assert matrix.mean("R")[i, j] == pytest.approx(pooled["sparse_return_mean"])
    # the pairs differ: the cells are not one pair copied
    assert len({json.dumps(c, sort_keys=True) for row in matrix.cells for c in row}) > 1


def test_report_prints_the_four_metrics_with_cis_and_the_cross_play_matrix(runs, matrix):
    res = CliRunner().invoke(main, ["report", str(runs), "--episodes", str(EPISODES), "--seed", str(SEED)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert "R, SR (%), NC, SEE (%) and the game score S with 95% bootstrap CIs" in lines[0]
    ci = r"(-?\d+\.\d+) \[(-?\d+\.\d+), (-?\d+\.\d+)\]"
    pairs = {
        ("sp_s0", "(self-play)"): (0, 0),
        ("sp_s1", "(self-play)"): (1, 1),
        ("sp_s0", "sp_s1"): (0, 1),
        ("sp_s1", "sp_s0"): (1, 0),
    }
    seen = 0
    for line in lines:
        words = line.split()
        if "[" in line and tuple(words[:2]) in pairs:
            i, j = pairs[tuple(words[:2])]
            found = re.findall(ci, line)
            assert len(found) == 5, line  # R, SR, NC, SEE, S, each with its interval
            for (mean, lo, hi), k in zip(found, ("R", "SR", "NC", "SEE", "S"), strict=True):
                cell = matrix.cells[i][j][k]
                assert float(mean) == pytest.approx(cell["mean"], abs=0.051)
                assert float(lo) == pytest.approx(cell["ci95"][0], abs=0.051)
                assert float(hi) == pytest.approx(cell["ci95"][1], abs=0.051)
                assert float(lo) <= float(mean) <= float(hi)
            seen += 1
    assert seen == 4
    r_rows = lines[lines.index(next(x for x in lines if x.startswith("cross-play matrix, mean R"))) + 2 :][:2]
    got = np.array([[float(v) for v in row.split()[1:]] for row in r_rows])
    np.testing.assert_allclose(got, matrix.mean("R"), atol=0.006)
    drop = xp_drop(matrix, "SR")
    assert f"SP-XP  SR: SP {drop['sp']:.1f}, XP {drop['xp']:.1f}" in res.output
    assert (runs / "figures" / "yokai_xp.png").is_file()

    res = CliRunner().invoke(
        main,
        ["report", str(runs), "--episodes", str(EPISODES), "--seed", str(SEED), "--json", "--no-figures"],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)["yokai"]
    assert data["matrix"]["SR"] == matrix.mean("SR").tolist()
    assert [(c["agent"], c["partner"]) for c in data["cells"]] == [
        (a, b) for a in matrix.names for b in matrix.names
    ]
    assert data["xp_drop"]["R"] == pytest.approx(xp_drop(matrix, "R"))


def _cell(r: float, sr: float) -> dict:
    return {k: {"mean": v, "ci95": [v, v]} for k, v in {"R": r, "SR": sr, "NC": 1.0, "SEE": 0.0}.items()}


def test_xp_drop_of_a_hand_built_matrix():
    r = [[2.0, -1.0, 0.0], [1.0, 4.0, -2.0], [0.0, 3.0, 0.0]]
    sr = [[60.0, 10.0, 0.0], [20.0, 80.0, 0.0], [0.0, 30.0, 40.0]]
    cells = tuple(tuple(_cell(r[i][j], sr[i][j]) for j in range(3)) for i in range(3))
    m = XPMatrix(("a", "b", "c"), ("a", "b", "c"), LAYOUT, 1, 0, 2, cells)
    d = xp_drop(m, "R")
    assert d["sp"] == pytest.approx(2.0) and d["xp"] == pytest.approx(1.0 / 6.0)  # (-1+0+1-2+0+3)/6
    assert d["drop"] == pytest.approx(11.0 / 6.0) and d["relative_drop"] == pytest.approx(11.0 / 12.0)
    d = xp_drop(m, "SR")
    assert (d["sp"], d["xp"], d["drop"]) == (60.0, 10.0, 50.0) and d["relative_drop"] == pytest.approx(5 / 6)
    d = xp_drop(m, "SEE")  # no self-play success: no relative drop
    assert d["drop"] == 0.0 and np.isnan(d["relative_drop"])
    one = XPMatrix(("a",), ("a",), LAYOUT, 1, 0, 2, ((_cell(1.0, 5.0),),))
    assert np.isnan(xp_drop(one, "R")["xp"])
    with pytest.raises(KeyError, match="unknown metric"):
        m.mean("BR-Prox")


def test_find_yokai_runs_keeps_only_trained_yokai_runs(tmp_path, runs):
    other = tmp_path / "overcooked_run"
    (other / "checkpoints" / "step_000000000100").mkdir(parents=True)
    (other / "config.yaml").write_text("env:\n  name: overcooked\n")
    untrained = tmp_path / "group" / "yokai_untrained"
    untrained.mkdir(parents=True)
    (untrained / "config.yaml").write_text("env:\n  name: yokai\n")
    assert find_yokai_runs(tmp_path) == []
    assert find_yokai_runs(runs) == [("sp_s0", runs / "sp_s0"), ("sp_s1", runs / "sp_s1")]
    assert find_yokai_runs(runs / "sp_s1") == [(".", runs / "sp_s1")]
    with pytest.raises(ValueError, match="no runs"):
        cross_play_matrix([])
    with pytest.raises(ValueError, match="episodes"):
        cross_play_matrix(find_yokai_runs(runs), episodes=0)
