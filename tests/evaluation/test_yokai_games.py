"""``games.parquet`` (per-game Yōkai records) in ``zsceval report``: the metrics by hand, intervals
that resample training seeds before games, one clear error for a malformed table."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from zsceval.cli import main
from zsceval.evaluation.yokai_games import games_table, merge_games, read_games


def _games(won_by_seed: dict[int, list[bool]], agent: str = "relational", steps: int = 1000) -> pd.DataFrame:
    rows = []
    for seed, won in won_by_seed.items():
        for i, w in enumerate(won):
            rows.append({"agent": agent, "setting": "-M", "seed": seed, "env_steps": steps, "game": i,
                         "won": w, "score": 4.0 if w else 1.0, "nc": 3.0 if w else 1.0,
                         "dnc": 2.0 if w else 0.0, "ret": 3.0 if w else -4.0})  # fmt: skip
    return pd.DataFrame(rows)


def test_metrics_by_hand():
    games = pd.concat([_games({0: [True, True, False, False]}), _games({0: [False] * 4}, "random", 0)])
    table = games_table(games, reps=200, rng=np.random.default_rng(0)).set_index("agent")
    r = table.loc["relational"]
    assert (r["seeds"], r["games"], r["env_steps"]) == (1, 4, 1000)
    assert r["SR"] == pytest.approx(50.0) and r["NC"] == pytest.approx(2.0) and r["dNC"] == pytest.approx(1.0)
    assert r["S"] == pytest.approx(2.0)  # a lost game's score counts 0: (4 + 4 + 0 + 0) / 4
    assert r["R"] == pytest.approx(-0.5)
    assert r["SR_low"] <= r["SR"] <= r["SR_high"]
    random = table.loc["random"]
    assert random["SR"] == random["SR_low"] == random["SR_high"] == 0.0  # every game lost


def test_intervals_resample_seeds_before_games():
    """Two seeds, one that always wins and one that never does: 400 games each. Resampling games
    alone would give SR 50 +- 3.5; with the seeds resampled first the interval spans 0 to 100."""
    games = _games({0: [True] * 400, 1: [False] * 400})
    row = games_table(games, reps=400, rng=np.random.default_rng(1)).iloc[0]
    assert row["SR"] == pytest.approx(50.0)
    assert row["SR_low"] == 0.0 and row["SR_high"] == 100.0


def test_report_prints_the_table_json_and_figure(tmp_path):
    games = pd.concat(
        [_games({0: [True, False] * 10, 1: [True] * 20}), _games({0: [False] * 20}, "random", 0)]
    )
    games.to_parquet(tmp_path / "games.parquet")
    res = CliRunner().invoke(main, ["report", str(tmp_path), "--seed", "3"])
    assert res.exit_code == 0, res.output
    line = next(x for x in res.output.splitlines() if x.startswith("relational"))
    assert "75.0 [" in line and " 2 " in line and " 40 " in line  # SR 30 of 40 games, 2 seeds
    assert (tmp_path / "figures" / "yokai_games.png").stat().st_size > 0
    res = CliRunner().invoke(main, ["report", str(tmp_path), "--json", "--no-figures"])
    assert res.exit_code == 0, res.output
    records = json.loads(res.output)["yokai_games"]
    assert {r["agent"] for r in records} == {"relational", "random"}


def test_a_table_without_a_required_column_names_the_file_and_column(tmp_path):
    path = tmp_path / "games.parquet"
    _games({0: [True]}).drop(columns=["dnc"]).to_parquet(path)
    with pytest.raises(ValueError, match=r"games\.parquet: missing column\(s\) dnc"):
        read_games(path)
    res = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert res.exit_code != 0 and "missing column(s) dnc" in res.output


def test_merge_adds_new_games_and_keeps_a_shared_game_once():
    baseline = _games({0: [False] * 3}, "random", 0)
    old = pd.concat([baseline, _games({0: [True, False]})], ignore_index=True)
    new = pd.concat([baseline, _games({2: [True, True]})], ignore_index=True)
    merged = merge_games(old, new)
    assert len(merged) == 3 + 2 + 2  # the baseline's three games once
    assert merged.groupby(["agent", "seed"]).size().to_dict() == {("random", 0): 3, ("relational", 0): 2,
                                                                  ("relational", 2): 2}  # fmt: skip
    assert list(merged.columns) == list(old.columns)
    pd.testing.assert_frame_equal(merged.iloc[: len(old)], old)


def test_merge_refuses_a_game_recorded_differently():
    old = _games({0: [True, False]})
    new = old.copy()
    new.loc[1, "score"] = 9.0
    with pytest.raises(ValueError, match=r"'game': 1.*different 'score'"):
        merge_games(old, new)
    with pytest.raises(ValueError, match="columns differ"):
        merge_games(old, old.drop(columns=["ret"]))


def test_merge_counts_a_value_missing_in_both_tables_as_the_same():
    old = _games({0: [True, False]})
    old.loc[1, "ret"] = np.nan
    new = pd.concat([old, _games({1: [True]})], ignore_index=True)
    merged = merge_games(old, new)
    assert len(merged) == 3 and np.isnan(merged.loc[1, "ret"])
    new.loc[0, "ret"] = np.nan  # missing in one table only
    with pytest.raises(ValueError, match=r"'game': 0.*different 'ret'"):
        merge_games(old, new)


def test_figure_draws_each_trained_agent_through_its_table_values_and_baselines_flat(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    from zsceval.evaluation.yokai_games import plot_games

    games = pd.concat([_games({0: [True, False]}, steps=1000),
                       _games({0: [True, True, True, False]}, steps=2000),
                       _games({0: [False] * 4}, "random", 0)])  # fmt: skip
    table = games_table(games, reps=50, rng=np.random.default_rng(0))
    drawn: list[Figure] = []
    save = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: (drawn.append(fig), save(fig, *a, **k))[1])
    path = plot_games(table, tmp_path / "f.png")
    assert path.stat().st_size > 0
    axes = drawn[0].axes
    assert [ax.get_title() for ax in axes] == ["SR (%)", "NC", "dNC", "S"]
    for ax, metric in zip(axes, ("SR", "NC", "dNC", "S"), strict=True):
        curve, flat = ax.lines[0], ax.lines[1]
        assert curve.get_label() == "relational -M"
        assert list(curve.get_xdata()) == [1000, 2000]
        np.testing.assert_allclose(curve.get_ydata(), table.set_index("env_steps").loc[[1000, 2000], metric])
        assert list(flat.get_ydata()) == [table.set_index("agent").loc["random", metric]] * 2  # axhline
    np.testing.assert_allclose(axes[0].lines[0].get_ydata(), [50.0, 75.0])
