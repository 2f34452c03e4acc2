"""Hand-built trajectories with interdependence counts worked out by hand from Biswas et al.'s
definitions (Def. 4.1-4.6, Alg. 2). The trajectories are played in our engine from hand-made
states on forced_coordination, whose two floor regions meet only at the middle counters x=2::

    y0  XXXPX        seat 1 (left) reaches (1,1)..(1,3): onions O, dishes D
    y1  O X1P        seat 0 (right) reaches (3,1)..(3,3): pots (3,0), (4,1), serving S (3,4)
    y2  O2X X        handover counters (2,1), (2,2), (2,3)
    y3  D X X
    y4  XXXSX
"""

from __future__ import annotations

import pytest
import torch

from zsceval.envs.overcooked import OvercookedEnv
from zsceval.interdependence import TraceError, interdependence, map_trajectory, summarize
from zsceval.interop.trajectory import json_form

N, S, E, W, STAY, I = 0, 1, 2, 3, 4, 5
LAYOUT = "forced_coordination"


def player(pos, ori, held=None):
    return {
        "position": pos,
        "orientation": ori,
        "held_object": None if held is None else {"name": held, "position": pos},
    }


def soup(pos, onions, tick=-1):
    return {
        "name": "soup",
        "position": pos,
        "_ingredients": [{"name": "onion"}] * onions,
        "cooking_tick": tick,
    }


def start(players, objects=()):
    return {"players": players, "objects": list(objects), "bonus_orders": [], "timestep": 0}


def play(state0, joint_actions, layout=LAYOUT):
    """States visited by the engine from ``state0`` under ``joint_actions`` (seat order)."""
    env = OvercookedEnv(layout, num_envs=1, horizon=10_000)
    env.reset()
    env.import_state(0, state0)
    states = [json_form(env.export_state(0))]
    for joint in joint_actions:
        env.step(torch.tensor([joint]), observe=False)
        states.append(json_form(env.export_state(0)))
    return states


# seat 0 right of counter (2,2) facing it, seat 1 left of it facing it
RIGHT_AT_MID = ((3, 2), (-1, 0))
LEFT_AT_MID = ((1, 2), (1, 0))


def wait(k):
    return [[STAY, STAY]] * k


def test_constructive_onion_and_dish_pass():
    """Seat 1 passes an onion and a dish over (2,2); seat 0 fills the pot, plates and serves.

    By hand: two interdependencies, giver 1 -> receiver 0, objects onion and dish; both end in the
    served soup (Def. 4.4) and neither comes back nor was held before (Def. 4.5): 2 constructive.
    Trigger actions: seat 1's two counter placements; seat 0's pot add is at (4,1), out of seat
    1's reach, so it is not a trigger.
    """
    s0 = start(
        [player(*RIGHT_AT_MID), player(*LEFT_AT_MID, held="onion")],
        [soup((4, 1), 2)],
    )
    acts = [
        [STAY, I],  # t0 seat 1 puts the onion on (2,2)
        [I, STAY],  # t1 seat 0 takes it                       -> interdependence (1 -> 0, onion)
        [N, S],  # t2 seat 0 to (3,1); seat 1 to (1,3)
        [E, W],  # t3 seat 0 faces the pot (4,1); seat 1 faces the dish dispenser
        [I, I],  # t4 seat 0: third onion, cooking starts; seat 1 takes a dish
        [S, N],  # t5 seat 0 to (3,2); seat 1 to (1,2)
        [W, E],  # t6 both face (2,2)
        [STAY, I],  # t7 seat 1 puts the dish on (2,2)
        [I, STAY],  # t8 seat 0 takes it                        -> interdependence (1 -> 0, dish)
        [N, STAY],  # t9 seat 0 to (3,1)
        [E, STAY],  # t10 faces the pot
        *wait(14),  # t11..t24 cooking (ready 20 steps after t4)
        [I, STAY],  # t25 plate the soup
        [S, STAY],  # t26 to (3,2)
        [S, STAY],  # t27 to (3,3)
        [S, STAY],  # t28 faces S (3,4)
        [I, STAY],  # t29 deliver
    ]
    states = play(s0, acts)
    assert states[-1]["players"][0]["held_object"] is None
    assert not any(o["position"] == [4, 1] for o in states[-1]["objects"])  # the soup left the pot
    c = interdependence(states, acts, LAYOUT)
    assert [
        (i.giver, i.receiver, i.object_kind, i.t_effect, i.t_use, i.category) for i in c.interdependencies
    ] == [
        (1, 0, "onion", 0, 1, "constructive"),
        (1, 0, "dish", 7, 8, "constructive"),
    ]
    assert c.constructive == 2 and c.looping == 0 and c.irrelevant == 0 and c.non_constructive == 0
    assert c.trigger_actions == [0, 2]
    assert c.triggered[1]["constructive"] == 2 and c.accepted[0]["constructive"] == 2
    assert sum(c.triggered[0].values()) == 0 and sum(c.accepted[1].values()) == 0
    assert c.not_accepted(1) == 0
    assert c.to_dict()["seats"][1]["triggered"]["constructive"] == 2


