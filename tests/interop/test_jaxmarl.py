"""The JaxMARL Overcooked adapter without jaxmarl: the action tables, the meaning of each observation
channel on a hand-built state, and a NumPy "JaxMARL policy" playing in our engine."""

import numpy as np
import pytest

from zsceval.envs.overcooked import OvercookedEnv, load_layout
from zsceval.interop.jaxmarl import (
    JAXMARL_ACTIONS,
    JAXMARL_TO_OVERCOOKED_AI,
    OVERCOOKED_AI_TO_JAXMARL,
    JaxMARLPolicy,
    jaxmarl_layout,
    jaxmarl_obs,
)
from zsceval.rl.external import OVERCOOKED_AI_ACTIONS, ExternalAgent, ExternalAgentError


def test_jaxmarl_actions_map_to_overcooked_ai_actions_with_the_same_effect():
    # JaxMARL overcooked.py: up 0, down 1, right 2, left 3, stay 4, interact 5; common.py DIR_TO_VEC
    assert [name for name, _ in JAXMARL_ACTIONS] == ["up", "down", "right", "left", "stay", "interact"]
    for j, (_, effect) in enumerate(JAXMARL_ACTIONS):
        assert OVERCOOKED_AI_ACTIONS[JAXMARL_TO_OVERCOOKED_AI[j]] == effect
    assert JAXMARL_TO_OVERCOOKED_AI.tolist() == [0, 1, 2, 3, 4, 5]  # the two orders agree
    assert (JAXMARL_TO_OVERCOOKED_AI[OVERCOOKED_AI_TO_JAXMARL] == np.arange(6)).all()
    assert (OVERCOOKED_AI_TO_JAXMARL[JAXMARL_TO_OVERCOOKED_AI] == np.arange(6)).all()


def _soup(pos, onions, tick, cook_time=20):
    idle, ready = tick < 0, tick >= cook_time
    return {"name": "soup", "position": pos, "_ingredients": [{"name": "onion", "position": pos}] * onions,
            "cooking_tick": tick, "is_cooking": not idle and not ready, "is_ready": ready, "is_idle": idle,
            "cook_time": -1 if idle else cook_time, "_cooking_tick": tick}  # fmt: skip


@pytest.fixture
def game():
    """cramped_room (XXPXX / O  2O / X1  X / XDXSX): player 0 at (1, 2) facing west holding a soup,
    player 1 at (2, 1) facing north holding an onion; a dish on counter (2, 3), an onion on counter
    (0, 2), the pot cooking three onions at tick 5 of 20."""
    env = OvercookedEnv("cramped_room", num_envs=1)
    env.reset()
    state = env.export_state(0)
    state["players"][0].update(orientation=(-1, 0), held_object=_soup((1, 2), 3, 20))
    state["players"][1].update(position=(2, 1), orientation=(0, -1),
                               held_object={"name": "onion", "position": (2, 1)})  # fmt: skip
    state["objects"] = [{"name": "dish", "position": (2, 3)}, {"name": "onion", "position": (0, 2)},
                        _soup((2, 0), 3, 5)]  # fmt: skip
    env.import_state(0, state)  # the engine accepts it: a valid game
    return env, env.export_state(0)


def test_each_channel_means_what_jaxmarl_get_obs_documents(game):
    env, state = game
    lay = env.layout
    obs = jaxmarl_obs(state, lay, 0, horizon=400)
    assert obs.shape == (4, 5, 26) and obs.dtype == np.uint8

    def cells(c):
        return sorted((int(x), int(y)) for y, x in zip(*np.nonzero(obs[:, :, c]), strict=True))

    assert cells(0) == [(1, 2)] and cells(1) == [(2, 1)]  # own position first, then the partner's
    assert cells(2 + 3) == [(1, 2)] and sum(len(cells(c)) for c in range(2, 6)) == 1  # west = 3
    assert cells(6 + 0) == [(2, 1)] and sum(len(cells(c)) for c in range(6, 10)) == 1  # north = 0
    assert cells(10) == [(2, 0)] and cells(12) == [(0, 1), (4, 1)] and cells(13) == []
    assert cells(14) == [(1, 3)] and cells(15) == [(3, 3)]
    # counters, less the two with an item on them
    assert cells(11) == [(0, 0), (0, 3), (1, 0), (3, 0), (4, 0), (4, 2), (4, 3)]
    assert cells(16) == []  # the pot is cooking: no "onions in pot"
    assert cells(18) == [(1, 2), (2, 0)] and obs[0, 2, 18] == 3 and obs[2, 1, 18] == 3  # soups
    assert cells(20) == [(2, 0)] and obs[0, 2, 20] == 20 - 5  # cook time left
    assert cells(21) == [(1, 2)]  # the held soup is ready, the pot's is not
    assert cells(22) == [(2, 3)] and cells(23) == [(0, 2), (2, 1)]  # the dish; onions on a counter and held
    assert cells(24) == [] and cells(25) == []
    other = jaxmarl_obs(state, lay, 1, horizon=400)
    assert (other[:, :, 0] == obs[:, :, 1]).all() and (other[:, :, 1] == obs[:, :, 0]).all()
    assert (other[:, :, 2:6] == obs[:, :, 6:10]).all() and (other[:, :, 6:10] == obs[:, :, 2:6]).all()
    assert (other[:, :, 10:] == obs[:, :, 10:]).all()


