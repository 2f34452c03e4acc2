"""A tiny batched cooperative game implementing the ``zsceval.envs.base`` protocol, for tests.

*Cue matching*: every step each game shows a random cue ``c`` in ``{0, 1, 2, 3}`` to both
agents. An agent that picks action ``c`` earns shaped reward 1 (event ``match``); the team earns
sparse reward 20 when *all* agents pick ``c``. INTERACT (5) is never available, STAY (4) always
is. Episodes are truncated after ``horizon`` steps, in lockstep. A random policy scores
``20 * horizon / 25`` per episode with 2 agents and 5 available actions; the optimum is
``20 * horizon``. Learning is visible within a few thousand env steps.

Observation ``uint8 [B, n, 3, 3, 6]``: channels 0..3 one-hot cue (constant planes), channel 4
the steps left ``horizon - t``, channel 5 the agent's own seat index.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch

from zsceval.envs.base import Step

__all__ = ["ToyCueEnv"]

NUM_CUES = 4
INTERACT = 5


class ToyCueEnv:
    """Batched cue-matching game (see the module docstring).

    Args:
        num_envs: B.
        num_agents: n.
        device: torch device.
        seed: seed of the env's ``generator``.
        horizon: episode length.
    """

    num_actions = 6
    obs_shape = (3, 3, 6)
    event_names = ("match", "stay")

    def __init__(
        self, num_envs: int, num_agents: int = 2, device="cpu", seed: int = 0, horizon: int = 8
    ) -> None:
        self.num_envs, self.num_agents, self.horizon = num_envs, num_agents, horizon
        self.device = torch.device(device)
        self.generator = torch.Generator(self.device).manual_seed(seed)
        self.layout = SimpleNamespace(name="toy")
        self.critic_obs_shape = (3, 3, 6 * num_agents)
        self.cue = torch.zeros(num_envs, dtype=torch.int64, device=self.device)
        self.t = torch.zeros(num_envs, dtype=torch.int64, device=self.device)

    def spec_dict(self) -> dict:
        """Observation spec for checkpoint metadata."""
        return {
            "env": "toy",
            "layout": "toy",
            "obs_shape": list(self.obs_shape),
            "encoding": "toy-cue-v1",
            "event_names": list(self.event_names),
        }

    def _draw(self, mask: torch.Tensor) -> None:
        new = torch.randint(0, NUM_CUES, (self.num_envs,), generator=self.generator, device=self.device)
        self.cue = torch.where(mask, new, self.cue)

    def _obs(self) -> torch.Tensor:
        B, n = self.num_envs, self.num_agents
        obs = torch.zeros(B, n, 3, 3, 6, dtype=torch.uint8, device=self.device)
        onehot = torch.nn.functional.one_hot(self.cue, NUM_CUES).to(torch.uint8)
        obs[..., :NUM_CUES] = onehot.view(B, 1, 1, 1, NUM_CUES)
        obs[..., 4] = (self.horizon - self.t).to(torch.uint8).view(B, 1, 1, 1)
        obs[..., 5] = torch.arange(n, device=self.device, dtype=torch.uint8).view(1, n, 1, 1)
        return obs

    def _avail(self) -> torch.Tensor:
        avail = torch.ones(
            self.num_envs, self.num_agents, self.num_actions, dtype=torch.bool, device=self.device
        )
        avail[..., INTERACT] = False
        return avail

    def _zeros(self, *shape, dtype=torch.float32) -> torch.Tensor:
        return torch.zeros(*shape, dtype=dtype, device=self.device)

    def reset(self) -> Step:
        """Start every game (new cues, t = 0)."""
        B, n = self.num_envs, self.num_agents
        self.t.zero_()
        self._draw(torch.ones(B, dtype=torch.bool, device=self.device))
        return Step(
            obs=self._obs(),
            avail_actions=self._avail(),
            reward=self._zeros(B),
            sparse_by_agent=self._zeros(B, n),
            shaped_by_agent=self._zeros(B, n),
            events=self._zeros(B, n, 2, dtype=torch.int16),
            interactions=self._zeros(B, n, dtype=torch.int64),
            interaction_cell=torch.full((B, n), -1, dtype=torch.int64, device=self.device),
            terminated=self._zeros(B, dtype=torch.bool),
            truncated=self._zeros(B, dtype=torch.bool),
        )

    def step(self, actions: torch.Tensor) -> Step:
        """Apply ``int64 [B, n]`` actions (INTERACT, unavailable, acts as STAY)."""
        B, n = self.num_envs, self.num_agents
        if tuple(actions.shape) != (B, n):
            raise ValueError(f"actions must be [{B}, {n}], got {tuple(actions.shape)}")
        match = actions == self.cue.unsqueeze(-1)
        reward = match.all(-1).to(torch.float32) * 20.0
        sparse_by_agent = self._zeros(B, n)
        sparse_by_agent[:, 0] = reward
        events = torch.stack([match, actions == 4], dim=-1).to(torch.int16)
        self.t += 1
        self._draw(torch.ones(B, dtype=torch.bool, device=self.device))
        truncated = self.t >= self.horizon
        final_obs = None
        if bool(truncated.any()):
            final_obs = self._obs()
            self.t = torch.where(truncated, torch.zeros_like(self.t), self.t)
            self._draw(truncated)
        return Step(
            obs=self._obs(),
            avail_actions=self._avail(),
            reward=reward,
            sparse_by_agent=sparse_by_agent,
            shaped_by_agent=match.to(torch.float32),
            events=events,
            interactions=self._zeros(B, n, dtype=torch.int64),
            interaction_cell=torch.full((B, n), -1, dtype=torch.int64, device=self.device),
            terminated=self._zeros(B, dtype=torch.bool),
            truncated=truncated,
            final_obs=final_obs,
        )
