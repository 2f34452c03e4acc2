"""Registry of learning cores: a plug-in names its core (``Algorithm.core``), never the trainer.

A core is a learner group class (a :class:`LearningCore`) constructed as
``Core(learners, cfg, env, device, algorithm)``. It runs one training iteration
(``iteration(runner, env_steps, generator, on_rollout)``: by default ``collect``, the plug-in's hook
on the core's :class:`~zsceval.rl.rollout.Rollout` view, ``update``), names the rollout fields it
provides (``rollout_fields``) and saves its state (``state_dict()``, ``load_state_dict(state)``).
Its ``collect`` plays the rollout with :meth:`EpisodeRunner.rollout
<zsceval.rl.runner.EpisodeRunner.rollout>`, storing its part of each step through its
:class:`~zsceval.rl.runner.StepHooks`. See :class:`zsceval.rl.ppo.PPOCore` (CleanRL's order, in one
method) and :class:`zsceval.rl.pqn.PQNCore`.

The registry is filled from the entry-point group ``zsceval.cores`` (:mod:`zsceval.plugins`): the
entry point's name is the core's name and its value the class, ``module:Class``, registered under
that name unless importing its module called :func:`register_core` itself (:data:`CORES`, a
:class:`zsceval.plugins.Registry`). The built-ins ``ppo``
(:class:`~zsceval.rl.ppo.PPOCore`) and ``pqn`` (:class:`~zsceval.rl.pqn.PQNCore`) are declared
in ``setup.py`` the same way. :func:`get_core` loads the entry point of the name it is asked for
only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, ClassVar

from zsceval.plugins import Registry, UnknownPluginError

__all__ = [
    "CORES",
    "CORE_GROUP",
    "LearningCore",
    "UnknownCoreError",
    "core_names",
    "get_core",
    "register_core",
]


class LearningCore:
    """What the trainer asks of a learning core (subclass it; see the module docstring).

    Attributes:
        name: the core's registry name (the config section of its hyper-parameters).
        rollout_fields: the :class:`~zsceval.rl.rollout.Rollout` fields :attr:`rollout` fills; a
            plug-in that reads another fails when its run is built.
        rollout: the plug-in hooks' view of the last rollout.
    """

    name: ClassVar[str] = ""
    rollout_fields: ClassVar[frozenset[str]] = frozenset()
    rollout: Any = None

    def collect(self, runner: Any, env_steps: int) -> Any:
        """One rollout with the seated actors; returns the episodes that ended in it."""
        raise NotImplementedError

    def update(self, env_steps: int, generator: Any) -> dict[str, Any]:
        """Learn from the last rollout; returns the iteration's loss statistics."""
        raise NotImplementedError

    def iteration(self, runner: Any, env_steps: int, generator: Any,
                  on_rollout: Callable[[Any, Any], None]) -> tuple[Any, dict[str, Any], float]:  # fmt: skip
        """One training iteration: :meth:`collect`, the plug-in's ``on_rollout(rollout, episodes)``,
        :meth:`update`.

        Returns:
            ``(episodes, loss statistics, seconds spent collecting and in the hook)``.
        """
        t0 = time.perf_counter()
        episodes = self.collect(runner, env_steps)
        on_rollout(self.rollout, episodes)
        collect_s = time.perf_counter() - t0
        return episodes, self.update(env_steps, generator), collect_s

    sync_free: bool = False
    """Whether :meth:`collect` avoids host reads inside its step loop (``run.compile: full`` sets it
    on a core that offers it; see :attr:`zsceval.rl.ppo.PPOCore.sync_free`)."""

    def compile(self, backend: str = "inductor", mode: str | None = None) -> list[str]:
        """``run.compile: full``: compile the core's hot paths with ``torch.compile`` (``backend``,
        ``mode``); returns notes on what stays eager. Default: nothing is compiled."""
        return [f"run.compile=full: the '{self.name}' core stays eager"]

    def state_dict(self) -> dict[str, Any]:
        """Optimizer and schedule state for a checkpoint (nested dicts of tensors and numbers)."""
        raise NotImplementedError

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` after the learners' weights are loaded."""
        raise NotImplementedError


CORE_GROUP = "zsceval.cores"


class UnknownCoreError(UnknownPluginError, ValueError):
    """No learning core of that name (the message lists the registered ones; also a ``ValueError``)."""


CORES = Registry(CORE_GROUP, "learning core", kind="class", unknown_error=UnknownCoreError)
"""The registry of learning cores (:class:`zsceval.plugins.Registry`)."""


def register_core(name: str, cls: type | None = None):
    """Register a learning core class under ``name`` (decorator or call).

    Raises:
        zsceval.plugins.DuplicatePluginError: ``name`` is taken by another class (a ``ValueError``).
    """
    return CORES.register(name, cls)


def core_names() -> list[str]:
    """Sorted names of the cores: registered ones and declared entry points (none imported)."""
    return CORES.names()


def get_core(name: str) -> type:
    """The core class registered as ``name``, loading its entry point (only) if needed.

    Raises:
        UnknownCoreError: unknown core (registered names listed, closest suggested; a ``ValueError``).
        zsceval.plugins.PluginLoadError: the entry point of ``name`` could not be loaded (it and the
            exception are named).
    """
    return CORES.get(name)
