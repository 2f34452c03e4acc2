"""JaxMARL Overcooked policies as zsceval external agents (:mod:`zsceval.rl.external`).

A policy trained in JaxMARL's Overcooked (FLAIROx/JaxMARL, ``jaxmarl/environments/overcooked/
overcooked.py``, class ``Overcooked``) reads a 26-channel observation and returns JaxMARL action
indices. :class:`JaxMARLPolicy` plays such a policy in zsceval's engine: from each row's
overcooked-ai state dict (``wants_states``) it builds the observation JaxMARL's ``get_obs`` would
give the row's seat (:func:`jaxmarl_obs`, NumPy only), calls the policy, and maps its actions to
overcooked-ai's indices (:data:`JAXMARL_TO_OVERCOOKED_AI`).

The observation, ``uint8 [H, W, 26]`` per agent, indexed ``[y, x, channel]`` (the ``get_obs``
docstring; directions in JaxMARL's ``DIR_TO_VEC`` order, ``common.py``: 0 north, 1 south, 2 east,
3 west): ::

     0 the agent's own position            1 the partner's position
     2-5 the agent's orientation (layer 2 + direction)   6-9 the partner's
    10 pots   11 counters with nothing on them (JaxMARL's "wall"; an item on a counter hides it)
    12 onion dispensers   13 tomato dispensers (none in JaxMARL)   14 dish ("plate") dispensers
    15 serving locations (JaxMARL's "goal")
    16 onions in a pot not yet cooking (0-3)   17 tomatoes in such a pot
    18 onions in a soup: a cooking or ready pot, a soup on a counter or in a hand
    19 tomatoes in such a soup
    20 cook time left of a cooking pot (recipe cook time - elapsed ticks; 0 if idle or ready)
    21 ready soups (a pot done cooking, a soup on a counter or in a hand)
    22 empty dishes (JaxMARL's "plate")   23 onions   24 tomatoes  (on counters or in hands)
    25 urgency: every cell 1 when fewer than 40 steps of the episode are left

JaxMARL's engine plays the classic rules of our onion layouts (cooking starts by itself at three
onions; 20 ticks; ``docs/overcooked-rules.md``): with the layout's grid and start cells
(:func:`jaxmarl_layout`), a state both engines reach gives equal observations
(``tests/interop/test_jaxmarl_parity.py`` checks it step by step against ``jaxmarl``'s
``get_obs`` when ``pip install jaxmarl`` is installed). JaxMARL's ``reset`` draws the players'
orientations; ours face north.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from zsceval.rl.external import ExternalAgentError, overcooked_ai_action_index

__all__ = [
    "JAXMARL_ACTIONS",
    "JAXMARL_TO_OVERCOOKED_AI",
    "NUM_CHANNELS",
    "OVERCOOKED_AI_TO_JAXMARL",
    "URGENCY_CUTOFF",
    "JaxMARLPolicy",
    "jaxmarl_layout",
    "jaxmarl_obs",
]

NUM_CHANNELS = 26
"""Channels of JaxMARL's Overcooked observation (``Overcooked.get_obs``)."""

URGENCY_CUTOFF = 40
"""JaxMARL's ``URGENCY_CUTOFF``: the urgency layer is on when fewer steps than this are left."""

_DIRECTIONS = ((0, -1), (0, 1), (1, 0), (-1, 0))
"""JaxMARL's ``DIR_TO_VEC`` (``common.py``): north, south, east, west, ``(dx, dy)``."""

JAXMARL_ACTIONS: tuple[tuple[str, Any], ...] = (
    ("up", _DIRECTIONS[0]),
    ("down", _DIRECTIONS[1]),
    ("right", _DIRECTIONS[2]),
    ("left", _DIRECTIONS[3]),
    ("stay", (0, 0)),
    ("interact", "interact"),
)
"""JaxMARL's ``OvercookedActions`` in index order (``overcooked.py``: up 0, down 1, right 2, left 3,
stay 4, interact 5; a move action ``a`` moves by ``DIR_TO_VEC[a]``), with overcooked-ai's action."""

JAXMARL_TO_OVERCOOKED_AI = np.array([overcooked_ai_action_index(a) for _, a in JAXMARL_ACTIONS], np.int64)
"""``int64 [6]``: overcooked-ai's action index of each JaxMARL action index. The two orders agree
(north, south, east, west, stay, interact), so this is the identity; it is kept as a table so that a
change on either side shows in ``tests/interop/test_jaxmarl.py``."""

OVERCOOKED_AI_TO_JAXMARL = np.argsort(JAXMARL_TO_OVERCOOKED_AI).astype(np.int64)
"""``int64 [6]``: the inverse table, JaxMARL's index of each overcooked-ai action index."""

_STATIC = {"P": 10, "X": 11, "O": 12, "T": 13, "D": 14, "S": 15}
_LOOSE = {"dish": 22, "onion": 23, "tomato": 24}