def test_looping_pass_back_and_forth():
    """Onion over (2,2): 1 -> 0, back 0 -> 1, and seat 1 holds it again.

    By hand: I1 (giver 1, t0 -> t1): the giver holds the onion again in the same (raw) state after
    t1 (Def. 4.5 (1)): looping. I2 (giver 0, t2 -> t3): the receiver (seat 1) held this onion,
    raw, before (Def. 4.5 (2)): looping. Non-constructive = looping + irrelevant = 2.
    """
    s0 = start([player(*RIGHT_AT_MID), player(*LEFT_AT_MID, held="onion")])
    acts = [[STAY, I], [I, STAY], [I, STAY], [STAY, I]]
    c = interdependence(play(s0, acts), acts, LAYOUT)
    got = [(i.giver, i.receiver, i.giver_loop, i.receiver_loop, i.category) for i in c.interdependencies]
    assert got == [(1, 0, True, False, "looping"), (0, 1, False, True, "looping")]
    assert (c.constructive, c.looping, c.irrelevant, c.non_constructive, c.total) == (0, 2, 0, 2, 2)
    assert c.trigger_actions == [1, 1]
    for k in (0, 1):
        assert c.triggered[k] == {"constructive": 0, "looping": 1, "irrelevant": 0, "non_constructive": 1}
        assert c.accepted[k] == {"constructive": 0, "looping": 1, "irrelevant": 0, "non_constructive": 1}
        assert c.not_accepted(k) == 0


def test_irrelevant_pass_never_cooked():
    """Seat 1 passes an onion; seat 0 leaves it on another counter (2,3); the episode ends.

    By hand: one interdependence (1 -> 0), no loop, the onion never reaches a served soup:
    irrelevant. Seat 0's placement on (2,3) is a trigger action (seat 1 can face (2,3) from
    (1,3)) that is not accepted.
    """
    s0 = start([player(*RIGHT_AT_MID), player(*LEFT_AT_MID, held="onion")])
    acts = [[STAY, I], [I, STAY], [S, STAY], [W, STAY], [I, STAY], *wait(3)]
    states = play(s0, acts)
    assert {"name": "onion", "position": [2, 3]} in states[-1]["objects"]
    c = interdependence(states, acts, LAYOUT)
    assert [(i.giver, i.receiver, i.goal_reaching, i.category) for i in c.interdependencies] == [
        (1, 0, False, "irrelevant")
    ]
    assert (c.constructive, c.looping, c.irrelevant, c.non_constructive) == (0, 0, 1, 1)
    assert c.trigger_actions == [1, 1]
    assert c.not_accepted(0) == 1 and c.not_accepted(1) == 0
    assert c.triggered[1]["irrelevant"] == 1 and c.accepted[0]["irrelevant"] == 1


