"""Scenario names: what the evaluation pipeline, the suites and ``zsceval bench`` run on.

A scenario is an Overcooked layout (``counter_circuit``, ZSC-Eval aliases such as ``random3``) or a
Google Research Football scenario (``academy_3_vs_1_with_keeper``, alias ``football``). A suite's
``layouts:`` list may name either; this module maps a name to its canonical form, its env and its
player count, and builds its batched env.
"""

from __future__ import annotations

import difflib

import torch

__all__ = [
    "FOOTBALL_SCENARIOS",
    "env_flags",
    "is_football",
    "make_scenario_env",
    "num_players",
    "resolve_scenario",
    "scenario_env",
]

FOOTBALL_SCENARIOS: dict[str, tuple[str, ...]] = {"academy_3_vs_1_with_keeper": ("football",)}
"""Football scenarios (canonical name -> aliases), ZSC-Eval's GRF setting (docs/reference-protocol.md
"Football")."""

_FOOTBALL_NAMES = {alias: name for name, aliases in FOOTBALL_SCENARIOS.items() for alias in (name, *aliases)}


def is_football(name: str) -> bool:
    """Whether ``name`` (canonical or alias) is a Football scenario."""
    return str(name) in _FOOTBALL_NAMES


def resolve_scenario(name: str) -> str:
    """Canonical name of a layout or Football scenario given its name or alias.

    Raises:
        ValueError: unknown name; the message lists the valid layouts and Football scenarios.
    """
    if is_football(name):
        return _FOOTBALL_NAMES[str(name)]
    from zsceval.envs.overcooked import resolve_layout_name

    try:
        return resolve_layout_name(name)
    except ValueError as exc:
        football = ", ".join(f"{n} ({', '.join(a)})" for n, a in FOOTBALL_SCENARIOS.items())
        close = difflib.get_close_matches(str(name), list(_FOOTBALL_NAMES), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"{exc}. Football scenarios (aliases): {football}.{hint}") from None


def scenario_env(name: str) -> str:
    """The registered env of a scenario: ``"football"`` or ``"overcooked"``."""
    return "football" if is_football(name) else "overcooked"


def env_flags(name: str) -> dict[str, str]:
    """Config keys that select a scenario: ``{"env.name": ..., "env.layout": canonical name}``.

    Raises:
        ValueError: unknown name (valid ones listed).
    """
    return {"env.name": scenario_env(name), "env.layout": resolve_scenario(name)}


def num_players(name: str) -> int:
    """Players per game: 3 controlled players in Football, the layout's count in Overcooked.

    Raises:
        ValueError: unknown name (valid ones listed).
    """
    if is_football(name):
        return 3
    from zsceval.envs.overcooked import load_layout

    return load_layout(name).num_players


def make_scenario_env(
    name: str, num_envs: int, device: str | torch.device = "cpu", seed: int = 0, horizon: int | None = None
):
    """The batched env of a scenario with ``num_envs`` games, standard starts (evaluation).

    Overcooked: :class:`~zsceval.envs.overcooked.OvercookedEnv` of the layout (``horizon`` default:
    the layout's). Football: the ``football`` env (``horizon`` = game duration, default 400).

    Raises:
        ValueError: unknown name (valid ones listed).
        ImportError: Football without gfootball installed (the message gives the install command).
    """
    if is_football(name):
        from zsceval.envs.registry import make

        options = {} if horizon is None else {"horizon": int(horizon)}
        return make("football", num_envs=num_envs, device=device, seed=seed, **options)
    from zsceval.envs.overcooked import OvercookedEnv

    return OvercookedEnv(name, num_envs=num_envs, device=device, horizon=horizon, seed=seed)
