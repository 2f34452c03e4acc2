"""The built-in env factories, declared in the entry-point group ``zsceval.envs`` (``setup.py``).

Each factory imports its engine only when called, so listing the envs (:func:`zsceval.envs.describe`)
loads none of them. The first line of a factory's docstring is its description in the listings;
its keyword parameters beyond ``num_envs``, ``device`` and ``seed`` are the env's options
(:mod:`zsceval.envs.registry`).
"""

from __future__ import annotations

import torch

from .base import BatchedEnv

__all__ = ["make_football", "make_overcooked", "make_toy", "make_yokai"]


def make_overcooked(
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
    """Batched Overcooked (ZSC-Eval classic and multi-recipe layouts)"""
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


def make_toy(
    *,
    num_envs: int,
    device: str | torch.device,
    seed: int,
    num_agents: int = 2,
    horizon: int = 8,
    obs_dtype: str = "uint8",
) -> BatchedEnv:
    """Tiny n-agent cue-matching game for tests (uint8 or float32 obs)"""
    from .toy import ToyCueEnv

    return ToyCueEnv(
        num_envs, num_agents=num_agents, device=device, seed=seed, horizon=horizon, obs_dtype=obs_dtype
    )


def make_football(
    *,
    num_envs: int,
    device: str | torch.device,
    seed: int,
    horizon: int = 400,
    difficulty: float = 0.95,
    num_workers: int = 0,
) -> BatchedEnv:
    """Google Research Football academy_3_vs_1_with_keeper, 3 controlled players (zsceval[football])"""
    from .football.env import FootballEnv

    return FootballEnv(
        num_envs,
        device=device,
        seed=seed,
        game_duration=horizon,
        difficulty=difficulty,
        num_workers=num_workers,
    )


def make_yokai(
    *,
    num_envs: int,
    device: str | torch.device,
    seed: int,
    num_agents: int = 2,
    version: str = "3x3",
    horizon: int | None = None,
    perfect_memory: bool = False,
) -> BatchedEnv:
    """Yokai Learning Environment: turn-based card game, 2-4 players, versions 3x3 / 4x4 (docs/yokai.md)"""
    from .yokai import YokaiEnv

    return YokaiEnv(
        num_envs,
        num_agents=num_agents,
        version=version,
        device=device,
        seed=seed,
        horizon=horizon,
        perfect_memory=perfect_memory,
    )
