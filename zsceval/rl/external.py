"""Agents from outside zsceval: an object with ``act`` scored like a saved agent.

The protocol, over numpy arrays (B rows: one row is the agent's seat in one game):

* ``act(obs, avail_actions) -> actions``: ``obs uint8 [B, H, W, C]``, the layout's lossless
  encoding as the agent's seat sees it (``env.obs_channels``, the channels of overcooked-ai's
  ``lossless_state_encoding``); ``avail_actions bool [B, 6]``; returns ``int64 [B]`` actions in
  overcooked-ai's order (0 N, 1 S, 2 E, 3 W, 4 STAY, 5 INTERACT);
* optional ``reset(mask)``, ``mask bool [B]``: the rows whose episode starts at this step, called
  before ``act``;
* optional ``wants_states = True``: ``act`` is then called as ``act(obs, avail_actions, states=...,
  seats=..., layout=...)`` with, per row, overcooked-ai's state dict of its game
  (``OvercookedState.to_dict()``, players in seat order;
  :meth:`zsceval.rl.runner.EpisodeRunner.game_states`), ``seats int64 [B]``, the row's player
  index, and the :class:`~zsceval.envs.overcooked.layout.Layout` played (``grid_text``,
  ``orders``). Overcooked only.

An overcooked-ai ``Agent`` (``action(state) -> (action, info)``) plays through
:class:`OvercookedAIAgent`, which ``--agent`` applies by itself to an object with ``action`` and no
``act`` (``--agent overcooked_ai_py.agents.agent:RandomAgent``).

``zsceval eval --agent module:attr`` names one: ``attr`` is such an object, or a callable with no
arguments that returns one; ``module`` is importable from the working folder or installed
(:func:`load_external`). An agent that returns a wrong shape, dtype or action, or raises inside
``act``, stops the evaluation with one :class:`ExternalAgentError` naming the agent and the step
(the agent's own traceback attached), and nothing is written as if complete.
"""

from __future__ import annotations

import copy
import importlib
import re
import sys
import traceback
from pathlib import Path
from typing import Any

import numpy as np
import torch

from zsceval.envs.overcooked.constants import DIRECTIONS
from zsceval.rl.agent import ActOutput

__all__ = [
    "OVERCOOKED_AI_ACTIONS",
    "ExternalAgent",
    "ExternalAgentError",
    "OvercookedAIAgent",
    "is_external",
    "load_ego",
    "load_external",
    "overcooked_ai_action_index",
]

OVERCOOKED_AI_ACTIONS: tuple = (*DIRECTIONS, (0, 0), "interact")
"""overcooked-ai's ``Action.INDEX_TO_ACTION`` (overcooked-ai 1.1.0,
``overcooked_ai_py/mdp/actions.py``): N ``(0, -1)``, S ``(0, 1)``, E ``(1, 0)``, W ``(-1, 0)``, STAY
``(0, 0)``, ``"interact"``; the index is ours."""

_SPEC = re.compile(r"^(?P<module>[A-Za-z_][\w.]*):(?P<attr>[A-Za-z_][\w.]*)$")


class ExternalAgentError(ValueError):
    """An external agent that cannot be imported, or that broke the protocol while playing."""


def is_external(value: str) -> bool:
    """Whether ``value`` names an external agent (``module:attr``) rather than a checkpoint path."""
    return bool(_SPEC.match(str(value))) and not Path(str(value)).exists()


