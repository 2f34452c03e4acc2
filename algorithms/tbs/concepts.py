"""TBS concept sets: what a ToM model predicts about the partner (TBS paper, Sec. 2.3, 3.3, App. C).

A **concept** is a high-level use of the INTERACT button, "pickup/drop [item] off/on [tile]"
(paper App. C.1). The engine reports, per step and agent, the interaction kind
(:class:`~zsceval.envs.overcooked.constants.Interaction`, ``Step.interactions``) and the flat cell
``y * W + x`` of the tile interacted with (``Step.interaction_cell``). A :class:`ConceptSet` maps
``(kind, cell)`` to a concept index in ``0..M-1`` or -1 (no concept).

The 11 interaction kinds of onion soup (the paper's list, engine names in brackets; the engine's
"dish" is the paper's plate and the engine's "soup" the paper's dish):

====  ==========================  ==========================  ============
 k    paper concept               engine ``Interaction``       tile class
====  ==========================  ==========================  ============
 0    onion_pickup_from_pile      PICKUP_ONION_DISPENSER      onion pile
 1    plate_pickup_from_pile      PICKUP_DISH_DISPENSER       dish pile
 2    dish_pickup_from_pot        SOUP_PICKUP_POT             pot
 3    onion_pickup_from_counter   PICKUP_ONION_COUNTER        counter
 4    plate_pickup_from_counter   PICKUP_DISH_COUNTER         counter
 5    dish_pickup_from_counter    PICKUP_SOUP_COUNTER         counter
 6    onion_drop_in_pot           POT_ONION                   pot
 7    onion_drop_on_counter       PUT_ONION_COUNTER           counter
 8    plate_drop_on_counter       PUT_DISH_COUNTER            counter
 9    dish_drop_on_counter        PUT_SOUP_COUNTER            counter
 10   dish_delivery               DELIVER                     serving tile
====  ==========================  ==========================  ============

Every other kind maps to no concept: ``NONE`` (no INTERACT), ``NOOP`` and the ``IDLE_*`` kinds
(an INTERACT that changed nothing is not a high-level action), ``COOK`` (the paper's onion-soup
layouts cook by themselves at 3 onions; only multi-recipe layouts have it) and the tomato kinds
(the paper uses onion soup only).

Granularities (:data:`GRANULARITIES`):

* ``fine`` (paper main setting): each kind is split by the tile it touches. Pots, onion piles,
  dish piles and serving tiles are told apart individually, up to 4 of each type (row-major
  order; a 5th and later tile of a type share the 4th tile's concept). Counters are split into
  **middle counters**, told apart individually (up to 4, same rule), and one class "other" for
  every remaining counter. A *middle counter* is a counter cell with walkable floor on both
  sides along one axis (west and east, or north and south): a counter that items can be passed
  across. This selects exactly the layouts the paper names: counter_circuit (the 4 island
  counters), bothway_coordination (2), coordination_ring (1), forced_coordination (the 3
  divider counters) and none in cramped_room, asymmetric_advantages or large_room.
  **M is layout-sized**, not padded to 44: each kind gets one concept per distinct tile class
  that exists in the layout (e.g. M = 12 on cramped_room, 38 on counter_circuit), so no output
  unit is dead; the paper's 44 = 11 kinds x 4 tiles is the upper bound of its count, and the
  ToM model's ``num_concepts`` records M.
* ``coarse``: the 11 kinds (M = 11), tiles merged.
* ``very_coarse`` (M = 6; the paper gives the size only, this split is ours): item x direction,
  ``onion_pickup`` (kinds 0, 3), ``plate_pickup`` (1, 4), ``dish_pickup`` (2, 5), ``onion_drop``
  (6, 7), ``plate_drop`` (8), ``dish_drop`` (9, 10: on a counter or at the serving tile).
* ``action``: the 6 primitive actions (N, S, E, W, STAY, INTERACT); the concept at a step is the
  action the partner takes there, so the label is the partner's next action.

Labels (paper App. D.3): the label at step t is the one-hot vector of the next concept the
partner performs at or after t in the same episode, all zeros if it performs none before the
episode ends (:func:`next_interaction_labels`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from zsceval.envs.overcooked.constants import Action, Interaction
from zsceval.envs.overcooked.layout import Layout, load_layout

__all__ = [
    "CONCEPT_KINDS",
    "GRANULARITIES",
    "MAX_SPECIAL_TILES",
    "VERY_COARSE",
    "ConceptSet",
    "build_concept_set",
    "middle_counters",
    "next_interaction_labels",
]

GRANULARITIES = ("fine", "coarse", "very_coarse", "action")
MAX_SPECIAL_TILES = 4
"""Special tiles told apart per tile type (paper App. C.1: "up to 4 special tiles of each type")."""

# (paper concept name, engine interaction kind, tile class): paper App. C.1, in the paper's order.
CONCEPT_KINDS: tuple[tuple[str, Interaction, str], ...] = (
    ("onion_pickup_from_pile", Interaction.PICKUP_ONION_DISPENSER, "O"),
    ("plate_pickup_from_pile", Interaction.PICKUP_DISH_DISPENSER, "D"),
    ("dish_pickup_from_pot", Interaction.SOUP_PICKUP_POT, "P"),
    ("onion_pickup_from_counter", Interaction.PICKUP_ONION_COUNTER, "X"),
    ("plate_pickup_from_counter", Interaction.PICKUP_DISH_COUNTER, "X"),
    ("dish_pickup_from_counter", Interaction.PICKUP_SOUP_COUNTER, "X"),
    ("onion_drop_in_pot", Interaction.POT_ONION, "P"),
    ("onion_drop_on_counter", Interaction.PUT_ONION_COUNTER, "X"),
    ("plate_drop_on_counter", Interaction.PUT_DISH_COUNTER, "X"),
    ("dish_drop_on_counter", Interaction.PUT_SOUP_COUNTER, "X"),
    ("dish_delivery", Interaction.DELIVER, "S"),
)

# very_coarse concept names and, per coarse kind k above, its very_coarse index.
VERY_COARSE = ("onion_pickup", "plate_pickup", "dish_pickup", "onion_drop", "plate_drop", "dish_drop")
_VERY_COARSE_OF_KIND = (0, 1, 2, 0, 1, 2, 3, 3, 4, 5, 5)

_NUM_KINDS = len(Interaction)


def middle_counters(layout: Layout) -> list[tuple[int, int]]:
    """The layout's middle counters, ``(x, y)`` in row-major order.

    A middle counter is a counter (``X``) with floor on both sides along one axis (west and
    east, or north and south), i.e. a counter items can be passed across (module docstring).
    """
    H, W = layout.height, layout.width

    def floor(x: int, y: int) -> bool:
        return 0 <= x < W and 0 <= y < H and layout.terrain[y][x] == " "

    return [
        (x, y)
        for x, y in layout.cells("X")
        if (floor(x - 1, y) and floor(x + 1, y)) or (floor(x, y - 1) and floor(x, y + 1))
    ]


def _tile_classes(layout: Layout, tile: str) -> tuple[list[str], dict[tuple[int, int], int]]:
    """Class names and ``{cell: class}`` of one tile type under the ``fine`` granularity."""
    if tile == "X":
        special = middle_counters(layout)
        names = ["other"] if len(special) < len(layout.cells("X")) else []
        first = len(names)
        cls = {c: 0 for c in layout.cells("X")}
    else:
        special, names, first, cls = layout.cells(tile), [], 0, {}
    for rank, (x, y) in enumerate(special):
        slot = min(rank, MAX_SPECIAL_TILES - 1)
        if slot == rank:
            names.append(f"({x},{y})")
        elif rank == MAX_SPECIAL_TILES:  # tiles beyond the 4th share the 4th's concept
            names[-1] += "+"
        cls[(x, y)] = first + slot
    return names, cls


@dataclass(frozen=True, eq=False)
class ConceptSet:
    """The concepts of one layout at one granularity (module docstring).

    Attributes:
        layout: layout name.
        granularity: one of :data:`GRANULARITIES`.
        names: the M concept names, e.g. ``onion_drop_in_pot@(3,0)``, ``onion_drop_on_counter@other``.
        lookup: ``int64 [len(Interaction), H * W]`` concept index of (kind, flat cell), -1 = none
            (all -1 for ``action``, whose concepts come from the actions).
    """

    layout: str
    granularity: str
    names: tuple[str, ...]
    lookup: np.ndarray = field(repr=False)

    @property
    def num_concepts(self) -> int:
        """M."""
        return len(self.names)

    def concept_index(
        self, interactions: torch.Tensor, cells: torch.Tensor, actions: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Concept performed at each step: ``int64`` of the inputs' shape, -1 where none.

        Args:
            interactions: ``int64 [...]`` interaction kinds (``Step.interactions``).
            cells: ``int64 [...]`` flat cells ``y * W + x`` (``Step.interaction_cell``), -1 = none.
            actions: ``int64 [...]`` the actions taken (needed, and used, only by ``action``).

        Raises:
            ValueError: ``action`` granularity without ``actions``.
        """
        if self.granularity == "action":
            if actions is None:
                raise ValueError("the 'action' concept set needs the actions")
            return actions.to(torch.int64).clone()
        lookup = torch.as_tensor(self.lookup, device=interactions.device)
        idx = lookup[interactions.long(), cells.long().clamp(min=0)]
        return torch.where(cells >= 0, idx, torch.full_like(idx, -1))


