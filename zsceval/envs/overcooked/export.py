"""Conversion between one game of the batched state and overcooked-ai's state dict.

The dict format is overcooked-ai's ``OvercookedState.to_dict()`` (docs/overcooked-rules.md §6.3):
keys ``players``, ``objects``, ``bonus_orders``, ``all_orders``, ``timestep``; positions and
orientations are tuples; ``objects`` lists unowned objects in insertion order.
"""

from __future__ import annotations

import torch

from .constants import DIRECTIONS, OBJ_NAMES, SEQ_INGREDIENTS, Obj, encode_seq
from .layout import INGREDIENTS, Layout
from .state import State
from .tables import Tables

_OBJ_OF_NAME = {v: k for k, v in OBJ_NAMES.items()}
_ING_OF_NAME = {"onion": 1, "tomato": 2}

__all__ = ["export_state", "import_state"]


def _soup_dict(seq: int, tick: int, pos: tuple[int, int], T: Tables) -> dict:
    ingredients = [{"name": INGREDIENTS[g - 1], "position": pos} for g in SEQ_INGREDIENTS[seq]]
    time = int(T.seq_time[seq])
    idle = tick < 0
    ready = not idle and tick >= time
    return {
        "name": "soup",
        "position": pos,
        "_ingredients": ingredients,
        "cooking_tick": tick,
        "is_cooking": not idle and not ready,
        "is_ready": ready,
        "is_idle": idle,
        "cook_time": -1 if idle else time,
        "_cooking_tick": tick,
    }


def _object_dict(kind: int, seq: int, tick: int, pos: tuple[int, int], T: Tables) -> dict:
    if kind == Obj.SOUP:
        return _soup_dict(seq, tick, pos, T)
    return {"name": OBJ_NAMES[Obj(kind)], "position": pos}


