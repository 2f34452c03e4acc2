"""The human-proxy agent: a behavior-cloned policy with Carroll et al.'s "unstuck" rule.

Carroll et al. (2019, "On the Utility of Learning about Humans for Human-AI Coordination") play
their behavior-cloned (BC) human models stochastically, and when the model's player has stood at
the same position with the same orientation for ``stuck_time`` consecutive steps, they remove the
actions it took during those steps from its distribution and renormalize (human_aware_rl,
``ImitationAgentFromPolicy.unblock_if_stuck``, ``stuck_time=3``). Without that rule a BC model
repeats a blocked move forever, which no human does.

The agent reads its own position and facing from the lossless observation (channel 0 ``ego_loc``,
channels 2-5 ``ego_north/south/east/west``; :mod:`zsceval.envs.overcooked.observation`), so it needs
no access to the simulator state, and it is registered as agent class ``human-proxy`` so it saves,
loads and plays through :func:`zsceval.rl.checkpoint.load_agent` like any other agent.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from zsceval.rl.agent import ActOutput, register_agent, sample_actions

__all__ = ["HumanProxy", "proxy_spec"]

EGO_LOC, EGO_FACING = 0, slice(2, 6)


def proxy_spec(obs_shape, num_actions: int, hidden: tuple[int, ...] = (64, 64), stuck_time: int = 3) -> dict:
    """JSON-able spec of a :class:`HumanProxy`.

    Args:
        obs_shape: ``(H, W, C)`` of the lossless observation.
        num_actions: A (6 in Overcooked).
        hidden: widths of the MLP's hidden layers (Carroll et al.: two layers of 64).
        stuck_time: steps at an unchanged position and facing that count as stuck; 0 turns the
            rule off.

    Raises:
        ValueError: a non-positive width or a negative ``stuck_time``.
    """
    if any(int(h) <= 0 for h in hidden) or int(stuck_time) < 0:
        raise ValueError(f"hidden widths must be > 0 and stuck_time >= 0, got {hidden}, {stuck_time}")
    return {
        "obs_shape": [int(v) for v in obs_shape],
        "num_actions": int(num_actions),
        "hidden": [int(h) for h in hidden],
        "stuck_time": int(stuck_time),
    }


@register_agent("human-proxy")
class HumanProxy(nn.Module):
    """MLP over the flattened observation; stochastic actions with the unstuck rule.

    Rows are agent slots (one seat of one game). The per-row state is ``float32 [rows, 2 * k]``
    (``k = stuck_time``): the last ``k`` position-and-facing codes (``cell * 4 + facing``) and the
    last ``k`` actions, oldest first, ``-1`` where there is no history yet.

    Args:
        spec: from :func:`proxy_spec`.
    """

    def __init__(self, spec: dict[str, Any]) -> None:
        super().__init__()
        self.spec = dict(spec)
        H, W, C = spec["obs_shape"]
        layers: list[nn.Module] = []
        width = H * W * C
        for h in spec["hidden"]:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, spec["num_actions"]))
        self.net = nn.Sequential(*layers)
        self.stuck_time = int(spec.get("stuck_time", 3))

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> HumanProxy:
        """An untrained proxy of this spec (weights come from ``load_state_dict``)."""
        return cls(spec)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Action logits ``float32 [N, A]`` of observations ``[N, H, W, C]`` (any numeric dtype)."""
        return self.net(obs.reshape(obs.shape[0], -1).float())

    def initial_state(self, rows: int, device: torch.device | str) -> torch.Tensor:
        """No history: ``float32 [rows, 2 * stuck_time]`` of -1."""
        return torch.full((rows, 2 * self.stuck_time), -1.0, device=device)

    @staticmethod
    def pose(obs: torch.Tensor) -> torch.Tensor:
        """Own position-and-facing code ``int64 [N]`` (``cell * 4 + facing``) from ``obs [N, H, W, C]``."""
        n = obs.shape[0]
        loc = obs[..., EGO_LOC].reshape(n, -1)
        cell = loc.argmax(1)
        facing = obs[..., EGO_FACING].reshape(n, -1, 4)
        f = facing[torch.arange(n, device=obs.device), cell].argmax(1)
        return cell * 4 + f

    @torch.no_grad()
    def act(
        self,
        obs: torch.Tensor,
        avail: torch.Tensor | None,
        state: torch.Tensor,
        starts: torch.Tensor,
        generator: torch.Generator | None = None,
        deterministic: bool = False,
    ) -> ActOutput:
        """Sample actions for N rows (human_aware_rl ``ImitationAgentFromPolicy.multi_action``).

        Args:
            obs: ``[N, H, W, C]`` observations (uint8 in Overcooked).
            avail: ``bool [N, A]`` available actions, or None.
            state: ``float32 [N, 2 * stuck_time]`` history (see the class docstring).
            starts: ``bool [N]`` rows whose episode starts now (history cleared).
            generator: torch generator for sampling; None uses the global one.
            deterministic: arg-max instead of sampling.

        Returns:
            :class:`~zsceval.rl.agent.ActOutput` with the new history as ``state`` and the
            model's ``logits`` (before the unstuck rule) in ``extras``.
        """
        k = self.stuck_time
        logits = self(obs)
        if starts.any():
            state = torch.where(starts.unsqueeze(1), self.initial_state(len(starts), obs.device), state)
        pose = self.pose(obs)
        masked = logits
        if k > 0:
            poses, acts = state[:, :k].long(), state[:, k:].long()
            stuck = (poses == pose.unsqueeze(1)).all(1)
            block = torch.zeros_like(logits, dtype=torch.bool)
            rows = stuck.nonzero().squeeze(1)
            if rows.numel():
                block[rows.unsqueeze(1), acts[rows]] = True
                # never block everything: the rule removes at most the k taken actions
                block &= ~block.all(1, keepdim=True)
            masked = logits.masked_fill(block, -1e9)
        actions, logp = sample_actions(masked, avail, generator, deterministic)
        if k > 0:
            poses = torch.cat([state[:, 1:k], pose.unsqueeze(1).float()], 1)
            acts = torch.cat([state[:, k + 1 :], actions.unsqueeze(1).float()], 1)
            state = torch.cat([poses, acts], 1)
        return ActOutput(actions, logp, state, {"logits": logits})
