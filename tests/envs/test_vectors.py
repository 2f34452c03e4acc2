"""The scripted test vectors of docs/overcooked-rules.md §8 (plus the §6.3 state-dict example).

8.1: OLD ``random1`` (coordination_ring), 54 scripted steps; 8.2: NEW ``random1_m``
(coordination_ring_mr), 37 scripted steps with the exact final state dict; 8.3: small unit cases.
Player 0 always STAYs in 8.1 and 8.2. Expected values were checked against the reference engines, not taken
from ours.
"""

from __future__ import annotations

import json

import pytest
import torch

from zsceval.envs.overcooked import OvercookedEnv

N, S, E, W, STAY, INTERACT = range(6)
DIRS = {"N": (0, -1), "S": (0, 1), "E": (1, 0), "W": (-1, 0)}

SEQ_8_1 = [int(a) for a in (
    "1 5 2 2 0 0 5 1 1 3 3 1 5 2 2 0 0 5 1 1 3 3 1 5 2 2 0 0 5 1 1 3 3 0 3 5 1 2 2 0 0 5 5 5 5 5 5 5 5 "
    "1 1 3 1 5"
).split()]  # fmt: skip
SEQ_8_2 = [int(a) for a in (
    "1 3 5 2 2 0 0 5 1 1 3 3 5 2 2 0 0 5 5 1 1 3 3 0 3 5 1 2 2 0 0 5 1 1 3 1 5"
).split()]  # fmt: skip

FINAL_8_2 = json.loads(
    '{"players": [{"position": [2, 1], "orientation": [0, -1], "held_object": null}, {"position": [2, 3], '
    '"orientation": [0, 1], "held_object": null}], "objects": [], "bonus_orders": [], "all_orders": '
    '[{"ingredients": ["onion", "onion"]}, {"ingredients": ["onion", "onion", "onion"]}, {"ingredients": '
    '["onion", "tomato"]}, {"ingredients": ["onion", "onion", "tomato"]}, {"ingredients": ["onion", '
    '"tomato", "tomato"]}], "timestep": 37}'
)


def roundtrip(d):
    return json.loads(json.dumps(d))


def pot(env, pos=(3, 0)):
    """``(ingredient initials, cooking_tick)`` of the soup at ``pos``, or ``None``."""
    found = [o for o in roundtrip(env.export_state(0))["objects"] if o["position"] == list(pos)]
    if not found:
        return None
    (o,) = found
    assert o["name"] == "soup"
    return "".join(i["name"][0] for i in o["_ingredients"]), o["cooking_tick"]


def assert_events(env, step, p, names):
    counts = dict(zip(env.event_names, step.events[0, p].tolist()))
    want = {n: (1 if n in names else 0) for n in env.event_names}
    assert counts == want, f"player {p}: got {[n for n, v in counts.items() if v]}, expected {sorted(names)}"


def player(env, p):
    d = roundtrip(env.export_state(0))["players"][p]
    return tuple(d["position"]), tuple(d["orientation"]), d["held_object"]


def run_script(layout, seq, check):
    env = OvercookedEnv(layout, num_envs=1, device="cpu", seed=0, horizon=400)
    step = env.reset()
    sparse = torch.zeros(2)
    shaped = torch.zeros(2)
    for t, a in enumerate(seq, start=1):
        step = env.step(torch.tensor([[STAY, a]], dtype=torch.int64))
        sparse += step.sparse_by_agent[0]
        shaped += step.shaped_by_agent[0]
        assert_events(env, step, 0, {"STAY"})
        check(env, step, t)
    return env, step, sparse, shaped


# ---------------------------------------------------------------------------------------------
# 8.1 OLD random1


def expected_pot_8_1(t):
    if t < 7:
        return None
    if t < 18:
        return ("o", -1)
    if t < 29:
        return ("oo", -1)
    if t < 49:
        return ("ooo", min(t - 28, 20))  # (onion,3,1) after step 29, +1 per step, capped at 20
    return None


SHAPED_8_1 = {7: 3.0, 18: 3.0, 29: 3.0, 36: 3.0, 49: 5.0}


