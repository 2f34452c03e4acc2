"""Adapter to the reference simulator (PyPI ``overcooked`` 0.2.1), for parity tests and benchmarks.

The reference is built from the same grid with ``old_dynamics=True`` for classic layouts and with
the layout's orders, values and times for multi-recipe layouts, and base shaping 3/3/5
(docs/overcooked-rules.md §6.5). Install it with ``pip install -e .[reference]``.

Known, documented reward differences for multi-recipe layouts (ZSC-Eval rules we follow,
docs/overcooked-rules.md §5.2): delivering a soup that is not an order pays -10 here and 0 in the
reference; a catastrophic potting earns no shaped reward here and +3 in the reference.
"""

from __future__ import annotations

import random
from typing import Any

from .layout import INGREDIENTS, Layout

BASE_SHAPING = {
    "PLACEMENT_IN_POT_REW": 3,
    "DISH_PICKUP_REWARD": 3,
    "SOUP_PICKUP_REWARD": 5,
    "DISH_DISP_DISTANCE_REW": 0,
    "POT_DISTANCE_REW": 0,
    "SOUP_DISTANCE_REW": 0,
}


def _import():
    try:
        from overcooked.mdp.actions import Action
        from overcooked.mdp.overcooked_mdp import OvercookedGridworld, OvercookedState, Recipe
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the reference simulator is not installed: pip install 'overcooked==0.2.1' "
            "(or pip install -e .[reference])"
        ) from exc
    return Action, OvercookedGridworld, OvercookedState, Recipe


class ReferenceGame:
    """One reference game of ``layout`` with a step that takes integer actions.

    Recipe configuration is process-global in the reference; ``step`` re-applies this layout's
    configuration when another layout was configured in between.
    """

    _configured_for: Layout | None = None

    def __init__(self, layout: Layout):
        Action, Gridworld, self._State, self._Recipe = _import()
        self.layout = layout
        self._actions = Action.INDEX_TO_ACTION
        params: dict[str, Any] = {
            "start_all_orders": [{"ingredients": list(r.ingredients)} for r in layout.orders],
            "recipe_values": [r.value for r in layout.orders],
            "recipe_times": [r.time for r in layout.orders],
            "old_dynamics": layout.dynamics == "classic",
            "rew_shaping_params": dict(BASE_SHAPING),
        }
        rows = layout.grid_text.split("\n")
        self.mdp = Gridworld.from_grid(rows, base_layout_params=params)
        ReferenceGame._configured_for = layout
        self.state = self.mdp.get_standard_start_state().deepcopy()

    def _configure(self) -> None:
        if ReferenceGame._configured_for is not self.layout:
            self._Recipe.configure(self.mdp.recipe_config)
            ReferenceGame._configured_for = self.layout

    def set_state(self, state_dict: dict) -> None:
        """Load an overcooked-ai state dict."""
        self._configure()
        self.state = self._State.from_dict(state_dict)

    def step(self, joint_action: list[int]) -> tuple[list[float], list[float]]:
        """Apply integer actions; returns per-player (sparse, shaped) rewards."""
        self._configure()
        actions = tuple(self._actions[a] for a in joint_action)
        self.state, info = self.mdp.get_state_transition(self.state, actions)
        return list(info["sparse_reward_by_agent"]), list(info["shaped_reward_by_agent"])

    def observe(self) -> list:
        """Both players' lossless encodings (the reference's ``lossless_state_encoding``)."""
        self._configure()
        return self.mdp.lossless_state_encoding(self.state)

    def to_dict(self) -> dict:
        """The current state as overcooked-ai's state dict."""
        return self.state.to_dict()


def random_state_dict(layout: Layout, rng: random.Random, timestep: int = 0) -> dict:
    """A random, consistent state dict of ``layout`` for randomized-start parity tests.

    Players stand on distinct random floor cells with random orientations and random held
    objects (nothing, onion, tomato on multi-recipe layouts, dish, or a ready soup); each counter
    holds a random object with probability 0.3; each pot holds nothing, an idle soup, a cooking
    soup or a ready soup.
    """
    floor = layout.cells(" ")
    ingredients = INGREDIENTS if layout.dynamics == "multi_recipe" else ("onion",)
    loose = ["onion", "dish", "soup"] + (["tomato"] if layout.dynamics == "multi_recipe" else [])

    def soup(pos, n_min, n_max, status):
        names = [rng.choice(ingredients) for _ in range(rng.randint(n_min, n_max))]
        onions, tomatoes = names.count("onion"), names.count("tomato")
        time = layout.recipe(onions, tomatoes)[1]
        tick = {"idle": -1, "cooking": rng.randint(0, time - 1), "ready": time}[status]
        return {
            "name": "soup",
            "position": pos,
            "_ingredients": [{"name": n, "position": pos} for n in names],
            "cooking_tick": tick,
            "is_cooking": status == "cooking",
            "is_ready": status == "ready",
            "is_idle": status == "idle",
            "cook_time": -1 if status == "idle" else time,
            "_cooking_tick": tick,
        }

    def item(pos):
        name = rng.choice(loose)
        if name == "soup":
            return soup(pos, 3 if layout.dynamics == "classic" else 1, 3, "ready")
        return {"name": name, "position": pos}

    cells = rng.sample(floor, layout.num_players)
    players = []
    for x, y in cells:
        held = None if rng.random() < 0.4 else item((x, y))
        orientation = rng.choice([(0, -1), (0, 1), (1, 0), (-1, 0)])
        players.append({"position": (x, y), "orientation": orientation, "held_object": held})
    objects = []
    for pos in layout.cells("X"):
        if rng.random() < 0.3:
            objects.append(item(pos))
    for pos in layout.cells("P"):
        kind = rng.choice(["empty", "idle", "cooking", "ready"])
        if kind == "idle":
            hi = 2 if layout.dynamics == "classic" and rng.random() < 0.9 else 3
            objects.append(soup(pos, 1, hi, "idle"))
        elif kind in ("cooking", "ready"):
            lo = 3 if layout.dynamics == "classic" else 1
            objects.append(soup(pos, lo, 3, kind))
    rng.shuffle(objects)
    return {
        "players": players,
        "objects": objects,
        "bonus_orders": [],
        "all_orders": [{"ingredients": r.ingredients} for r in layout.orders],
        "timestep": timestep,
    }
