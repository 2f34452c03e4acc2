"""The card graph as batched tensor operations: adjacency, reachability, clusters, legal moves.

Cards sit on the cells of a g x g field, one card per cell; a cell is ``p = row * g + col``. Two
cards are adjacent when they share a side (YLE Sec. 2: "connected to at least one other card on
their sides"), so the adjacency matrix ``A [B, |Y|, |Y|]`` follows from the positions alone (YLE
Sec. 4, "Yōkai as a Graph"; Eq. 6-7 update it incrementally, here it is recomputed from the
positions after every move, which gives the same matrix). Hint cards are never adjacent to
anything and are left out of ``A``.

All functions are pure, batched over a leading dim B and device-agnostic.
"""

from __future__ import annotations

import math

import torch

__all__ = [
    "adjacency",
    "card_grid",
    "clustered_colours",
    "is_connected",
    "legal_moves",
    "reachability",
]


def adjacency(pos: torch.Tensor, grid: int) -> torch.Tensor:
    """Side adjacency of cards.

    Args:
        pos: ``int64 [B, Y]`` cell of each card.
        grid: g.

    Returns:
        ``bool [B, Y, Y]``, symmetric, zero diagonal.
    """
    row, col = pos // grid, pos % grid
    dr = (row[:, :, None] - row[:, None, :]).abs()
    dc = (col[:, :, None] - col[:, None, :]).abs()
    return (dr + dc) == 1


def reachability(adj: torch.Tensor) -> torch.Tensor:
    """``R = (I + A)^(Y-1) > 0`` (YLE App. B.1, Eq. 5) by repeated boolean squaring.

    Args:
        adj: ``bool [..., Y, Y]`` adjacency (symmetric).

    Returns:
        ``bool [..., Y, Y]``: ``R[i, j]`` iff j can be reached from i along edges (``R[i, i]``
        always true).
    """
    Y = adj.shape[-1]
    eye = torch.eye(Y, dtype=torch.bool, device=adj.device)
    reach = (adj | eye).to(torch.float32)
    squarings = max(1, math.ceil(math.log2(max(Y - 1, 1))))
    for k in range(squarings):
        reach = reach @ reach
        if k % 3 == 2:  # entries only grow (<= Y * max^2); only their sign matters
            reach = reach.clamp_(max=1.0)
    return reach > 0


def is_connected(adj: torch.Tensor, members: torch.Tensor | None = None) -> torch.Tensor:
    """Whether the member cards form one connected group using only edges between members
    (YLE Sec. 4, ``isConnected``).

    Args:
        adj: ``bool [..., Y, Y]`` adjacency.
        members: ``bool [..., Y]`` the cards considered (all if None); an empty set is connected.

    Returns:
        ``bool [...]``.
    """
    if members is None:
        members = torch.ones(adj.shape[:-1], dtype=torch.bool, device=adj.device)
    pair = members[..., :, None] & members[..., None, :]
    reach = reachability(adj & pair)
    return (reach | ~pair).flatten(-2).all(-1)


def clustered_colours(adj: torch.Tensor, colour: torch.Tensor, num_colours: int) -> torch.Tensor:
    """Which colours form a single connected cluster (YLE Sec. 4, Eq. 2 per colour).

    Args:
        adj: ``bool [B, Y, Y]`` adjacency.
        colour: ``int64 [B, Y]`` colour of each card in ``0..num_colours-1``.
        num_colours: |C|.

    Returns:
        ``bool [B, C]``; the game is won when every entry of a row is true.
    """
    same = colour[:, :, None] == colour[:, None, :]
    reach = reachability(adj & same)
    card_ok = (reach | ~same).all(-1)  # [B, Y]: reaches every card of its colour
    onehot = torch.nn.functional.one_hot(colour, num_colours).bool()  # [B, Y, C]
    return ~((~card_ok)[:, :, None] & onehot).any(1)


def card_grid(pos: torch.Tensor, grid: int) -> torch.Tensor:
    """Which card lies on each cell.

    Args:
        pos: ``int64 [B, Y]`` cell of each card (cells distinct within a game).
        grid: g.

    Returns:
        ``int64 [B, g*g]``: the card index on the cell, -1 where the cell is empty.
    """
    B, Y = pos.shape
    out = torch.full((B, grid * grid), -1, dtype=torch.int64, device=pos.device)
    ids = torch.arange(Y, device=pos.device).expand(B, Y)
    return out.scatter(1, pos, ids)


