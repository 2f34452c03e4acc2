"""An overcooked-ai Agent (action(state) -> (action, info)) played through the external-agent
protocol: its actions mapped to our indices, its seat and its game's state handed over each step."""

import numpy as np
import pytest
import torch

from zsceval.envs.overcooked import OvercookedEnv, load_layout
from zsceval.interop.trajectory import record_trajectories
from zsceval.rl.external import (
    OVERCOOKED_AI_ACTIONS,
    ExternalAgent,
    OvercookedAIAgent,
    load_external,
    overcooked_ai_action_index,
)

oai_actions = pytest.importorskip(  # overcooked_ai_py's __init__ imports the old gym
    "overcooked_ai_py.mdp.actions", reason='pip install --no-deps overcooked-ai==1.1.0 and "gym<0.26"'
)


class Stay:
    def act(self, obs, avail):
        return np.full(obs.shape[0], 4, dtype=np.int64)


def test_overcooked_ai_actions_map_to_our_indices_in_its_order():
    Action = oai_actions.Action
    assert list(OVERCOOKED_AI_ACTIONS) == list(Action.ALL_ACTIONS) == list(Action.INDEX_TO_ACTION)
    for i, a in enumerate(Action.INDEX_TO_ACTION):
        assert overcooked_ai_action_index(a) == i == Action.ACTION_TO_INDEX[a]
    assert [overcooked_ai_action_index(a) for a in (Action.STAY, Action.INTERACT)] == [4, 5]
    assert overcooked_ai_action_index([1, 0]) == 2 and overcooked_ai_action_index(np.array([-1, 0])) == 3
    with pytest.raises(ValueError, match="not an overcooked-ai action; they are"):
        overcooked_ai_action_index((2, 0))


class Walker:
    """A minimal overcooked-ai Agent: goes one way, and notes its index and its player as it saw them."""

    def __init__(self, direction=(1, 0)):
        self.direction, self.agent_index, self.mdp, self.seen = direction, None, None, []

    def set_agent_index(self, i):
        self.agent_index = i

    def set_mdp(self, mdp):
        self.mdp = mdp

    def action(self, state):
        Walker.log.append((self.agent_index, state.timestep, state.players[self.agent_index].position))
        assert self.mdp is not None and self.mdp.terrain_mtx  # the layout's gridworld, for look-ahead
        return self.direction, {}


@pytest.mark.parametrize("seat", [0, 1])
def test_an_overcooked_ai_agent_sees_its_seat_and_game_and_its_actions_are_played(seat):
    Walker.log = []
    env = OvercookedEnv(load_layout("cramped_room"), num_envs=2, seed=0, horizon=12)
    walker = ExternalAgent(OvercookedAIAgent(Walker((-1, 0))), "walker")  # west: index 3
    seats = [ExternalAgent(Stay(), "stay")] * 2
    seats[seat] = walker
    trajs = record_trajectories(env, seats, 2, generator=torch.Generator().manual_seed(0))
    for traj in trajs:
        assert [a[seat] for a in traj.joint_actions] == [3] * 12
        assert [a[1 - seat] for a in traj.joint_actions] == [4] * 12
    # 2 games x 12 steps, every call with the walker's own seat, the step's timestep and its position
    assert len(Walker.log) == 24 and {i for i, _, _ in Walker.log} == {seat}
    game0 = [(t, pos) for k, (_, t, pos) in enumerate(Walker.log) if k % 2 == 0]
    expected = [(t, tuple(trajs[0].states[t]["players"][seat]["position"])) for t in range(12)]
    assert game0 == expected
    xs = [pos[0] for _, pos in game0]
    assert xs[-1] < xs[0] or xs[0] == 1  # it walked west until the wall


def test_each_row_plays_its_own_copy_made_fresh_at_each_episode():
    a = OvercookedAIAgent(Walker())
    a.copies = {0: "old", 1: "kept"}
    a.reset(np.array([True, False]))
    assert a.copies == {1: "kept"}


def test_an_overcooked_ai_random_agent_plays(monkeypatch):
    agent_mod = pytest.importorskip(
        "overcooked_ai_py.agents.agent", reason='pip install --no-deps overcooked-ai==1.1.0 and "gym<0.26"'
    )
    Action = oai_actions.Action
    # overcooked-ai 1.1.0's Action.sample draws from a ragged list, which NumPy >= 1.24 refuses;
    # later overcooked-ai draws from an object array, as here
    monkeypatch.setattr(
        Action,
        "sample",
        staticmethod(lambda p: np.random.choice(np.array(Action.ALL_ACTIONS, dtype=object), p=p)),
    )
    np.random.seed(0)
    random_agent = load_external("overcooked_ai_py.agents.agent:RandomAgent")  # wrapped by itself
    assert isinstance(random_agent.obj, OvercookedAIAgent)
    assert isinstance(random_agent.obj.agent, agent_mod.RandomAgent)
    env = OvercookedEnv(load_layout("cramped_room"), num_envs=2, seed=0, horizon=30)
    trajs = record_trajectories(env, [random_agent, ExternalAgent(Stay(), "stay")], 2)
    played = [a[0] for t in trajs for a in t.joint_actions]
    assert len(played) == 60 and set(played) <= {0, 1, 2, 3, 4} and len(set(played)) >= 4  # motions only
