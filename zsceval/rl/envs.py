"""Build the batched environment a config asks for (Overcooked or the toy game)."""

from __future__ import annotations

import torch

from zsceval.rl.config import ConfigError, EnvConfig

__all__ = ["env_spec", "make_env"]


def make_env(
    cfg: EnvConfig,
    num_envs: int | None = None,
    device: str | torch.device = "cpu",
    seed: int = 0,
    evaluation: bool = False,
):
    """Construct the batched env of ``cfg`` (``zsceval.envs.base`` protocol).

    Args:
        cfg: env section of the run config.
        num_envs: override ``cfg.num_envs`` (e.g. for evaluation).
        device: torch device of the env state.
        seed: seed of the env generator.
        evaluation: build the env for evaluation: standard starts only (``random_start_prob``
            is a training aid).

    Raises:
        ConfigError: unknown layout (valid names listed, closest one suggested).
    """
    B = cfg.num_envs if num_envs is None else num_envs
    if cfg.name == "toy":
        from zsceval.envs.toy import ToyCueEnv

        return ToyCueEnv(B, device=device, seed=seed, horizon=cfg.horizon)
    from pathlib import Path

    from zsceval.envs.overcooked import OvercookedEnv, resolve_layout_name

    layout = cfg.layout
    if not Path(layout).is_file():
        try:
            layout = resolve_layout_name(layout)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    return OvercookedEnv(
        layout,
        B,
        device=device,
        seed=seed,
        horizon=cfg.horizon,
        randomize_seats=cfg.randomize_seats,
        random_start_prob=0.0 if evaluation else cfg.random_start_prob,
    )


def env_spec(env) -> dict:
    """The env's observation spec for checkpoint metadata (``env.spec_dict()``)."""
    return env.spec_dict()
