"""Build the batched environment a config asks for (Overcooked or the toy game)."""

from __future__ import annotations

import difflib

import torch

from zsceval.rl.config import ConfigError, EnvConfig

__all__ = ["env_spec", "make_env"]


def _overcooked_layouts() -> list[str]:
    try:
        from zsceval.envs.overcooked import layout_names  # type: ignore[attr-defined]
    except ImportError:
        return []
    return sorted(layout_names())


def make_env(cfg: EnvConfig, num_envs: int | None = None, device: str | torch.device = "cpu", seed: int = 0):
    """Construct the batched env of ``cfg`` (``zsceval.envs.base`` protocol).

    Args:
        cfg: env section of the run config.
        num_envs: override ``cfg.num_envs`` (e.g. for evaluation).
        device: torch device of the env state.
        seed: seed of the env generator.

    Raises:
        ConfigError: unknown layout (valid names listed, closest one suggested).
    """
    B = cfg.num_envs if num_envs is None else num_envs
    if cfg.name == "toy":
        from zsceval.envs.toy import ToyCueEnv

        return ToyCueEnv(B, device=device, seed=seed, horizon=cfg.horizon)
    from zsceval.envs.overcooked import OvercookedEnv

    names = _overcooked_layouts()
    if names and cfg.layout not in names:
        raise ConfigError(_unknown_layout(cfg.layout, names))
    try:
        return OvercookedEnv(
            cfg.layout, B, device=device, seed=seed, horizon=cfg.horizon, randomize_seats=cfg.randomize_seats
        )
    except (KeyError, FileNotFoundError) as exc:
        raise ConfigError(_unknown_layout(cfg.layout, names) + f" ({exc})") from None


def _unknown_layout(name: str, names: list[str]) -> str:
    close = difflib.get_close_matches(name, names, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    listing = f" Valid layouts: {', '.join(names)}." if names else ""
    return f"unknown layout '{name}'.{listing}{hint}"


def env_spec(env) -> dict:
    """The env's observation spec for checkpoint metadata (``env.spec_dict()``)."""
    return env.spec_dict()
