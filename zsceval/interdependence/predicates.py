"""Mapping module: an Overcooked trajectory as a STRIPS trace ("Who is Helping Whom?", Sec. 4.2 and App. C.1).

Biswas et al. ("Who is Helping Whom?") map every state ``s^t`` of a two-player Markov
game to the set of true propositions ``p_t = F(s^t)`` and every single-agent action ``a_i^t`` to a
grounded STRIPS operator ``<pre(a_i^t), add(a_i^t), del(a_i^t)>`` with ``pre ⊆ p_t``,
``add ⊆ p_{t+1}`` and ``del ∩ p_{t+1} = ∅`` (Sec. 4.2). The agents are assumed to take turns
(Sec. 3.2): our engine resolves the INTERACT actions of one step sequentially in seat order, each
player seeing the kitchen as left by the lower seats (docs/overcooked-rules.md §2.5), so the turn
order within a step is seat 0, then seat 1, and every operator is exact.

Objects carry an identity (App. C.2 tracks objects by id): the state dicts of overcooked-ai have
none, so :func:`map_trajectory` replays the hand and cell changes and gives every onion, tomato,
dish and soup an integer id when it appears (taken from a dispenser, or present in ``states[0]``).
An ingredient put in a pot is *merged* into that pot's soup; a dish that plates a soup is merged
into the soup; a soup is *served* at the serving window. The state of an object
(:class:`ObjectState`) is its kind, its ingredients (soups) and its cooking status; the cooking
clock (``cooking_tick``) is left out, so a soup stays in one state while it cooks.

Predicates (:class:`Pred`, ``name`` then ``args``; cells are ``(x, y)``, seats are ints, objects
are ids)::

    player-at(seat, cell)          facing(seat, cell)
    holding(seat, obj, state)      hand-empty(seat)
    at(obj, state, cell)           object on a counter or in a pot
    counter-empty(cell)            pot-empty(cell)
    served(obj, state)             a soup delivered at the serving window (goal predicate)

Operator kinds (``Operator.kind``) and their object predicates (``k`` the seat, ``f`` the faced
cell; a dispensed object is new)::

    pickup_dispenser  pre {hand-empty(k)}                   add {holding(k,o,s)}
    pickup_counter    pre {hand-empty(k), at(o,s,f)}        add {holding(k,o,s), counter-empty(f)}
    put_counter       pre {holding(k,o,s), counter-empty(f)} add {at(o,s,f), hand-empty(k)}
    pot_ingredient    pre {holding(k,o,s), at(u,s_u,f) | pot-empty(f)}
                      add {at(u,s_u',f), hand-empty(k)}     (u: the pot's soup, new if the pot was empty)
    cook              pre {at(u,idle,f)}                    add {at(u,cooking,f)}   (multi-recipe only)
    plate_soup        pre {holding(k,d,dish), at(u,s_u,f)}  add {holding(k,u,ready), pot-empty(f)}
    deliver           pre {holding(k,u,s_u)}                add {served(u,s_u), hand-empty(k)}
    noop / move / stay                                      (no object predicate)

``del`` is ``pre`` minus what stays true. Movement operators only carry ``player-at`` / ``facing``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from zsceval.envs.overcooked.constants import Action
from zsceval.envs.overcooked.layout import Layout, load_layout

__all__ = [
    "ObjectState",
    "Pred",
    "Operator",
    "ObjectRecord",
    "SymbolicTrace",
    "TraceError",
    "map_trajectory",
    "floor_regions",
]

Cell = tuple[int, int]
ITEMS = ("onion", "tomato", "dish")
DISPENSED = {"O": "onion", "T": "tomato", "D": "dish"}


class TraceError(ValueError):
    """The states and actions are not a trajectory of the layout's dynamics (the message names the
    step, the seat and what differs)."""


class ObjectState(NamedTuple):
    """State of an object, as compared by the looping test ("Who is Helping Whom?", Def. 4.5, "same state").

    Attributes:
        kind: ``"onion"``, ``"tomato"``, ``"dish"`` or ``"soup"``.
        ingredients: sorted ingredient names of a soup, ``()`` otherwise.
        status: ``"raw"`` for onions, tomatoes and dishes; ``"idle"``, ``"cooking"`` or ``"ready"``
            for a soup (a soup off a pot is always ready).
    """

    kind: str
    ingredients: tuple[str, ...] = ()
    status: str = "raw"


class Pred(NamedTuple):
    """A grounded proposition ``name(args...)`` (see the module docstring for the names)."""

    name: str
    args: tuple

    @property
    def obj(self) -> int | None:
        """Id of the object the predicate mentions (``O(p)`` of Def. 4.3), or None."""
        if self.name in ("at", "served"):
            return self.args[0]
        if self.name == "holding":
            return self.args[1]
        return None

    def __repr__(self) -> str:
        return f"{self.name}{self.args!r}"


@dataclass(frozen=True)
class Operator:
    """STRIPS operator of one agent's action at one step ("Who is Helping Whom?", Sec. 4.2).

    Attributes:
        t: step index (the action moves ``states[t]`` to ``states[t + 1]``).
        seat: the acting player.
        action: zsceval action index (0 N, 1 S, 2 E, 3 W, 4 STAY, 5 INTERACT).
        kind: operator kind (module docstring), e.g. ``"put_counter"``.
        cell: the faced cell ``(x, y)`` of an INTERACT, else None.
        pre, add, delete: the grounded predicate sets.
    """

    t: int
    seat: int
    action: int
    kind: str
    cell: Cell | None
    pre: frozenset = frozenset()
    add: frozenset = frozenset()
    delete: frozenset = frozenset()

    def objects(self) -> set[int]:
        """Ids of the objects in ``pre | add | delete``."""
        return {p.obj for p in self.pre | self.add | self.delete if p.obj is not None}


@dataclass
class ObjectRecord:
    """Life of one object in a trace.

    Attributes:
        id: object id.
        kind: kind at creation.
        created: step at which it appeared (-1: present in ``states[0]``).
        merged_into: id of the soup it became part of (ingredient in a pot, or the dish that plated
            it), or None.
        merged_at: step of that merge, or None.
        served_at: step at which it (a soup) was delivered, or None.
        served_state: the soup's state when delivered, or None.
    """

    id: int
    kind: str
    created: int
    merged_into: int | None = None
    merged_at: int | None = None
    served_at: int | None = None
    served_state: ObjectState | None = None


@dataclass
class SymbolicTrace:
    """A trajectory as a grounded STRIPS trace ("Who is Helping Whom?", App. C.1, output of the mapping
    module).

    Attributes:
        layout: the layout.
        states: ``T + 1`` sets of true propositions ``p_0 .. p_T``.
        operators: ``T`` tuples of one :class:`Operator` per seat.
        objects: every object by id.
        regions: floor-region index of each seat (players never leave their region).
        region_of: ``{cell: region index}`` of the floor cells.
    """

    layout: Layout
    states: list[frozenset]
    operators: list[tuple[Operator, ...]]
    objects: dict[int, ObjectRecord]
    regions: tuple[int, ...]
    region_of: dict[Cell, int] = field(repr=False)

    @property
    def num_steps(self) -> int:
        """T, the number of joint actions."""
        return len(self.operators)

    @property
    def goal(self) -> frozenset:
        """``p_n^G``: the goal predicates true at the end (``served`` soups that are orders)."""
        return frozenset(p for p in self.states[-1] if p.name == "served" and self.is_order(p.args[1]))

    def is_order(self, state: ObjectState) -> bool:
        """Whether a soup in ``state`` is one of the layout's orders (a rewarded delivery)."""
        return tuple(sorted(state.ingredients)) in {r.ingredients for r in self.layout.orders}

    def final_object(self, obj: int) -> int:
        """The object ``obj`` ends up part of: follow ``merged_into`` (ingredient -> soup, dish ->
        plated soup) to the end."""
        rec = self.objects[obj]
        while rec.merged_into is not None:
            rec = self.objects[rec.merged_into]
        return rec.id

    def reaches_goal(self, obj: int) -> bool:
        """Def. 4.4: the final state of ``obj`` (of the soup it became part of) is in ``p_n^G``."""
        rec = self.objects[self.final_object(obj)]
        return rec.served_state is not None and Pred("served", (rec.id, rec.served_state)) in self.goal

    def partner_can_reach(self, seat: int, cell: Cell) -> bool:
        """Whether a player other than ``seat`` has a floor cell next to ``cell`` in its region."""
        x, y = cell
        near = {self.region_of.get((x + dx, y + dy)) for dx, dy in ((0, 1), (0, -1), (1, 0), (-1, 0))}
        return any(r in near for k, r in enumerate(self.regions) if k != seat)


