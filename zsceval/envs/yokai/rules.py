"""The fixed rules of a Yōkai game: versions, hint counts, turn phases and the action layout.

Everything here is a constant of a configuration (version and player count); nothing holds
batched state. Sources: YLE paper Sec. 2 (turn), Sec. 4 (action space), App. B.2 (Eq. 8, Table 4).
"""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass
from functools import cached_property

import torch

__all__ = [
    "HINT_COUNTS",
    "VERSIONS",
    "ActionKind",
    "ActionLayout",
    "HintStatus",
    "Phase",
    "Rules",
]


@dataclass(frozen=True)
class Version:
    """A deck of ``num_colours`` x ``cards_per_colour`` cards on a ``grid`` x ``grid`` field."""

    num_colours: int
    cards_per_colour: int
    grid: int


# YLE Sec. 4 and App. B.2: "3x3" = 9 cards of 3 colours on 9x9, "4x4" (the card game) = 16 cards
# of 4 colours on 10x10.
VERSIONS: dict[str, Version] = {
    "3x3": Version(num_colours=3, cards_per_colour=3, grid=9),
    "4x4": Version(num_colours=4, cards_per_colour=4, grid=10),
}

# YLE App. B.2, Table 4: hint cards per category (1-, 2-, 3-colour hints) by version and players.
HINT_COUNTS: dict[str, dict[int, tuple[int, ...]]] = {
    "4x4": {2: (2, 3, 2), 3: (2, 4, 3), 4: (3, 4, 3)},
    "3x3": {2: (1, 3), 3: (2, 3), 4: (3, 3)},
}


class Phase(enum.IntEnum):
    """The four sub-steps of a turn (YLE Sec. 2, Fig. 2); the observation shows ``phase + 1``."""

    PEEK_FIRST = 0  # peek at a first card, or end the game
    PEEK_SECOND = 1  # peek at a second, different card
    MOVE = 2  # move one card (pass only when no card has a legal move)
    HINT = 3  # reveal a face-down hint or place a revealed one on a card; ends the turn


class HintStatus(enum.IntEnum):
    """Where a hint card is (the observation shows the value itself)."""

    FACE_DOWN = 1  # in the pile, colours hidden
    REVEALED = 2  # face up next to the field, colours public
    PLACED = 3  # on a Yōkai card, which is locked from then on


class ActionKind(enum.IntEnum):
    """The blocks of the action space, in the order of YLE Eq. 8."""

    NOOP = 0
    PEEK = 1
    MOVE = 2
    REVEAL = 3
    PLACE = 4
    END = 5