def build_concept_set(layout: str | Layout, granularity: str = "fine") -> ConceptSet:
    """The :class:`ConceptSet` of a layout (name, alias, path or :class:`Layout`).

    Raises:
        ValueError: unknown granularity (valid ones listed) or layout.
    """
    if granularity not in GRANULARITIES:
        raise ValueError(f"unknown concept granularity {granularity!r}; valid: {', '.join(GRANULARITIES)}")
    lay = load_layout(layout)
    W = lay.width
    lookup = np.full((_NUM_KINDS, lay.height * W), -1, dtype=np.int64)
    if granularity == "action":
        return ConceptSet(lay.name, granularity, tuple(a.name for a in Action), lookup)
    names: list[str] = []
    for k, (name, kind, tile) in enumerate(CONCEPT_KINDS):
        cells = [y * W + x for x, y in lay.cells(tile)]
        if granularity == "coarse":
            lookup[kind, cells] = k
            names.append(name)
        elif granularity == "very_coarse":
            lookup[kind, cells] = _VERY_COARSE_OF_KIND[k]
        else:
            tile_names, cls = _tile_classes(lay, tile)
            for (x, y), c in cls.items():
                lookup[kind, y * W + x] = len(names) + c
            names += [f"{name}@{t}" for t in tile_names]
    if granularity == "very_coarse":
        names = list(VERY_COARSE)
    return ConceptSet(lay.name, granularity, tuple(names), lookup)