# ---------------------------------------------------------------------------- helpers
def floor_regions(layout: Layout) -> dict[Cell, int]:
    """Connected components (4-neighbour) of the floor cells: ``{(x, y): region index}``."""
    region: dict[Cell, int] = {}
    W, H = layout.width, layout.height
    for y0 in range(H):
        for x0 in range(W):
            if layout.terrain[y0][x0] != " " or (x0, y0) in region:
                continue
            idx, stack = len(set(region.values())), [(x0, y0)]
            region[(x0, y0)] = idx
            while stack:
                x, y = stack.pop()
                for nx, ny in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
                    if (
                        0 <= nx < W
                        and 0 <= ny < H
                        and layout.terrain[ny][nx] == " "
                        and (nx, ny) not in region
                    ):
                        region[(nx, ny)] = idx
                        stack.append((nx, ny))
    return region


def _cell(value: Any) -> Cell:
    x, y = value
    return int(x), int(y)


def _soup_names(d: dict) -> list[str]:
    if "state" in d:  # legacy ZSC-Eval soup: [type, num_items, elapsed]
        name, num, _ = d["state"]
        return [name] * int(num)
    return [i["name"] if isinstance(i, dict) else str(i) for i in d.get("_ingredients", [])]


def _soup_status(d: dict, layout: Layout) -> str:
    if "is_ready" in d:
        return "ready" if d["is_ready"] else ("cooking" if d.get("is_cooking") else "idle")
    if "state" in d:  # legacy: elapsed 0 = idle
        elapsed = int(d["state"][2])
        cook = layout.orders[0].time if layout.orders else layout.default_cook_time
        return "idle" if elapsed == 0 else ("ready" if elapsed >= cook else "cooking")
    tick, time = int(d.get("cooking_tick", -1)), int(d.get("cook_time", -1))
    return "idle" if tick < 0 else ("ready" if time >= 0 and tick >= time else "cooking")


