"""The batched state of B Yōkai games and the deal that starts them.

Dims: B games, n players, Y cards, H hints, C colours, g the field side. Cells are
``p = row * g + col``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from .graph import adjacency, clustered_colours
from .rules import HintStatus, Phase, Rules

__all__ = ["YokaiState", "deal"]


@dataclass
class YokaiState:
    """All that the next steps depend on (tensors on the env's device).

    Attributes:
        pos: ``int64 [B, Y]`` cell of each card.
        colour: ``int64 [B, Y]`` colour of each card in ``0..C-1`` (hidden from the players).
        hint_colours: ``bool [B, H, C]`` the colours each hint card shows.
        hint_status: ``int64 [B, H]`` a :class:`HintStatus` value.
        hint_card: ``int64 [B, H]`` the card a placed hint lies on, -1 if not placed.
        seen: ``bool [B, n, Y]`` player k has peeked at card y at some point of the game (who has
            peeked at what is public; what they saw is not).
        peeked: ``bool [B, Y]`` cards the current player has peeked at during this turn.
        current: ``int64 [B]`` seat of the player whose turn it is.
        phase: ``int64 [B]`` a :class:`Phase` value.
        t: ``int64 [B]`` env steps since the game started.
        clusters: ``int64 [B]`` number of colours that form one cluster (for the shaped reward).
    """

    pos: torch.Tensor
    colour: torch.Tensor
    hint_colours: torch.Tensor
    hint_status: torch.Tensor
    hint_card: torch.Tensor
    seen: torch.Tensor
    peeked: torch.Tensor
    current: torch.Tensor
    phase: torch.Tensor
    t: torch.Tensor
    clusters: torch.Tensor

    @property
    def locked(self) -> torch.Tensor:
        """``bool [B, Y]``: a hint lies on the card, so it can no longer be moved or peeked at."""
        Y = self.pos.shape[1]
        on = self.hint_card[:, :, None] == torch.arange(Y, device=self.pos.device)
        return (on & (self.hint_status == HintStatus.PLACED)[:, :, None]).any(1)

    def replace_rows(self, rows: torch.Tensor, other: YokaiState) -> YokaiState:
        """A copy with rows ``rows`` (``int64 [k]``) taken from ``other`` (k games) (the auto-reset)."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name).clone()
            value[rows] = getattr(other, f.name)
            out[f.name] = value
        return YokaiState(**out)

    def clone(self) -> YokaiState:
        """A deep copy."""
        return YokaiState(**{f.name: getattr(self, f.name).clone() for f in dataclasses.fields(self)})

    def tensors(self) -> dict[str, torch.Tensor]:
        """``{field: tensor}`` (the tensors themselves, not copies)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def _draw_hints(rules: Rules, B: int, device: torch.device, generator: torch.Generator) -> torch.Tensor:
    """``bool [B, H, C]``: per game, a random subset of every category's possible hints with
    Table 4's counts, in a random order (so that a face-down hint's index tells nothing)."""
    parts = []
    for pool, count in zip(rules.hint_pool, rules.hint_counts, strict=True):
        pool = pool.to(device)
        order = torch.rand(B, pool.shape[0], generator=generator, device=device).argsort(-1)
        parts.append(pool[order[:, :count]])
    hints = torch.cat(parts, dim=1)
    shuffle = torch.rand(B, rules.num_hints, generator=generator, device=device).argsort(-1)
    return hints.gather(1, shuffle[:, :, None].expand_as(hints))


def deal(rules: Rules, B: int, device: torch.device, generator: torch.Generator) -> YokaiState:
    """Start B games: cards in the centred square (card y on the y-th cell, row-major) with
    colours shuffled, hints drawn (YLE App. B.2), all hints face down, player 0 to peek.

    Args:
        rules: the configuration.
        B: number of games.
        device: where the tensors live.
        generator: a ``torch.Generator`` on ``device``; the only randomness.

    Returns:
        A :class:`YokaiState` of B fresh games.
    """
    Y, H, n, C = rules.num_cards, rules.num_hints, rules.num_players, rules.num_colours
    colours = torch.arange(C, device=device).repeat_interleave(rules.cards_per_colour)
    order = torch.rand(B, Y, generator=generator, device=device).argsort(-1)
    zeros = torch.zeros(B, dtype=torch.int64, device=device)
    pos = rules.start_cells().to(device).expand(B, Y).clone()
    colour = colours[order]
    clusters = clustered_colours(adjacency(pos, rules.grid), colour, C).sum(-1)
    return YokaiState(
        pos=pos,
        colour=colour,
        hint_colours=_draw_hints(rules, B, device, generator),
        hint_status=torch.full((B, H), int(HintStatus.FACE_DOWN), dtype=torch.int64, device=device),
        hint_card=torch.full((B, H), -1, dtype=torch.int64, device=device),
        seen=torch.zeros(B, n, Y, dtype=torch.bool, device=device),
        peeked=torch.zeros(B, Y, dtype=torch.bool, device=device),
        current=zeros.clone(),
        phase=torch.full_like(zeros, int(Phase.PEEK_FIRST)),
        t=zeros.clone(),
        clusters=clusters,
    )