def test_non_constructive_mixes_looping_and_irrelevant_and_same_step_pass():
    """Same-step hand-over (seat 0 puts, seat 1 takes in one step: turns go in seat order), the
    onion comes back (looping), then a second onion is passed and abandoned (irrelevant).

    By hand: I1 (0 -> 1, both at t0): giver 0 holds the onion again at t2 -> looping.
    I2 (1 -> 0, t1 -> t2): receiver 0 held it at t0 -> looping. Seat 1 then fetches a new onion
    and passes it (I3, 1 -> 0, irrelevant). Non-constructive = 2 looping + 1 irrelevant = 3.
    """
    s0 = start([player(*RIGHT_AT_MID, held="onion"), player(*LEFT_AT_MID)])
    acts = [
        [I, I],  # t0 seat 0 puts, seat 1 takes at once
        [STAY, I],  # t1 seat 1 puts it back
        [I, STAY],  # t2 seat 0 takes it
        [STAY, N],  # t3 seat 1 to (1,1)
        [STAY, W],  # t4 faces the onion dispenser (0,1)
        [STAY, I],  # t5 takes an onion
        [STAY, E],  # t6 faces (2,1)
        [STAY, I],  # t7 puts it on (2,1)
        [N, STAY],  # t8 seat 0 (holding the first onion) to (3,1)
        [STAY, STAY],
    ]
    states = play(s0, acts)
    c = interdependence(states, acts, LAYOUT)
    got = [(i.giver, i.receiver, i.t_effect, i.t_use, i.category) for i in c.interdependencies]
    assert got == [(0, 1, 0, 0, "looping"), (1, 0, 1, 2, "looping")]
    # seat 0 holds the first onion and never takes the second: an unused trigger
    assert c.trigger_actions == [1, 2] and c.not_accepted(1) == 1
    assert (c.looping, c.irrelevant, c.non_constructive) == (2, 0, 2)

    # variant: seat 0 puts its onion on (2,2), then takes the new onion from (2,1): irrelevant
    acts2 = [*acts[:7], [STAY, I], [W, STAY], [I, STAY], [N, STAY], [W, STAY], [I, STAY]]
    states2 = play(s0, acts2)
    c2 = interdependence(states2, acts2, LAYOUT)
    got2 = [(i.giver, i.receiver, i.t_effect, i.t_use, i.category) for i in c2.interdependencies]
    assert got2 == [(0, 1, 0, 0, "looping"), (1, 0, 1, 2, "looping"), (1, 0, 7, 12, "irrelevant")]
    assert (c2.constructive, c2.looping, c2.irrelevant, c2.non_constructive, c2.total) == (0, 2, 1, 3, 3)
    assert c2.triggered[1]["non_constructive"] == 2 and c2.triggered[0]["non_constructive"] == 1


def test_goal_reaching_but_looping_is_not_constructive():
    """Alg. 2's precedence: a loop wins over goal reaching (Def. 4.6 needs both).

    Onion 1 -> 0 -> 1 -> 0 over (2,2), then seat 0 puts it in the pot (which holds 2 onions) and
    serves the soup with a dish passed by seat 1. By hand: I1 (1->0): giver 1 holds it again -> looping.
    I2 (0->1): receiver 1 held it -> looping. I3 (1->0): receiver 0 held it -> looping.
    I4 (dish 1->0): constructive. All three onion passes are goal reaching.
    """
    s0 = start([player(*RIGHT_AT_MID), player(*LEFT_AT_MID, held="onion")], [soup((4, 1), 2)])
    acts = [
        [STAY, I],  # t0 1 puts
        [I, STAY],  # t1 0 takes
        [I, STAY],  # t2 0 puts back
        [STAY, I],  # t3 1 takes
        [STAY, I],  # t4 1 puts
        [I, STAY],  # t5 0 takes
        [N, S],  # t6
        [E, W],  # t7
        [I, I],  # t8 0: third onion; 1: dish
        [S, N],  # t9
        [W, E],  # t10
        [STAY, I],  # t11 1 puts the dish
        [I, STAY],  # t12 0 takes it
        [N, STAY],  # t13
        [E, STAY],  # t14
        *wait(14),  # t15..t28
        [I, STAY],  # t29 plate (ready at t27)
        [S, STAY],
        [S, STAY],
        [S, STAY],
        [I, STAY],  # t33 deliver
    ]
    states = play(s0, acts)
    c = interdependence(states, acts, LAYOUT)
    got = [(i.object_kind, i.goal_reaching, i.category) for i in c.interdependencies]
    assert got == [
        ("onion", True, "looping"),
        ("onion", True, "looping"),
        ("onion", True, "looping"),
        ("dish", True, "constructive"),
    ]
    assert (c.constructive, c.looping, c.non_constructive) == (1, 3, 3)


