"""Per-layout lookup tables that make the batched step table-driven.

An agent's interaction outcome depends only on (facing terrain, held object, object on the facing
cell, pot state of that cell). ``code_table`` maps that 4-tuple to an :class:`Interaction`, and
small per-code tables give the held object and cell object afterwards, the events and the shaped
reward. Potting and delivery outcomes that depend on soup contents (multi-recipe classification,
recipe values) come from ``aux`` tables indexed by ingredient-sequence codes. Building these
tables once per layout keeps the step to a few dozen tensor ops with no Python branching per game.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

from .constants import (
    CLASSIC_EVENTS,
    MULTI_RECIPE_EVENTS,
    NUM_SEQ,
    SEQ_LEN,
    SEQ_ONIONS,
    SEQ_TOMATOES,
    TERRAIN_OF_CHAR,
    VALID_SEQ,
    Interaction,
    Obj,
    Terrain,
)
from .layout import Layout

# Pot states of a cell (index of the last axis of the code table).
PS_NONE, PS_IDLE, PS_IDLE_FULL, PS_COOKING, PS_READY = range(5)
NUM_T, NUM_H, NUM_O, NUM_PS = 7, 5, 5, 5

# Shaped-reward constants (docs/overcooked-rules.md §3.2, ZSC-Eval base shaping).
PLACEMENT_IN_POT_REW = 3.0
DISH_PICKUP_REWARD = 3.0
SOUP_PICKUP_REWARD = 5.0

# aux index layout: 0 = none; 1 + old_seq * 3 + ingredient = potting; AUX_DELIVER + seq = delivery.
AUX_POT = 1
AUX_DELIVER = 1 + NUM_SEQ * 3
NUM_AUX = AUX_DELIVER + NUM_SEQ

# Move codes.
MOVE_NONE, MOVE_STAY, MOVE_MOVE, MOVE_IDLE = range(4)


def interaction_code(t: int, h: int, o: int, ps: int, multi: bool) -> Interaction:
    """The outcome of INTERACT for one (terrain, held, cell object, pot state) combination.

    Implements docs/overcooked-rules.md §2.5 (classic) and 5.2 (multi-recipe).
    """
    I = Interaction
    if t == Terrain.FLOOR:
        return I.IDLE_EMPTY
    if t == Terrain.COUNTER:
        if h and not o:
            return I(I.PUT_ONION_COUNTER + h - 1)
        if not h and o:
            return I(I.PICKUP_ONION_COUNTER + o - 1)
        return I.IDLE_COUNTER
    if t in (Terrain.ONION_DISPENSER, Terrain.TOMATO_DISPENSER, Terrain.DISH_DISPENSER):
        if h:
            return I.IDLE_EMPTY
        return {
            Terrain.ONION_DISPENSER: I.PICKUP_ONION_DISPENSER,
            Terrain.TOMATO_DISPENSER: I.PICKUP_TOMATO_DISPENSER,
            Terrain.DISH_DISPENSER: I.PICKUP_DISH_DISPENSER,
        }[t]
    if t == Terrain.POT:
        if h == Obj.NONE:
            if multi and ps == PS_IDLE or multi and ps == PS_IDLE_FULL:
                return I.COOK
            return I.NOOP if multi else I.IDLE_POT
        if h == Obj.DISH:
            return I.SOUP_PICKUP_POT if ps == PS_READY else I.NOOP
        if h in (Obj.ONION, Obj.TOMATO):
            if ps in (PS_NONE, PS_IDLE):
                return I.POT_ONION if h == Obj.ONION else I.POT_TOMATO
            return I.NOOP
        return I.NOOP  # holding a soup
    if t == Terrain.SERVE:
        if h == Obj.SOUP:
            return I.DELIVER
        return I.IDLE_EMPTY if h == Obj.NONE else I.NOOP
    raise AssertionError(t)


def interact_available(t: int, h: int, o: int, ps: int, multi: bool) -> bool:
    """Whether INTERACT is unmasked (docs/overcooked-rules.md §4.6)."""
    if t == Terrain.FLOOR:
        return False
    if t == Terrain.COUNTER:
        return bool(h) != bool(o)
    if t in (Terrain.ONION_DISPENSER, Terrain.TOMATO_DISPENSER, Terrain.DISH_DISPENSER):
        return h == Obj.NONE
    if t == Terrain.POT:
        if h == Obj.SOUP:
            return False
        if h == Obj.NONE:
            return multi and ps in (PS_IDLE, PS_IDLE_FULL, PS_COOKING)
        return True
    if t == Terrain.SERVE:
        return h == Obj.SOUP
    raise AssertionError(t)


# Events logged by each interaction kind (names present in the layout's event list are used).
_CODE_EVENTS_CLASSIC = {
    Interaction.IDLE_COUNTER: ("IDLE_INTERACT_X",),
    Interaction.IDLE_EMPTY: ("IDLE_INTERACT_EMPTY",),
    Interaction.IDLE_POT: ("IDLE_INTERACT_EMPTY",),
}
_CODE_EVENTS_MULTI = {
    Interaction.IDLE_COUNTER: ("IDLE_INTERACT",),
    Interaction.IDLE_EMPTY: ("IDLE_INTERACT",),
    Interaction.COOK: ("cook",),
}
_CODE_EVENTS_COMMON = {
    Interaction.PICKUP_ONION_DISPENSER: ("pickup_onion_from_O",),
    Interaction.PICKUP_TOMATO_DISPENSER: ("pickup_tomato_from_T",),
    Interaction.PICKUP_DISH_DISPENSER: ("pickup_dish_from_D",),
    Interaction.PICKUP_ONION_COUNTER: ("pickup_onion_from_X",),
    Interaction.PICKUP_TOMATO_COUNTER: ("pickup_tomato_from_X",),
    Interaction.PICKUP_DISH_COUNTER: ("pickup_dish_from_X",),
    Interaction.PICKUP_SOUP_COUNTER: ("pickup_soup_from_X",),
    Interaction.PUT_ONION_COUNTER: ("put_onion_on_X",),
    Interaction.PUT_TOMATO_COUNTER: ("put_tomato_on_X",),
    Interaction.PUT_DISH_COUNTER: ("put_dish_on_X",),
    Interaction.PUT_SOUP_COUNTER: ("put_soup_on_X",),
    Interaction.SOUP_PICKUP_POT: ("SOUP_PICKUP",),
}


def best_value(onions: int, tomatoes: int, layout: Layout) -> int:
    """best(R) of docs/overcooked-rules.md §5.4: the best positive order value reachable from R.

    Reachable recipes add zero or more ingredients to R, up to 3 in total. If none has a strictly
    positive delivery value, returns the delivery value of R itself (for an empty R with no
    positive order, the layout's non-order value; the reference crashes there).
    """
    best = None
    for extra_o in range(4):
        for extra_t in range(4 - extra_o):
            o, t = onions + extra_o, tomatoes + extra_t
            if not 1 <= o + t <= 3:
                continue
            value = layout.recipe(o, t)[0]
            if value > 0 and (best is None or value > best):
                best = value
    if best is not None:
        return best
    return layout.recipe(onions, tomatoes)[0] if onions + tomatoes else layout.non_order_value


@dataclass
class Tables:
    """Device tensors derived from a layout. Shapes use HW = H * W cells (flat index y*W + x)."""

    terrain: torch.Tensor  # int64 [HW] Terrain code per cell
    walkable: torch.Tensor  # bool [HW]
    delta: torch.Tensor  # int64 [6] flat-index offset per action (0 for STAY/INTERACT)
    nb_walkable: torch.Tensor  # bool [HW, 4] neighbour in direction d is floor
    pot_cells: torch.Tensor  # int64 [P]
    counter_cells: torch.Tensor  # int64 [Xc]
    is_pot: torch.Tensor  # bool [HW]
    code_table: torch.Tensor  # int64 [7*5*5*5] Interaction by (t, h, o, ps)
    avail_table: torch.Tensor  # bool [7*5*5*5] INTERACT availability
    held_new: torch.Tensor  # int64 [21] held object after the interaction (-1 unchanged)
    cell_new: torch.Tensor  # int64 [21] cell object after the interaction (-1 unchanged)
    code_events: torch.Tensor  # int16 [21, E]
    code_shaped: torch.Tensor  # float32 [21]
    aux_events: torch.Tensor  # int16 [NUM_AUX, E]
    aux_shaped: torch.Tensor  # float32 [NUM_AUX]
    aux_sparse: torch.Tensor  # float32 [NUM_AUX]
    move_events: torch.Tensor  # int16 [4, E] by move code
    useful_dish_event: torch.Tensor  # int16 [E]
    seq_len: torch.Tensor  # int64 [27]
    seq_onions: torch.Tensor  # int64 [27]
    seq_tomatoes: torch.Tensor  # int64 [27]
    seq_time: torch.Tensor  # int64 [27] cook time of the recipe with these ingredients
    pow3: torch.Tensor  # int64 [4]
    event_names: tuple[str, ...]


def build_tables(layout: Layout, device: torch.device) -> Tables:
    """Build every lookup table of ``layout`` on ``device``."""
    multi = layout.dynamics == "multi_recipe"
    W, H = layout.width, layout.height
    names = MULTI_RECIPE_EVENTS if multi else CLASSIC_EVENTS
    col = {n: i for i, n in enumerate(names)}
    E = len(names)

    terrain = [TERRAIN_OF_CHAR[c] for row in layout.terrain for c in row]
    walk = [t == Terrain.FLOOR for t in terrain]
    deltas = [-W, W, 1, -1, 0, 0]
    nb = [[0 <= i + deltas[d] < W * H and walk[i + deltas[d]] for d in range(4)] for i in range(W * H)]

    code = torch.zeros(NUM_T * NUM_H * NUM_O * NUM_PS, dtype=torch.int64)
    avail = torch.zeros_like(code, dtype=torch.bool)
    for t, h, o, ps in itertools.product(range(NUM_T), range(NUM_H), range(NUM_O), range(NUM_PS)):
        idx = ((t * NUM_H + h) * NUM_O + o) * NUM_PS + ps
        code[idx] = interaction_code(t, h, o, ps, multi)
        avail[idx] = interact_available(t, h, o, ps, multi)

    n_codes = len(Interaction)
    held_new = torch.full((n_codes,), -1, dtype=torch.int64)
    cell_new = torch.full((n_codes,), -1, dtype=torch.int64)
    I = Interaction
    for k, obj in ((0, Obj.ONION), (1, Obj.TOMATO), (2, Obj.DISH), (3, Obj.SOUP)):
        held_new[I.PICKUP_ONION_COUNTER + k] = obj
        cell_new[I.PICKUP_ONION_COUNTER + k] = Obj.NONE
        held_new[I.PUT_ONION_COUNTER + k] = Obj.NONE
        cell_new[I.PUT_ONION_COUNTER + k] = obj
    held_new[I.PICKUP_ONION_DISPENSER] = Obj.ONION
    held_new[I.PICKUP_TOMATO_DISPENSER] = Obj.TOMATO
    held_new[I.PICKUP_DISH_DISPENSER] = Obj.DISH
    held_new[I.POT_ONION] = held_new[I.POT_TOMATO] = Obj.NONE
    cell_new[I.POT_ONION] = cell_new[I.POT_TOMATO] = Obj.SOUP
    held_new[I.SOUP_PICKUP_POT] = Obj.SOUP
    cell_new[I.SOUP_PICKUP_POT] = Obj.NONE
    held_new[I.DELIVER] = Obj.NONE

    def row(*event_names: str) -> torch.Tensor:
        r = torch.zeros(E, dtype=torch.int16)
        for n in event_names:
            if n in col:
                r[col[n]] += 1
        return r

    code_events = torch.zeros(n_codes, E, dtype=torch.int16)
    for table in (_CODE_EVENTS_COMMON, _CODE_EVENTS_MULTI if multi else _CODE_EVENTS_CLASSIC):
        for c, evs in table.items():
            code_events[c] = row(*evs)
    code_shaped = torch.zeros(n_codes)
    code_shaped[I.SOUP_PICKUP_POT] = SOUP_PICKUP_REWARD

    aux_events = torch.zeros(NUM_AUX, E, dtype=torch.int16)
    aux_shaped = torch.zeros(NUM_AUX)
    aux_sparse = torch.zeros(NUM_AUX)
    for old in range(NUM_SEQ):
        if not VALID_SEQ[old] or SEQ_LEN[old] >= 3:
            continue
        for g in (1, 2):
            new_o = SEQ_ONIONS[old] + (g == 1)
            new_t = SEQ_TOMATOES[old] + (g == 2)
            b_old = best_value(SEQ_ONIONS[old], SEQ_TOMATOES[old], layout)
            b_new = best_value(new_o, new_t, layout)
            optimal, viable = b_old == b_new, b_new > 0
            catastrophic, useless = b_old > 0 and b_new <= 0, b_old <= 0
            evs = ["PLACEMENT_IN_POT", "potting_onion" if g == 1 else "potting_tomato"]
            evs += [
                n
                for n, f in (
                    ("viable_placement", viable),
                    ("optimal_placement", optimal),
                    ("catastrophic_placement", catastrophic),
                    ("useless_placement", useless),
                )
                if f
            ]
            i = AUX_POT + old * 3 + g
            aux_events[i] = row(*evs)
            # Classic (OLD, PYPI): every accepted potting earns +3. Multi-recipe (ZSC-Eval NEW):
            # only optimal or viable pottings do (upstream also pays catastrophic ones).
            aux_shaped[i] = PLACEMENT_IN_POT_REW if (not multi or optimal or viable) else 0.0
    seq_time = torch.zeros(NUM_SEQ, dtype=torch.int64)
    for s in range(NUM_SEQ):
        if not VALID_SEQ[s] or SEQ_LEN[s] == 0:
            continue
        value, time, _ = layout.recipe(SEQ_ONIONS[s], SEQ_TOMATOES[s])
        seq_time[s] = time
        i = AUX_DELIVER + s
        aux_sparse[i] = value
        size = {2: "deliver_size_two_order", 3: "deliver_size_three_order"}.get(SEQ_LEN[s], "")
        aux_events[i] = row("delivery", size, "deliver_useless_order" if value <= 0 else "")

    move_events = torch.stack([row(), row("STAY"), row("MOVEMENT"), row("MOVEMENT", "IDLE_MOVEMENT")])

    def t_(x, dtype=None):
        return torch.as_tensor(x, dtype=dtype).to(device)

    return Tables(
        terrain=t_(terrain, torch.int64),
        walkable=t_(walk, torch.bool),
        delta=t_(deltas, torch.int64),
        nb_walkable=t_(nb, torch.bool),
        pot_cells=t_([i for i, t in enumerate(terrain) if t == Terrain.POT], torch.int64),
        counter_cells=t_([i for i, t in enumerate(terrain) if t == Terrain.COUNTER], torch.int64),
        is_pot=t_([t == Terrain.POT for t in terrain], torch.bool),
        code_table=t_(code),
        avail_table=t_(avail),
        held_new=t_(held_new),
        cell_new=t_(cell_new),
        code_events=t_(code_events),
        code_shaped=t_(code_shaped),
        aux_events=t_(aux_events),
        aux_shaped=t_(aux_shaped),
        aux_sparse=t_(aux_sparse),
        move_events=t_(move_events),
        useful_dish_event=t_(row("USEFUL_DISH_PICKUP")),
        seq_len=t_(SEQ_LEN, torch.int64),
        seq_onions=t_(SEQ_ONIONS, torch.int64),
        seq_tomatoes=t_(SEQ_TOMATOES, torch.int64),
        seq_time=t_(seq_time),
        pow3=t_([1, 3, 9, 27], torch.int64),
        event_names=names,
    )