def jaxmarl_layout(layout: Any) -> dict[str, np.ndarray | int]:
    """A zsceval layout as JaxMARL's layout dict (``layouts.py``: ``height, width, wall_idx,
    agent_idx, goal_idx, plate_pile_idx, onion_pile_idx, pot_idx``; flat indices ``y * W + x``), the
    players' start cells in seat order (``agent_idx[i]`` is player ``i``'s).

    Pass it as ``Overcooked(FrozenDict(jaxmarl_layout(layout)))`` to play the same grid in JaxMARL.

    Raises:
        ValueError: the layout has tomato dispensers or other than 2 players (JaxMARL has neither).
    """
    if layout.num_players != 2 or layout.cells("T"):
        raise ValueError(
            f"JaxMARL's Overcooked has 2 players and no tomatoes; layout {layout.name!r} has "
            f"{layout.num_players} players and {len(layout.cells('T'))} tomato dispensers"
        )
    W = layout.width

    def flat(cells) -> np.ndarray:
        return np.array([y * W + x for x, y in cells], dtype=np.int32)

    walls = [(x, y) for y, row in enumerate(layout.terrain) for x, c in enumerate(row) if c != " "]
    return {
        "height": layout.height,
        "width": W,
        "wall_idx": flat(walls),
        "agent_idx": flat(layout.start_positions),
        "goal_idx": flat(layout.cells("S")),
        "plate_pile_idx": flat(layout.cells("D")),
        "onion_pile_idx": flat(layout.cells("O")),
        "pot_idx": flat(layout.cells("P")),
    }


def _soup_channels(obs: np.ndarray, x: int, y: int, soup: dict, in_pot: bool) -> None:
    """Write one soup (overcooked-ai's soup dict) at ``(x, y)``: channels 16-21."""
    names = [i["name"] if isinstance(i, dict) else str(i) for i in soup.get("_ingredients", [])]
    onions, tomatoes = names.count("onion"), names.count("tomato")
    tick = int(soup.get("_cooking_tick", soup.get("cooking_tick", -1)))
    if in_pot and tick < 0:  # idle: ingredients in the pot, not cooking
        obs[y, x, 16], obs[y, x, 17] = onions, tomatoes
        return
    obs[y, x, 18], obs[y, x, 19] = onions, tomatoes
    left = int(soup.get("cook_time", 0)) - tick if in_pot else 0
    if left > 0:
        obs[y, x, 20] = left
    else:
        obs[y, x, 21] = 1


def _object_channels(obs: np.ndarray, item: dict, terrain: tuple[str, ...]) -> None:
    """Write one object (on a counter, in a pot or in a hand at its ``position``)."""
    x, y = (int(v) for v in item["position"])
    name = item["name"]
    if name == "soup":
        _soup_channels(obs, x, y, item, in_pot=terrain[y][x] == "P")
    elif name in _LOOSE:
        obs[y, x, _LOOSE[name]] = 1
    else:
        raise ValueError(f"unknown object {name!r} at {(x, y)}; objects are soup, {', '.join(_LOOSE)}")
    if terrain[y][x] == "X":
        obs[y, x, 11] = 0  # JaxMARL's counter layer marks counters with nothing on them


def jaxmarl_obs(state: dict, layout: Any, seat: int, horizon: int) -> np.ndarray:
    """JaxMARL's Overcooked observation of ``state`` for the player in ``seat`` (module docstring).

    Args:
        state: overcooked-ai's ``OvercookedState.to_dict()`` of a 2-player game (players in seat
            order), as :meth:`zsceval.envs.overcooked.OvercookedEnv.export_state` gives it.
        layout: the :class:`~zsceval.envs.overcooked.layout.Layout` played (its terrain).
        seat: the observing player's index, 0 or 1 (JaxMARL's ``agent_0`` / ``agent_1``).
        horizon: the episode length in steps (JaxMARL's ``max_steps``), for the urgency layer.

    Returns:
        ``uint8 [H, W, 26]``, indexed ``[y, x, channel]``.

    Raises:
        ValueError: other than 2 players, ``seat`` not 0 or 1, or an unknown object name.
    """
    players = state["players"]
    if len(players) != 2 or seat not in (0, 1):
        raise ValueError(f"JaxMARL's Overcooked has 2 players (seat 0 or 1); got {len(players)}, seat {seat}")
    terrain = layout.terrain
    obs = np.zeros((layout.height, layout.width, NUM_CHANNELS), dtype=np.uint8)
    for y, row in enumerate(terrain):
        for x, c in enumerate(row):
            if c in _STATIC:
                obs[y, x, _STATIC[c]] = 1
    for k, p in enumerate((players[seat], players[1 - seat])):
        x, y = (int(v) for v in p["position"])
        obs[y, x, k] = 1
        obs[y, x, 2 + 4 * k + _DIRECTIONS.index(tuple(int(v) for v in p["orientation"]))] = 1
    for item in state["objects"]:
        _object_channels(obs, item, terrain)
    for p in players:
        if p.get("held_object"):
            _object_channels(obs, {**p["held_object"], "position": p["position"]}, terrain)
    if horizon - int(state.get("timestep", 0)) < URGENCY_CUTOFF:
        obs[:, :, 25] = 1
    return obs