def test_pot_states_and_urgency(game):
    env, state = game
    lay = env.layout
    state["objects"][2] = _soup((2, 0), 2, -1)  # idle, two onions
    obs = jaxmarl_obs(state, lay, 0, horizon=400)
    assert obs[0, 2, 16] == 2 and obs[0, 2, 18] == 0 and obs[0, 2, 20] == 0 and obs[0, 2, 21] == 0
    state["objects"][2] = _soup((2, 0), 3, 20)  # ready
    obs = jaxmarl_obs(state, lay, 0, horizon=400)
    assert obs[0, 2, 16] == 0 and obs[0, 2, 18] == 3 and obs[0, 2, 20] == 0 and obs[0, 2, 21] == 1
    # JaxMARL: the layer is on when (max_steps - step) < URGENCY_CUTOFF (40)
    assert not jaxmarl_obs({**state, "timestep": 360}, lay, 0, horizon=400)[:, :, 25].any()
    assert jaxmarl_obs({**state, "timestep": 361}, lay, 0, horizon=400)[:, :, 25].all()
    with pytest.raises(ValueError, match="unknown object 'pan'"):
        jaxmarl_obs({**state, "objects": [{"name": "pan", "position": (0, 0)}]}, lay, 0, horizon=400)


def test_the_jaxmarl_layout_dict_lists_cells_as_flat_indices_players_in_seat_order():
    d = jaxmarl_layout(load_layout("cramped_room"))
    assert (d["height"], d["width"]) == (4, 5)
    assert d["agent_idx"].tolist() == [11, 8]  # player 1 at (1, 2), player 2 at (3, 1)
    # JaxMARL layouts.py cramped_room, but for its start cells ([6, 8])
    assert d["wall_idx"].tolist() == [0, 1, 2, 3, 4, 5, 9, 10, 14, 15, 16, 17, 18, 19]
    assert (d["goal_idx"].tolist(), d["plate_pile_idx"].tolist()) == ([18], [16])
    assert (d["onion_pile_idx"].tolist(), d["pot_idx"].tolist()) == ([5, 9], [2])
    with pytest.raises(ValueError, match="no tomatoes"):
        jaxmarl_layout(load_layout("counter_circuit_mr"))


def test_a_numpy_jaxmarl_policy_plays_in_our_engine_through_the_adapter():
    """A flax-style ``apply(params, obs) -> (logits, value)``: it sees JaxMARL's observation of its own
    seat and its JaxMARL "right" becomes our EAST."""
    from zsceval.interop.trajectory import record_trajectories

    seen = []

    def apply(params, obs):
        seen.append(obs)
        logits = np.tile(np.asarray(params, dtype=np.float32), (len(obs), 1))
        return logits, np.zeros(len(obs))

    right = [0.0, 0.0, 5.0, 0.0, 0.0, 0.0]
    agent = ExternalAgent(JaxMARLPolicy(apply, params=right), "jaxmarl")
    stay = ExternalAgent(JaxMARLPolicy(lambda obs: np.full(len(obs), 4)), "stay")
    env = OvercookedEnv("cramped_room", num_envs=1, horizon=5)
    (traj,) = record_trajectories(env, [agent, stay], 1)
    assert [a for a, _ in traj.joint_actions] == [2] * 5 and [b for _, b in traj.joint_actions] == [4] * 5
    first = seen[0]
    assert first.shape == (1, 4, 5, 26) and first.dtype == np.uint8
    assert first[0, 2, 1, 0] == 1 and first[0, 1, 3, 1] == 1  # seat 0 at (1, 2), its partner at (3, 1)
    assert first[0, 2, 1, 2 + 0] == 1  # facing north at the start
    assert seen[1][0, 2, 2, 0] == 1 and seen[1][0, 2, 2, 2 + 2] == 1  # moved east to (2, 2), facing east


def test_a_policy_returning_other_than_actions_or_logits_is_one_error():
    env = OvercookedEnv("cramped_room", num_envs=1)
    env.reset()
    bad = JaxMARLPolicy(lambda obs: np.zeros((len(obs), 3)))
    with pytest.raises(ExternalAgentError, match=r"expected actions int \[1\] or logits float \[1, 6\]"):
        bad.act(None, None, [env.export_state(0)], np.array([0]), env.layout)
    with pytest.raises(ExternalAgentError, match="outside 0..5"):
        JaxMARLPolicy(lambda obs: np.full(len(obs), 7)).act(
            None, None, [env.export_state(0)], [0], env.layout
        )
    flat = JaxMARLPolicy(
        lambda obs: np.full(len(obs), 3) if obs.shape == (1, 4 * 5 * 26) else None, flatten=True
    )
    assert flat.act(None, None, [env.export_state(0)], [1], env.layout).tolist() == [3]


def test_the_adapter_needs_no_jax():
    import subprocess
    import sys

    code = "import sys, zsceval.interop as I; I.JaxMARLPolicy; I.jaxmarl_obs; assert 'jax' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
