"""Registry of learning cores: a plug-in names its core (``Algorithm.core``), never the trainer.

A core is a learner group class constructed as ``Core(learners, cfg, env, device, algorithm)``
with ``collect(runner, env_steps) -> EpisodeTable``, ``update(env_steps, generator) -> dict``,
``state_dict()`` and ``load_state_dict(state)`` (see :class:`zsceval.rl.update.PPOCore`). The
value-based core registers itself the same way.
"""

from __future__ import annotations

import difflib

__all__ = ["core_names", "core_of", "get_core", "register_core"]

_cores: dict[str, type] = {}


def register_core(name: str, cls: type | None = None):
    """Register a learning core class under ``name`` (decorator or call).

    Raises:
        ValueError: ``name`` is taken by another class.
    """

    def decorator(c: type) -> type:
        if name in _cores and _cores[name] is not c:
            raise ValueError(f"learning core '{name}' is already registered by {_cores[name].__qualname__}")
        _cores[name] = c
        return c

    return decorator if cls is None else decorator(cls)


def _builtins() -> None:
    from zsceval.rl.pqn import PQNCore
    from zsceval.rl.update import PPOCore

    register_core("ppo", PPOCore)
    register_core("pqn", PQNCore)


def core_of(algo: str) -> str:
    """Name of the core of algorithm ``algo`` (``ppo`` for an unknown name: the trainer reports
    unknown algorithms with the valid names). Each core's hyper-parameters are the config section
    of the same name (``ppo.*``, ``pqn.*``)."""
    from zsceval import registry

    try:
        return str(registry.get(algo).core)
    except Exception:
        return "ppo"


def core_names() -> list[str]:
    """Registered core names, sorted."""
    _builtins()
    return sorted(_cores)


def get_core(name: str) -> type:
    """The core class registered as ``name``.

    Raises:
        ValueError: unknown core (registered names listed, closest suggested).
    """
    _builtins()
    if name in _cores:
        return _cores[name]
    close = difflib.get_close_matches(name, list(_cores), n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    raise ValueError(f"unknown learning core '{name}'; registered cores: {', '.join(sorted(_cores))}.{hint}")
