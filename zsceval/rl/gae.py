"""Generalized advantage estimation with terminated and truncated kept apart."""

from __future__ import annotations

import torch

__all__ = ["compute_gae"]


def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    truncated_values: torch.Tensor,
    gamma: float,
    gae_lambda: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE(gamma, lambda) over a rollout of T steps (Schulman et al. 2016).

    Step t goes from state s_t (value ``values[t]``) to s_{t+1} with reward ``rewards[t]``. The
    value the step bootstraps from is

    * 0 if the episode *terminated* at t (a true terminal state has no future);
    * ``truncated_values[t]`` = V(s_{t+1}) of the state that was cut off if the episode was
      *truncated* at t (time limit: the future exists, it was just not observed; Pardo et al. 2018);
    * ``values[t + 1]`` otherwise (``values[T]`` is the value of the state after the rollout).

    The advantage recursion stops at any episode end (``terminated | truncated``).

    Note:
        ZSC-Eval's reference treats the time limit as terminal (it drops the bootstrap at
        truncation). We bootstrap, as Gymnasium and the paper's MDP formulation require
        (docs/reference-protocol.md "Training settings").

    Args:
        rewards: ``float32 [T, *batch]`` training reward of each step.
        values: ``float32 [T + 1, *batch]`` (denormalized) V(s_t) for t = 0..T.
        terminated: ``bool [T, *batch]`` the episode reached a terminal state at step t.
        truncated: ``bool [T, *batch]`` the episode was cut at the time limit at step t.
        truncated_values: ``float32 [T, *batch]`` V of the cut-off state; read only where
            ``truncated & ~terminated``.
        gamma: discount factor.
        gae_lambda: GAE lambda.

    Returns:
        ``(advantages, returns)``, both ``float32 [T, *batch]``; ``returns = advantages + values[:T]``.

    Raises:
        ValueError: shapes disagree.
    """
    T = rewards.shape[0]
    if values.shape != (T + 1, *rewards.shape[1:]):
        raise ValueError(
            f"values must be [T+1, ...] = {(T + 1, *rewards.shape[1:])}, got {tuple(values.shape)}"
        )
    for name, x in (
        ("terminated", terminated),
        ("truncated", truncated),
        ("truncated_values", truncated_values),
    ):
        if x.shape != rewards.shape:
            raise ValueError(
                f"{name} must have the shape of rewards {tuple(rewards.shape)}, got {tuple(x.shape)}"
            )
    not_term = (~terminated).to(rewards.dtype)
    not_done = (~(terminated | truncated)).to(rewards.dtype)
    next_values = torch.where(truncated, truncated_values, values[1:]) * not_term
    deltas = rewards + gamma * next_values - values[:-1]
    advantages = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[0])
    for t in range(T - 1, -1, -1):
        running = deltas[t] + gamma * gae_lambda * not_done[t] * running
        advantages[t] = running
    return advantages, advantages + values[:-1]
