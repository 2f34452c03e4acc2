"""A PettingZoo ``ParallelEnv`` over one game of any registered batched env.

Example:
    >>> from zsceval.interop import ParallelGame
    >>> env = ParallelGame("overcooked", layout="cramped_room")
    >>> obs, infos = env.reset(seed=0)
    >>> obs, rewards, terminations, truncations, infos = env.step({a: 4 for a in env.agents})

Requires ``pip install zsceval[interop]`` (``pettingzoo>=1.24``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ._common import build_env, reseed, to_numpy

try:
    from pettingzoo import ParallelEnv
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "zsceval.interop.parallel needs PettingZoo: pip install 'zsceval[interop]' (pettingzoo>=1.24)"
    ) from exc

__all__ = ["ParallelGame"]


class ParallelGame(ParallelEnv):
    """PettingZoo parallel API over game 0 of a batched env built with ``num_envs=1``.

    Agents are ``possible_agents = ("agent_0", ..., "agent_{n-1}")`` (the batched env's agent
    slots, in that order). Per agent:

    * observation: ``numpy`` array of ``single_observation_space`` exactly (for Overcooked
      ``uint8 (H, W, C)``, bounds per channel); ``observation_space(agent)`` is that Box.
    * action: an int in ``action_space(agent) = Discrete(A)`` (Overcooked: 0 N, 1 S, 2 E, 3 W,
      4 STAY, 5 INTERACT).
    * reward: the team sparse reward of the step (``Step.reward``, the same for every agent;
      Overcooked is fully cooperative).
    * terminations / truncations: kept apart (``Step.terminated`` / ``Step.truncated``).
      Overcooked episodes only truncate, at the horizon.
    * infos: ``{"action_mask": int8 [A] (1 = available), "shaped_reward": float (base shaped
      reward of this agent this step), "sparse_reward": float (sparse reward this agent
      delivered), "timestep": int (steps since reset)}``.

    When the episode ends the observation returned is the final one (``Step.final_obs``) and
    ``agents`` becomes empty; call ``reset`` to start a new episode (the batched env auto-resets
    internally; ``reset`` resets it again so that seeding is exact).

    Args:
        env: a registered env name (``zsceval.envs.registry``) or a ``BatchedEnv`` instance with
            ``num_envs == 1``.
        render_mode: ``None`` or ``"ansi"`` (the env's ``render(0)`` text; only for envs that have a
            ``render`` method).
        device: torch device of the env (with a name).
        seed: seed of the env's generator at construction (with a name).
        **options: env options (``layout="cramped_room"``, ``horizon=...``), with a name.

    Raises:
        ValueError: unknown ``render_mode`` or one the env cannot render, options with an env
            instance, an instance with ``num_envs != 1``; the registry's errors (unknown env or
            option, bad layout).
    """

    metadata = {"name": "zsceval_parallel_v0", "render_modes": ["ansi"], "is_parallelizable": True}

    def __init__(
        self,
        env: Any = "overcooked",
        *,
        render_mode: str | None = None,
        device: str | torch.device = "cpu",
        seed: int = 0,
        **options: Any,
    ) -> None:
        self.env = build_env(env, 1, device, seed, options)
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        if render_mode == "ansi" and not callable(getattr(self.env, "render", None)):
            raise ValueError(f"{type(self.env).__name__} has no render method; use render_mode=None")
        self.render_mode = render_mode
        self.possible_agents = list(self.env.possible_agents)
        self.agents: list[str] = []
        self._obs_space = self.env.single_observation_space
        self._act_space = self.env.single_action_space
        self._obs_dtype = self._obs_space.dtype

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str):
        """``gymnasium.spaces.Box`` of ``agent``'s observation (the same object for every call).

        Raises:
            KeyError: ``agent`` is not in ``possible_agents``.
        """
        self._check_agent(agent)
        return self._obs_space

    def action_space(self, agent: str):
        """``gymnasium.spaces.Discrete(A)`` of ``agent``'s actions (the same object for every call).

        Raises:
            KeyError: ``agent`` is not in ``possible_agents``.
        """
        self._check_agent(agent)
        return self._act_space

    def _check_agent(self, agent: str) -> None:
        if agent not in self.possible_agents:
            raise KeyError(f"unknown agent {agent!r}; possible agents: {self.possible_agents}")

    # ------------------------------------------------------------------ stepping
    def reset(self, seed: int | None = None, options: dict | None = None):
        """Start a new episode.

        Args:
            seed: reseeds the env's generator (seat draws, random starts) when not None; the same
                seed gives the same episode for the same actions.
            options: accepted for API compatibility and ignored.

        Returns:
            ``(observations, infos)``, dicts keyed by agent.
        """
        if seed is not None:
            reseed(self.env, seed)
        step = self.env.reset()
        self._t = 0
        self.agents = list(self.possible_agents)
        return self._observe(step.obs), self._infos(step)

    def step(self, actions: dict[str, Any]):
        """Advance the game by one joint action.

        Args:
            actions: ``{agent: int action}`` for every live agent.

        Returns:
            ``(observations, rewards, terminations, truncations, infos)``, dicts keyed by agent.

        Raises:
            RuntimeError: no episode is running (call ``reset``).
            ValueError: an agent lacks an action, an unknown agent is given one, or an action is
                outside ``action_space``.
        """
        if not self.agents:
            raise RuntimeError("no episode is running; call reset() first (the last one ended)")
        missing = [a for a in self.agents if a not in actions]
        extra = [a for a in actions if a not in self.agents]
        if missing or extra:
            raise ValueError(
                f"actions must be given for exactly {self.agents}; missing {missing}, unknown {extra}"
            )
        joint = []
        for agent in self.agents:
            a = actions[agent]
            if isinstance(a, bool) or not isinstance(a, (int, np.integer)) or not 0 <= a < self._act_space.n:
                raise ValueError(f"action {a!r} of {agent} is not in {self._act_space}")
            joint.append(int(a))
        step = self.env.step(torch.tensor([joint], dtype=torch.int64, device=self.env.device))
        self._t += 1
        done = bool(step.terminated[0]) or bool(step.truncated[0])
        obs = self._observe(step.final_obs if done and step.final_obs is not None else step.obs)
        team = float(step.reward[0])
        rewards = dict.fromkeys(self.agents, team)
        terminations = dict.fromkeys(self.agents, bool(step.terminated[0]))
        truncations = dict.fromkeys(self.agents, bool(step.truncated[0]))
        infos = self._infos(step)
        if done:
            self.agents = []
        return obs, rewards, terminations, truncations, infos

    def _observe(self, obs: torch.Tensor) -> dict[str, np.ndarray]:
        arr = to_numpy(obs[0]).astype(self._obs_dtype, copy=False)
        return {agent: arr[k] for k, agent in enumerate(self.possible_agents)}

    def _infos(self, step) -> dict[str, dict]:
        mask = to_numpy(step.avail_actions[0]).astype(np.int8)
        shaped = step.shaped_by_agent[0].tolist()
        sparse = step.sparse_by_agent[0].tolist()
        t = self._t
        return {
            agent: {
                "action_mask": mask[k],
                "shaped_reward": shaped[k],
                "sparse_reward": sparse[k],
                "timestep": t,
            }
            for k, agent in enumerate(self.possible_agents)
        }

    def render(self) -> str | None:
        """The text picture of the game (``render_mode="ansi"``), else None. After an episode ended
        it shows the next episode's start (the engine resets games that end)."""
        if self.render_mode == "ansi":
            return self.env.render(0)
        return None

    def close(self) -> None:
        """Nothing to release."""