def check_8_1(env, step, t):
    assert pot(env) == expected_pot_8_1(t), f"pot after step {t}"
    assert pot(env, (4, 1)) is None
    assert step.shaped_by_agent[0].tolist() == [0.0, SHAPED_8_1.get(t, 0.0)], f"shaped at step {t}"
    assert step.sparse_by_agent[0].tolist() == [0.0, 20.0 if t == 54 else 0.0], f"sparse at step {t}"
    assert step.reward[0].item() == (20.0 if t == 54 else 0.0)
    pos, ori, held = player(env, 1)
    if t == 2:
        assert_events(env, step, 1, {"pickup_onion_from_O"})
        assert (pos, ori) == ((1, 3), DIRS["S"]) and held["name"] == "onion"
    elif t in (7, 18, 29):
        assert_events(env, step, 1, {"PLACEMENT_IN_POT"})
        assert held is None
    elif t == 12:  # S from (1,3) is a blocked move: turns S only, not idle
        assert_events(env, step, 1, {"MOVEMENT"})
        assert (pos, ori) == ((1, 3), DIRS["S"])
    elif t == 35:  # W at (1,2) turns to face the dish dispenser
        assert_events(env, step, 1, {"MOVEMENT"})
        assert (pos, ori) == ((1, 2), DIRS["W"])
    elif t == 36:
        assert_events(env, step, 1, {"pickup_dish_from_D", "USEFUL_DISH_PICKUP"})
        assert held["name"] == "dish"
        assert pot(env) == ("ooo", 8)
    elif 42 <= t <= 48:  # dish at the unready pot: no event at all
        assert_events(env, step, 1, set())
        assert (pos, ori) == ((3, 1), DIRS["N"]) and held["name"] == "dish"
    elif t == 49:
        assert_events(env, step, 1, {"SOUP_PICKUP"})
        assert held["name"] == "soup" and held["cooking_tick"] == 20 and len(held["_ingredients"]) == 3
    elif t == 53:  # S at (2,3) turns to face the serving window
        assert_events(env, step, 1, {"MOVEMENT"})
        assert (pos, ori) == ((2, 3), DIRS["S"])
    elif t == 54:
        assert_events(env, step, 1, {"delivery"})
        assert held is None


def test_vector_8_1_old_random1():
    assert len(SEQ_8_1) == 54
    env, step, sparse, shaped = run_script("random1", SEQ_8_1, check_8_1)
    assert sparse.tolist() == [0.0, 20.0]
    assert shaped.tolist() == [0.0, 17.0]
    assert env.export_state(0)["timestep"] == 54
    assert not bool(step.truncated[0])


# ---------------------------------------------------------------------------------------------
# 8.2 NEW random1_m


def expected_pot_8_2(t):
    if t < 8:
        return None
    if t < 18:
        return ("o", -1)
    if t < 19:
        return ("oo", -1)
    if t < 32:
        return ("oo", min(t - 18, 10))  # cook at 19 -> tick 1; ready (10) from step 28
    return None


SHAPED_8_2 = {8: 3.0, 18: 3.0, 26: 3.0, 32: 5.0}
POTTED = {"PLACEMENT_IN_POT", "viable_placement", "optimal_placement", "potting_onion"}


def check_8_2(env, step, t):
    assert pot(env) == expected_pot_8_2(t), f"pot after step {t}"
    assert pot(env, (4, 1)) is None
    assert step.shaped_by_agent[0].tolist() == [0.0, SHAPED_8_2.get(t, 0.0)], f"shaped at step {t}"
    assert step.sparse_by_agent[0].tolist() == [0.0, 10.0 if t == 37 else 0.0], f"sparse at step {t}"
    pos, ori, held = player(env, 1)
    if t == 3:
        assert_events(env, step, 1, {"pickup_onion_from_O"})
        assert (pos, ori) == ((1, 3), DIRS["W"]) and held["name"] == "onion"
    elif t in (8, 18):
        assert_events(env, step, 1, POTTED)
    elif t == 19:
        assert_events(env, step, 1, {"cook"})
        assert pot(env) == ("oo", 1)
    elif t == 26:
        assert_events(env, step, 1, {"pickup_dish_from_D", "USEFUL_DISH_PICKUP"})
        assert pot(env) == ("oo", 8)
    elif t == 32:
        assert_events(env, step, 1, {"SOUP_PICKUP"})
        assert held["name"] == "soup" and held["cooking_tick"] == 10 and held["cook_time"] == 10
    elif t == 37:
        assert_events(env, step, 1, {"delivery", "deliver_size_two_order"})
        assert step.reward[0].item() == 10.0
    if t == 27:
        assert pot(env) == ("oo", 9)
    if t == 28:
        assert pot(env) == ("oo", 10)