class ExternalAgent:
    """A protocol object (module docstring) as a zsceval agent (:class:`~zsceval.rl.agent.Agent`):
    memoryless to the runner, its numpy ``act`` checked at every step."""

    def __init__(self, obj: Any, name: str, num_actions: int = 6) -> None:
        self.obj, self.name, self.num_actions = obj, name, num_actions
        self.steps = 0
        self.wants_states = bool(getattr(obj, "wants_states", False))

    def to(self, *_args, **_kwargs) -> ExternalAgent:
        return self

    def eval(self) -> ExternalAgent:
        return self

    def initial_state(self, rows: int, device: torch.device | str) -> torch.Tensor:
        return torch.zeros(rows, 0, device=device)

    def act(
        self, obs, avail, state, starts, generator=None, deterministic=False, game_states=None, seats=None,
        layout=None,
    ) -> ActOutput:  # fmt: skip
        """Call the object's ``reset`` and ``act`` on numpy copies; check what comes back.

        ``game_states``, ``seats`` (:meth:`zsceval.rl.runner.EpisodeRunner.game_states`) and
        ``layout`` are passed on as ``states``, ``seats`` and ``layout`` to an object with
        ``wants_states``.

        Raises:
            ExternalAgentError: the object raised, or returned other than ``int [B]`` in 0..5.
        """
        rows = obs.shape[0]
        mask = (
            np.ones((rows, self.num_actions), dtype=bool)
            if avail is None
            else avail.cpu().numpy().astype(bool)
        )
        try:
            if hasattr(self.obj, "reset") and bool(starts.any()):
                self.obj.reset(starts.cpu().numpy().astype(bool))
            if self.wants_states:
                if game_states is None:
                    raise RuntimeError("this loop gives no game states (only the Overcooked env does)")
                out = self.obj.act(
                    obs.cpu().numpy(), mask, states=game_states, seats=np.asarray(seats, dtype=np.int64),
                    layout=layout,
                )  # fmt: skip
            else:
                out = self.obj.act(obs.cpu().numpy(), mask)
        except Exception as exc:
            raise ExternalAgentError(
                f"agent {self.name} raised at step {self.steps}: {type(exc).__name__}: {exc}\n"
                f"in the agent's code:\n{_own_frames(exc)}"
            ) from None
        actions = np.asarray(out)
        if actions.shape != (rows,) or not np.issubdtype(actions.dtype, np.integer):
            raise ExternalAgentError(
                f"agent {self.name} returned {actions.dtype} {list(actions.shape)} at step {self.steps}; "
                f"act must return int64 [{rows}] (one action per row)"
            )
        bad = (actions < 0) | (actions >= self.num_actions)
        if bad.any():
            raise ExternalAgentError(
                f"agent {self.name} returned action {int(actions[bad][0])} at step {self.steps}; actions "
                f"are 0..{self.num_actions - 1} (0 N, 1 S, 2 E, 3 W, 4 STAY, 5 INTERACT)"
            )
        self.steps += 1
        actions_t = torch.as_tensor(actions.astype(np.int64), device=obs.device)
        return ActOutput(actions_t, torch.zeros(rows, device=obs.device), state)


def overcooked_ai_action_index(action: Any) -> int:
    """Our action index (0 N, 1 S, 2 E, 3 W, 4 STAY, 5 INTERACT) of an overcooked-ai action: a
    direction ``(dx, dy)`` (tuple, list or array), ``(0, 0)`` or ``"interact"``.

    Raises:
        ValueError: not an overcooked-ai action (the valid ones listed).
    """
    key = tuple(int(v) for v in action) if isinstance(action, list | tuple | np.ndarray) else action
    try:
        return OVERCOOKED_AI_ACTIONS.index(key)
    except ValueError:
        raise ValueError(
            f"{action!r} is not an overcooked-ai action; they are {list(OVERCOOKED_AI_ACTIONS)}"
        ) from None


