"""A tiny batched cooperative game implementing the ``zsceval.envs.base`` protocol, for tests.

*Cue matching*: every step each game shows a random cue ``c`` in ``{0, 1, 2, 3}`` to all n
agents. An agent that picks action ``c`` earns shaped reward 1 (event ``match``); the team earns
sparse reward 20 when *all* agents pick ``c``. INTERACT (5) is never available, STAY (4) always
is. Episodes are truncated after ``horizon`` steps, in lockstep. A random policy scores
``20 * horizon / 25`` per episode with 2 agents and 5 available actions; the optimum is
``20 * horizon``. Learning is visible within a few thousand env steps.

Observation ``[B, n, 3, 3, 6]`` (``uint8``, or ``float32`` with the same values, to test a core on
float-vector observations such as Football's): channels 0..3 one-hot cue (constant planes), channel
4 the steps left ``horizon - t`` (``0`` only in ``final_obs``), channel 5 the agent's own slot index.
"""

from __future__ import annotations

from functools import cached_property
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from zsceval.envs.base import (
    Step,
    agent_names,
    box_space,
    check_state_config,
    discrete_space,
    restore_generator,
    restored_tensor,
)

__all__ = ["ToyCueEnv"]

NUM_CUES = 4
STAY = 4
INTERACT = 5
OBS_DTYPES = {"uint8": torch.uint8, "float32": torch.float32}


