"""Scenario tests of ZSC-Eval's per-agent events, rewards, masks, observations and interaction records.

Every expected value below is derived from the game rules of docs/overcooked-rules.md:
section 3.1 (the 17 classic events), 2.5 (interaction table), 2.3-2.4 (movement, collisions),
5.2-5.5 (multi-recipe dynamics, potting classification, the 29 multi-recipe events), 4.6 (action
masks), 4.2 / 5.7 / 5.8 (observation planes). Scenario states are loaded with ``import_state``
(§6.3 dict format) and advanced one step; the *full* event vector of both agents is compared
so that spurious extra events are caught.

Most scenarios use Coordination Ring (``random1``, classic) or its multi-recipe variant
(``random1_m``), whose grids (§1.3 / §1.4) are::

    random1        random1_m       floor cells: (1,1) (2,1) (3,1) (1,2) (3,2) (1,3) (2,3) (3,3)
    XXXPX          XXXPX           pots (3,0) [faced from (3,1) N] and (4,1) [from (3,1) E]
    X 1 P          X 1 P           dish dispenser (0,2) [from (1,2) W]; onion dispenser (0,3)
    D2X X          D2X X           [from (1,3) W]; (1,4) onion / tomato dispenser [from (1,3) S];
    O   X          O   X           serving window (2,4) [from (2,3) S]; centre counter (2,2)
    XOSXX          XTSXX           [from (2,1) S and (2,3) N]; counter (3,4) [from (3,3) S].
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

import pytest
import torch

from zsceval.envs.overcooked import (
    CLASSIC_EVENTS,
    MULTI_RECIPE_EVENTS,
    Interaction,
    OvercookedEnv,
    parse_layout,
)

N, S, E, W, STAY, INTERACT = range(6)
DIRS = {"N": (0, -1), "S": (0, 1), "E": (1, 0), "W": (-1, 0)}
DIR_INDEX = {"N": 0, "S": 1, "E": 2, "W": 3}
ING = {"o": "onion", "t": "tomato"}

CLASSIC = "coordination_ring"
MULTI = "coordination_ring_mr"

# Grids copied from the layout files (§1.3, §1.4), used to derive expected terrain planes and masks.
GRID_RANDOM1 = ["XXXPX", "X 1 P", "D2X X", "O   X", "XOSXX"]
GRID_RANDOM1_M = ["XXXPX", "X 1 P", "D2X X", "O   X", "XTSXX"]

# Event vectors in the reference's order (§3.1 and §5.5).
SPEC_CLASSIC_EVENTS = (
    "put_onion_on_X", "put_dish_on_X", "put_soup_on_X", "pickup_onion_from_X", "pickup_onion_from_O",
    "pickup_dish_from_X", "pickup_dish_from_D", "pickup_soup_from_X", "USEFUL_DISH_PICKUP",
    "SOUP_PICKUP", "PLACEMENT_IN_POT", "delivery", "STAY", "MOVEMENT", "IDLE_MOVEMENT",
    "IDLE_INTERACT_X", "IDLE_INTERACT_EMPTY",
)  # fmt: skip
SPEC_MULTI_EVENTS = (
    "put_onion_on_X", "put_tomato_on_X", "put_dish_on_X", "put_soup_on_X", "pickup_onion_from_X",
    "pickup_onion_from_O", "pickup_tomato_from_X", "pickup_tomato_from_T", "pickup_dish_from_X",
    "pickup_dish_from_D", "pickup_soup_from_X", "USEFUL_DISH_PICKUP", "SOUP_PICKUP",
    "PLACEMENT_IN_POT", "viable_placement", "optimal_placement", "catastrophic_placement",
    "useless_placement", "potting_onion", "potting_tomato", "cook", "delivery",
    "deliver_size_two_order", "deliver_size_three_order", "deliver_useless_order", "STAY",
    "MOVEMENT", "IDLE_MOVEMENT", "IDLE_INTERACT",
)  # fmt: skip

# Potting event sets (§5.4 / 5.5).
POT_OK_ONION = ("PLACEMENT_IN_POT", "viable_placement", "optimal_placement", "potting_onion")
POT_OK_TOMATO = ("PLACEMENT_IN_POT", "viable_placement", "optimal_placement", "potting_tomato")


# ---------------------------------------------------------------------------------------------
# helpers


def soup(ingredients: str, tick: int = -1) -> dict:
    """A soup object dict (§6.3): ``ingredients`` like ``"oot"`` in insertion order."""
    return {
        "name": "soup",
        "_ingredients": [{"name": ING[c]} for c in ingredients],
        "cooking_tick": tick,
    }


def _placed(obj, pos) -> dict:
    d = {"name": obj} if isinstance(obj, str) else json.loads(json.dumps(obj))
    d["position"] = pos
    for ing in d.get("_ingredients", []):
        ing["position"] = pos
    return d


def make_state(players, objects=(), timestep: int = 0) -> dict:
    """State dict from ``players=[((x, y), 'N', held), ...]`` and ``objects=[(obj, (x, y)), ...]``.

    ``held`` / ``obj`` is ``None``, an object name (``"onion"``, ``"tomato"``, ``"dish"``) or a
    :func:`soup` dict.
    """
    ps = []
    for pos, facing, held in players:
        ps.append(
            {
                "position": pos,
                "orientation": DIRS[facing],
                "held_object": None if held is None else _placed(held, pos),
            }
        )
    return {
        "players": ps,
        "objects": [_placed(obj, pos) for obj, pos in objects],
        "bonus_orders": [],
        "timestep": timestep,
    }


def scenario(layout, players, objects=(), timestep: int = 0, horizon: int = 400) -> OvercookedEnv:
    env = OvercookedEnv(layout, num_envs=1, device="cpu", seed=0, horizon=horizon)
    env.reset()
    env.import_state(0, make_state(players, objects, timestep))
    return env


def act(env: OvercookedEnv, a0: int, a1: int):
    return env.step(torch.tensor([[a0, a1]], dtype=torch.int64))


def norm(obj):
    """Comparable form of an object: ``None``, a name, or ``("soup", "oot", tick)``."""
    if obj is None:
        return None
    if isinstance(obj, str):
        return obj
    if obj["name"] != "soup":
        return obj["name"]
    ings = "".join(i["name"][0] for i in obj["_ingredients"])
    return ("soup", ings, obj["cooking_tick"])


def exported(env: OvercookedEnv) -> dict:
    """The exported state after a JSON round trip (positions become lists)."""
    return json.loads(json.dumps(env.export_state(0)))


def held_after(env, p):
    return norm(exported(env)["players"][p]["held_object"])


def object_at(env, pos):
    found = [o for o in exported(env)["objects"] if tuple(o["position"]) == tuple(pos)]
    assert len(found) <= 1
    return norm(found[0]) if found else None


def player_after(env, p):
    d = exported(env)["players"][p]
    return tuple(d["position"]), tuple(d["orientation"])


def expected_events(env, names) -> list[int]:
    unknown = set(names) - set(env.event_names)
    assert not unknown, f"test bug: unknown events {unknown}"
    counts = Counter(names)
    return [counts[n] for n in env.event_names]


def named(env, vec) -> list[str]:
    return [f"{n}={int(v)}" for n, v in zip(env.event_names, vec) if int(v)]


def assert_events(env, step, agent, names):
    got = step.events[0, agent]
    assert got.dtype == torch.int16
    want = expected_events(env, names)
    assert got.tolist() == want, f"agent {agent}: got {named(env, got)}, expected {sorted(names)}"


def assert_step(env, step, events0, events1, shaped=(0.0, 0.0), sparse=(0.0, 0.0)):
    assert_events(env, step, 0, events0)
    assert_events(env, step, 1, events1)
    assert step.shaped_by_agent[0].tolist() == [float(x) for x in shaped]
    assert step.sparse_by_agent[0].tolist() == [float(x) for x in sparse]
    assert step.reward[0].item() == float(sum(sparse))


# ---------------------------------------------------------------------------------------------
# event lists


def test_event_name_order_matches_spec():
    assert tuple(CLASSIC_EVENTS) == SPEC_CLASSIC_EVENTS
    assert tuple(MULTI_RECIPE_EVENTS) == SPEC_MULTI_EVENTS
    assert OvercookedEnv(CLASSIC).event_names == SPEC_CLASSIC_EVENTS
    assert OvercookedEnv(MULTI).event_names == SPEC_MULTI_EVENTS
    env = OvercookedEnv(CLASSIC, num_envs=3)
    step = env.reset()
    assert step.events.shape == (3, 2, 17)
    env = OvercookedEnv(MULTI, num_envs=3)
    step = env.reset()
    assert step.events.shape == (3, 2, 29)


# ---------------------------------------------------------------------------------------------
# single-actor scenarios: the actor acts, the partner stands at (3,3) facing S and STAYs.

KEEP = object()
PARTNER = ((3, 3), "S", None)


@dataclass
class Case:
    id: str
    at: tuple
    facing: str
    held: object = None
    objects: tuple = ()
    action: int = INTERACT
    events: tuple = ()
    shaped: float = 0.0
    sparse: float = 0.0
    after_held: object = KEEP  # expected held object afterwards (KEEP: unchanged)
    after: dict = field(default_factory=dict)  # cell -> expected object afterwards
    after_pose: tuple | None = None  # expected (position, orientation) afterwards

    def faced(self):
        dx, dy = DIRS[self.facing]
        return (self.at[0] + dx, self.at[1] + dy)


def run_case(layout, case: Case, actor: int):
    players = [PARTNER, PARTNER]
    players[actor] = (case.at, case.facing, case.held)
    env = scenario(layout, players, case.objects)
    actions = [STAY, STAY]
    actions[actor] = case.action
    step = act(env, *actions)
    ev = [("STAY",), ("STAY",)]
    ev[actor] = case.events
    shaped, sparse = [0, 0], [0, 0]
    shaped[actor], sparse[actor] = case.shaped, case.sparse
    assert_step(env, step, ev[0], ev[1], shaped, sparse)
    want_held = norm(case.held) if case.after_held is KEEP else norm(case.after_held)
    assert held_after(env, actor) == want_held
    assert held_after(env, 1 - actor) is None
    for cell, want in case.after.items():
        assert object_at(env, cell) == norm(want), f"object at {cell}"
    if case.after_pose is not None:
        pos, facing = case.after_pose
        assert player_after(env, actor) == (pos, DIRS[facing])
    elif case.action == INTERACT:
        assert player_after(env, actor) == (case.at, DIRS[case.facing])
    assert player_after(env, 1 - actor) == ((3, 3), (0, 1))
    return env, step


A_COUNTER = dict(at=(2, 1), facing="S")  # faces the centre counter (2,2)
A_POT = dict(at=(3, 1), facing="N")  # faces pot (3,0)
A_POT2 = dict(at=(3, 1), facing="E")  # faces pot (4,1)
A_DISH = dict(at=(1, 2), facing="W")  # faces the dish dispenser (0,2)
A_ONION = dict(at=(1, 3), facing="W")  # faces the onion dispenser (0,3)
A_BOTTOM = dict(at=(1, 3), facing="S")  # faces (1,4): onion (classic) / tomato (multi) dispenser
A_SERVE = dict(at=(2, 3), facing="S")  # faces the serving window (2,4)
A_FLOOR = dict(at=(1, 1), facing="E")  # faces floor (2,1)
C = (2, 2)
P0, P1 = (3, 0), (4, 1)
READY = soup("ooo", 20)

CLASSIC_CASES = [
    # --- counters (rows 0-3, 5, 7, 15)
    Case("put_onion_on_X", **A_COUNTER, held="onion", events=("put_onion_on_X",), after_held=None,
         after={C: "onion"}),
    Case("put_dish_on_X", **A_COUNTER, held="dish", events=("put_dish_on_X",), after_held=None,
         after={C: "dish"}),
    Case("put_soup_on_X", **A_COUNTER, held=READY, events=("put_soup_on_X",), after_held=None,
         after={C: READY}),
    Case("pickup_onion_from_X", **A_COUNTER, objects=(("onion", C),), events=("pickup_onion_from_X",),
         after_held="onion", after={C: None}),
    Case("pickup_dish_from_X", **A_COUNTER, objects=(("dish", C),), events=("pickup_dish_from_X",),
         after_held="dish", after={C: None}),
    Case("pickup_soup_from_X", **A_COUNTER, objects=((READY, C),), events=("pickup_soup_from_X",),
         after_held=READY, after={C: None}),
    Case("idle_X_empty_handed_empty_counter", **A_COUNTER, events=("IDLE_INTERACT_X",), after={C: None}),
    Case("idle_X_onion_on_dish", **A_COUNTER, held="onion", objects=(("dish", C),),
         events=("IDLE_INTERACT_X",), after={C: "dish"}),
    Case("idle_X_dish_on_soup", **A_COUNTER, held="dish", objects=((READY, C),),
         events=("IDLE_INTERACT_X",), after={C: READY}),
    Case("idle_X_soup_on_onion", **A_COUNTER, held=READY, objects=(("onion", C),),
         events=("IDLE_INTERACT_X",), after={C: "onion"}),
    Case("idle_X_from_below", at=(2, 3), facing="N", held="dish", objects=(("dish", C),),
         events=("IDLE_INTERACT_X",), after={C: "dish"}),
    # --- dispensers (rows 4, 6, 16)
    Case("pickup_onion_from_O_west", **A_ONION, events=("pickup_onion_from_O",), after_held="onion"),
    Case("pickup_onion_from_O_south", **A_BOTTOM, events=("pickup_onion_from_O",), after_held="onion"),
    Case("pickup_dish_from_D_no_pot", **A_DISH, events=("pickup_dish_from_D",), after_held="dish"),
    Case("O_while_holding_dish", **A_ONION, held="dish", events=("IDLE_INTERACT_EMPTY",)),
    Case("O_while_holding_onion", **A_BOTTOM, held="onion", events=("IDLE_INTERACT_EMPTY",)),
    Case("D_while_holding_onion", **A_DISH, held="onion", events=("IDLE_INTERACT_EMPTY",)),
    Case("D_while_holding_dish", **A_DISH, held="dish", events=("IDLE_INTERACT_EMPTY",)),
    Case("D_while_holding_soup", **A_DISH, held=READY, events=("IDLE_INTERACT_EMPTY",)),
    # --- pots (rows 9, 10, 16 and the no-event notes)
    Case("SOUP_PICKUP", **A_POT, held="dish", objects=((READY, P0),), events=("SOUP_PICKUP",), shaped=5,
         after_held=READY, after={P0: None}),
    Case("SOUP_PICKUP_east_pot", **A_POT2, held="dish", objects=((READY, P1),), events=("SOUP_PICKUP",),
         shaped=5, after_held=READY, after={P1: None}),
    Case("placement_empty_pot", **A_POT, held="onion", events=("PLACEMENT_IN_POT",), shaped=3,
         after_held=None, after={P0: soup("o")}),
    Case("placement_second_onion", **A_POT, held="onion", objects=((soup("o"), P0),),
         events=("PLACEMENT_IN_POT",), shaped=3, after_held=None, after={P0: soup("oo")}),
    # The third onion starts cooking by itself; the same step's tick makes it 1 (§2.6).
    Case("placement_third_onion_autostarts", **A_POT2, held="onion", objects=((soup("oo"), P1),),
         events=("PLACEMENT_IN_POT",), shaped=3, after_held=None, after={P1: soup("ooo", 1)}),
    Case("pot_empty_handed_empty", **A_POT, events=("IDLE_INTERACT_EMPTY",), after={P0: None}),
    Case("pot_empty_handed_partial", **A_POT, objects=((soup("oo"), P0),), events=("IDLE_INTERACT_EMPTY",),
         after={P0: soup("oo")}),
    Case("pot_empty_handed_cooking", **A_POT, objects=((soup("ooo", 5), P0),),
         events=("IDLE_INTERACT_EMPTY",), after={P0: soup("ooo", 6)}),
    Case("pot_empty_handed_ready", **A_POT, objects=((READY, P0),), events=("IDLE_INTERACT_EMPTY",),
         after={P0: READY}),
    Case("dish_at_empty_pot", **A_POT, held="dish", events=(), after={P0: None}),
    Case("dish_at_partial_pot", **A_POT, held="dish", objects=((soup("oo"), P0),), events=(),
         after={P0: soup("oo")}),
    Case("dish_at_cooking_pot", **A_POT, held="dish", objects=((soup("ooo", 5), P0),), events=(),
         after={P0: soup("ooo", 6)}),
    Case("dish_at_pot_tick_19", **A_POT, held="dish", objects=((soup("ooo", 19), P0),), events=(),
         after={P0: soup("ooo", 20)}),
    Case("onion_at_cooking_pot", **A_POT, held="onion", objects=((soup("ooo", 5), P0),), events=(),
         after={P0: soup("ooo", 6)}),
    Case("onion_at_ready_pot", **A_POT, held="onion", objects=((READY, P0),), events=(), after={P0: READY}),
    Case("soup_at_empty_pot", **A_POT, held=READY, events=(), after={P0: None}),
    Case("soup_at_partial_pot", **A_POT, held=READY, objects=((soup("o"), P0),), events=(),
         after={P0: soup("o")}),
    Case("soup_at_ready_pot", **A_POT, held=READY, objects=((READY, P0),), events=(), after={P0: READY}),
    # --- serving window (row 11, 16)
    Case("delivery", **A_SERVE, held=READY, events=("delivery",), sparse=20, after_held=None),
    Case("serve_empty_handed", **A_SERVE, events=("IDLE_INTERACT_EMPTY",)),
    Case("onion_at_serve", **A_SERVE, held="onion", events=()),
    Case("dish_at_serve", **A_SERVE, held="dish", events=()),
    # --- floor (row 16)
    Case("floor_empty_handed", **A_FLOOR, events=("IDLE_INTERACT_EMPTY",)),
    Case("floor_holding_onion", **A_FLOOR, held="onion", events=("IDLE_INTERACT_EMPTY",)),
    Case("floor_holding_soup", **A_FLOOR, held=READY, events=("IDLE_INTERACT_EMPTY",)),
    # --- STAY / movement (rows 12-14)
    Case("stay", **A_COUNTER, held="onion", action=STAY, events=("STAY",), after_pose=((2, 1), "S")),
    Case("move", at=(1, 1), facing="N", action=S, events=("MOVEMENT",), after_pose=((1, 2), "S")),
    Case("move_same_facing", at=(1, 1), facing="S", action=S, events=("MOVEMENT",),
         after_pose=((1, 2), "S")),
    Case("blocked_turn_is_not_idle", at=(1, 1), facing="N", action=W, events=("MOVEMENT",),
         after_pose=((1, 1), "W")),
    Case("blocked_facing_is_idle", at=(1, 1), facing="W", action=W, events=("MOVEMENT", "IDLE_MOVEMENT"),
         after_pose=((1, 1), "W")),
    Case("blocked_by_pot_idle", **A_POT, action=N, events=("MOVEMENT", "IDLE_MOVEMENT"),
         after_pose=((3, 1), "N")),
    Case("move_holding_soup", at=(2, 3), facing="S", held=READY, action=W, events=("MOVEMENT",),
         after_pose=((1, 3), "W")),
]  # fmt: skip


@pytest.mark.parametrize("actor", [0, 1])
@pytest.mark.parametrize("case", CLASSIC_CASES, ids=lambda c: c.id)
def test_classic_single_actor(case, actor):
    run_case(CLASSIC, case, actor)


def run_batched(layout, cases):
    """All ``cases`` at once in one batch (actor = player 0): games must not interact."""
    env = OvercookedEnv(layout, num_envs=len(cases), device="cpu", seed=0, horizon=400)
    env.reset()
    for i, case in enumerate(cases):
        env.import_state(i, make_state([(case.at, case.facing, case.held), PARTNER], case.objects))
    actions = torch.tensor([[case.action, STAY] for case in cases], dtype=torch.int64)
    step = env.step(actions)
    for i, case in enumerate(cases):
        want = [expected_events(env, case.events), expected_events(env, ("STAY",))]
        assert step.events[i].tolist() == want, case.id
        assert step.shaped_by_agent[i].tolist() == [float(case.shaped), 0.0], case.id
        assert step.sparse_by_agent[i].tolist() == [float(case.sparse), 0.0], case.id
        assert step.reward[i].item() == float(case.sparse), case.id
        d = json.loads(json.dumps(env.export_state(i)))
        want_held = norm(case.held) if case.after_held is KEEP else norm(case.after_held)
        assert norm(d["players"][0]["held_object"]) == want_held, case.id
        objs = {tuple(o["position"]): norm(o) for o in d["objects"]}
        for c, want_obj in case.after.items():
            assert objs.get(c) == norm(want_obj), case.id


def test_classic_cases_batched():
    run_batched(CLASSIC, CLASSIC_CASES)


def test_classic_every_event_row_covered():
    covered = {n for c in CLASSIC_CASES for n in c.events} | {"STAY"}
    # USEFUL_DISH_PICKUP has its own tests below.
    assert covered | {"USEFUL_DISH_PICKUP"} == set(SPEC_CLASSIC_EVENTS)


# ---------------------------------------------------------------------------------------------
# classic: two-player interactions in one step


def test_sequential_both_grab_same_counter():
    # Spec 2.2: interactions resolve in player order; player 0 takes the onion, player 1 finds
    # the counter empty and logs IDLE_INTERACT_X.
    env = scenario(CLASSIC, [((2, 1), "S", None), ((2, 3), "N", None)], [("onion", C)])
    step = act(env, INTERACT, INTERACT)
    assert_step(env, step, ("pickup_onion_from_X",), ("IDLE_INTERACT_X",))
    assert held_after(env, 0) == "onion"
    assert held_after(env, 1) is None
    assert object_at(env, C) is None


def test_sequential_put_then_pick_same_step():
    # Player 1 sees the dish player 0 placed earlier in the same step.
    env = scenario(CLASSIC, [((2, 1), "S", "dish"), ((2, 3), "N", None)])
    step = act(env, INTERACT, INTERACT)
    assert_step(env, step, ("put_dish_on_X",), ("pickup_dish_from_X",))
    assert held_after(env, 0) is None
    assert held_after(env, 1) == "dish"
    assert object_at(env, C) is None


def test_sequential_player0_does_not_see_player1_put():
    # Player 0 acts first: the counter is still empty for it (IDLE_INTERACT_X); then player 1 puts.
    env = scenario(CLASSIC, [((2, 1), "S", None), ((2, 3), "N", "onion")])
    step = act(env, INTERACT, INTERACT)
    assert_step(env, step, ("IDLE_INTERACT_X",), ("put_onion_on_X",))
    assert held_after(env, 0) is None
    assert object_at(env, C) == "onion"


def test_sequential_both_put_on_same_counter():
    env = scenario(CLASSIC, [((2, 1), "S", "onion"), ((2, 3), "N", "dish")])
    step = act(env, INTERACT, INTERACT)
    assert_step(env, step, ("put_onion_on_X",), ("IDLE_INTERACT_X",))
    assert object_at(env, C) == "onion"
    assert held_after(env, 1) == "dish"


@pytest.mark.parametrize("held", [None, "onion", "dish"])
def test_interact_facing_other_player_is_idle_empty(held):
    # The faced cell is floor even with a player on it; items are never handed over (§2.5).
    env = scenario(CLASSIC, [((1, 1), "E", held), ((2, 1), "W", None)])
    step = act(env, INTERACT, STAY)
    assert_step(env, step, ("IDLE_INTERACT_EMPTY",), ("STAY",))
    assert held_after(env, 0) == held
    assert held_after(env, 1) is None


def test_both_interact_facing_each_other():
    env = scenario(CLASSIC, [((1, 1), "E", "onion"), ((2, 1), "W", None)])
    step = act(env, INTERACT, INTERACT)
    assert_step(env, step, ("IDLE_INTERACT_EMPTY",), ("IDLE_INTERACT_EMPTY",))


# ---------------------------------------------------------------------------------------------
# classic: USEFUL_DISH_PICKUP (§3.1 row 8)

DISH_TAKER = ((1, 2), "W", None)  # player 1 faces the dish dispenser
USEFUL = ("pickup_dish_from_D", "USEFUL_DISH_PICKUP")
NOT_USEFUL = ("pickup_dish_from_D",)


@pytest.mark.parametrize(
    "objects, partner_held, useful",
    [
        ((), None, False),  # no pot busy
        (((soup("o"), P0),), None, True),  # partially full (1 item)
        (((soup("oo"), P1),), None, True),  # partially full (2 items)
        (((soup("ooo", 5), P0),), None, True),  # cooking
        (((READY, P1),), None, True),  # ready
        (((soup("ooo", 5), P0),), "dish", False),  # as many held dishes as busy pots
        (((soup("ooo", 5), P0), (soup("o"), P1)), "dish", True),  # 1 held dish < 2 busy pots
        (((soup("ooo", 5), P0), ("dish", (4, 2))), None, False),  # a dish lies on a counter
        (((soup("ooo", 5), P0), (soup("o"), P1), ("dish", (0, 1))), "dish", False),
        (((soup("ooo", 5), P0), ("onion", (4, 2))), None, True),  # a counter onion is irrelevant
        (((READY, (4, 2)),), None, False),  # a soup on a counter is not a pot
        (((soup("ooo", 5), P0),), "onion", True),  # the partner's onion is not a dish
        (((soup("ooo", 5), P0),), READY, True),  # ... nor is a held soup
    ],
    ids=[
        "no_pots", "partial_1", "partial_2", "cooking", "ready", "held_dish_equals_busy",
        "held_dish_less_than_busy", "counter_dish", "counter_dish_two_pots", "counter_onion",
        "counter_soup_only", "partner_onion", "partner_soup",
    ],
)  # fmt: skip
def test_classic_useful_dish_pickup(objects, partner_held, useful):
    env = scenario(CLASSIC, [((3, 3), "S", partner_held), DISH_TAKER], objects)
    step = act(env, STAY, INTERACT)
    assert_step(env, step, ("STAY",), USEFUL if useful else NOT_USEFUL, shaped=(0, 3 if useful else 0))
    assert held_after(env, 1) == "dish"


def test_classic_useful_dish_idle_full_pot_does_not_count():
    # A 3-onion pot that has not started (tick -1, hand-built) is neither ready, cooking nor
    # partially full (§3.1 row 8 / 6.2 item 5, PYPI oracle).
    env = scenario(CLASSIC, [PARTNER, DISH_TAKER], [(soup("ooo"), P0)])
    step = act(env, STAY, INTERACT)
    assert_step(env, step, ("STAY",), NOT_USEFUL)
    assert object_at(env, P0) == ("soup", "ooo", 1)  # it auto-starts at the end of the step


def test_classic_useful_dish_uses_start_of_step_pot_snapshot():
    # Player 0 takes the only (ready) soup out of the pot earlier in the same step; the pot
    # snapshot taken at the start of the step still counts it, so player 1's dish is useful.
    env = scenario(CLASSIC, [((3, 1), "N", "dish"), DISH_TAKER], [(READY, P0)])
    step = act(env, INTERACT, INTERACT)
    assert_step(env, step, ("SOUP_PICKUP",), USEFUL, shaped=(5, 3))
    assert held_after(env, 0) == norm(READY)
    assert object_at(env, P0) is None


def test_classic_useful_dish_sees_dish_still_held_by_later_player():
    # Player 0 takes the dish first: player 1 still holds its dish at that moment (1 dish, 1 busy pot).
    env = scenario(CLASSIC, [((1, 2), "W", None), ((3, 1), "N", "dish")], [(READY, P0)])
    step = act(env, INTERACT, INTERACT)
    assert_step(env, step, NOT_USEFUL, ("SOUP_PICKUP",), shaped=(0, 5))


def test_classic_useful_dish_counter_dish_placed_earlier_in_step():
    # At the start of the step 1 dish is held and 2 pots are busy (would be useful), but player 0
    # puts its dish on a counter first: a dish lies on a counter at player 1's moment.
    env = scenario(CLASSIC, [((2, 1), "S", "dish"), DISH_TAKER], [(soup("ooo", 5), P0), (soup("o"), P1)])
    step = act(env, INTERACT, INTERACT)
    assert_step(env, step, ("put_dish_on_X",), NOT_USEFUL)


def test_classic_useful_dish_counter_dish_taken_earlier_in_step():
    # At the start a dish lies on the counter (not useful), but player 0 picks it up first:
    # no counter dish and 1 held dish < 2 busy pots at player 1's moment.
    env = scenario(
        CLASSIC, [((2, 1), "S", None), DISH_TAKER], [("dish", C), (soup("ooo", 5), P0), (soup("oo"), P1)]
    )
    step = act(env, INTERACT, INTERACT)
    assert_step(env, step, ("pickup_dish_from_X",), USEFUL, shaped=(0, 3))


@pytest.mark.parametrize("busy_pots, useful1", [(1, False), (2, True)])
def test_classic_useful_dish_two_dispensers_same_step(busy_pots, useful1):
    # Asymmetric Advantages has two dish dispensers (3,4) and (5,4); pots (4,2), (4,3).
    # Player 1 counts the dish player 0 just took ("at the moment, just before i takes its dish").
    objects = [(soup("ooo", 5), (4, 2))] + ([(soup("o"), (4, 3))] if busy_pots == 2 else [])
    env = scenario("asymmetric_advantages", [((3, 3), "S", None), ((5, 3), "S", None)], objects)
    step = act(env, INTERACT, INTERACT)
    assert_step(env, step, USEFUL, USEFUL if useful1 else NOT_USEFUL, shaped=(3, 3 if useful1 else 0))
    assert held_after(env, 0) == "dish" and held_after(env, 1) == "dish"


# ---------------------------------------------------------------------------------------------
# classic: movement and collisions (§2.3, 2.4, 8.3)


@pytest.mark.parametrize(
    "players, actions, after, events",
    [
        # same target cell: both stay, both turn; not idle (orientation changed)
        ([((1, 1), "N"), ((3, 1), "N")], (E, W), [((1, 1), "E"), ((3, 1), "W")],
         [("MOVEMENT",), ("MOVEMENT",)]),
        # same target, already facing it: both idle
        ([((1, 1), "E"), ((3, 1), "W")], (E, W), [((1, 1), "E"), ((3, 1), "W")],
         [("MOVEMENT", "IDLE_MOVEMENT"), ("MOVEMENT", "IDLE_MOVEMENT")]),
        # swap
        ([((1, 1), "E"), ((2, 1), "W")], (E, W), [((1, 1), "E"), ((2, 1), "W")],
         [("MOVEMENT", "IDLE_MOVEMENT"), ("MOVEMENT", "IDLE_MOVEMENT")]),
        # swap while turning: no idle
        ([((1, 1), "N"), ((2, 1), "N")], (E, W), [((1, 1), "E"), ((2, 1), "W")],
         [("MOVEMENT",), ("MOVEMENT",)]),
        # following: allowed
        ([((1, 1), "E"), ((2, 1), "E")], (E, E), [((2, 1), "E"), ((3, 1), "E")],
         [("MOVEMENT",), ("MOVEMENT",)]),
        # following vertically, player 1 leads
        ([((1, 3), "N"), ((1, 2), "N")], (N, N), [((1, 2), "N"), ((1, 1), "N")],
         [("MOVEMENT",), ("MOVEMENT",)]),
        # moving into a STAYing player
        ([((1, 1), "E"), ((2, 1), "N")], (E, STAY), [((1, 1), "E"), ((2, 1), "N")],
         [("MOVEMENT", "IDLE_MOVEMENT"), ("STAY",)]),
        # moving into a STAYing player while turning: not idle
        ([((1, 1), "N"), ((2, 1), "N")], (E, STAY), [((1, 1), "E"), ((2, 1), "N")],
         [("MOVEMENT",), ("STAY",)]),
        # moving into an INTERACTing player (it faces the empty counter (2,0))
        ([((1, 1), "E"), ((2, 1), "N")], (E, INTERACT), [((1, 1), "E"), ((2, 1), "N")],
         [("MOVEMENT", "IDLE_MOVEMENT"), ("IDLE_INTERACT_X",)]),
        # moving into a player that is blocked by terrain (both idle)
        ([((1, 1), "E"), ((2, 1), "N")], (E, N), [((1, 1), "E"), ((2, 1), "N")],
         [("MOVEMENT", "IDLE_MOVEMENT"), ("MOVEMENT", "IDLE_MOVEMENT")]),
        # player 1 moves into player 0, who turns toward a wall
        ([((3, 1), "S"), ((3, 2), "S")], (N, N), [((3, 1), "N"), ((3, 2), "N")],
         [("MOVEMENT",), ("MOVEMENT",)]),
        # independent moves
        ([((1, 1), "N"), ((3, 3), "N")], (S, W), [((1, 2), "S"), ((2, 3), "W")],
         [("MOVEMENT",), ("MOVEMENT",)]),
    ],
    ids=[
        "same_target_turning", "same_target_facing", "swap_facing", "swap_turning", "following",
        "following_vertical", "into_stayer", "into_stayer_turning", "into_interactor",
        "into_blocked", "into_turning_player", "independent",
    ],
)  # fmt: skip
def test_classic_collisions(players, actions, after, events):
    env = scenario(CLASSIC, [(pos, f, None) for pos, f in players])
    step = act(env, *actions)
    assert_step(env, step, events[0], events[1])
    for p in range(2):
        assert player_after(env, p) == (after[p][0], DIRS[after[p][1]])


# ---------------------------------------------------------------------------------------------
# multi-recipe single-actor scenarios (§5.2, 5.4, 5.5) on random1_m

OO_READY = soup("oo", 10)  # OO: value 10, time 10
OT_READY = soup("ot", 10)
OTT_READY = soup("ott", 20)

MULTI_CASES = [
    # --- counters
    Case("put_onion_on_X", **A_COUNTER, held="onion", events=("put_onion_on_X",), after_held=None,
         after={C: "onion"}),
    Case("put_tomato_on_X", **A_COUNTER, held="tomato", events=("put_tomato_on_X",), after_held=None,
         after={C: "tomato"}),
    Case("put_dish_on_X", **A_COUNTER, held="dish", events=("put_dish_on_X",), after_held=None,
         after={C: "dish"}),
    Case("put_soup_on_X", **A_COUNTER, held=OT_READY, events=("put_soup_on_X",), after_held=None,
         after={C: OT_READY}),
    Case("pickup_onion_from_X", **A_COUNTER, objects=(("onion", C),), events=("pickup_onion_from_X",),
         after_held="onion", after={C: None}),
    Case("pickup_tomato_from_X", **A_COUNTER, objects=(("tomato", C),), events=("pickup_tomato_from_X",),
         after_held="tomato", after={C: None}),
    Case("pickup_dish_from_X", **A_COUNTER, objects=(("dish", C),), events=("pickup_dish_from_X",),
         after_held="dish", after={C: None}),
    Case("pickup_soup_from_X", **A_COUNTER, objects=((OTT_READY, C),), events=("pickup_soup_from_X",),
         after_held=OTT_READY, after={C: None}),
    Case("idle_X_empty_handed", **A_COUNTER, events=("IDLE_INTERACT",), after={C: None}),
    Case("idle_X_tomato_on_onion", **A_COUNTER, held="tomato", objects=(("onion", C),),
         events=("IDLE_INTERACT",), after={C: "onion"}),
    # --- dispensers
    Case("pickup_onion_from_O", **A_ONION, events=("pickup_onion_from_O",), after_held="onion"),
    Case("pickup_tomato_from_T", **A_BOTTOM, events=("pickup_tomato_from_T",), after_held="tomato"),
    Case("pickup_dish_from_D_no_pot", **A_DISH, events=("pickup_dish_from_D",), after_held="dish"),
    Case("O_holding_tomato", **A_ONION, held="tomato", events=("IDLE_INTERACT",)),
    Case("T_holding_onion", **A_BOTTOM, held="onion", events=("IDLE_INTERACT",)),
    Case("T_holding_soup", **A_BOTTOM, held=OO_READY, events=("IDLE_INTERACT",)),
    Case("D_holding_dish", **A_DISH, held="dish", events=("IDLE_INTERACT",)),
    # --- soup pickup from a pot
    Case("SOUP_PICKUP_oo", **A_POT, held="dish", objects=((OO_READY, P0),), events=("SOUP_PICKUP",),
         shaped=5, after_held=OO_READY, after={P0: None}),
    Case("SOUP_PICKUP_single_onion", **A_POT2, held="dish", objects=((soup("o", 20), P1),),
         events=("SOUP_PICKUP",), shaped=5, after_held=soup("o", 20), after={P1: None}),
    # --- potting classification (§5.4: every potting is optimal + viable except T into TT)
    Case("pot_onion_empty", **A_POT, held="onion", events=POT_OK_ONION, shaped=3, after_held=None,
         after={P0: soup("o")}),
    Case("pot_tomato_empty", **A_POT, held="tomato", events=POT_OK_TOMATO, shaped=3, after_held=None,
         after={P0: soup("t")}),
    Case("pot_tomato_into_o", **A_POT, held="tomato", objects=((soup("o"), P0),), events=POT_OK_TOMATO,
         shaped=3, after_held=None, after={P0: soup("ot")}),
    Case("pot_onion_into_oo_no_autostart", **A_POT, held="onion", objects=((soup("oo"), P0),),
         events=POT_OK_ONION, shaped=3, after_held=None, after={P0: soup("ooo")}),
    Case("pot_tomato_into_oo", **A_POT2, held="tomato", objects=((soup("oo"), P1),), events=POT_OK_TOMATO,
         shaped=3, after_held=None, after={P1: soup("oot")}),
    Case("pot_tomato_into_t", **A_POT, held="tomato", objects=((soup("t"), P0),), events=POT_OK_TOMATO,
         shaped=3, after_held=None, after={P0: soup("tt")}),
    Case("pot_onion_into_tt", **A_POT, held="onion", objects=((soup("tt"), P0),), events=POT_OK_ONION,
         shaped=3, after_held=None, after={P0: soup("tto")}),
    Case("pot_tomato_into_ot", **A_POT, held="tomato", objects=((soup("ot"), P0),), events=POT_OK_TOMATO,
         shaped=3, after_held=None, after={P0: soup("ott")}),
    Case("pot_tomato_into_tt_catastrophic", **A_POT, held="tomato", objects=((soup("tt"), P0),),
         events=("PLACEMENT_IN_POT", "catastrophic_placement", "potting_tomato"), shaped=0,
         after_held=None, after={P0: soup("ttt")}),
    # --- potting that is refused: no event
    Case("pot_onion_into_cooking", **A_POT, held="onion", objects=((soup("o", 3), P0),), events=(),
         after={P0: soup("o", 4)}),
    Case("pot_tomato_into_cooking_full", **A_POT, held="tomato", objects=((soup("oot", 3), P0),),
         events=(), after={P0: soup("oot", 4)}),
    Case("pot_onion_into_idle_full", **A_POT, held="onion", objects=((soup("ooo"), P0),), events=(),
         after={P0: soup("ooo")}),
    Case("pot_tomato_into_ready", **A_POT, held="tomato", objects=((OO_READY, P0),), events=(),
         after={P0: OO_READY}),
    # --- cook: empty-handed at an idle pot with 1-3 ingredients; tick 1 after the step
    Case("cook_o", **A_POT, objects=((soup("o"), P0),), events=("cook",), after={P0: soup("o", 1)}),
    Case("cook_oo", **A_POT, objects=((soup("oo"), P0),), events=("cook",), after={P0: soup("oo", 1)}),
    Case("cook_oot", **A_POT2, objects=((soup("oot"), P1),), events=("cook",), after={P1: soup("oot", 1)}),
    Case("cook_ttt", **A_POT, objects=((soup("ttt"), P0),), events=("cook",), after={P0: soup("ttt", 1)}),
    # --- pot interactions that do nothing: never IDLE_INTERACT
    Case("empty_handed_empty_pot", **A_POT, events=(), after={P0: None}),
    Case("empty_handed_cooking_pot", **A_POT, objects=((soup("oo", 3), P0),), events=(),
         after={P0: soup("oo", 4)}),
    Case("empty_handed_ready_pot", **A_POT, objects=((OO_READY, P0),), events=(), after={P0: OO_READY}),
    Case("dish_at_empty_pot", **A_POT, held="dish", events=(), after={P0: None}),
    Case("dish_at_idle_pot", **A_POT, held="dish", objects=((soup("ooo"), P0),), events=(),
         after={P0: soup("ooo")}),
    Case("dish_at_cooking_pot", **A_POT, held="dish", objects=((soup("oo", 3), P0),), events=(),
         after={P0: soup("oo", 4)}),
    Case("soup_at_pot", **A_POT, held=OO_READY, objects=((soup("o"), P0),), events=(),
         after={P0: soup("o")}),
    # --- deliveries (§5.2 item 6, 5.5 rows 21-24)
    Case("deliver_oo", **A_SERVE, held=OO_READY, events=("delivery", "deliver_size_two_order"),
         sparse=10, after_held=None),
    Case("deliver_ot", **A_SERVE, held=OT_READY, events=("delivery", "deliver_size_two_order"),
         sparse=10, after_held=None),
    Case("deliver_ooo", **A_SERVE, held=soup("ooo", 20), events=("delivery", "deliver_size_three_order"),
         sparse=20, after_held=None),
    Case("deliver_oot", **A_SERVE, held=soup("oto", 20), events=("delivery", "deliver_size_three_order"),
         sparse=20, after_held=None),
    Case("deliver_ott", **A_SERVE, held=OTT_READY, events=("delivery", "deliver_size_three_order"),
         sparse=20, after_held=None),
    Case("deliver_ttt_not_an_order", **A_SERVE, held=soup("ttt", 20),
         events=("delivery", "deliver_size_three_order", "deliver_useless_order"), sparse=-10,
         after_held=None),
    Case("deliver_tt_not_an_order", **A_SERVE, held=soup("tt", 20),
         events=("delivery", "deliver_size_two_order", "deliver_useless_order"), sparse=-10,
         after_held=None),
    Case("deliver_o_no_size_event", **A_SERVE, held=soup("o", 20),
         events=("delivery", "deliver_useless_order"), sparse=-10, after_held=None),
    Case("deliver_t_no_size_event", **A_SERVE, held=soup("t", 20),
         events=("delivery", "deliver_useless_order"), sparse=-10, after_held=None),
    Case("serve_empty_handed", **A_SERVE, events=("IDLE_INTERACT",)),
    Case("onion_at_serve", **A_SERVE, held="onion", events=()),
    Case("tomato_at_serve", **A_SERVE, held="tomato", events=()),
    Case("dish_at_serve", **A_SERVE, held="dish", events=()),
    # --- floor, STAY, movement
    Case("floor_empty_handed", **A_FLOOR, events=("IDLE_INTERACT",)),
    Case("floor_holding_tomato", **A_FLOOR, held="tomato", events=("IDLE_INTERACT",)),
    Case("stay", **A_FLOOR, held="tomato", action=STAY, events=("STAY",), after_pose=((1, 1), "E")),
    Case("move", at=(1, 1), facing="N", action=S, events=("MOVEMENT",), after_pose=((1, 2), "S")),
    Case("blocked_turn", at=(1, 3), facing="N", action=S, events=("MOVEMENT",), after_pose=((1, 3), "S")),
    Case("idle_movement", at=(1, 3), facing="S", action=S, events=("MOVEMENT", "IDLE_MOVEMENT"),
         after_pose=((1, 3), "S")),
]  # fmt: skip


@pytest.mark.parametrize("actor", [0, 1])
@pytest.mark.parametrize("case", MULTI_CASES, ids=lambda c: c.id)
def test_multi_single_actor(case, actor):
    run_case(MULTI, case, actor)


def test_multi_cases_batched():
    run_batched(MULTI, MULTI_CASES)


def test_multi_every_event_row_covered():
    covered = {n for c in MULTI_CASES for n in c.events} | {"STAY"}
    # USEFUL_DISH_PICKUP and useless_placement have their own tests below.
    assert covered | {"USEFUL_DISH_PICKUP", "useless_placement"} == set(SPEC_MULTI_EVENTS)


def test_multi_cook_sets_recipe_cook_time():
    # OO is an order with time 10 (§1.4); O is not an order and cooks in the default 20.
    for ings, time in (("oo", 10), ("o", 20), ("ooo", 20), ("ot", 10)):
        env = scenario(MULTI, [((3, 1), "N", None), PARTNER], [(soup(ings), P0)])
        act(env, INTERACT, STAY)
        pot = [o for o in exported(env)["objects"] if o["position"] == [3, 0]][0]
        assert pot["cooking_tick"] == 1 and pot["_cooking_tick"] == 1
        assert pot["is_cooking"] is True and pot["is_idle"] is False and pot["is_ready"] is False
        assert pot["cook_time"] == time


def test_multi_idle_full_pot_never_autostarts():
    env = scenario(MULTI, [PARTNER, ((1, 1), "N", None)], [(soup("ooo"), P0)])
    for _ in range(3):
        act(env, STAY, STAY)
    assert object_at(env, P0) == ("soup", "ooo", -1)


def test_multi_sequential_both_grab_tomato():
    env = scenario(MULTI, [((2, 3), "N", None), ((2, 1), "S", None)], [("tomato", C)])
    step = act(env, INTERACT, INTERACT)
    assert_step(env, step, ("pickup_tomato_from_X",), ("IDLE_INTERACT",))
    assert held_after(env, 0) == "tomato" and held_after(env, 1) is None


def test_multi_interact_facing_other_player():
    env = scenario(MULTI, [((1, 1), "E", "tomato"), ((2, 1), "W", None)])
    step = act(env, INTERACT, STAY)
    assert_step(env, step, ("IDLE_INTERACT",), ("STAY",))
    assert held_after(env, 0) == "tomato" and held_after(env, 1) is None


def test_multi_collision_swap():
    env = scenario(MULTI, [((1, 1), "E", None), ((2, 1), "W", None)])
    step = act(env, E, W)
    assert_step(env, step, ("MOVEMENT", "IDLE_MOVEMENT"), ("MOVEMENT", "IDLE_MOVEMENT"))


def test_multi_two_deliveries_team_reward():
    # Sparse reward goes to the delivering agent; the team reward is the sum (§3.2).
    env = scenario(MULTI, [((2, 3), "S", OO_READY), ((3, 3), "W", None)])
    step = act(env, INTERACT, STAY)
    assert_step(env, step, ("delivery", "deliver_size_two_order"), ("STAY",), sparse=(10, 0))
    env = scenario(MULTI, [((3, 3), "W", None), ((2, 3), "S", soup("ttt", 20))])
    step = act(env, STAY, INTERACT)
    assert_step(
        env,
        step,
        ("STAY",),
        ("delivery", "deliver_size_three_order", "deliver_useless_order"),
        sparse=(0, -10),
    )


# ---------------------------------------------------------------------------------------------
# two players at one pot in the same step (Asymmetric Advantages: pot (4,2) is faced from
# (3,2) looking E and from (5,2) looking W)

AA_POT = (4, 2)


def aa_players(held0, held1):
    return [((3, 2), "E", held0), ((5, 2), "W", held1)]


def test_classic_third_onion_then_second_onion_same_pot():
    # Player 0 adds the 3rd onion; at player 1's moment the pot holds 3 items: nothing, no event.
    env = scenario("asymmetric_advantages", aa_players("onion", "onion"), [(soup("oo"), AA_POT)])
    step = act(env, INTERACT, INTERACT)
    assert_step(env, step, ("PLACEMENT_IN_POT",), (), shaped=(3, 0))
    assert held_after(env, 1) == "onion"
    assert object_at(env, AA_POT) == ("soup", "ooo", 1)


def test_classic_soup_taken_then_dish_at_empty_pot():
    env = scenario("asymmetric_advantages", aa_players("dish", "dish"), [(READY, AA_POT)])
    step = act(env, INTERACT, INTERACT)
    assert_step(env, step, ("SOUP_PICKUP",), (), shaped=(5, 0))
    assert held_after(env, 0) == norm(READY) and held_after(env, 1) == "dish"
    assert object_at(env, AA_POT) is None


def test_multi_third_ingredient_then_cook_same_step():
    # Player 1 sees the idle 3-ingredient soup player 0 just completed and starts it.
    env = scenario("asymmetric_advantages_mr", aa_players("tomato", None), [(soup("oo"), AA_POT)])
    step = act(env, INTERACT, INTERACT)
    assert_step(env, step, POT_OK_TOMATO, ("cook",), shaped=(3, 0))
    assert object_at(env, AA_POT) == ("soup", "oot", 1)


def test_multi_cook_then_potting_refused_same_step():
    # Player 0 starts a 1-onion soup; player 1's onion then meets a cooking pot: nothing, no event.
    env = scenario("asymmetric_advantages_mr", aa_players(None, "onion"), [(soup("o"), AA_POT)])
    step = act(env, INTERACT, INTERACT)
    assert_step(env, step, ("cook",), ())
    assert held_after(env, 1) == "onion"
    assert object_at(env, AA_POT) == ("soup", "o", 1)


def test_multi_potting_then_cook_by_other_player():
    # Player 0 pots into an empty pot (idle, 1 ingredient); player 1 starts it in the same step.
    env = scenario("asymmetric_advantages_mr", aa_players("onion", None))
    step = act(env, INTERACT, INTERACT)
    assert_step(env, step, POT_OK_ONION, ("cook",), shaped=(3, 0))
    assert object_at(env, AA_POT) == ("soup", "o", 1)


# ---------------------------------------------------------------------------------------------
# multi-recipe: USEFUL_DISH_PICKUP (§5.2 item 9)


@pytest.mark.parametrize(
    "objects, partner_held, useful",
    [
        ((), None, False),
        (((soup("o"), P0),), None, True),  # idle, 1 ingredient
        (((soup("ot"), P1),), None, True),  # idle, 2 ingredients
        (((soup("ooo"), P0),), None, False),  # idle with 3 ingredients does not count
        (((soup("ttt"), P0), (soup("oot"), P1)), None, False),  # two idle full pots
        (((soup("o", 3), P0),), None, True),  # cooking with 1 ingredient
        (((soup("ooo", 5), P1),), None, True),  # cooking
        (((OO_READY, P0),), None, True),  # ready
        (((OO_READY, P0),), "dish", False),  # 1 held dish, 1 busy pot
        (((OO_READY, P0), (soup("ooo"), P1)), "dish", False),  # the idle full pot is not busy
        (((OO_READY, P0), (soup("oo"), P1)), "dish", True),  # 1 held dish < 2 busy pots
        (((soup("oo", 3), P0), ("dish", (4, 2))), None, False),  # dish on a counter
        (((soup("oo", 3), P0), ("tomato", (4, 2))), None, True),
    ],
    ids=[
        "no_pots", "idle_1", "idle_2", "idle_full", "two_idle_full", "cooking_1", "cooking_3",
        "ready", "held_dish_equals_busy", "held_dish_idle_full_other", "held_dish_less_than_busy",
        "counter_dish", "counter_tomato",
    ],
)  # fmt: skip
def test_multi_useful_dish_pickup(objects, partner_held, useful):
    env = scenario(MULTI, [((3, 3), "S", partner_held), DISH_TAKER], objects)
    step = act(env, STAY, INTERACT)
    assert_step(env, step, ("STAY",), USEFUL if useful else NOT_USEFUL, shaped=(0, 3 if useful else 0))


def test_multi_useful_dish_start_of_step_snapshot():
    env = scenario(MULTI, [((3, 1), "N", "dish"), DISH_TAKER], [(OO_READY, P0)])
    step = act(env, INTERACT, INTERACT)
    assert_step(env, step, ("SOUP_PICKUP",), USEFUL, shaped=(5, 3))


def test_multi_useful_dish_snapshot_ignores_cook_started_this_step():
    # Player 0 starts cooking an idle 3-ingredient pot; in the start-of-step snapshot it was idle
    # and full, so it does not count for player 1's dish.
    env = scenario(MULTI, [((3, 1), "N", None), DISH_TAKER], [(soup("ooo"), P0)])
    step = act(env, INTERACT, INTERACT)
    assert_step(env, step, ("cook",), NOT_USEFUL)


# ---------------------------------------------------------------------------------------------
# multi-recipe potting with a custom order set: useless_placement (§5.4)

ONION_ONLY_MR = parse_layout(
    "\n".join(
        [
            "name: test_onion_only_multi_recipe",
            "dynamics: multi_recipe",
            "horizon: 400",
            "order: onion onion onion value=20 time=20",
            "grid:",
            *GRID_RANDOM1_M,
        ]
    )
)


@pytest.mark.parametrize(
    "pot, held, events, shaped",
    [
        # best(empty) = 20 = best(O): optimal, viable
        (None, "onion", POT_OK_ONION, 3),
        # best(empty) = 20, best(T) = value(T) = -10: catastrophic, shaped 0
        (None, "tomato", ("PLACEMENT_IN_POT", "catastrophic_placement", "potting_tomato"), 0),
        # best(O) = 20, best(OT) = -10: catastrophic
        (soup("o"), "tomato", ("PLACEMENT_IN_POT", "catastrophic_placement", "potting_tomato"), 0),
        # best(T) = -10 = best(OT): useless and optimal (not viable); optimal earns +3
        (
            soup("t"),
            "onion",
            ("PLACEMENT_IN_POT", "useless_placement", "optimal_placement", "potting_onion"),
            3,
        ),
        # best(OT) = -10 = best(OOT): useless and optimal
        (
            soup("ot"),
            "onion",
            ("PLACEMENT_IN_POT", "useless_placement", "optimal_placement", "potting_onion"),
            3,
        ),
        # best(OO) = 20 = best(OOO)
        (soup("oo"), "onion", POT_OK_ONION, 3),
    ],
    ids=["o_into_empty", "t_into_empty", "t_into_o", "o_into_t", "o_into_ot", "o_into_oo"],
)
def test_custom_orders_potting_classification(pot, held, events, shaped):
    objects = [] if pot is None else [(pot, P0)]
    env = scenario(ONION_ONLY_MR, [((3, 1), "N", held), PARTNER], objects)
    step = act(env, INTERACT, STAY)
    assert_step(env, step, events, ("STAY",), shaped=(shaped, 0))
    assert held_after(env, 0) is None


# ---------------------------------------------------------------------------------------------
# action masks (§4.6)


def expected_directions(grid, pos, facing) -> list[bool]:
    """Direction d is masked iff the neighbour that way is not floor and the player faces d."""
    out = []
    for name in ("N", "S", "E", "W"):
        dx, dy = DIRS[name]
        c = grid[pos[1] + dy][pos[0] + dx]
        out.append(not (c not in " 123456789" and facing == name))
    return out


def test_masks_at_reset_classic():
    env = OvercookedEnv(CLASSIC, num_envs=2)
    step = env.reset()
    # Player 0 at (2,1) faces N toward counter (2,0): N masked; INTERACT at an empty counter
    # empty-handed masked. Player 1 at (1,2) faces floor (1,1): INTERACT masked.
    assert step.avail_actions.dtype == torch.bool
    assert step.avail_actions.shape == (2, 2, 6)
    assert step.avail_actions[0, 0].tolist() == [False, True, True, True, True, False]
    assert step.avail_actions[0, 1].tolist() == [True, True, True, True, True, False]
    step = env.step(torch.tensor([[E, W], [STAY, STAY]]))
    # Player 0 moved to (3,1) facing E toward pot (4,1) (empty-handed at a pot: masked);
    # player 1 turned W toward the dish dispenser: W masked, INTERACT allowed.
    assert step.avail_actions[0, 0].tolist() == [True, True, False, True, True, False]
    assert step.avail_actions[0, 1].tolist() == [True, True, True, False, True, True]
    assert step.avail_actions[1].tolist() == [[False, True, True, True, True, False], [True] * 5 + [False]]


def test_masks_cell_of_other_player_is_never_masked():
    env = scenario(CLASSIC, [((1, 1), "E", None), ((2, 1), "W", None)])
    step = act(env, STAY, STAY)
    # (2,1) is floor for player 0 and (1,1) for player 1, although occupied; both face floor.
    assert step.avail_actions[0].tolist() == [[True] * 5 + [False], [True] * 5 + [False]]


CLASSIC_MASK_CASES = [
    # (id, (pos, facing), held, objects, interact allowed)
    ("floor", A_FLOOR, None, (), False),
    ("floor_holding", A_FLOOR, "onion", (), False),
    ("counter_empty_handed_empty", A_COUNTER, None, (), False),
    ("counter_empty_handed_full", A_COUNTER, None, (("dish", C),), True),
    ("counter_holding_empty", A_COUNTER, "onion", (), True),
    ("counter_holding_full", A_COUNTER, "onion", (("onion", C),), False),
    ("onion_disp_empty_handed", A_ONION, None, (), True),
    ("onion_disp_holding", A_ONION, "onion", (), False),
    ("dish_disp_empty_handed", A_DISH, None, (), True),
    ("dish_disp_holding_dish", A_DISH, "dish", (), False),
    ("dish_disp_holding_soup", A_DISH, READY, (), False),
    ("pot_empty_handed_empty", A_POT, None, (), False),
    ("pot_empty_handed_partial", A_POT, None, ((soup("oo"), P0),), False),
    ("pot_empty_handed_cooking", A_POT, None, ((soup("ooo", 5), P0),), False),
    ("pot_empty_handed_ready", A_POT, None, ((READY, P0),), False),
    ("pot_dish_empty", A_POT, "dish", (), True),
    ("pot_dish_unready", A_POT, "dish", ((soup("ooo", 5), P0),), True),
    ("pot_dish_ready", A_POT, "dish", ((READY, P0),), True),
    ("pot_onion_empty", A_POT, "onion", (), True),
    ("pot_onion_full", A_POT, "onion", ((soup("ooo", 5), P0),), True),
    ("pot_soup", A_POT, READY, (), False),
    ("pot_soup_ready_pot", A_POT, READY, ((READY, P0),), False),
    ("serve_empty_handed", A_SERVE, None, (), False),
    ("serve_onion", A_SERVE, "onion", (), False),
    ("serve_dish", A_SERVE, "dish", (), False),
    ("serve_soup", A_SERVE, READY, (), True),
]

MULTI_MASK_CASES = [
    ("floor", A_FLOOR, None, (), False),
    ("counter_tomato_on_empty", A_COUNTER, "tomato", (), True),
    ("counter_empty_handed_tomato", A_COUNTER, None, (("tomato", C),), True),
    ("counter_tomato_on_full", A_COUNTER, "tomato", (("dish", C),), False),
    ("tomato_disp_empty_handed", A_BOTTOM, None, (), True),
    ("tomato_disp_holding", A_BOTTOM, "tomato", (), False),
    ("onion_disp_holding_tomato", A_ONION, "tomato", (), False),
    ("pot_empty_handed_empty", A_POT, None, (), False),
    ("pot_empty_handed_idle_1", A_POT, None, ((soup("t"), P0),), True),
    ("pot_empty_handed_idle_full", A_POT, None, ((soup("ooo"), P0),), True),
    ("pot_empty_handed_cooking", A_POT, None, ((soup("oo", 3), P0),), True),
    ("pot_empty_handed_ready", A_POT, None, ((OO_READY, P0),), False),
    ("pot_dish_empty", A_POT, "dish", (), True),
    ("pot_dish_cooking", A_POT, "dish", ((soup("oo", 3), P0),), True),
    ("pot_tomato_empty", A_POT, "tomato", (), True),
    ("pot_tomato_cooking", A_POT, "tomato", ((soup("oo", 3), P0),), True),
    ("pot_soup", A_POT, OO_READY, (), False),
    ("serve_empty_handed", A_SERVE, None, (), False),
    ("serve_tomato", A_SERVE, "tomato", (), False),
    ("serve_dish", A_SERVE, "dish", (), False),
    ("serve_soup", A_SERVE, soup("ttt", 20), (), True),
]


def _mask_case(layout, grid, where, held, objects, allowed):
    pos, facing = where["at"], where["facing"]
    env = scenario(layout, [(pos, facing, held), ((3, 3), "E", None)], objects)
    step = act(env, STAY, STAY)  # masks are computed on the post-step state
    want = expected_directions(grid, pos, facing) + [True, allowed]
    assert step.avail_actions[0, 0].tolist() == want
    # the partner at (3,3) faces counter (4,3), empty-handed and empty: E and INTERACT masked
    assert step.avail_actions[0, 1].tolist() == [True, True, False, True, True, False]


@pytest.mark.parametrize(
    "cid, where, held, objects, allowed", CLASSIC_MASK_CASES, ids=[c[0] for c in CLASSIC_MASK_CASES]
)
def test_classic_interact_mask(cid, where, held, objects, allowed):
    _mask_case(CLASSIC, GRID_RANDOM1, where, held, objects, allowed)


@pytest.mark.parametrize(
    "cid, where, held, objects, allowed", MULTI_MASK_CASES, ids=[c[0] for c in MULTI_MASK_CASES]
)
def test_multi_interact_mask(cid, where, held, objects, allowed):
    _mask_case(MULTI, GRID_RANDOM1_M, where, held, objects, allowed)


@pytest.mark.parametrize("layout", [CLASSIC, MULTI])
def test_direction_masks_every_floor_cell_and_facing(layout):
    grid = GRID_RANDOM1 if layout == CLASSIC else GRID_RANDOM1_M
    floor = [(x, y) for y, row in enumerate(grid) for x, c in enumerate(row) if c in " 12"]
    cells = [c for c in floor if c != (3, 3)]
    env = OvercookedEnv(layout, num_envs=len(cells) * 4)
    env.reset()
    wants = []
    for i, (cell, facing) in enumerate((c, f) for c in cells for f in "NSEW"):
        env.import_state(i, make_state([(cell, facing, None), ((3, 3), "N", None)]))
        wants.append(expected_directions(grid, cell, facing))
    step = env.step(torch.full((env.num_envs, 2), STAY))
    assert step.avail_actions[:, 0, :4].tolist() == wants
    assert step.avail_actions[:, :, 4].all()


# ---------------------------------------------------------------------------------------------
# observations (§4.2, 5.7, 5.8; our layout [B, n, H, W, C], plane values not x255)


def plane(values: dict, H=5, W=5) -> list[list[int]]:
    """H x W nested list with ``values[(x, y)]`` at row y, column x."""
    out = [[0] * W for _ in range(H)]
    for (x, y), v in values.items():
        out[y][x] = v
    return out


def terrain_plane(grid, chars) -> list[list[int]]:
    return [[int(c in chars) for c in row] for row in grid]


def player_planes(ego, other) -> dict[int, list[list[int]]]:
    """Channels 0-9 for an ego ((x, y), facing) and the other player."""
    planes = {c: plane({}) for c in range(10)}
    planes[0] = plane({ego[0]: 1})
    planes[1] = plane({other[0]: 1})
    planes[2 + DIR_INDEX[ego[1]]] = plane({ego[0]: 1})
    planes[6 + DIR_INDEX[other[1]]] = plane({other[0]: 1})
    return planes


def assert_obs(step, env, k, expected: dict):
    obs = step.obs[0, k]
    assert obs.dtype == torch.uint8
    assert obs.shape[-1] == len(expected)
    for c, want in expected.items():
        got = obs[:, :, c].tolist()
        assert got == want, f"perspective {k} channel {c} ({env.obs_channels[c]}): {got} != {want}"


def classic_static():
    g = GRID_RANDOM1
    return {10: terrain_plane(g, "P"), 11: terrain_plane(g, "X"), 12: terrain_plane(g, "O"),
            13: terrain_plane(g, "D"), 14: terrain_plane(g, "S")}  # fmt: skip


def test_classic_observation_channels():
    env = scenario(
        CLASSIC,
        [((1, 1), "E", "onion"), ((3, 3), "S", "dish")],
        [("onion", C), ("dish", (4, 2)), (soup("oo"), P0), (soup("ooo", 5), P1)],
    )
    step = act(env, STAY, STAY)  # (4,1) ticks to 6
    assert env.obs_channels[15:] == (
        "onions_in_pot",
        "onions_cook_time",
        "onion_soup_loc",
        "dishes",
        "onions",
    )
    objects = {
        15: plane({P0: 2, P1: 3}),
        16: plane({P1: 6}),  # elapsed ticks; 0 for the idle pot
        17: plane({}),
        18: plane({(4, 2): 1, (3, 3): 1}),  # counter dish AND held dish (no overwrite bug)
        19: plane({C: 1, (1, 1): 1}),  # counter onion AND held onion
    }
    a, b = ((1, 1), "E"), ((3, 3), "S")
    assert_obs(step, env, 0, {**player_planes(a, b), **classic_static(), **objects})
    assert_obs(step, env, 1, {**player_planes(b, a), **classic_static(), **objects})


def test_classic_observation_soups_while_a_soup_is_held():
    # OLD's encoder would drop every pot soup and counter soup here (§4.3); ours does not.
    env = scenario(
        CLASSIC,
        [((2, 3), "S", READY), ((1, 1), "N", None)],
        [(READY, P0), (soup("ooo", 19), P1), (READY, C), ("onion", (4, 2))],
    )
    step = act(env, STAY, STAY)  # (4,1) reaches 20
    objects = {
        15: plane({P0: 3, P1: 3}),
        16: plane({P0: 20, P1: 20}),
        17: plane({(2, 3): 1, C: 1}),  # held soup at the holder's cell and the counter soup
        18: plane({}),
        19: plane({(4, 2): 1}),
    }
    a, b = ((2, 3), "S"), ((1, 1), "N")
    assert_obs(step, env, 0, {**player_planes(a, b), **classic_static(), **objects})
    assert_obs(step, env, 1, {**player_planes(b, a), **classic_static(), **objects})


def multi_static():
    g = GRID_RANDOM1_M
    return {10: terrain_plane(g, "P"), 11: terrain_plane(g, "X"), 12: terrain_plane(g, "O"),
            13: terrain_plane(g, "T"), 14: terrain_plane(g, "D"), 15: terrain_plane(g, "S")}  # fmt: skip


def test_multi_observation_channels():
    env = scenario(
        MULTI,
        [((1, 1), "E", "tomato"), ((3, 3), "S", OT_READY)],
        [(soup("ot"), P0), (soup("oo", 3), P1), ("tomato", C), ("onion", (4, 2)), ("dish", (0, 1)),
         (soup("ttt", 20), (3, 4))],
        timestep=10,
    )  # fmt: skip
    step = act(env, STAY, STAY)  # (4,1) ticks to 4 of 10
    objects = {
        16: plane({P0: 1}),  # onions in an idle pot soup
        17: plane({P0: 1}),  # tomatoes in an idle pot soup
        18: plane({P1: 2, (3, 3): 1}),  # cooking pot soup and the held OT soup
        19: plane({(3, 3): 1, (3, 4): 3}),  # held OT and the counter TTT
        20: plane({P1: 6}),  # remaining = 10 - 4; ready/off-pot soups give 0
        21: plane({(0, 1): 1}),
        22: plane({(4, 2): 1}),
        23: plane({C: 1, (1, 1): 1}),  # loose and held tomatoes
        24: plane({}),
    }
    a, b = ((1, 1), "E"), ((3, 3), "S")
    assert_obs(step, env, 0, {**player_planes(a, b), **multi_static(), **objects})
    assert_obs(step, env, 1, {**player_planes(b, a), **multi_static(), **objects})


def test_multi_observation_pot_states():
    env = scenario(
        MULTI,
        [((3, 1), "W", "dish"), ((2, 3), "N", "onion")],
        [(soup("oot", 20), P0), (soup("t", 0), P1), ("onion", C)],
    )
    step = act(env, STAY, STAY)  # (4,1) T soup ticks 0 -> 1 (non-order, time 20)
    objects = {
        16: plane({}),
        17: plane({}),
        18: plane({P0: 2}),
        19: plane({P0: 1, P1: 1}),
        20: plane({P1: 19}),  # ready pot (3,0) gives 0
        21: plane({(3, 1): 1}),
        22: plane({C: 1, (2, 3): 1}),
        23: plane({}),
        24: plane({}),
    }
    a, b = ((3, 1), "W"), ((2, 3), "N")
    assert_obs(step, env, 0, {**player_planes(a, b), **multi_static(), **objects})
    assert_obs(step, env, 1, {**player_planes(b, a), **multi_static(), **objects})
    # an idle 3-ingredient soup is in the idle planes only; an empty pot is all zeros
    env = scenario(MULTI, [((3, 1), "W", None), ((2, 3), "N", None)], [(soup("ott"), P1)])
    step = act(env, STAY, STAY)
    obs = step.obs[0, 0]
    assert obs[:, :, 16].tolist() == plane({P1: 1})
    assert obs[:, :, 17].tolist() == plane({P1: 2})
    for c in (18, 19, 20):
        assert obs[:, :, c].tolist() == plane({})


@pytest.mark.parametrize("horizon", [400, 50])
def test_multi_urgency_plane(horizon):
    # All ones iff horizon - timestep < 40, i.e. from timestep horizon - 39 on.
    env = scenario(MULTI, [((1, 1), "N", None), ((3, 3), "N", None)], timestep=horizon - 42, horizon=horizon)
    seen = []
    for _ in range(4):
        step = act(env, STAY, STAY)
        ts = env.export_state(0)["timestep"]
        u = step.obs[0, :, :, :, 24]
        assert bool((u == u.flatten()[0]).all())
        seen.append((ts, int(u.flatten()[0])))
    assert seen == [(horizon - 41, 0), (horizon - 40, 0), (horizon - 39, 1), (horizon - 38, 1)]


def test_classic_has_no_urgency_plane():
    env = OvercookedEnv(CLASSIC, num_envs=1, horizon=50)
    step = env.reset()
    assert step.obs.shape == (1, 2, 5, 5, 20)
    assert OvercookedEnv(MULTI, num_envs=1).reset().obs.shape == (1, 2, 5, 5, 25)


# ---------------------------------------------------------------------------------------------
# interaction records


def cell(x, y, W=5):
    return y * W + x


@pytest.mark.parametrize(
    "layout, p0, objects, a0, kind, where",
    [
        (CLASSIC, ((1, 3), "W", None), (), INTERACT, Interaction.PICKUP_ONION_DISPENSER, (0, 3)),
        (CLASSIC, ((1, 3), "S", None), (), INTERACT, Interaction.PICKUP_ONION_DISPENSER, (1, 4)),
        (MULTI, ((1, 3), "S", None), (), INTERACT, Interaction.PICKUP_TOMATO_DISPENSER, (1, 4)),
        (CLASSIC, ((1, 2), "W", None), (), INTERACT, Interaction.PICKUP_DISH_DISPENSER, (0, 2)),
        (CLASSIC, ((2, 1), "S", "onion"), (), INTERACT, Interaction.PUT_ONION_COUNTER, (2, 2)),
        (MULTI, ((2, 1), "S", None), (("tomato", C),), INTERACT, Interaction.PICKUP_TOMATO_COUNTER, (2, 2)),
        (CLASSIC, ((3, 1), "E", "onion"), (), INTERACT, Interaction.POT_ONION, (4, 1)),
        (MULTI, ((3, 1), "N", "tomato"), (), INTERACT, Interaction.POT_TOMATO, (3, 0)),
        (MULTI, ((3, 1), "N", None), ((soup("o"), P0),), INTERACT, Interaction.COOK, (3, 0)),
        (CLASSIC, ((3, 1), "N", "dish"), ((READY, P0),), INTERACT, Interaction.SOUP_PICKUP_POT, (3, 0)),
        (CLASSIC, ((2, 3), "S", READY), (), INTERACT, Interaction.DELIVER, (2, 4)),
        (CLASSIC, ((1, 1), "E", None), (), INTERACT, Interaction.IDLE_EMPTY, (2, 1)),
        (CLASSIC, ((2, 1), "N", None), (), INTERACT, Interaction.IDLE_COUNTER, (2, 0)),
        (CLASSIC, ((3, 1), "N", "dish"), ((soup("ooo", 5), P0),), INTERACT, Interaction.NOOP, (3, 0)),
        (CLASSIC, ((1, 1), "E", None), (), STAY, Interaction.NONE, None),
        (CLASSIC, ((1, 1), "E", None), (), S, Interaction.NONE, None),
    ],
    ids=[
        "onion_disp_w", "onion_disp_s", "tomato_disp", "dish_disp", "put_counter", "pick_counter",
        "pot_onion", "pot_tomato", "cook", "soup_pickup", "deliver", "idle_floor", "idle_counter",
        "noop", "stay", "move",
    ],
)  # fmt: skip
def test_interaction_records(layout, p0, objects, a0, kind, where):
    env = scenario(layout, [p0, ((3, 3), "S", None)], objects)
    step = act(env, a0, STAY)
    assert step.interactions.dtype == torch.int64 and step.interaction_cell.dtype == torch.int64
    assert step.interactions[0].tolist() == [int(kind), int(Interaction.NONE)]
    assert step.interaction_cell[0].tolist() == [-1 if where is None else cell(*where), -1]


def test_interaction_records_both_players_and_reset():
    env = OvercookedEnv(CLASSIC, num_envs=1)
    step = env.reset()
    assert step.interactions.tolist() == [[0, 0]]
    assert step.interaction_cell.tolist() == [[-1, -1]]
    env.import_state(0, make_state([((1, 3), "W", None), ((2, 3), "S", None)]))
    step = act(env, INTERACT, INTERACT)
    assert step.interactions[0].tolist() == [
        int(Interaction.PICKUP_ONION_DISPENSER),
        int(Interaction.IDLE_EMPTY),
    ]
    assert step.interaction_cell[0].tolist() == [cell(0, 3), cell(2, 4)]
