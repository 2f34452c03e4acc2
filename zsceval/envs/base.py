"""The n-agent batched environment protocol shared by every environment and training core.

Glossary (used across ``zsceval``):

* **env / game**: one independent episode; a batched environment runs ``num_envs`` (B) of them.
* **agent / slot**: a controlled player index ``0..num_agents-1`` (n) *as the learner sees it*.
  With seat randomization an agent slot may drive a different seat (player) of the game;
  everything in :class:`Step` is reported in slot order.
* **env step**: one joint action for all agents in all B games counts as B env steps.

A batched environment exposes ``num_envs``, ``num_agents``, ``num_actions``, ``obs_shape``,
``critic_obs_shape``, ``event_names``, ``horizon`` and ``device``, and two methods:
``reset() -> Step`` and ``step(actions) -> Step``. Episodes end only by truncation at the horizon
in Overcooked; ``terminated`` and ``truncated`` are nevertheless kept apart (Gymnasium), and the
observations of the state that was cut off are returned in ``final_obs`` so that a learner can
bootstrap its value there. Finished games are reset automatically (a masked select), so ``obs``
after a done step is already the first observation of the next episode.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["Step", "critic_view"]


def critic_view(obs: torch.Tensor) -> torch.Tensor:
    """Centralized-critic observation built from per-agent observations.

    For agent k the critic sees its own encoding followed by the other agents' encodings in
    cyclic order (k, k+1, ..., k-1), concatenated on the channel axis (ZSC-Eval "share_obs",
    overcooked-spec section 4.4; for two agents: slot 0 -> [o0, o1], slot 1 -> [o1, o0]).

    Args:
        obs: ``[B, n, H, W, C]`` per-agent observations (any dtype).

    Returns:
        ``[B, n, H, W, n*C]`` tensor of the same dtype (a new, contiguous tensor).
    """
    n = obs.shape[1]
    rolled = [torch.roll(obs, shifts=-k, dims=1) for k in range(n)]
    return torch.cat(rolled, dim=-1)


@dataclass
class Step:
    """What ``reset`` and ``step`` return, batched over B games and n agents (slot order).

    Attributes:
        obs: ``uint8 [B, n, H, W, C]`` per-agent lossless observation of the current state
            (post-transition, after auto-reset). Channels are documented by the environment
            (``env.obs_channels``). ``None`` if the caller asked the env not to observe.
        avail_actions: ``bool [B, n, A]`` actions that do something other than a guaranteed
            no-op (overcooked-spec section 4.6); STAY is always available.
        reward: ``float32 [B]`` team sparse reward of the step (sum over agents; 20 per
            delivered onion soup in the classic layouts). Zeros after ``reset``.
        sparse_by_agent: ``float32 [B, n]`` sparse reward attributed to the agent who delivered.
        shaped_by_agent: ``float32 [B, n]`` base shaped reward earned by each agent this step
            (3 per placement in pot, 3 per useful dish pickup, 5 per soup pickup).
        events: ``int16 [B, n, E]`` per-agent event counts this step (0/1), in the order of
            ``env.event_names``.
        interactions: ``int64 [B, n]`` interaction kind performed by each agent this step
            (``InteractionKind``; 0 = none), used by theory-of-mind concept labels.
        interaction_cell: ``int64 [B, n]`` flat cell index ``y * W + x`` of the tile the agent
            interacted with, or -1 if it did not interact.
        terminated: ``bool [B]`` the game reached a terminal state (never in Overcooked).
        truncated: ``bool [B]`` the game hit the horizon this step and was reset.
        final_obs: ``uint8 [B, n, H, W, C]`` observation of the state *before* auto-reset, or
            ``None`` when no game ended this step. Rows of games that did not end equal ``obs``.
    """

    obs: torch.Tensor
    avail_actions: torch.Tensor
    reward: torch.Tensor
    sparse_by_agent: torch.Tensor
    shaped_by_agent: torch.Tensor
    events: torch.Tensor
    interactions: torch.Tensor
    interaction_cell: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    final_obs: torch.Tensor | None = None

    @property
    def done(self) -> torch.Tensor:
        """``bool [B]``: ``terminated | truncated``."""
        return self.terminated | self.truncated

    @property
    def critic_obs(self) -> torch.Tensor:
        """``uint8 [B, n, H, W, n*C]`` centralized-critic observation (see :func:`critic_view`)."""
        return critic_view(self.obs)

    @property
    def final_critic_obs(self) -> torch.Tensor | None:
        """Critic observation of the pre-reset state, or ``None`` (see ``final_obs``)."""
        return None if self.final_obs is None else critic_view(self.final_obs)
