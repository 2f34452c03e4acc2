"""Google Research Football (GRF) as ZSC-Eval plays it: one 3-controlled-player game and its encodings.

Public API::

    from zsceval.envs.football import FootballGame
    game = FootballGame(seed=0)           # needs gfootball==2.10.2 (see docs/football.md)
    step = game.reset()                   # GameStep dict: obs [3, 58], avail_actions [3, 19], ...
    step = game.step(actions)             # int64 [3], default 19-action set

The pure-numpy parts (``features``, ``events``, ``rewards``) import without gfootball.
Source: docs/reference-protocol.md "Football".
"""

from .events import EVENT_NAMES, EventTracker
from .features import (
    ACTION_NAMES,
    NUM_ACTIONS,
    OBS_FIELDS,
    available_actions,
    encode_observation,
    encode_state,
    obs_dim,
    obs_fields,
    state_dim,
)
from .game import GAME_STEP_KEYS, INSTALL_HINT, FootballGame
from .rewards import REFERENCE_REWARD, REWARD_KEYS, agent_reward, weight_vector
from .scenario import build_scenario, register_scenario, scenario_level

__all__ = [
    "ACTION_NAMES",
    "EVENT_NAMES",
    "GAME_STEP_KEYS",
    "INSTALL_HINT",
    "NUM_ACTIONS",
    "OBS_FIELDS",
    "REFERENCE_REWARD",
    "REWARD_KEYS",
    "EventTracker",
    "FootballGame",
    "agent_reward",
    "available_actions",
    "build_scenario",
    "encode_observation",
    "encode_state",
    "obs_dim",
    "obs_fields",
    "register_scenario",
    "scenario_level",
    "state_dim",
    "weight_vector",
]
