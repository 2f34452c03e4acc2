"""Registry of batched environments by name: ``make("overcooked", num_envs=..., layout=...)``.

The registry is filled from the entry-point group ``zsceval.envs`` (:mod:`zsceval.plugins`): the
entry point's name is the env's name and its value a factory, ``module:function``, registered
under that name unless importing its module called :func:`register_env` itself (description: the
first line of its docstring). The built-ins (``overcooked``, ``football``, ``toy``: factories in
:mod:`zsceval.envs.builtin` that import their engine only when called) are declared in
``setup.py`` the same way, so this registry names no env and importing it loads no engine.
:func:`make` and :func:`env_options` load the entry point of the name they are asked for only;
:func:`env_names` reads the metadata alone; :func:`describe` loads them all. Code may also
register an env with :func:`register_env` at import time. The registry is :data:`ENVS`, a
:class:`zsceval.plugins.Registry`.

A factory is a callable ``factory(*, num_envs, device, seed, **options) -> BatchedEnv``; its other
keyword parameters (with defaults) are the env's *options*, which :func:`make` checks by name.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from zsceval.plugins import DuplicatePluginError, Registry, UnknownPluginError

from .base import BatchedEnv

__all__ = [
    "ENTRY_POINT_GROUP",
    "DuplicateEnvError",
    "ENVS",
    "EnvEntry",
    "UnknownEnvError",
    "describe",
    "env_names",
    "env_options",
    "make",
    "register_env",
]

ENTRY_POINT_GROUP = "zsceval.envs"
REQUIRED = ("num_envs", "device", "seed")


class UnknownEnvError(UnknownPluginError, ValueError):
    """No env of that name; the message lists the registered names and suggests the closest
    (also a ``ValueError``)."""


class DuplicateEnvError(DuplicatePluginError):
    """An env name was registered twice."""


@dataclass(frozen=True)
class EnvEntry:
    """A registered env: name, factory, one-line description and its options with defaults."""

    name: str
    factory: Callable[..., BatchedEnv]
    description: str
    options: dict[str, Any]


def _factory_options(name: str, factory: Callable[..., Any]) -> dict[str, Any]:
    """Keyword options of ``factory`` beyond :data:`REQUIRED`, with their defaults."""
    params = inspect.signature(factory).parameters
    missing = [p for p in REQUIRED if p not in params]
    if missing:
        raise ValueError(
            f"env factory for '{name}' must accept keyword arguments {list(REQUIRED)}; lacks {missing}"
        )
    return {
        p.name: p.default
        for p in params.values()
        if p.name not in REQUIRED and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    }


def _check_factory(name: str, factory: Callable[..., Any], description: str) -> None:
    _factory_options(name, factory)  # raises for a factory without num_envs, device, seed


ENVS = Registry(
    ENTRY_POINT_GROUP,
    "env",
    kind="callable",
    on_register=_check_factory,
    unknown_error=UnknownEnvError,
    duplicate_error=DuplicateEnvError,
)
"""The env registry (:class:`zsceval.plugins.Registry`)."""


def register_env(name: str, factory: Callable[..., BatchedEnv] | None = None, description: str = "") -> Any:
    """Register an env factory under ``name``; as a call or as a decorator.

    ``register_env("toy", make_toy, "Cue matching")`` or ``@register_env("toy", description=...)``.

    Args:
        name: registry name (``env.name`` in a config); non-empty, no spaces.
        factory: ``factory(*, num_envs, device, seed, **options) -> BatchedEnv``.
        description: one line for listings (default: first line of the factory's docstring).

    Returns:
        The factory (so the decorator form leaves the function usable).

    Raises:
        DuplicateEnvError: ``name`` is already registered by another factory.
        ValueError: an invalid name, or a factory without ``num_envs``, ``device``, ``seed``.
    """
    return ENVS.register(name, factory, description=description or None)


def env_names() -> list[str]:
    """Sorted names of the envs: registered ones and declared entry points (none imported)."""
    return ENVS.names()


def describe() -> list[tuple[str, str]]:
    """``(name, description)`` pairs, sorted by name; loads every entry point (those that fail to
    load are left out: looking them up names the error)."""
    return ENVS.describe(failures=False)


def _entry(name: str) -> EnvEntry:
    factory = ENVS.get(name)
    return EnvEntry(name, factory, ENVS.description(name), _factory_options(name, factory))


def env_options(name: str) -> dict[str, Any]:
    """The options ``make(name, ...)`` accepts, with their defaults.

    Raises:
        UnknownEnvError: no such env (valid names listed).
    """
    return dict(_entry(name).options)


def make(
    name: str, *, num_envs: int, device: str | torch.device = "cpu", seed: int = 0, **options: Any
) -> BatchedEnv:
    """Construct the env registered as ``name``.

    Args:
        name: registry name (:func:`env_names`).
        num_envs: B, the number of games.
        device: torch device of the env state.
        seed: seed of the env's generator.
        **options: env-specific options (:func:`env_options`), e.g. ``layout`` for Overcooked.

    Raises:
        UnknownEnvError: no such env (valid names listed, closest suggested).
        ValueError: an option the env does not take (valid options listed), or a bad value
            (raised by the env).
        zsceval.plugins.PluginLoadError: the env's entry point cannot be loaded (an ImportError
            naming the entry point and the exception).
    """
    entry = _entry(name)
    unknown = sorted(set(options) - set(entry.options))
    if unknown:
        valid = sorted(entry.options)
        close = difflib.get_close_matches(unknown[0], valid, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        raise ValueError(
            f"env '{name}' has no option(s) {unknown}. Valid options: {', '.join(valid) or '(none)'}.{hint}"
        )
    return entry.factory(num_envs=num_envs, device=device, seed=seed, **options)