def _actions_of(out: Any, rows: int, greedy: bool, rng: np.random.Generator) -> np.ndarray:
    """JaxMARL action indices ``int64 [rows]`` from what a policy returned: actions ``int [rows]``;
    logits ``float [rows, 6]``; a distribution with ``logits`` (distrax's ``Categorical``); or a
    tuple whose first element is one of these (``ActorCritic.apply`` returns ``(pi, value)``)."""
    if isinstance(out, tuple | list):
        out = out[0]
    logits = getattr(out, "logits", None)
    arr = np.asarray(out if logits is None else logits)
    if arr.shape == (rows,) and np.issubdtype(arr.dtype, np.integer):
        return arr.astype(np.int64)
    if arr.shape != (rows, len(JAXMARL_ACTIONS)) or not np.issubdtype(arr.dtype, np.floating):
        raise ExternalAgentError(
            f"the JaxMARL policy returned {arr.dtype} {list(arr.shape)}; expected actions int [{rows}] or "
            f"logits float [{rows}, {len(JAXMARL_ACTIONS)}] (or (pi, value) with pi.logits)"
        )
    if greedy:
        return arr.argmax(axis=1).astype(np.int64)
    z = np.exp(arr - arr.max(axis=1, keepdims=True))
    cdf = np.cumsum(z / z.sum(axis=1, keepdims=True), axis=1)
    draws = rng.random((rows, 1))
    return np.minimum((cdf < draws).sum(axis=1), len(JAXMARL_ACTIONS) - 1).astype(np.int64)


class JaxMARLPolicy:
    """A JaxMARL Overcooked policy as a zsceval external agent (``wants_states``; module docstring).

    ``policy(obs)`` (or ``policy(params, obs)`` with ``params``, a flax ``apply`` function) gets
    ``obs``, JaxMARL's observations of the B rows, ``uint8 [B, H, W, 26]`` (``[B, H * W * 26]`` with
    ``flatten``, as JaxMARL's IPPO ``batchify`` feeds its MLP), as a NumPy array (jax functions take
    it as is); it returns JaxMARL actions ``int [B]``, logits ``float [B, 6]``, a distribution with
    ``logits`` or a tuple ``(pi, value)`` of these. Logits are played greedily (arg-max) unless
    ``greedy=False``, which samples with a NumPy generator seeded by ``seed``.

    Args:
        policy: the callable.
        params: passed first to ``policy`` when given (``network.apply(params, obs)``).
        flatten: give each row's observation flattened, ``[B, H * W * 26]``.
        horizon: episode length for the urgency layer; None reads the played layout's horizon.
        greedy: arg-max of logits (else sample).
        seed: seed of the sampling generator.

    ``zsceval eval --agent my_module:make_agent`` with ``make_agent`` returning
    ``JaxMARLPolicy(network.apply, params=params)`` scores the policy (docs/external-agents.md).
    """

    wants_states = True

    def __init__(
        self,
        policy: Callable,
        *,
        params: Any = None,
        flatten: bool = False,
        horizon: int | None = None,
        greedy: bool = True,
        seed: int = 0,
    ) -> None:
        if not callable(policy):
            raise ExternalAgentError(f"{policy!r} is not callable (a JaxMARL policy or flax apply function)")
        self.policy, self.params, self.flatten, self.horizon = policy, params, flatten, horizon
        self.greedy, self.rng = greedy, np.random.default_rng(seed)

    def observations(self, states: list, seats: np.ndarray, layout: Any) -> np.ndarray:
        """``uint8 [B, H, W, 26]``: :func:`jaxmarl_obs` of each row."""
        horizon = layout.horizon if self.horizon is None else self.horizon
        return np.stack([jaxmarl_obs(s, layout, int(k), horizon) for s, k in zip(states, seats, strict=True)])

    def act(
        self, obs: np.ndarray, avail_actions: np.ndarray, states: list, seats: np.ndarray, layout: Any
    ) -> np.ndarray:
        """``int64 [B]`` overcooked-ai action indices of the policy's JaxMARL actions."""
        x = self.observations(states, seats, layout)
        if self.flatten:
            x = x.reshape(len(x), -1)
        out = self.policy(x) if self.params is None else self.policy(self.params, x)
        actions = _actions_of(out, len(x), self.greedy, self.rng)
        if ((actions < 0) | (actions >= len(JAXMARL_ACTIONS))).any():
            raise ExternalAgentError(f"the JaxMARL policy returned actions outside 0..5: {actions.tolist()}")
        return JAXMARL_TO_OVERCOOKED_AI[actions]