def _obj_state(d: dict | None, layout: Layout) -> ObjectState | None:
    if d is None:
        return None
    if d["name"] != "soup":
        return ObjectState(d["name"])
    return ObjectState("soup", tuple(sorted(_soup_names(d))), _soup_status(d, layout))


class _World:
    """Objects with ids while a trajectory is replayed."""

    def __init__(self, layout: Layout):
        self.layout = layout
        self.objects: dict[int, ObjectRecord] = {}
        self.state: dict[int, ObjectState] = {}
        self.cell: dict[Cell, int] = {}  # cell -> object id (counters and pots)
        self.held: list[int | None] = []
        self.served: list[Pred] = []

    def new(self, st: ObjectState, t: int) -> int:
        i = len(self.objects)
        self.objects[i] = ObjectRecord(i, st.kind, t)
        self.state[i] = st
        return i

    def kind_at(self, cell: Cell) -> str | None:
        i = self.cell.get(cell)
        return None if i is None else self.state[i].kind

    def held_kind(self, k: int) -> str | None:
        i = self.held[k]
        return None if i is None else self.state[i].kind

    def snapshot(self, d: dict) -> frozenset:
        """``F(s)``: the propositions true in state dict ``d`` (ids from this world)."""
        L, preds = self.layout, set()
        for k, p in enumerate(d["players"]):
            pos, ori = _cell(p["position"]), _cell(p["orientation"])
            preds.add(Pred("player-at", (k, pos)))
            preds.add(Pred("facing", (k, (pos[0] + ori[0], pos[1] + ori[1]))))
            i = self.held[k]
            preds.add(Pred("hand-empty", (k,)) if i is None else Pred("holding", (k, i, self.state[i])))
        for y, row in enumerate(L.terrain):
            for x, ch in enumerate(row):
                if ch not in "XP":
                    continue
                i = self.cell.get((x, y))
                if i is not None:
                    preds.add(Pred("at", (i, self.state[i], (x, y))))
                else:
                    preds.add(Pred("counter-empty" if ch == "X" else "pot-empty", ((x, y),)))
        preds.update(self.served)
        return frozenset(preds)

    def check(self, d: dict, t: int) -> None:
        """Compare the tracked objects with state dict ``d`` (= ``states[t]``); sync soup status."""
        L = self.layout
        for k, p in enumerate(d["players"]):
            want = _obj_state(p.get("held_object"), L)
            have = self.held[k]
            if (want is None) != (have is None) or (
                want is not None and (want.kind, want.ingredients) != self.state[have][:2]
            ):
                got = None if have is None else self.state[have]
                raise TraceError(f"states[{t}]: player {k} holds {want}, the replayed actions give {got}")
        listed = {}
        for o in d["objects"]:
            listed[_cell(o["position"])] = _obj_state(o, L)
        if set(listed) != set(self.cell):
            raise TraceError(
                f"states[{t}]: objects lie on {sorted(listed)}, the replayed actions give {sorted(self.cell)}"
            )
        for c, want in listed.items():
            i = self.cell[c]
            if (want.kind, want.ingredients) != self.state[i][:2]:
                raise TraceError(
                    f"states[{t}]: cell {c} holds {want}, the replayed actions give {self.state[i]}"
                )
            self.state[i] = want  # cooking progress is the environment's, not an agent's


