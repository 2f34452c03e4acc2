"""Sizes and counts of the paper: Eq. 8's action space, Table 4's hints, the starting square."""

from __future__ import annotations

import pytest
import torch

from zsceval.envs import make
from zsceval.envs.yokai import ActionKind, ActionLayout, Rules, YokaiEnv
from zsceval.envs.yokai.state import deal


def test_action_space_size_of_eq_8():
    # YLE App. B.2: 1,068 actions for 2-player 3x3 = 2 + (|Y| + |H|)(1 + g^2) = 2 + 13 * 82.
    assert YokaiEnv(1, num_agents=2, version="3x3").num_actions == 1068
    # 2-player 4x4 with the same formula: 2 + 23 * 101 = 2,325. The paper prints 2,322, which no
    # reading of Eq. 8 with Table 4's 7 hints and g = 10 gives (docs/yokai.md, "Action space").
    assert YokaiEnv(1, num_agents=2, version="4x4").num_actions == 2325
    assert YokaiEnv(1, num_agents=4, version="3x3").num_actions == 2 + (9 + 6) * 82
    assert YokaiEnv(1, num_agents=3, version="4x4").num_actions == 2 + (16 + 9) * 101


def test_action_layout_blocks_follow_eq_8_order_and_decode_round_trips():
    lay = ActionLayout(num_cards=9, num_hints=4, grid=9)
    assert (lay.peek, lay.move, lay.reveal, lay.place, lay.end) == (1, 10, 739, 743, 1067)
    a = torch.tensor([0, 1, 9, 10, 10 + 81 * 3 + 40, 738, 739, 742, 743, 743 + 81 * 2 + 7, 1066, 1067])
    kind, card, hint, cell = lay.decode(a)
    K = ActionKind
    assert kind.tolist() == [K.NOOP, K.PEEK, K.PEEK, K.MOVE, K.MOVE, K.MOVE, K.REVEAL, K.REVEAL,
                             K.PLACE, K.PLACE, K.PLACE, K.END]  # fmt: skip
    assert card.tolist() == [0, 0, 8, 0, 3, 8, 0, 0, 0, 0, 0, 0]
    assert cell.tolist() == [0, 0, 0, 0, 40, 80, 0, 0, 0, 7, 80, 0]
    assert hint.tolist() == [0, 0, 0, 0, 0, 0, 0, 3, 0, 2, 3, 0]


@pytest.mark.parametrize(
    ("version", "players", "counts"),
    [("4x4", 2, (2, 3, 2)), ("4x4", 3, (2, 4, 3)), ("4x4", 4, (3, 4, 3)),
     ("3x3", 2, (1, 3)), ("3x3", 3, (2, 3)), ("3x3", 4, (3, 3))],
)  # fmt: skip
def test_table_4_hint_counts_in_every_deal(version, players, counts):
    rules = Rules(version, players)
    assert rules.hint_counts == counts and rules.num_hints == sum(counts)
    state = deal(rules, 64, torch.device("cpu"), torch.Generator().manual_seed(1))
    sizes = state.hint_colours.sum(-1)  # [B, H]: colours per hint
    for k, count in enumerate(counts, start=1):
        assert ((sizes == k).sum(1) == count).all(), f"{k}-colour hints"
    # Hints of a deal are distinct cards (drawn without replacement within a category).
    codes = (state.hint_colours.long() * (2 ** torch.arange(rules.num_colours))).sum(-1)
    assert all(len(set(row)) == rules.num_hints for row in codes.tolist())
    # The order is shuffled: the 1-colour hint is not always first.
    assert len(set((sizes == 1).float().argmax(1).tolist())) > 1


def test_deal_has_the_centred_square_and_each_colour_cards_per_colour_times():
    for version, side, offset in (("3x3", 3, 3), ("4x4", 4, 3)):
        rules = Rules(version, 2)
        state = deal(rules, 32, torch.device("cpu"), torch.Generator().manual_seed(0))
        g = rules.grid
        rows, cols = state.pos[0] // g, state.pos[0] % g
        assert rows.tolist() == [offset + k // side for k in range(side * side)]
        assert cols.tolist() == [offset + k % side for k in range(side * side)]
        counts = torch.nn.functional.one_hot(state.colour, rules.num_colours).sum(1)
        assert (counts == rules.cards_per_colour).all()
        assert len({tuple(c) for c in state.colour.tolist()}) > 1, "colours are shuffled per game"
        assert (state.hint_status == 1).all() and (state.phase == 0).all() and (state.current == 0).all()


def test_bad_configurations_list_the_valid_choices():
    with pytest.raises(ValueError, match="valid: 3x3, 4x4"):
        make("yokai", num_envs=1, version="5x5")
    with pytest.raises(ValueError, match="2, 3, 4 players"):
        make("yokai", num_envs=1, num_agents=5)
    with pytest.raises(ValueError, match="num_envs"):
        YokaiEnv(0)
    with pytest.raises(ValueError, match="horizon"):
        YokaiEnv(1, horizon=0)
    assert YokaiEnv(1).horizon == 32 and YokaiEnv(1, version="4x4", num_agents=4).horizon == 80