class OvercookedAIAgent:
    """An overcooked-ai ``Agent`` (overcooked-ai 1.1.0, ``overcooked_ai_py/agents/agent.py``:
    ``action(state) -> (action, info)``) as a protocol object (module docstring), needing ``overcooked_ai_py``
    (``pip install --no-deps overcooked-ai==1.1.0`` for its agents and states).

    Each row plays its own deep copy of ``agent``, made when the row's episode starts (an
    overcooked-ai agent is reset between episodes and may keep a history), with
    ``set_agent_index(seat)`` and ``set_mdp(mdp)`` before every ``action``, where ``mdp`` is
    overcooked-ai's ``OvercookedGridworld.from_grid`` of the layout's grid with its orders, recipe
    values and times (which also configures overcooked-ai's process-global ``Recipe``); the copy gets
    the game as an ``OvercookedState.from_dict`` of the exported state. The mdp is for the agent's
    own look-ahead: zsceval's engine plays the game (overcooked-ai 1.1.0 has no classic
    dynamics). An ``action`` that returns a bare action rather than ``(action, info)`` is accepted.
    """

    wants_states = True

    def __init__(self, agent: Any) -> None:
        if not callable(getattr(agent, "action", None)):
            raise ExternalAgentError(f"{agent!r} has no action(state) method (overcooked-ai's Agent)")
        self.agent = agent
        self.copies: dict[int, Any] = {}
        self.mdps: dict[str, Any] = {}

    def mdp(self, layout: Any) -> Any:
        """overcooked-ai's ``OvercookedGridworld`` of ``layout`` (one per layout), its ``Recipe``
        configured."""
        from overcooked_ai_py.mdp.overcooked_mdp import OvercookedGridworld, Recipe

        mdp = self.mdps.get(layout.grid_text)
        if mdp is None:
            params = {
                "start_all_orders": [{"ingredients": list(r.ingredients)} for r in layout.orders],
                "recipe_values": [r.value for r in layout.orders],
                "recipe_times": [r.time for r in layout.orders],
            }
            mdp = self.mdps[layout.grid_text] = OvercookedGridworld.from_grid(
                layout.grid_text.split("\n"), base_layout_params=params
            )
        Recipe.configure(mdp.recipe_config)  # process-global: another layout may have set it
        return mdp

    def reset(self, mask: np.ndarray) -> None:
        for row in np.flatnonzero(mask):
            self.copies.pop(int(row), None)

    def act(
        self, obs: np.ndarray, avail_actions: np.ndarray, states: list, seats: np.ndarray, layout: Any
    ) -> np.ndarray:
        """``int64 [B]``: each row's copy's ``action`` on its game's ``OvercookedState``, mapped with
        :func:`overcooked_ai_action_index`."""
        from overcooked_ai_py.mdp.overcooked_mdp import OvercookedState

        mdp = self.mdp(layout)
        out = np.empty(len(states), dtype=np.int64)
        parsed: dict[int, Any] = {}  # rows of one game share one exported dict
        for row, (state, seat) in enumerate(zip(states, seats, strict=True)):
            if id(state) not in parsed:
                parsed[id(state)] = OvercookedState.from_dict(state)
            agent = self.copies.get(row)
            if agent is None:
                agent = self.copies[row] = copy.deepcopy(self.agent)
            if hasattr(agent, "set_agent_index"):
                agent.set_agent_index(int(seat))
            if hasattr(agent, "set_mdp"):
                agent.set_mdp(mdp)
            result = agent.action(parsed[id(state)])
            if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict):
                result = result[0]
            out[row] = overcooked_ai_action_index(result)
        return out


def _own_frames(exc: BaseException) -> str:
    """The traceback frames of ``exc`` outside zsceval (the agent's own code), formatted."""
    here = str(Path(__file__).resolve().parents[1])
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not str(Path(f.filename).resolve()).startswith(here)
    ]
    return "".join(traceback.format_list(frames)).rstrip() or "  (no frame of the agent's own)"


def load_external(spec: str, num_actions: int = 6) -> ExternalAgent:
    """The external agent ``module:attr`` (module docstring).

    Raises:
        ExternalAgentError: the module or attribute does not import, or the object has no ``act``.
    """
    match = _SPEC.match(str(spec))
    if match is None:
        raise ExternalAgentError(f"{spec!r} is not MODULE:ATTRIBUTE")
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))  # a module in the working folder, as `python -m` finds it
    try:
        obj: Any = importlib.import_module(match["module"])
        for part in match["attr"].split("."):
            obj = getattr(obj, part)
    except Exception as exc:
        raise ExternalAgentError(f"cannot import the agent {spec}: {type(exc).__name__}: {exc}") from None
    if isinstance(obj, type) or (
        not hasattr(obj, "act") and not hasattr(obj, "action") and callable(obj)
    ):  # a class or a factory
        try:
            obj = obj()
        except Exception as exc:
            raise ExternalAgentError(
                f"{spec}() raised {type(exc).__name__}: {exc}\nin the agent's code:\n{_own_frames(exc)}"
            ) from None
    if not callable(getattr(obj, "act", None)) and callable(getattr(obj, "action", None)):
        obj = OvercookedAIAgent(obj)  # an overcooked-ai Agent
    if not callable(getattr(obj, "act", None)):
        raise ExternalAgentError(
            f"{spec} has no act(obs, avail_actions) method, nor overcooked-ai's action(state) "
            "(or is not a callable that makes one)"
        )
    return ExternalAgent(obj, spec, num_actions)


def load_ego(agent: str, device: Any) -> tuple[Any, dict | None]:
    """The agent ``zsceval eval`` scores: an external ``module:attr`` (no metadata), or a saved one
    (:func:`zsceval.rl.checkpoint.load_policy`, with its checkpoint's metadata)."""
    if is_external(agent):
        return load_external(agent), None
    from zsceval.rl.checkpoint import load_policy

    return load_policy(agent, device=device)