def export_state(state: State, i: int, layout: Layout, T: Tables) -> dict:
    """Game ``i`` of ``state`` as overcooked-ai's state dict (players in seat order)."""
    W = layout.width
    s = {f: getattr(state, f)[i].tolist() for f in ("pos", "ori", "held", "held_seq", "held_tick")}
    players = []
    for p in range(len(s["pos"])):
        pos = (s["pos"][p] % W, s["pos"][p] // W)
        held = None
        if s["held"][p]:
            held = _object_dict(s["held"][p], s["held_seq"][p], s["held_tick"][p], pos, T)
        players.append({"position": pos, "orientation": DIRECTIONS[s["ori"][p]], "held_object": held})
    obj = state.obj[i]
    cells = torch.nonzero(obj).flatten().tolist()
    stamps = state.obj_stamp[i].tolist()
    seqs, ticks, kinds = state.obj_seq[i].tolist(), state.obj_tick[i].tolist(), obj.tolist()
    objects = [
        _object_dict(kinds[c], seqs[c], ticks[c], (c % W, c // W), T)
        for c in sorted(cells, key=lambda c: stamps[c])
    ]
    orders = [{"ingredients": r.ingredients} for r in layout.orders]
    return {
        "players": players,
        "objects": objects,
        "bonus_orders": [],
        "all_orders": orders,
        "timestep": int(state.timestep[i]),
    }


def _parse_pos(value, what: str, layout: Layout) -> tuple[int, int]:
    try:
        x, y = (int(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: position must be (x, y), got {value!r}") from None
    if not (0 <= x < layout.width and 0 <= y < layout.height):
        raise ValueError(f"{what}: position {(x, y)} is outside the {layout.width}x{layout.height} grid")
    return x, y


def _parse_object(d: dict, what: str, layout: Layout, T: Tables) -> tuple[int, int, int]:
    """``(kind, seq, tick)`` of an object dict (new or legacy soup format)."""
    if not isinstance(d, dict) or d.get("name") not in _OBJ_OF_NAME:
        raise ValueError(f"{what}: unknown object {d!r}; names are {sorted(_OBJ_OF_NAME)}")
    kind = _OBJ_OF_NAME[d["name"]]
    if kind == Obj.TOMATO and layout.dynamics == "classic":
        raise ValueError(f"{what}: tomatoes do not exist in classic layout {layout.name!r}")
    if kind != Obj.SOUP:
        return kind, 0, -1
    if "state" in d:  # legacy ZSC-Eval OLD soup: [type, num_items, elapsed]
        ing_name, num, elapsed = d["state"]
        names = [ing_name] * int(num)
        tick = -1 if elapsed == 0 else int(elapsed)
    else:
        names = [ing["name"] if isinstance(ing, dict) else ing for ing in d.get("_ingredients", [])]
        tick = int(d.get("cooking_tick", d.get("_cooking_tick", -1)))
    if not 1 <= len(names) <= 3 or any(n not in _ING_OF_NAME for n in names):
        raise ValueError(f"{what}: a soup needs 1-3 ingredients from {INGREDIENTS}, got {names}")
    if layout.dynamics == "classic" and "tomato" in names:
        raise ValueError(f"{what}: tomatoes do not exist in classic layout {layout.name!r}")
    seq = encode_seq([_ING_OF_NAME[n] for n in names])
    time = int(T.seq_time[seq])
    if tick < -1 or tick > time:
        raise ValueError(f"{what}: cooking_tick {tick} outside -1..{time}")
    return kind, seq, tick


def import_state(state: State, i: int, d: dict, layout: Layout, T: Tables) -> None:
    """Load overcooked-ai state dict ``d`` into game ``i`` of ``state``, all or nothing.

    Raises:
        ValueError: naming the first inconsistency found.
    """
    W, n = layout.width, state.pos.shape[1]
    terrain = [c for row in layout.terrain for c in row]
    players = d.get("players")
    if not isinstance(players, list | tuple) or len(players) != n:
        raise ValueError(f"state dict must list {n} players, got {players!r:.80}")
    pos, ori, held, held_seq, held_tick = [], [], [], [], []
    for p, pd in enumerate(players):
        x, y = _parse_pos(pd.get("position"), f"player {p}", layout)
        if terrain[y * W + x] != " ":
            raise ValueError(
                f"player {p}: position {(x, y)} is not a floor cell (terrain {terrain[y * W + x]!r})"
            )
        try:
            o = DIRECTIONS.index(tuple(int(v) for v in pd.get("orientation", ())))
        except (ValueError, TypeError):
            raise ValueError(
                f"player {p}: orientation must be one of {DIRECTIONS}, got {pd.get('orientation')!r}"
            ) from None
        kind, seq, tick = (0, 0, -1)
        if pd.get("held_object") is not None:
            kind, seq, tick = _parse_object(pd["held_object"], f"player {p} held object", layout, T)
            if kind == Obj.SOUP and not (tick >= int(T.seq_time[seq])):
                raise ValueError(f"player {p}: a held soup must be ready (cooking_tick {tick})")
        pos.append(y * W + x)
        ori.append(o)
        held.append(kind)
        held_seq.append(seq)
        held_tick.append(tick)
    if len(set(pos)) != len(pos):
        raise ValueError(f"two players on one cell: {[(c % W, c // W) for c in pos]}")

    HW = W * layout.height
    obj, obj_seq, obj_tick, stamp = [0] * HW, [0] * HW, [-1] * HW, [0] * HW
    objects = d.get("objects", [])
    for j, od in enumerate(objects):
        what = f"object {j}"
        x, y = _parse_pos(od.get("position") if isinstance(od, dict) else None, what, layout)
        c = y * W + x
        kind, seq, tick = _parse_object(od, what, layout, T)
        if obj[c]:
            raise ValueError(f"{what}: two objects on one cell {(x, y)}")
        t = terrain[c]
        if t == "P":
            if kind != Obj.SOUP:
                raise ValueError(
                    f"{what}: a pot at {(x, y)} can only hold a soup, got {OBJ_NAMES[Obj(kind)]}"
                )
        elif t == "X":
            if kind == Obj.SOUP and tick < int(T.seq_time[seq]):
                raise ValueError(f"{what}: a soup on counter {(x, y)} must be ready (cooking_tick {tick})")
        else:
            raise ValueError(f"{what}: objects lie only on counters and pots; {(x, y)} is {t!r}")
        obj[c], obj_seq[c], obj_tick[c], stamp[c] = kind, seq, tick, j - len(objects)
    expected = [{"ingredients": r.ingredients} for r in layout.orders]
    given = d.get("all_orders")
    if given is not None:
        given_sets = sorted(tuple(sorted(o["ingredients"])) for o in given)
        if given_sets != sorted(tuple(o["ingredients"]) for o in expected):
            raise ValueError(f"all_orders {given} differ from layout {layout.name!r} orders {expected}")
    if d.get("bonus_orders"):
        raise ValueError("bonus orders are not supported (no ZSC-Eval layout uses them)")
    timestep = int(d.get("timestep", 0))
    if timestep < 0:
        raise ValueError(f"timestep must be >= 0, got {timestep}")

    dev = state.pos.device
    state.pos[i] = torch.tensor(pos, device=dev)
    state.ori[i] = torch.tensor(ori, device=dev)
    state.held[i] = torch.tensor(held, device=dev)
    state.held_seq[i] = torch.tensor(held_seq, device=dev)
    state.held_tick[i] = torch.tensor(held_tick, device=dev)
    state.obj[i] = torch.tensor(obj, dtype=torch.int8, device=dev)
    state.obj_seq[i] = torch.tensor(obj_seq, dtype=torch.int8, device=dev)
    state.obj_tick[i] = torch.tensor(obj_tick, dtype=torch.int16, device=dev)
    state.obj_stamp[i] = torch.tensor(stamp, device=dev)
    state.timestep[i] = timestep