def test_vector_8_2_new_random1_m():
    assert len(SEQ_8_2) == 37
    env, step, sparse, shaped = run_script("random1_m", SEQ_8_2, check_8_2)
    assert sparse.tolist() == [0.0, 10.0]
    assert shaped.tolist() == [0.0, 14.0]
    assert roundtrip(env.export_state(0)) == FINAL_8_2


def test_vector_8_2_final_state_dict_key_order():
    env, _, _, _ = run_script("random1_m", SEQ_8_2, lambda *a: None)
    d = env.export_state(0)
    assert list(d) == ["players", "objects", "bonus_orders", "all_orders", "timestep"]
    assert json.dumps(d) == json.dumps(FINAL_8_2)


# ---------------------------------------------------------------------------------------------
# 8.3 small unit cases (OLD)


def scenario(layout, players, objects=()):
    env = OvercookedEnv(layout, num_envs=1)
    env.reset()
    d = {
        "players": [
            {
                "position": pos,
                "orientation": DIRS[f],
                "held_object": None if h is None else {**h, "position": pos},
            }
            for pos, f, h in players
        ],
        "objects": objects,
        "bonus_orders": [],
        "timestep": 0,
    }
    env.import_state(0, d)
    return env


def onion_soup(pos, n, tick):
    return {
        "name": "soup",
        "position": pos,
        "_ingredients": [{"name": "onion", "position": pos}] * n,
        "cooking_tick": tick,
    }


def act(env, a0, a1):
    return env.step(torch.tensor([[a0, a1]], dtype=torch.int64))


@pytest.mark.parametrize(
    "action, events, ori", [(N, {"MOVEMENT", "IDLE_MOVEMENT"}, "N"), (E, {"MOVEMENT"}, "E")]
)
def test_8_3_start_state_random0(action, events, ori):
    env = OvercookedEnv("random0", num_envs=1)
    env.reset()
    assert player(env, 0)[:2] == ((3, 1), DIRS["N"])
    step = act(env, action, STAY)
    assert_events(env, step, 0, events)
    assert_events(env, step, 1, {"STAY"})
    assert player(env, 0) == ((3, 1), DIRS[ori], None)
    assert step.shaped_by_agent[0].tolist() == [0.0, 0.0]


def test_8_3_empty_handed_interact_at_pot():
    env = OvercookedEnv("random0", num_envs=1)
    env.reset()
    step = act(env, INTERACT, STAY)  # player 0 faces the pot (3,0)
    assert_events(env, step, 0, {"IDLE_INTERACT_EMPTY"})
    assert pot(env) is None


@pytest.mark.parametrize(
    "start, actions, result, events",
    [
        ([((1, 1), "N"), ((3, 1), "N")], (E, W), [((1, 1), "E"), ((3, 1), "W")],
         [{"MOVEMENT"}, {"MOVEMENT"}]),
        ([((1, 1), "E"), ((2, 1), "W")], (E, W), [((1, 1), "E"), ((2, 1), "W")],
         [{"MOVEMENT", "IDLE_MOVEMENT"}, {"MOVEMENT", "IDLE_MOVEMENT"}]),
        ([((1, 1), "E"), ((2, 1), "E")], (E, E), [((2, 1), "E"), ((3, 1), "E")],
         [{"MOVEMENT"}, {"MOVEMENT"}]),
        ([((1, 1), "E"), ((2, 1), "S")], (E, STAY), [((1, 1), "E"), ((2, 1), "S")],
         [{"MOVEMENT", "IDLE_MOVEMENT"}, {"STAY"}]),
        ([((1, 1), "E"), ((2, 1), "S")], (E, INTERACT), [((1, 1), "E"), ((2, 1), "S")],
         [{"MOVEMENT", "IDLE_MOVEMENT"}, {"IDLE_INTERACT_X"}]),  # (2,1) faces the empty counter (2,2)
    ],
    ids=["same_target", "swap", "following", "into_stayer", "into_interactor"],
)  # fmt: skip
def test_8_3_collisions_random1(start, actions, result, events):
    env = scenario("random1", [(pos, f, None) for pos, f in start])
    step = act(env, *actions)
    for p in range(2):
        assert_events(env, step, p, events[p])
        assert player(env, p)[:2] == (result[p][0], DIRS[result[p][1]])


