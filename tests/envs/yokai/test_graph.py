"""Hand-built positions (YLE Fig. 10 and 11): legal and illegal layouts, the legal targets of a
card, cards with no legal move, clusters (Eq. 2), reachability (Eq. 5)."""

from __future__ import annotations

import torch

from zsceval.envs.yokai.graph import (
    adjacency,
    card_grid,
    clustered_colours,
    is_connected,
    legal_moves,
    reachability,
)

from . import reference
from .helpers import cells_to_pos

G = 9
SQUARE = [(3 + k // 3, 3 + k % 3) for k in range(9)]  # the start (Fig. 10 / 11, example 1)
LINE = [(4, c) for c in range(9)]  # a row across the whole field
# Two 2x2 blocks linked by card 4 (Fig. 11, example 3's narrow band).
BRIDGE = [(3, 1), (3, 2), (4, 1), (4, 2), (3, 3), (3, 4), (3, 5), (4, 4), (4, 5)]


def targets(cells, card, movable=None, grid=G) -> set[tuple[int, int]]:
    pos = cells_to_pos(cells, grid)[None]
    movable = torch.ones(1, len(cells), dtype=torch.bool) if movable is None else movable[None]
    legal = legal_moves(pos, movable, grid)[0, card]
    return {(int(p) // grid, int(p) % grid) for p in legal.nonzero().flatten()}


def test_start_square_every_card_can_move_with_the_expected_targets():
    ring = {(2, 3), (2, 4), (2, 5), (6, 3), (6, 4), (6, 5), (3, 2), (4, 2), (5, 2), (3, 6), (4, 6), (5, 6)}
    assert targets(SQUARE, 4) == ring  # the centre: anywhere around the remaining ring
    assert targets(SQUARE, 0) == ring - {(2, 3), (3, 2)}  # a corner: not next to its own old cell only
    assert targets(SQUARE, 1) == ring - {(2, 4)}  # an edge card
    assert all(targets(SQUARE, k) for k in range(9)), "Fig. 11 ex. 1: every card can move at the start"


def test_cards_inside_a_narrow_band_have_no_legal_move():
    for k in range(1, 8):  # lifting an inner card splits the line; only its own cell joins both halves
        assert targets(LINE, k) == set(), k
    assert targets(LINE, 0) == {(r, c) for r in (3, 5) for c in range(1, 9)}
    assert targets(LINE, 8) == {(r, c) for r in (3, 5) for c in range(0, 8)}


def test_a_bridge_card_may_move_only_to_the_other_cell_joining_both_blocks():
    assert targets(BRIDGE, 4) == {(4, 3)}
    assert targets(BRIDGE, 4) == reference.legal_targets(BRIDGE, 4, G)


def test_locked_cards_never_move_and_the_field_border_bounds_targets():
    movable = torch.zeros(9, dtype=torch.bool)
    movable[0] = True  # every other card carries a hint
    assert targets(SQUARE, 4, movable=movable) == set()
    assert targets(SQUARE, 0, movable=movable) == targets(SQUARE, 0)
    edge = [(0, c) for c in range(9)]  # along the top border: nothing above row 0
    assert targets(edge, 0) == {(1, c) for c in range(1, 9)}


def test_legal_moves_match_the_brute_force_definition_on_the_figures():
    for cells in (SQUARE, LINE, BRIDGE):
        for k in range(9):
            assert targets(cells, k) == reference.legal_targets(cells, k, G), (cells, k)


def test_connectivity_of_legal_and_illegal_layouts():
    gap = SQUARE[:8] + [(8, 8)]  # Fig. 10 "illegal": a card not touching any other
    diagonal = [(0, 0), (1, 1)]  # corners touching only diagonally are not connected
    pos = torch.stack([cells_to_pos(c, G) for c in (SQUARE, LINE, BRIDGE, gap)])
    assert is_connected(adjacency(pos, G)).tolist() == [True, True, True, False]
    assert not bool(is_connected(adjacency(cells_to_pos(diagonal, G)[None], G))[0])
    # Wrapping around the field edge does not make (0, 8) and (1, 0) neighbours.
    assert not bool(adjacency(cells_to_pos([(0, 8), (1, 0)], G)[None], G)[0, 0, 1])


def test_clustered_colours_per_eq_2():
    pos = cells_to_pos(SQUARE, G)[None]
    rows = torch.tensor([[0, 0, 0, 1, 1, 1, 2, 2, 2]])  # one colour per row: won
    assert clustered_colours(adjacency(pos, G), rows, 3).tolist() == [[True, True, True]]
    # Fig. 2's lost game: blue (0) clustered, green and red split.
    mixed = torch.tensor([[0, 0, 0, 1, 2, 1, 2, 1, 2]])
    assert clustered_colours(adjacency(pos, G), mixed, 3).tolist() == [[True, False, False]]
    # A colour whose cards only meet through another colour's card is not clustered.
    through = torch.tensor([[1, 0, 1, 0, 0, 1, 2, 2, 2]])
    assert clustered_colours(adjacency(pos, G), through, 3).tolist() == [[True, False, True]]


def test_reachability_equals_the_matrix_power_of_eq_5():
    gen = torch.Generator().manual_seed(0)
    adj = torch.rand(50, 9, 9, generator=gen) < 0.15
    adj = adj | adj.transpose(1, 2)
    adj &= ~torch.eye(9, dtype=torch.bool)
    power = torch.linalg.matrix_power(torch.eye(9) + adj.double(), 8) > 0
    assert torch.equal(reachability(adj), power)


def test_card_grid_marks_each_card_on_its_cell():
    grid = card_grid(cells_to_pos(BRIDGE, G)[None], G)[0]
    assert (grid >= 0).sum() == 9 and grid[3 * G + 3] == 4 and grid[0] == -1