@dataclass(frozen=True)
class ActionLayout:
    """Index arithmetic of the categorical action space (YLE App. B.2, Eq. 8).

    Blocks, in order: ``NOOP`` (1), ``PEEK`` card y (|Y|), ``MOVE`` card y to cell p (|Y| g²,
    index ``y * g² + p`` with ``p = row * g + col``), ``REVEAL`` hint h (|H|), ``PLACE`` hint h on
    the card at cell p (|H| g², index ``h * g² + p``), ``END`` the game (1). The total
    ``2 + (|Y| + |H|)(1 + g²)`` is 1,068 for 2-player 3x3 (the paper's figure); see docs/yokai.md
    for why the placement block counts cells, not cards.
    """

    num_cards: int
    num_hints: int
    grid: int

    @property
    def cells(self) -> int:
        """g², the cells of the field."""
        return self.grid * self.grid

    @property
    def peek(self) -> int:
        """First PEEK index."""
        return 1

    @property
    def move(self) -> int:
        """First MOVE index."""
        return self.peek + self.num_cards

    @property
    def reveal(self) -> int:
        """First REVEAL index."""
        return self.move + self.num_cards * self.cells

    @property
    def place(self) -> int:
        """First PLACE index."""
        return self.reveal + self.num_hints

    @property
    def end(self) -> int:
        """The END index (the last action)."""
        return self.place + self.num_hints * self.cells

    @property
    def size(self) -> int:
        """A, the number of actions."""
        return self.end + 1

    def decode(self, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Split action indices into their parts.

        Args:
            actions: ``int64 [...]`` indices in ``0..A-1``.

        Returns:
            ``(kind, card, hint, cell)``, each ``int64 [...]``: ``kind`` an :class:`ActionKind`,
            ``card`` the card of PEEK / MOVE, ``hint`` the hint of REVEAL / PLACE, ``cell`` the
            target cell of MOVE / PLACE; parts an action does not have are 0.
        """
        a = actions
        kind = torch.zeros_like(a)
        for k, start in (
            (ActionKind.PEEK, self.peek),
            (ActionKind.MOVE, self.move),
            (ActionKind.REVEAL, self.reveal),
            (ActionKind.PLACE, self.place),
            (ActionKind.END, self.end),
        ):
            kind = torch.where(a >= start, int(k), kind)
        zero = torch.zeros_like(a)
        card = torch.where(kind == ActionKind.PEEK, a - self.peek, zero)
        move = (a - self.move).clamp(min=0)
        card = torch.where(kind == ActionKind.MOVE, move // self.cells, card)
        cell = torch.where(kind == ActionKind.MOVE, move % self.cells, zero)
        hint = torch.where(kind == ActionKind.REVEAL, a - self.reveal, zero)
        place = (a - self.place).clamp(min=0)
        hint = torch.where(kind == ActionKind.PLACE, place // self.cells, hint)
        cell = torch.where(kind == ActionKind.PLACE, place % self.cells, cell)
        return kind, card, hint, cell


@dataclass(frozen=True)
class Rules:
    """One configuration of the game: version and number of players.

    Args:
        version: ``"3x3"`` or ``"4x4"``.
        num_players: 2, 3 or 4.

    Raises:
        ValueError: an unknown version or player count (the valid ones listed).
    """

    version: str = "3x3"
    num_players: int = 2

    def __post_init__(self) -> None:
        if self.version not in VERSIONS:
            raise ValueError(f"unknown Yokai version {self.version!r}; valid: {', '.join(VERSIONS)}")
        counts = HINT_COUNTS[self.version]
        if self.num_players not in counts:
            valid = ", ".join(str(k) for k in counts)
            raise ValueError(f"Yokai is played by {valid} players, got num_agents={self.num_players}")

    @property
    def num_colours(self) -> int:
        """|C|."""
        return VERSIONS[self.version].num_colours

    @property
    def cards_per_colour(self) -> int:
        """Cards of each colour (3 or 4)."""
        return VERSIONS[self.version].cards_per_colour

    @property
    def num_cards(self) -> int:
        """|Y| = |C| x cards per colour."""
        return self.num_colours * self.cards_per_colour

    @property
    def grid(self) -> int:
        """g, the side of the square field (YLE App. B.2: 9 for 3x3, 10 for 4x4)."""
        return VERSIONS[self.version].grid

    @property
    def hint_counts(self) -> tuple[int, ...]:
        """Hint cards per category, ``[k-1]`` = hints showing k colours (YLE Table 4)."""
        return HINT_COUNTS[self.version][self.num_players]

    @property
    def num_hints(self) -> int:
        """|H| (YLE Table 4 "Sum")."""
        return sum(self.hint_counts)

    @property
    def max_game_length(self) -> int:
        """``8 |H|`` env steps: 2 |H| turns of 4 phases (YLE App. B.2)."""
        return 8 * self.num_hints

    @cached_property
    def actions(self) -> ActionLayout:
        """The action layout of this configuration."""
        return ActionLayout(self.num_cards, self.num_hints, self.grid)

    @cached_property
    def hint_pool(self) -> tuple[torch.Tensor, ...]:
        """Every possible hint of each category: ``bool [M_k, |C|]`` colour sets with k colours
        (4 one-, 6 two- and 4 three-colour hints for 4 colours; YLE App. B.2)."""
        pools = []
        for k in range(1, len(self.hint_counts) + 1):
            combos = list(itertools.combinations(range(self.num_colours), k))
            pool = torch.zeros(len(combos), self.num_colours, dtype=torch.bool)
            for row, combo in enumerate(combos):
                pool[row, list(combo)] = True
            pools.append(pool)
        return tuple(pools)

    def start_cells(self) -> torch.Tensor:
        """``int64 [|Y|]``: the cells of the starting square, centred on the field, row-major
        (rows and columns 3..5 for 3x3 on 9x9, 3..6 for 4x4 on 10x10; YLE App. B.2)."""
        side = int(round(self.num_cards**0.5))
        offset = (self.grid - side) // 2
        rows = torch.arange(side).repeat_interleave(side) + offset
        cols = torch.arange(side).repeat(side) + offset
        return rows * self.grid + cols
