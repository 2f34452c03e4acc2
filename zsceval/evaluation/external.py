"""Agents from outside zsceval: an object with ``act`` scored like a saved agent.

The protocol, over numpy arrays (B rows: one row is the agent's seat in one game):

* ``act(obs, avail_actions) -> actions``: ``obs uint8 [B, H, W, C]``, the layout's lossless
  encoding as the agent's seat sees it (``env.obs_channels``, the channels of overcooked-ai's
  ``lossless_state_encoding``); ``avail_actions bool [B, 6]``; returns ``int64 [B]`` actions in
  overcooked-ai's order (0 N, 1 S, 2 E, 3 W, 4 STAY, 5 INTERACT);
* optional ``reset(mask)``, ``mask bool [B]``: the rows whose episode starts at this step, called
  before ``act``.

``zsceval eval --agent module:attr`` names one: ``attr`` is such an object, or a callable with no
arguments that returns one; ``module`` is importable from the working folder or installed
(:func:`load_external`). An agent that returns a wrong shape, dtype or action, or raises inside
``act``, stops the evaluation with one :class:`ExternalAgentError` naming the agent and the step
(the agent's own traceback attached), and nothing is written as if complete.
"""

from __future__ import annotations

import importlib
import re
import sys
import traceback
from pathlib import Path
from typing import Any

import numpy as np
import torch

from zsceval.rl.agent import ActOutput

__all__ = ["ExternalAgent", "ExternalAgentError", "is_external", "load_ego", "load_external"]

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

    def to(self, *_args, **_kwargs) -> ExternalAgent:
        return self

    def eval(self) -> ExternalAgent:
        return self

    def initial_state(self, rows: int, device: torch.device | str) -> torch.Tensor:
        return torch.zeros(rows, 0, device=device)

    def act(self, obs, avail, state, starts, generator=None, deterministic=False) -> ActOutput:
        """Call the object's ``reset`` and ``act`` on numpy copies; check what comes back.

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
    if isinstance(obj, type) or (not hasattr(obj, "act") and callable(obj)):  # a class or a factory
        try:
            obj = obj()
        except Exception as exc:
            raise ExternalAgentError(
                f"{spec}() raised {type(exc).__name__}: {exc}\nin the agent's code:\n{_own_frames(exc)}"
            ) from None
    if not callable(getattr(obj, "act", None)):
        raise ExternalAgentError(
            f"{spec} has no act(obs, avail_actions) method (or is not a callable that makes one)"
        )
    return ExternalAgent(obj, spec, num_actions)


def load_ego(agent: str, device: Any) -> tuple[Any, dict | None]:
    """The agent ``zsceval eval`` scores: an external ``module:attr`` (no metadata), or a saved one
    (:func:`zsceval.rl.checkpoint.load_policy`, with its checkpoint's metadata)."""
    if is_external(agent):
        return load_external(agent), None
    from zsceval.rl.checkpoint import load_policy

    return load_policy(agent, device=device)
