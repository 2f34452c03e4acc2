"""Named constants of the Overcooked engine: actions, terrain, objects, interactions, events.

Event lists and their order follow ZSC-Eval exactly (docs/overcooked-rules.md §3.1 and 5.5): behavior
features and behavior-preferring reward weights index into them.
"""

from __future__ import annotations

from enum import IntEnum
from types import SimpleNamespace

__all__ = [
    "ACTION",
    "INTERACTION",
    "OBJ",
    "TERRAIN",
    "as_ints",
    "Action",
    "Terrain",
    "Obj",
    "Interaction",
    "CLASSIC_EVENTS",
    "MULTI_RECIPE_EVENTS",
    "DIRECTIONS",
    "SEQ_ONIONS",
    "SEQ_TOMATOES",
    "SEQ_LEN",
    "NUM_SEQ",
]


class Action(IntEnum):
    """overcooked-ai's action order (docs/overcooked-rules.md §0.2)."""

    NORTH = 0
    SOUTH = 1
    EAST = 2
    WEST = 3
    STAY = 4
    INTERACT = 5


# (dx, dy) per orientation / direction action, indexed like Action 0-3.
DIRECTIONS = ((0, -1), (0, 1), (1, 0), (-1, 0))


class Terrain(IntEnum):
    """Terrain codes of the grid cells (layout characters in comments)."""

    FLOOR = 0  # ' '
    COUNTER = 1  # 'X'
    ONION_DISPENSER = 2  # 'O'
    TOMATO_DISPENSER = 3  # 'T'
    DISH_DISPENSER = 4  # 'D'
    POT = 5  # 'P'
    SERVE = 6  # 'S'


TERRAIN_OF_CHAR = {" ": 0, "X": 1, "O": 2, "T": 3, "D": 4, "P": 5, "S": 6}


class Obj(IntEnum):
    """Object kinds held by players or lying on counters and pots (0 = nothing)."""

    NONE = 0
    ONION = 1
    TOMATO = 2
    DISH = 3
    SOUP = 4


OBJ_NAMES = {Obj.ONION: "onion", Obj.TOMATO: "tomato", Obj.DISH: "dish", Obj.SOUP: "soup"}


class Interaction(IntEnum):
    """What an agent's INTERACT did this step (``Step.interactions``; TBS concept labels).

    ``NONE`` means the agent did not choose INTERACT. The ``IDLE_*`` and ``NOOP`` kinds are
    interactions that changed nothing (they differ only in which ZSC-Eval idle event they log).
    """

    NONE = 0
    NOOP = 1  # e.g. a dish at an unready pot; no event
    IDLE_COUNTER = 2  # counter with mismatched hold/occupancy
    IDLE_EMPTY = 3  # floor, a dispenser while holding, the serving window empty-handed
    IDLE_POT = 4  # empty-handed at a pot that cannot start cooking
    PICKUP_ONION_DISPENSER = 5
    PICKUP_TOMATO_DISPENSER = 6
    PICKUP_DISH_DISPENSER = 7
    PICKUP_ONION_COUNTER = 8
    PICKUP_TOMATO_COUNTER = 9
    PICKUP_DISH_COUNTER = 10
    PICKUP_SOUP_COUNTER = 11
    PUT_ONION_COUNTER = 12
    PUT_TOMATO_COUNTER = 13
    PUT_DISH_COUNTER = 14
    PUT_SOUP_COUNTER = 15
    POT_ONION = 16
    POT_TOMATO = 17
    COOK = 18
    SOUP_PICKUP_POT = 19
    DELIVER = 20


# The 17 ZSC-Eval events of the classic (OLD) engine, in vector order (docs/overcooked-rules.md §3.1).
CLASSIC_EVENTS = (
    "put_onion_on_X",
    "put_dish_on_X",
    "put_soup_on_X",
    "pickup_onion_from_X",
    "pickup_onion_from_O",
    "pickup_dish_from_X",
    "pickup_dish_from_D",
    "pickup_soup_from_X",
    "USEFUL_DISH_PICKUP",
    "SOUP_PICKUP",
    "PLACEMENT_IN_POT",
    "delivery",
    "STAY",
    "MOVEMENT",
    "IDLE_MOVEMENT",
    "IDLE_INTERACT_X",
    "IDLE_INTERACT_EMPTY",
)

# The 29 ZSC-Eval events of the multi-recipe (NEW) engine, in vector order (docs/overcooked-rules.md §5.5).
MULTI_RECIPE_EVENTS = (
    "put_onion_on_X",
    "put_tomato_on_X",
    "put_dish_on_X",
    "put_soup_on_X",
    "pickup_onion_from_X",
    "pickup_onion_from_O",
    "pickup_tomato_from_X",
    "pickup_tomato_from_T",
    "pickup_dish_from_X",
    "pickup_dish_from_D",
    "pickup_soup_from_X",
    "USEFUL_DISH_PICKUP",
    "SOUP_PICKUP",
    "PLACEMENT_IN_POT",
    "viable_placement",
    "optimal_placement",
    "catastrophic_placement",
    "useless_placement",
    "potting_onion",
    "potting_tomato",
    "cook",
    "delivery",
    "deliver_size_two_order",
    "deliver_size_three_order",
    "deliver_useless_order",
    "STAY",
    "MOVEMENT",
    "IDLE_MOVEMENT",
    "IDLE_INTERACT",
)

# Soup contents are an ordered ingredient sequence encoded as seq = sum_k ing_k * 3**k with
# ing_k in {1 onion, 2 tomato}; 0 is the empty sequence. 27 codes cover up to 3 ingredients.
NUM_SEQ = 27


def _decode(seq: int) -> list[int]:
    out = []
    while seq:
        out.append(seq % 3)
        seq //= 3
    return out


SEQ_INGREDIENTS = tuple(tuple(_decode(s)) for s in range(NUM_SEQ))
SEQ_LEN = tuple(len(i) for i in SEQ_INGREDIENTS)
SEQ_ONIONS = tuple(i.count(1) for i in SEQ_INGREDIENTS)
SEQ_TOMATOES = tuple(i.count(2) for i in SEQ_INGREDIENTS)
VALID_SEQ = tuple(0 not in i for i in SEQ_INGREDIENTS)  # digit 0 inside a sequence is invalid


def encode_seq(ingredients: list[int]) -> int:
    """Sequence code of an ingredient list (1 onion, 2 tomato), in insertion order."""
    return sum(g * 3**k for k, g in enumerate(ingredients))


def as_ints(kind: type[IntEnum]) -> SimpleNamespace:
    """The members of an ``IntEnum`` as plain ints under the same names (``OBJ.SOUP == 4``).

    The engine's tensor code compares with these: ``torch.compile`` (torch 2.13) evaluates
    ``tensor != Obj.SOUP`` as a Python comparison and fails, while ``tensor != OBJ.SOUP`` traces.
    """
    return SimpleNamespace(**{m.name: int(m) for m in kind})


ACTION = as_ints(Action)
TERRAIN = as_ints(Terrain)
OBJ = as_ints(Obj)
INTERACTION = as_ints(Interaction)
