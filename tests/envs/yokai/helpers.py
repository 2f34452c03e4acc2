"""Helpers shared by the Yōkai tests: hand-built positions and legal random play."""

from __future__ import annotations

import dataclasses

import torch

from zsceval.envs.yokai import YokaiEnv
from zsceval.envs.yokai.graph import adjacency, clustered_colours


def cells_to_pos(cells: list[tuple[int, int]], grid: int) -> torch.Tensor:
    """``int64 [Y]`` flat cells of ``(row, col)`` pairs."""
    return torch.tensor([r * grid + c for r, c in cells], dtype=torch.int64)


def place(env: YokaiEnv, cells=None, colours=None, **fields):
    """Put game 0..B-1 of ``env`` (after ``reset``) into a hand-built position: the same ``cells``
    (list of ``(row, col)``) and ``colours`` (list of ints) in every game, other fields as given
    (tensors broadcast over B); ``clusters`` is recomputed. Returns the ``Step`` of
    ``env.set_state``."""
    state = env.state.clone()
    B = env.num_envs
    if cells is not None:
        state.pos = cells_to_pos(cells, env.rules.grid).expand(B, -1).clone()
    if colours is not None:
        state.colour = torch.tensor(colours, dtype=torch.int64).expand(B, -1).clone()
    for name, value in fields.items():
        value = torch.as_tensor(value)
        setattr(state, name, value.expand_as(getattr(state, name)).clone().to(getattr(state, name).dtype))
    clustered = clustered_colours(adjacency(state.pos, env.rules.grid), state.colour, env.rules.num_colours)
    state = dataclasses.replace(state, clusters=clustered.sum(-1))
    return env.set_state(state)


def random_legal(avail: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """``int64 [B, n]``: a uniformly random available action per agent."""
    B, n, A = avail.shape
    return torch.multinomial(avail.view(B * n, A).float(), 1, generator=gen).view(B, n)