def _pred_holding(k: int, i: int, st: ObjectState) -> Pred:
    return Pred("holding", (k, i, st))


def map_trajectory(states: Sequence[dict], actions: Any, layout: str | Path | Layout) -> SymbolicTrace:
    """Map a trajectory to its STRIPS trace ("Who is Helping Whom?", Sec. 4.2, App. C.1
    ``convert_traj_to_pddl``).

    Args:
        states: ``T + 1`` overcooked-ai state dicts (``OvercookedEnv.export_state`` format; JSON form
            with lists for tuples is accepted; legacy ZSC-Eval soups ``"state": [type, n, elapsed]``
            too), ``states[t + 1]`` reached from ``states[t]`` by ``actions[t]``.
        actions: ``int [T, n]`` joint actions in seat order, zsceval action indices
            (``zsceval.interop.trajectory.action_to_overcooked_ai``); overcooked-ai actions
            (``(dx, dy)`` tuples or lists, ``"interact"``) are converted.
        layout: layout name, path or :class:`Layout`.

    Returns:
        The :class:`SymbolicTrace` (``T + 1`` predicate sets, ``T x n`` operators, object records).

    Raises:
        TraceError: lengths disagree, or a state is not what the actions lead to (the hands and
            cells of ``states[t + 1]`` are checked against the replayed interactions).
    """
    L = layout if isinstance(layout, Layout) else load_layout(layout)
    acts = _action_indices(actions)
    if len(states) < 1:
        raise TraceError("a trajectory needs at least one state")
    n = len(states[0]["players"])
    T = len(states) - 1
    if T == 0 and acts.size == 0:
        acts = acts.reshape(0, n)
    if acts.ndim != 2 or acts.shape != (T, n):
        raise TraceError(f"actions must be [T={T}, n={n}] for {T + 1} states, got shape {acts.shape}")
    if acts.size and (acts.min() < 0 or acts.max() >= len(Action)):
        raise TraceError(f"actions must be in 0..{len(Action) - 1}")

    w = _World(L)
    d0 = states[0]
    for p in d0["players"]:
        st = _obj_state(p.get("held_object"), L)
        w.held.append(None if st is None else w.new(st, -1))
    for o in d0["objects"]:
        w.cell[_cell(o["position"])] = w.new(_obj_state(o, L), -1)
    region_of = floor_regions(L)
    regions = tuple(region_of.get(_cell(p["position"]), -1) for p in d0["players"])

    snaps = [w.snapshot(d0)]
    ops: list[tuple[Operator, ...]] = []
    for t in range(T):
        d, d1 = states[t], states[t + 1]
        row = []
        for k in range(n):
            row.append(_operator(w, t, k, int(acts[t, k]), d, d1))
        for k in range(n):  # movement (after every interaction, docs/overcooked-rules.md §2.2)
            if row[k].kind in ("move", "stay"):
                row[k] = _movement(t, k, int(acts[t, k]), d, d1)
        w.check(d1, t + 1)
        ops.append(tuple(row))
        snaps.append(w.snapshot(d1))
    return SymbolicTrace(L, snaps, ops, w.objects, regions, region_of)


def _action_indices(actions: Any) -> np.ndarray:
    """``int64 [T, n]`` zsceval indices of zsceval or overcooked-ai joint actions."""
    try:
        return np.asarray(actions, dtype=np.int64)
    except (TypeError, ValueError):
        from zsceval.interop.trajectory import action_from_overcooked_ai

        try:
            return np.asarray(
                [[action_from_overcooked_ai(a) for a in joint] for joint in actions], dtype=np.int64
            )
        except ValueError as exc:
            raise TraceError(f"actions: {exc}") from None


def _movement(t: int, k: int, a: int, d: dict, d1: dict) -> Operator:
    p0, p1 = d["players"][k], d1["players"][k]
    c0, c1 = _cell(p0["position"]), _cell(p1["position"])
    pre = {Pred("player-at", (k, c0))}
    add, dele = set(), set()
    if c1 != c0:
        add.add(Pred("player-at", (k, c1)))
        dele.add(Pred("player-at", (k, c0)))
    return Operator(
        t, k, a, "stay" if a == Action.STAY else "move", None, frozenset(pre), frozenset(add), frozenset(dele)
    )