def test_8_3_delivery_random1():
    held = onion_soup((2, 3), 3, 20)
    env = scenario("random1", [((2, 3), "S", held), ((1, 1), "N", None)])
    step = act(env, INTERACT, STAY)
    assert step.sparse_by_agent[0].tolist() == [20.0, 0.0]
    assert step.reward[0].item() == 20.0
    assert_events(env, step, 0, {"delivery"})
    assert player(env, 0)[2] is None


def test_8_3_dish_at_serving_window():
    env = scenario("random1", [((2, 3), "S", {"name": "dish"}), ((1, 1), "N", None)])
    step = act(env, INTERACT, STAY)
    assert step.sparse_by_agent[0].tolist() == [0.0, 0.0]
    assert_events(env, step, 0, set())
    assert player(env, 0)[2]["name"] == "dish"


def test_8_3_dish_at_cooking_pot():
    env = scenario(
        "random1", [((3, 1), "N", {"name": "dish"}), ((1, 1), "N", None)], [onion_soup((3, 0), 3, 5)]
    )
    step = act(env, INTERACT, STAY)
    assert_events(env, step, 0, set())
    assert step.shaped_by_agent[0].tolist() == [0.0, 0.0]
    assert pot(env) == ("ooo", 6)
    assert player(env, 0)[2]["name"] == "dish"


def test_8_3_onion_at_empty_pot():
    env = scenario("random1", [((3, 1), "N", {"name": "onion"}), ((1, 1), "N", None)])
    step = act(env, INTERACT, STAY)
    assert_events(env, step, 0, {"PLACEMENT_IN_POT"})
    assert step.shaped_by_agent[0].tolist() == [3.0, 0.0]
    assert pot(env) == ("o", -1)


# ---------------------------------------------------------------------------------------------
# 6.3 example (forced_coordination, old dynamics): the exact dicts before and after one step

BEFORE_6_3 = json.loads(
    '{"players": [{"position": [3, 1], "orientation": [0, -1],'
    ' "held_object": {"name": "onion", "position": [3, 1]}},'
    ' {"position": [1, 2], "orientation": [0, -1], "held_object": {"name": "dish", "position": [1, 2]}}],'
    ' "objects": [{"name": "soup", "position": [3, 0],'
    ' "_ingredients": [{"name": "onion", "position": [3, 0]},'
    ' {"name": "onion", "position": [3, 0]}], "cooking_tick": -1, "is_cooking": false, "is_ready": false,'
    ' "is_idle": true, "cook_time": -1, "_cooking_tick": -1}, {"name": "onion", "position": [2, 1]}],'
    ' "bonus_orders": [], "all_orders": [{"ingredients": ["onion", "onion", "onion"]}], "timestep": 0}'
)
AFTER_6_3 = json.loads(
    '{"players": [{"position": [3, 1], "orientation": [0, -1], "held_object": null},'
    ' {"position": [1, 2], "orientation": [0, -1], "held_object": {"name": "dish", "position": [1, 2]}}],'
    ' "objects": [{"name": "soup", "position": [3, 0],'
    ' "_ingredients": [{"name": "onion", "position": [3, 0]},'
    ' {"name": "onion", "position": [3, 0]}, {"name": "onion", "position": [3, 0]}], "cooking_tick": 1,'
    ' "is_cooking": true, "is_ready": false, "is_idle": false, "cook_time": 20, "_cooking_tick": 1},'
    ' {"name": "onion", "position": [2, 1]}],'
    ' "bonus_orders": [], "all_orders": [{"ingredients": ["onion", "onion", "onion"]}], "timestep": 1}'
)


def test_6_3_example_third_onion_autostart():
    env = OvercookedEnv("forced_coordination", num_envs=1)
    env.reset()
    env.import_state(0, BEFORE_6_3)
    assert roundtrip(env.export_state(0)) == BEFORE_6_3
    step = act(env, INTERACT, STAY)
    assert step.shaped_by_agent[0].tolist() == [3.0, 0.0]
    assert_events(env, step, 0, {"PLACEMENT_IN_POT"})
    assert roundtrip(env.export_state(0)) == AFTER_6_3