def _component_sets(pos: torch.Tensor, adj: torch.Tensor, grid: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Connected components of the cards without card i, for every i, named by i's sides.

    Every component of ``G - i`` holds a side neighbour of i (G is connected), and i has at most
    4 sides, so a component is named by the set of sides (bit d for up, down, left, right) whose
    neighbour it holds: distinct components get disjoint, non-empty sets.

    Returns:
        ``sets uint8 [B, Y(i), Y(j)]``: the set of j's component in ``G - i`` (0 for ``j == i``);
        ``every uint8 [B, Y(i)]``: the union of all components' sets.
    """
    B, Y, _ = adj.shape
    eye = torch.eye(Y, dtype=torch.bool, device=adj.device)
    keep = ~eye  # keep[i, j]: card j stays when card i is lifted
    lifted = adj[:, None] & keep[None, :, :, None] & keep[None, :, None, :]  # [B, i, Y, Y]
    reach = reachability(lifted)
    row, col = pos // grid, pos % grid
    side_r = row[:, :, None] + torch.tensor([-1, 1, 0, 0], device=pos.device)  # [B, i, 4]
    side_c = col[:, :, None] + torch.tensor([0, 0, -1, 1], device=pos.device)
    inside = (side_r >= 0) & (side_r < grid) & (side_c >= 0) & (side_c < grid)
    cells = card_grid(pos, grid)
    side_card = cells.gather(1, (side_r.clamp(0, grid - 1) * grid + side_c.clamp(0, grid - 1)).view(B, 4 * Y))
    side_card = torch.where(inside.view(B, 4 * Y), side_card, -1).view(B, Y, 4)  # -1: no card there
    reaches = reach.gather(3, side_card.clamp(min=0)[:, :, None, :].expand(B, Y, Y, 4))  # [B, i, j, 4]
    reaches &= (side_card >= 0)[:, :, None, :]
    weights = torch.tensor([1, 2, 4, 8], dtype=torch.uint8, device=pos.device)
    sets = (reaches.to(torch.uint8) * weights).sum(-1, dtype=torch.uint8)
    sets = torch.where(eye[None], torch.zeros_like(sets), sets)
    every = ((side_card >= 0).to(torch.uint8) * weights).sum(-1, dtype=torch.uint8)
    return sets, every


def legal_moves(pos: torch.Tensor, movable: torch.Tensor, grid: int) -> torch.Tensor:
    """Where each card may be moved: every target cell whose resulting layout keeps all cards
    connected by their sides, without overlap and inside the field (YLE App. B.1, Eq. 4-5).

    Equivalent to testing ``isConnected`` on every layout reachable by one move, computed as: lift
    card i, find the components of the remaining cards (at most 4: each holds one of i's side
    neighbours), and allow every empty cell whose side neighbours touch all of these components
    (which also requires at least one neighbour). The card's own cell is not a move.

    Args:
        pos: ``int64 [B, Y]`` cell of each card (a connected layout).
        movable: ``bool [B, Y]`` cards that may move (not locked by a hint).
        grid: g.

    Returns:
        ``bool [B, Y, g*g]``: ``[b, i, p]`` iff card i may move to cell p.
    """
    B, Y = pos.shape
    sets, every = _component_sets(pos, adjacency(pos, grid), grid)
    cells = card_grid(pos, grid)  # [B, g*g]
    index = torch.where(cells < 0, Y, cells)  # empty cells read the empty set at index Y
    sets = torch.cat([sets, torch.zeros_like(sets[..., :1])], dim=-1)  # [B, i, Y+1]
    on_cell = sets.gather(2, index[:, None, :].expand(B, Y, grid * grid)).view(B, Y, grid, grid)
    padded = torch.nn.functional.pad(on_cell, (1, 1, 1, 1))
    touched = (
        padded[..., :-2, 1:-1] | padded[..., 2:, 1:-1] | padded[..., 1:-1, :-2] | padded[..., 1:-1, 2:]
    ).flatten(2)
    empty = (cells < 0)[:, None, :]
    return (touched == every[..., None]) & empty & movable[..., None]
