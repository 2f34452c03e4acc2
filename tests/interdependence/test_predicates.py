"""The mapping module: F(s) of a hand-made state, and the operators of random play checked
against the interaction the engine reports (``Step.interactions``)."""

from __future__ import annotations

import pytest
import torch

from zsceval.envs.overcooked import OvercookedEnv
from zsceval.envs.overcooked.constants import Interaction
from zsceval.interdependence import ObjectState, Pred, map_trajectory
from zsceval.interop.trajectory import json_form

from .test_detect import STAY, I, play, player, soup, start


def test_predicates_of_a_hand_made_state():
    """forced_coordination: seat 0 at (3,1) facing the pot (4,1) holding a dish, seat 1 at (1,2)
    facing (2,2) empty-handed; an onion on (2,2); 2 idle onions in pot (4,1); a ready soup in pot
    (3,0). Ids: held objects first by seat, then objects in list order."""
    s0 = start(
        [player((3, 1), (1, 0), "dish"), player((1, 2), (1, 0))],
        [{"name": "onion", "position": (2, 2)}, soup((4, 1), 2), soup((3, 0), 3, tick=20)],
    )
    states = play(s0, [])
    trace = map_trajectory(states, [], "forced_coordination")
    onion, dish = ObjectState("onion"), ObjectState("dish")
    idle = ObjectState("soup", ("onion", "onion"), "idle")
    ready = ObjectState("soup", ("onion", "onion", "onion"), "ready")
    counters = [(x, y) for y, row in enumerate(trace.layout.terrain) for x, c in enumerate(row) if c == "X"]
    onion_id = next(r.id for r in trace.objects.values() if r.kind == "onion")
    assert trace.objects[0].kind == "dish" and trace.objects[0].created == -1
    soup_ids = {p.args[2]: p.args[0] for p in trace.states[0] if p.name == "at" and p.args[1].kind == "soup"}
    expected = {
        Pred("player-at", (0, (3, 1))),
        Pred("facing", (0, (4, 1))),
        Pred("holding", (0, 0, dish)),
        Pred("player-at", (1, (1, 2))),
        Pred("facing", (1, (2, 2))),
        Pred("hand-empty", (1,)),
        Pred("at", (onion_id, onion, (2, 2))),
        Pred("at", (soup_ids[(4, 1)], idle, (4, 1))),
        Pred("at", (soup_ids[(3, 0)], ready, (3, 0))),
        *(Pred("counter-empty", (c,)) for c in counters if c != (2, 2)),
    }
    assert trace.states[0] == frozenset(expected)
    assert len(trace.objects) == 4 and len(set(soup_ids.values())) == 2 and trace.goal == frozenset()
    assert trace.regions[0] != trace.regions[1]  # two floor regions


def test_operator_of_a_counter_pickup():
    s0 = start([player((3, 2), (-1, 0)), player((1, 2), (1, 0), "onion")])
    trace = map_trajectory(play(s0, [[STAY, I], [I, STAY]]), [[STAY, I], [I, STAY]], "forced_coordination")
    put, take = trace.operators[0][1], trace.operators[1][0]
    o = ObjectState("onion")
    assert put.kind == "put_counter" and put.cell == (2, 2)
    assert put.pre == {Pred("holding", (1, 0, o)), Pred("counter-empty", ((2, 2),))}
    assert put.add == {Pred("at", (0, o, (2, 2))), Pred("hand-empty", (1,))}
    assert put.delete == put.pre
    assert take.kind == "pickup_counter"
    assert take.pre == {Pred("hand-empty", (0,)), Pred("at", (0, o, (2, 2)))}
    assert take.add == {Pred("holding", (0, 0, o)), Pred("counter-empty", ((2, 2),))}
    # STRIPS consistency (Sec. 4.2): pre ⊆ p_t, add ⊆ p_{t+1}, del ∩ p_{t+1} = ∅
    for t, row in enumerate(trace.operators):
        for op in row:
            assert op.pre <= trace.states[t] and op.add <= trace.states[t + 1]
            assert not (op.delete & trace.states[t + 1])
    assert trace.operators[0][0].kind == "stay" and trace.operators[1][1].kind == "stay"


KIND = {
    Interaction.PICKUP_ONION_DISPENSER: "pickup_dispenser",
    Interaction.PICKUP_TOMATO_DISPENSER: "pickup_dispenser",
    Interaction.PICKUP_DISH_DISPENSER: "pickup_dispenser",
    Interaction.PICKUP_ONION_COUNTER: "pickup_counter",
    Interaction.PICKUP_TOMATO_COUNTER: "pickup_counter",
    Interaction.PICKUP_DISH_COUNTER: "pickup_counter",
    Interaction.PICKUP_SOUP_COUNTER: "pickup_counter",
    Interaction.PUT_ONION_COUNTER: "put_counter",
    Interaction.PUT_TOMATO_COUNTER: "put_counter",
    Interaction.PUT_DISH_COUNTER: "put_counter",
    Interaction.PUT_SOUP_COUNTER: "put_counter",
    Interaction.POT_ONION: "pot_ingredient",
    Interaction.POT_TOMATO: "pot_ingredient",
    Interaction.COOK: "cook",
    Interaction.SOUP_PICKUP_POT: "plate_soup",
    Interaction.DELIVER: "deliver",
}


@pytest.mark.parametrize(
    "layout,random_start",
    [("counter_circuit", 0.0), ("asymmetric_advantages_mr", 0.0), ("cramped_room", 1.0)],
)
def test_operators_match_engine_interactions(layout, random_start):
    """Random play (INTERACT-heavy) for 1500 steps: every operator kind equals the engine's own
    interaction label, every operator is STRIPS-consistent, and objects keep one id while they
    lie or are carried."""
    env = OvercookedEnv(layout, num_envs=1, horizon=100_000, seed=3, random_start_prob=random_start)
    env.reset()
    g = torch.Generator().manual_seed(0)
    states, acts, kinds = [json_form(env.export_state(0))], [], []
    for _ in range(1500):
        a = torch.randint(0, 6, (1, 2), generator=g)
        a = torch.where(torch.rand(1, 2, generator=g) < 0.3, torch.full_like(a, I), a)
        step = env.step(a, observe=False)
        acts.append(a[0].tolist())
        kinds.append(step.interactions[0].tolist())
        states.append(json_form(env.export_state(0)))
    trace = map_trajectory(states, acts, layout)
    counted = 0
    for t, row in enumerate(trace.operators):
        for k, op in enumerate(row):
            want = KIND.get(kinds[t][k], "noop" if acts[t][k] == I else None)
            assert (op.kind if op.kind not in ("move", "stay") else None) == want, (t, k)
            counted += want not in (None, "noop")
            assert op.pre <= trace.states[t] and op.add <= trace.states[t + 1]
            assert not (op.delete & trace.states[t + 1])
    assert counted > 50