def test_pot_co_filling_is_an_interdependence_on_the_soup():
    """cramped_room: seat 0 puts the first onion in the pot, seat 1 the second (the shared
    proposition is at(soup, 1 onion, pot)). By hand: one interdependence (0 -> 1, the soup); it is
    never served and no one held it: irrelevant. Both pot adds are trigger actions (both seats
    reach the pot); seat 1's is not taken up. Only (2,1) faces the pot (2,0), so the seats take
    turns there."""
    s0 = start([player((2, 1), (0, -1), "onion"), player((3, 1), (-1, 0), "onion")])
    acts = [
        [I, STAY],  # t0 seat 0: first onion
        [W, STAY],  # t1 seat 0 moves to (1,1)
        [STAY, W],  # t2 seat 1 moves to (2,1)
        [STAY, N],  # t3 seat 1 faces the pot
        [STAY, I],  # t4 seat 1: second onion          -> I1 (0 -> 1)
        [STAY, STAY],
    ]
    states = play(s0, acts, "cramped_room")
    c = interdependence(states, acts, "cramped_room")
    got = [
        (i.giver, i.receiver, i.object_kind, i.giver_action, i.receiver_action, i.category)
        for i in c.interdependencies
    ]
    assert got == [(0, 1, "soup", "pot_ingredient", "pot_ingredient", "irrelevant")]
    assert c.trigger_actions == [1, 1] and c.not_accepted(0) == 0 and c.not_accepted(1) == 1


def test_inconsistent_states_are_rejected():
    s0 = start([player(*RIGHT_AT_MID), player(*LEFT_AT_MID, held="onion")])
    acts = [[STAY, I], [I, STAY]]
    states = play(s0, acts)
    with pytest.raises(TraceError, match=r"states\[2\]: player 0"):
        map_trajectory(states, [[STAY, I], [STAY, STAY]], LAYOUT)  # state 2 shows a pickup
    # overcooked-ai actions are accepted too
    ai = [[(0, 0), "interact"], ["interact", [0, 0]]]
    assert map_trajectory(states, ai, LAYOUT).operators[1][0].kind == "pickup_counter"
    with pytest.raises(TraceError, match="actions: not an overcooked-ai action"):
        map_trajectory(states, [["jump", "interact"], ["interact", (0, 0)]], LAYOUT)
    with pytest.raises(TraceError, match="actions must be"):
        map_trajectory(states, [[STAY, I]], LAYOUT)


def test_summarize_means_per_episode_and_seat():
    s0 = start([player(*RIGHT_AT_MID), player(*LEFT_AT_MID, held="onion")])
    a1 = [[STAY, I], [I, STAY], [I, STAY], [STAY, I]]  # 2 looping, triggers [1, 1]
    a2 = [[STAY, I], [I, STAY], [S, STAY], [W, STAY], [I, STAY]]  # 1 irrelevant, triggers [1, 1], 0 unused 1
    c1 = interdependence(play(s0, a1), a1, LAYOUT)
    c2 = interdependence(play(s0, a2), a2, LAYOUT)
    s = summarize([c1, c2])
    assert s["episodes"] == 2
    assert (
        s["looping"] == 1.0 and s["irrelevant"] == 0.5 and s["non_constructive"] == 1.5 and s["total"] == 1.5
    )
    assert s["seats"][0]["trigger_actions"] == 1.0
    assert s["seats"][0]["pct_not_accepted"] == 50.0  # 0 % then 100 %
    assert s["seats"][1]["pct_not_accepted"] == 0.0
    assert s["seats"][1]["triggered"]["looping"] == 0.5 and s["seats"][0]["accepted"]["irrelevant"] == 0.5
    # seat 1 interacts twice in a1 (2 triggers... 1 trigger of 2 interacts) and once in a2
    assert s["seats"][1]["pct_trigger"] == pytest.approx((50.0 + 100.0) / 2)
    with pytest.raises(ValueError):
        summarize([])
