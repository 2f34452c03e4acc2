"""Helpers shared by the adapters: building a batched env and seeding it."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["build_env", "reseed", "to_numpy"]


def build_env(env: Any, num_envs: int, device: str | torch.device, seed: int, options: dict[str, Any]):
    """A batched env: ``env`` itself (a ``BatchedEnv`` instance, then ``options`` must be empty) or
    ``zsceval.envs.registry.make(env, num_envs=..., device=..., seed=..., **options)`` for a name.

    Raises:
        ValueError: options given with an env instance, or an instance with another ``num_envs``
            than required; the registry's errors for an unknown name or option.
    """
    if isinstance(env, str):
        from zsceval.envs.registry import make

        return make(env, num_envs=num_envs, device=device, seed=seed, **options)
    if options:
        raise ValueError(f"env options {sorted(options)} can only be given with an env name, not an instance")
    if env.num_envs != num_envs:
        raise ValueError(f"this adapter needs an env with num_envs={num_envs}, got {env.num_envs}")
    return env


def reseed(env: Any, seed: int) -> None:
    """Seed the env's generator (``env.generator``, a ``torch.Generator``) with ``seed``.

    Raises:
        TypeError: ``seed`` is not an int.
        ValueError: the env has no ``generator`` attribute to seed.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int or None, got {type(seed).__name__}")
    generator = getattr(env, "generator", None)
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"{type(env).__name__} has no torch.Generator 'generator'; it cannot be reseeded")
    generator.manual_seed(int(seed))


def to_numpy(x: torch.Tensor) -> np.ndarray:
    """A numpy copy of a tensor (moved to the CPU)."""
    return x.detach().cpu().numpy().copy()
