"""Batched Overcooked engine with ZSC-Eval's classic and multi-recipe dynamics.

Public API::

    from zsceval.envs.overcooked import OvercookedEnv, load_layout, list_layouts
    env = OvercookedEnv("counter_circuit", num_envs=4096, device="cpu", seed=0)
    step = env.reset()
    step = env.step(actions)  # int64 [num_envs, num_agents], 0 N 1 S 2 E 3 W 4 STAY 5 INTERACT
"""

from .constants import CLASSIC_EVENTS, MULTI_RECIPE_EVENTS, Action, Interaction, Obj, Terrain
from .env import OvercookedEnv, resolve_device
from .layout import Layout, Recipe, list_layouts, load_layout, parse_layout, resolve_layout_name
from .observation import CLASSIC_CHANNELS, MULTI_RECIPE_CHANNELS

__all__ = [
    "OvercookedEnv",
    "resolve_device",
    "Layout",
    "Recipe",
    "list_layouts",
    "load_layout",
    "parse_layout",
    "resolve_layout_name",
    "Action",
    "Interaction",
    "Obj",
    "Terrain",
    "CLASSIC_EVENTS",
    "MULTI_RECIPE_EVENTS",
    "CLASSIC_CHANNELS",
    "MULTI_RECIPE_CHANNELS",
]
