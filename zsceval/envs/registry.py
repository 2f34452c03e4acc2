"""Registry of batched environments by name: ``make("overcooked", num_envs=..., layout=...)``.

Built-in envs (``overcooked``, ``football``, ``toy``) are registered here by factories that import
their module only when called, so importing this registry does not load the Overcooked engine. Third-party
packages register more with :func:`register_env` at import time, or declare an entry point in the
group ``zsceval.envs`` whose value is a factory (registered under the entry point's name) or a
module that calls :func:`register_env`; entry points are loaded once, at the first lookup.

A factory is a callable ``factory(*, num_envs, device, seed, **options) -> BatchedEnv``; its other
keyword parameters (with defaults) are the env's *options*, which :func:`make` checks by name.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from .base import BatchedEnv

__all__ = [
    "ENTRY_POINT_GROUP",
    "DuplicateEnvError",
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


class UnknownEnvError(ValueError):
    """No env of that name; the message lists the registered names and suggests the closest."""


class DuplicateEnvError(ValueError):
    """An env name was registered twice."""


@dataclass(frozen=True)
class EnvEntry:
    """A registered env: name, factory, one-line description and its options with defaults."""

    name: str
    factory: Callable[..., BatchedEnv]
    description: str
    options: dict[str, Any]


_registry: dict[str, EnvEntry] = {}
_failed: dict[str, str] = {}
_discovered = False


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
        DuplicateEnvError: ``name`` is already registered.
        ValueError: an invalid name, or a factory without ``num_envs``, ``device``, ``seed``.
    """
    if not isinstance(name, str) or not name or name != name.strip() or " " in name:
        raise ValueError(f"invalid env name {name!r}")

    def decorator(f: Callable[..., BatchedEnv]) -> Callable[..., BatchedEnv]:
        if name in _registry:
            raise DuplicateEnvError(
                f"env '{name}' is already registered (by {_registry[name].factory.__module__}); "
                f"choose another name"
            )
        doc = (f.__doc__ or "").strip().splitlines()
        desc = description or (doc[0] if doc else "")
        _registry[name] = EnvEntry(name, f, desc, _factory_options(name, f))
        return f

    return decorator if factory is None else decorator(factory)


def _discover() -> None:
    """Load the ``zsceval.envs`` entry points once (failures are kept and reported at lookup)."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    for ep in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        dist = getattr(ep.dist, "name", None) or "an unknown distribution"
        try:
            obj = ep.load()
        except ImportError as exc:
            missing = getattr(exc, "name", None) or "<package>"
            _failed[ep.name] = (
                f"env '{ep.name}' (entry point '{ep.value}' of {dist}) cannot be imported: {exc}. "
                f"Install the missing package (pip install {missing}) or uninstall {dist}."
            )
            continue
        if ep.name not in _registry and callable(obj):
            register_env(ep.name, obj)


def env_names() -> list[str]:
    """Sorted names of the registered envs."""
    _discover()
    return sorted(_registry)


def describe() -> list[tuple[str, str]]:
    """``(name, description)`` pairs, sorted by name."""
    _discover()
    return sorted((e.name, e.description) for e in _registry.values())


def _entry(name: str) -> EnvEntry:
    _discover()
    if name in _registry:
        return _registry[name]
    if name in _failed:
        raise ImportError(_failed[name])
    valid = sorted(_registry)
    close = difflib.get_close_matches(str(name), valid, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    raise UnknownEnvError(f"unknown env '{name}'. Registered envs: {', '.join(valid)}.{hint}")


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
        ImportError: the env's package (an entry point) cannot be imported.
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


# ---------------------------------------------------------------------------- built-in envs
@register_env("overcooked", description="Batched Overcooked (ZSC-Eval classic and multi-recipe layouts)")
def _make_overcooked(
    *,
    num_envs: int,
    device: str | torch.device,
    seed: int,
    layout: str = "cramped_room",
    horizon: int | None = None,
    randomize_seats: bool = False,
    random_start_prob: float = 0.0,
    view_radius: int = 0,
) -> BatchedEnv:
    from .overcooked import OvercookedEnv

    return OvercookedEnv(
        layout,
        num_envs,
        device=device,
        seed=seed,
        horizon=horizon,
        randomize_seats=randomize_seats,
        random_start_prob=random_start_prob,
        view_radius=view_radius,
    )


@register_env("toy", description="Tiny n-agent cue-matching game for tests (uint8 or float32 obs)")
def _make_toy(
    *,
    num_envs: int,
    device: str | torch.device,
    seed: int,
    num_agents: int = 2,
    horizon: int = 8,
    obs_dtype: str = "uint8",
) -> BatchedEnv:
    from .toy import ToyCueEnv

    return ToyCueEnv(
        num_envs, num_agents=num_agents, device=device, seed=seed, horizon=horizon, obs_dtype=obs_dtype
    )


@register_env(
    "football",
    description="Google Research Football academy_3_vs_1_with_keeper, 3 controlled players "
    "(zsceval[football])",
)
def _make_football(
    *,
    num_envs: int,
    device: str | torch.device,
    seed: int,
    horizon: int = 400,
    difficulty: float = 0.95,
    num_workers: int = 0,
) -> BatchedEnv:
    from .football.env import FootballEnv

    return FootballEnv(
        num_envs,
        device=device,
        seed=seed,
        game_duration=horizon,
        difficulty=difficulty,
        num_workers=num_workers,
    )