def _operator(w: _World, t: int, k: int, a: int, d: dict, d1: dict) -> Operator:
    """The operator of seat ``k``'s action at step ``t``; applies it to ``w`` (interactions only)."""
    if a != Action.INTERACT:
        return Operator(t, k, a, "stay" if a == Action.STAY else "move", None)
    L = w.layout
    p = d["players"][k]
    pos, ori = _cell(p["position"]), _cell(p["orientation"])
    f = (pos[0] + ori[0], pos[1] + ori[1])
    terr = L.terrain[f[1]][f[0]] if 0 <= f[1] < L.height and 0 <= f[0] < L.width else "#"
    hb = w.held[k]
    after = _obj_state(d1["players"][k].get("held_object"), L)
    ha = None if after is None else after.kind
    hb_kind = w.held_kind(k)
    here = w.cell.get(f)
    empty = Pred("hand-empty", (k,))

    def op(kind, pre=(), add=(), dele=()):
        return Operator(t, k, a, kind, f, frozenset(pre), frozenset(add), frozenset(dele))

    def fail(what):
        raise TraceError(
            f"step {t}, player {k}: INTERACT facing {f} ({terr!r}) holding {hb_kind} "
            f"ended holding {ha}: {what}"
        )

    if hb_kind is None and ha is None:
        if terr == "P" and here is not None and L.dynamics == "multi_recipe":
            st = w.state[here]
            now = _pot_status_after(d1, f, L)
            if st.status == "idle" and now in ("cooking", "ready"):
                new = st._replace(status="cooking")
                w.state[here] = new
                return op(
                    "cook",
                    [Pred("at", (here, st, f))],
                    [Pred("at", (here, new, f))],
                    [Pred("at", (here, st, f))],
                )
        return op("noop")
    if hb_kind is None:
        if terr in DISPENSED:
            if DISPENSED[terr] != ha:
                fail("a dispenser gives another item")
            i = w.new(ObjectState(ha), t)
            w.held[k] = i
            return op("pickup_dispenser", [empty], [_pred_holding(k, i, w.state[i])], [empty])
        if terr == "X" and here is not None:
            st = w.state[here]
            if st.kind != ha:
                fail(f"the counter holds a {st.kind}")
            del w.cell[f]
            w.held[k] = here
            at = Pred("at", (here, st, f))
            return op(
                "pickup_counter",
                [empty, at],
                [_pred_holding(k, here, st), Pred("counter-empty", (f,))],
                [empty, at],
            )
        fail("nothing to pick up there")
    if ha is None:
        st = w.state[hb]
        hold = _pred_holding(k, hb, st)
        if terr == "X" and here is None:
            w.cell[f] = hb
            w.held[k] = None
            ce = Pred("counter-empty", (f,))
            return op("put_counter", [hold, ce], [Pred("at", (hb, st, f)), empty], [hold, ce])
        if terr == "P" and st.kind in ("onion", "tomato"):
            if here is None:
                soup = w.new(ObjectState("soup", (), "idle"), t)
                old = Pred("pot-empty", (f,))
            else:
                soup = here
                old = Pred("at", (here, w.state[here], f))
            prev = w.state[soup]
            ings = tuple(sorted((*prev.ingredients, st.kind)))
            status = "cooking" if L.dynamics == "classic" and len(ings) == 3 else "idle"
            new = ObjectState("soup", ings, status)
            w.state[soup] = new
            w.cell[f] = soup
            w.held[k] = None
            rec = w.objects[hb]
            rec.merged_into, rec.merged_at = soup, t
            return op("pot_ingredient", [hold, old], [Pred("at", (soup, new, f)), empty], [hold, old])
        if terr == "S" and st.kind == "soup":
            w.held[k] = None
            served = Pred("served", (hb, st))
            w.served.append(served)
            rec = w.objects[hb]
            rec.served_at, rec.served_state = t, st
            return op("deliver", [hold], [served, empty], [hold])
        fail("cannot put it there")
    if hb_kind == "dish" and ha == "soup":
        if terr != "P" or here is None:
            fail("no soup in a pot there")
        st = w.state[here]
        plated = st._replace(status="ready")
        hold = _pred_holding(k, hb, w.state[hb])
        at = Pred("at", (here, st, f))
        rec = w.objects[hb]
        rec.merged_into, rec.merged_at = here, t
        del w.cell[f]
        w.held[k] = here
        w.state[here] = plated
        return op(
            "plate_soup", [hold, at], [_pred_holding(k, here, plated), Pred("pot-empty", (f,))], [hold, at]
        )
    if hb_kind == ha:
        return op("noop")
    fail("no interaction does that")
    raise AssertionError  # unreachable


def _pot_status_after(d1: dict, f: Cell, L: Layout) -> str | None:
    for o in d1["objects"]:
        if _cell(o["position"]) == f and o["name"] == "soup":
            return _soup_status(o, L)
    return None