class ToyCueEnv:
    """Batched cue-matching game (see the module docstring); implements ``BatchedEnv``.

    ``Step.infos`` holds ``timestep`` (``int64 [B]``, steps since the episode of ``obs`` started).

    Args:
        num_envs: B >= 1.
        num_agents: n >= 1.
        device: torch device.
        seed: seed of the env's ``generator``.
        horizon: episode length >= 1 (at most 255 with ``obs_dtype="uint8"``).
        obs_dtype: ``"uint8"`` or ``"float32"`` (same values).

    Raises:
        ValueError: a size out of range or an unknown ``obs_dtype`` (valid ones listed).
    """

    num_actions = 6
    obs_shape = (3, 3, 6)
    event_names = ("match", "stay")

    def __init__(
        self,
        num_envs: int,
        num_agents: int = 2,
        device="cpu",
        seed: int = 0,
        horizon: int = 8,
        obs_dtype: str = "uint8",
    ) -> None:
        if obs_dtype not in OBS_DTYPES:
            raise ValueError(f"unknown obs_dtype {obs_dtype!r}; valid: {', '.join(OBS_DTYPES)}")
        for name, value in (("num_envs", num_envs), ("num_agents", num_agents), ("horizon", horizon)):
            if int(value) < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        high = np.iinfo(np.uint8).max
        if obs_dtype == "uint8" and (horizon > high or num_agents > high + 1):
            raise ValueError(
                f"obs_dtype='uint8' holds horizon <= {high} and num_agents <= {high + 1}, "
                f"got horizon={horizon}, num_agents={num_agents}; use obs_dtype='float32'"
            )
        self.num_envs, self.num_agents, self.horizon = int(num_envs), int(num_agents), int(horizon)
        self.obs_dtype = obs_dtype
        self.device = torch.device(device)
        self.seed = seed
        self.generator = torch.Generator(self.device).manual_seed(seed)
        self.layout = SimpleNamespace(name="toy")
        self.critic_obs_shape = (3, 3, 6 * self.num_agents)
        self.cue = torch.zeros(self.num_envs, dtype=torch.int64, device=self.device)
        self.t = torch.zeros(self.num_envs, dtype=torch.int64, device=self.device)

    # ------------------------------------------------------------------ description
    @property
    def possible_agents(self) -> tuple[str, ...]:
        """``("agent_0", ..., "agent_{n-1}")``."""
        return agent_names(self.num_agents)

    def _channel_high(self) -> np.ndarray:
        return np.array([1, 1, 1, 1, self.horizon, self.num_agents - 1], dtype=np.float64)

    @cached_property
    def single_observation_space(self):
        """``Box`` ``(3, 3, 6)`` of ``obs_dtype``: cue planes in {0, 1}, steps left in
        ``[0, horizon]``, slot index in ``[0, n-1]``."""
        high = np.broadcast_to(self._channel_high(), self.obs_shape)
        return box_space(0, high, OBS_DTYPES[self.obs_dtype])

    @cached_property
    def single_critic_observation_space(self):
        """``Box`` ``(3, 3, 6n)``: the observation bounds repeated for each of the n encodings."""
        high = np.broadcast_to(np.tile(self._channel_high(), self.num_agents), self.critic_obs_shape)
        return box_space(0, high, OBS_DTYPES[self.obs_dtype])

    @cached_property
    def single_action_space(self):
        """``Discrete(6)``: 0..3 the cues, 4 STAY, 5 INTERACT (never available)."""
        return discrete_space(self.num_actions)

    def spec_dict(self) -> dict:
        """Observation spec for checkpoint metadata."""
        return {
            "env": "toy",
            "layout": "toy",
            "obs_shape": list(self.obs_shape),
            "obs_dtype": self.obs_dtype,
            "encoding": "toy-cue-v1",
            "num_agents": self.num_agents,
            "num_actions": self.num_actions,
            "event_names": list(self.event_names),
        }

    # ------------------------------------------------------------------ stepping
    def _draw(self, mask: torch.Tensor) -> None:
        new = torch.randint(0, NUM_CUES, (self.num_envs,), generator=self.generator, device=self.device)
        self.cue = torch.where(mask, new, self.cue)

    def _obs(self) -> torch.Tensor:
        B, n = self.num_envs, self.num_agents
        dtype = OBS_DTYPES[self.obs_dtype]
        obs = torch.zeros(B, n, 3, 3, 6, dtype=dtype, device=self.device)
        onehot = torch.nn.functional.one_hot(self.cue, NUM_CUES).to(dtype)
        obs[..., :NUM_CUES] = onehot.view(B, 1, 1, 1, NUM_CUES)
        obs[..., 4] = (self.horizon - self.t).to(dtype).view(B, 1, 1, 1)
        obs[..., 5] = torch.arange(n, device=self.device, dtype=dtype).view(1, n, 1, 1)
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
            infos={"timestep": self.t.clone()},
        )

    def step(self, actions: torch.Tensor) -> Step:
        """Apply ``int64 [B, n]`` actions (INTERACT, unavailable, acts as STAY).

        Raises:
            ValueError: actions not of shape ``[B, n]``.
        """
        B, n = self.num_envs, self.num_agents
        if tuple(actions.shape) != (B, n):
            raise ValueError(f"actions must be [{B}, {n}], got {tuple(actions.shape)}")
        match = actions == self.cue.unsqueeze(-1)
        reward = match.all(-1).to(torch.float32) * 20.0
        sparse_by_agent = self._zeros(B, n)
        sparse_by_agent[:, 0] = reward
        events = torch.stack([match, actions == STAY], dim=-1).to(torch.int16)
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
            infos={"timestep": self.t.clone()},
        )

    # ------------------------------------------------------------------ save / restore
    def _config(self) -> dict[str, Any]:
        return {
            "num_envs": self.num_envs,
            "num_agents": self.num_agents,
            "horizon": self.horizon,
            "obs_dtype": self.obs_dtype,
        }

    def state_dict(self) -> dict[str, Any]:
        """Everything the next steps depend on, for exact resume.

        Returns:
            ``{"env": "toy", "config": {num_envs, num_agents, horizon, obs_dtype}, "seed": int,
            "generator": uint8 CPU tensor (``get_state()``), "cue": int64 [B] copy on device,
            "t": int64 [B] copy on device}``.
        """
        return {
            "env": "toy",
            "config": self._config(),
            "seed": int(self.seed),
            "generator": self.generator.get_state(),
            "cue": self.cue.clone(),
            "t": self.t.clone(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` output of a toy env of the same config; continue with
        ``step`` (``reset`` would start new episodes).

        Raises:
            ValueError: another env kind or config, or malformed entries (the env is unchanged).
        """
        if not isinstance(state, dict) or state.get("env") != "toy":
            got = state.get("env") if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"not a toy env state (env={got!r})")
        check_state_config(state, self._config(), "toy")
        cue = restored_tensor(state.get("cue"), "cue", self.cue)
        t = restored_tensor(state.get("t"), "t", self.t)
        generator = torch.Generator(self.device)
        restore_generator(generator, state.get("generator"))
        self.generator, self.cue, self.t = generator, cue, t