def next_interaction_labels(
    concept_idx: torch.Tensor, done: torch.Tensor, num_concepts: int, return_known: bool = False
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Next-concept labels by a backward scan (paper App. D.3).

    The label at step t is the one-hot vector of the first concept performed at a step t' >= t of
    the same episode, all zeros if none is performed before the episode ends. ``done[t]`` marks
    the last step of an episode (the env's ``Step.done`` of the step taken at t).

    At the rollout end the last episode may be cut (``done[T-1]`` False): its steps after its last
    concept get zeros too, although the partner might interact later; ``known`` is False exactly
    there, so a trainer can mask them out (``train_tom(mask=known)``).

    Args:
        concept_idx: ``int64 [T, B]`` concept performed at each step, -1 = none.
        done: ``bool [T, B]`` episode ends after step t.
        num_concepts: M.
        return_known: also return ``known``.

    Returns:
        ``labels float32 [T, B, M]``, and with ``return_known`` ``known bool [T, B]`` (a concept
        follows in the same episode, or the episode ends within the data).
    """
    T, B = concept_idx.shape
    labels = torch.zeros(T, B, num_concepts, device=concept_idx.device)
    nxt = torch.full((B,), -1, dtype=torch.int64, device=concept_idx.device)
    known = torch.zeros(T, B, dtype=torch.bool, device=concept_idx.device)
    seen = torch.zeros(B, dtype=torch.bool, device=concept_idx.device)  # a concept or an episode end follows
    for t in range(T - 1, -1, -1):
        nxt = torch.where(done[t], torch.full_like(nxt, -1), nxt)
        seen = seen | done[t]
        has = concept_idx[t] >= 0
        nxt = torch.where(has, concept_idx[t], nxt)
        seen = seen | has
        rows = (nxt >= 0).nonzero().squeeze(-1)
        labels[t, rows, nxt[rows]] = 1.0
        known[t] = seen
    return (labels, known) if return_known else labels
