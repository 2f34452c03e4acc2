"""Cross-play matrices (the population-method diagnostics): every ordered pair in one batched call, rows in
seat 0; the per-member summary of a pool."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import zsceval
from zsceval.evaluation.matches import GameResults, play_games
from zsceval.evaluation.pool_xp import group_cross_play, pairwise_returns, pool_summary
from zsceval.evaluation.strata import StayAgent
from zsceval.rl.checkpoint import load_policy

SET = Path(zsceval.__file__).resolve().parents[1] / "eval_partners" / "sets" / "cramped_room" / "v1" / "test"


def _load(kind, name):
    return load_policy(str(next((SET / kind / name).glob("step_*"))))[0]


def _agents():
    agents = [_load("policies", "c002_final"), _load("brs", "c002_final"), StayAgent()]
    return agents, ["c002", "br", "stay"]


def test_each_cell_is_that_pair_alone_with_the_row_in_seat_0():
    """Arg-max actions make every game a function of its seating: each cell must equal the pair
    played on its own in the real env, seat 0 the row agent (a shifted matrix fails; seat order
    is checked in the next test, these games come out symmetric)."""
    agents, names = _agents()
    matrix = pairwise_returns(agents, names, "cramped_room", episodes=2, deterministic=True)
    assert list(matrix.index) == names and list(matrix.columns) == names
    for i in range(len(agents)):
        for j in range(len(agents)):
            alone = play_games("cramped_room", [agents[i], agents[j]], torch.tensor([[0, 1], [0, 1]]),
                               generator=torch.Generator().manual_seed(0), deterministic=True)  # fmt: skip
            assert matrix.iloc[i, j] == pytest.approx(float(alone.sparse.double().mean())), (i, j)
    assert matrix.loc["stay", "stay"] == 0.0
    assert matrix.loc["c002", "br"] > 0 and matrix.loc["br", "c002"] > 0  # the pair cooperates


def test_row_agent_sits_in_seat_0(monkeypatch):
    """Games whose return names their seating (10 x seat-0 agent + seat-1 agent): the matrix must
    be exactly that, so a transposed or shifted matrix fails (real argmax games came out symmetric)."""
    import zsceval.evaluation.pool_xp as pool_xp

    def fake_play(layout, agents, assignment, **kw):
        return GameResults((10 * assignment[:, 0] + assignment[:, 1]).float(), None, None, ())

    monkeypatch.setattr(pool_xp, "play_games", fake_play)
    monkeypatch.setattr(pool_xp, "MAX_GAMES_PER_CALL", 7)
    matrix = pool_xp.pairwise_returns([None] * 4, list("abcd"), "cramped_room", episodes=3)
    assert np.array_equal(matrix.values, 10 * np.arange(4)[:, None] + np.arange(4)[None, :])


def test_games_split_across_calls_give_the_same_matrix(monkeypatch):
    import zsceval.evaluation.pool_xp as pool_xp

    agents, names = _agents()
    whole = pairwise_returns(agents, names, "cramped_room", episodes=3, deterministic=True)
    monkeypatch.setattr(pool_xp, "MAX_GAMES_PER_CALL", 5)  # 27 games in 6 calls, pairs cut across calls
    split = pool_xp.pairwise_returns(agents, names, "cramped_room", episodes=3, deterministic=True)
    pd.testing.assert_frame_equal(whole, split)


def test_bad_input_is_refused():
    agents, names = _agents()
    with pytest.raises(ValueError, match="unique names"):
        pairwise_returns(agents, ["a", "a", "b"], "cramped_room")
    with pytest.raises(ValueError, match="episodes"):
        pairwise_returns(agents, names, "cramped_room", episodes=0)
    with pytest.raises(ValueError, match="no agents"):
        pairwise_returns([], [], "cramped_room")


def test_pool_summary_by_hand():
    names = ["m0@init", "m0@final", "m1@final", "ego"]
    m = pd.DataFrame(
        [[0, 10, 20, 30],
         [12, 100, 40, 80],
         [24, 60, 120, 90],
         [34, 82, 70, 150]], index=names, columns=names, dtype=float)  # fmt: skip
    s = pool_summary(m, names[:3], ego="ego").set_index("member")
    assert s["level"].tolist() == ["init", "final", "final"]
    assert s["self_play"].tolist() == [0.0, 100.0, 120.0]
    # m0@final: with m0@init (10 + 12) / 2 = 11, with m1@final (40 + 60) / 2 = 50 -> 30.5
    assert s.loc["m0@final", "cross_play"] == 30.5
    assert s.loc["m0@init", "cross_play"] == ((10 + 12) / 2 + (20 + 24) / 2) / 2
    assert s.loc["m1@final", "with_ego"] == (90 + 70) / 2 and s.loc["m0@init", "with_ego"] == 32.0
    assert "with_ego" not in pool_summary(m, names[:3]).columns
    with pytest.raises(KeyError, match="m9"):
        pool_summary(m, ["m9"])


def test_group_cross_play_by_hand():
    names = ["m0@init", "m0@final", "m1@final", "m2@final", "ego"]
    m = pd.DataFrame(
        [[0, 10, 20, 30, 5],
         [12, 100, 40, 80, 60],
         [24, 60, 120, 0, 70],
         [30, 84, 10, 140, 90],
         [34, 82, 70, 92, 150]], index=names, columns=names, dtype=float)  # fmt: skip
    g = group_cross_play(m, names[1:4], ego="ego")
    # pairs: (40 + 60) / 2 = 50, (80 + 84) / 2 = 82, (0 + 10) / 2 = 5
    assert g["members"] == 3 and g["self_play"] == 120.0
    assert g["cross_play"] == pytest.approx((50 + 82 + 5) / 3) and g["cross_play_min"] == 5.0
    assert g["with_ego"] == pytest.approx(((60 + 82) / 2 + (70 + 70) / 2 + (90 + 92) / 2) / 3)
    assert g["ego_self_play"] == 150.0
    one = group_cross_play(m, ["m0@init"])
    assert np.isnan(one["cross_play"]) and "with_ego" not in one
    with pytest.raises(ValueError, match="no members"):
        group_cross_play(m, [])
