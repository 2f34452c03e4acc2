"""Preallocated rollout storage ``[T, B, n, ...]`` on the training device."""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["RolloutBuffer"]


@dataclass
class RolloutBuffer:
    """One rollout of T env steps for B games and n seats, kept on ``device``.

    Attributes (t indexes the step, b the game, k the seat):
        obs: ``[T, B, n, *obs_shape]`` actor observation of s_t, in the env's dtype (uint8 for
            Overcooked's lossless planes, float32 for vector observations).
        critic_obs: ``[T, B, n, *critic_obs_shape]`` critic observation of s_t (same dtype).
        avail: ``bool [T, B, n, A]`` available actions at s_t.
        starts: ``bool [T, B, n]`` s_t is the first state of an episode.
        actions: ``int64 [T, B, n]``; log_probs ``float32 [T, B, n]`` (behaviour policy).
        values: ``float32 [T + 1, B, n]`` normalized critic output V(s_t); row T is s_T.
        rewards: ``float32 [T, B, n]`` training reward of step t.
        terminated, truncated: ``bool [T, B]``.
        truncated_values: ``float32 [T, B, n]`` normalized V of the cut-off state where truncated.
        h_actor, h_critic: ``float32 [T, B, n, hidden]`` recurrent states before step t.
        actor: ``int64 [T + 1, B, n]`` index of the actor that drove each seat at step t (learners
            first, so a learner's samples are where ``actor == its index``); row T is the seating
            at the bootstrap state s_T. Seatings change only at episode starts.
    """

    obs: torch.Tensor
    critic_obs: torch.Tensor
    avail: torch.Tensor
    starts: torch.Tensor
    actions: torch.Tensor
    log_probs: torch.Tensor
    values: torch.Tensor
    rewards: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    truncated_values: torch.Tensor
    h_actor: torch.Tensor
    h_critic: torch.Tensor
    actor: torch.Tensor

    @classmethod
    def allocate(
        cls,
        T: int,
        B: int,
        n: int,
        obs_shape: tuple[int, ...],
        critic_obs_shape: tuple[int, ...],
        num_actions: int,
        hidden_size: int,
        device: torch.device | str,
        critic_is_obs: bool = False,
        obs_dtype: torch.dtype = torch.uint8,
    ) -> RolloutBuffer:
        """Zero-filled buffer (hidden_size 0 for feed-forward policies).

        With ``critic_is_obs`` the critic observation is the agent's own observation and
        ``critic_obs`` is the same tensor as ``obs`` (nothing is stored twice).
        """

        def z(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
            return torch.zeros(shape, dtype=dtype, device=device)

        obs = z(T, B, n, *obs_shape, dtype=obs_dtype)
        return cls(
            obs=obs,
            critic_obs=obs if critic_is_obs else z(T, B, n, *critic_obs_shape, dtype=obs_dtype),
            avail=z(T, B, n, num_actions, dtype=torch.bool),
            starts=z(T, B, n, dtype=torch.bool),
            actions=z(T, B, n, dtype=torch.int64),
            log_probs=z(T, B, n),
            values=z(T + 1, B, n),
            rewards=z(T, B, n),
            terminated=z(T, B, dtype=torch.bool),
            truncated=z(T, B, dtype=torch.bool),
            truncated_values=z(T, B, n),
            h_actor=z(T, B, n, hidden_size),
            h_critic=z(T, B, n, hidden_size),
            actor=z(T + 1, B, n, dtype=torch.int64),
        )

    @property
    def T(self) -> int:
        """Rollout length."""
        return self.actions.shape[0]

    def flat(self, x: torch.Tensor) -> torch.Tensor:
        """``[T, B, n, ...] -> [T, B*n, ...]`` (a view): one column per row ``game * n + seat``."""
        return x.reshape(x.shape[0], x.shape[1] * x.shape[2], *x.shape[3:])
