"""A Gymnasium ``VectorEnv`` over the batched engine: B games, each a sub-env with a joint action.

Layout: sub-env b is game b with all n agents. Its observation is the agents' observations
stacked, its action the joint action:

* ``single_observation_space``: ``Box`` of shape ``(n, H, W, C)`` (Overcooked: ``uint8``, bounds
  per channel, the batched env's ``single_observation_space`` repeated n times);
* ``single_action_space``: ``MultiDiscrete([A] * n)`` (action of agent slot k at index k);
* ``observation_space``: ``Box (B, n, H, W, C)``; ``action_space``: ``MultiDiscrete`` of shape
  ``(B, n)``;
* rewards: ``float32 [B]`` team sparse reward; terminations / truncations: ``bool [B]``, kept apart.

Autoreset: ``AutoresetMode.SAME_STEP`` (``metadata["autoreset_mode"]``): a game that ends is reset
inside the same ``step``; the returned observation is already the first one of its next episode and
the last observation of the ended episode is in ``infos["final_obs"]`` (a dense array of the
observation space's shape; rows with ``infos["_final_obs"]`` False equal the returned
observation). Unlike ``SyncVectorEnv``, ``final_obs`` is one array, not an object array.

Infos (Gymnasium's dict of arrays, each with leading dim B, every key with its ``_key`` mask, all
True): ``action_mask`` ``bool [B, n, A]``, ``shaped_reward`` ``float32 [B, n]``, ``sparse_reward``
``float32 [B, n]`` and the batched env's own infos (Overcooked: ``seats``, ``timestep``).
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import torch
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ._common import build_env, reseed, to_numpy

__all__ = ["BatchedVectorEnv"]


class BatchedVectorEnv(VectorEnv):
    """Gymnasium vector env over ``num_envs`` games of a registered batched env (see the module
    docstring for the layout of observations, actions, infos and the autoreset).

    Args:
        env: a registered env name or a ``BatchedEnv`` instance (then ``num_envs`` must match and no
            options are given).
        num_envs: B, the number of games (default: 1 with a name, the instance's with an instance).
        device: torch device of the env (with a name).
        seed: seed of the env's generator at construction (with a name).
        **options: env options, e.g. ``layout="cramped_room"`` (with a name).

    Raises:
        ValueError: options with an instance, a mismatched ``num_envs``; the registry's errors.

    Example:
        >>> venv = BatchedVectorEnv("overcooked", num_envs=8, layout="cramped_room")
        >>> obs, infos = venv.reset(seed=0)   # obs: uint8 (8, 2, 4, 5, 20)
        >>> obs, rew, term, trunc, infos = venv.step(venv.action_space.sample())
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self,
        env: Any = "overcooked",
        *,
        num_envs: int | None = None,
        device: str | torch.device = "cpu",
        seed: int = 0,
        **options: Any,
    ) -> None:
        if num_envs is None:
            num_envs = 1 if isinstance(env, str) else env.num_envs
        self.env = build_env(env, num_envs, device, seed, options)
        self.num_envs = self.env.num_envs
        self.num_agents = self.env.num_agents
        agent_space = self.env.single_observation_space
        n = self.num_agents
        self.single_observation_space = gymnasium.spaces.Box(
            low=np.broadcast_to(agent_space.low, (n, *agent_space.shape)).copy(),
            high=np.broadcast_to(agent_space.high, (n, *agent_space.shape)).copy(),
            dtype=agent_space.dtype,
        )
        self.single_action_space = gymnasium.spaces.MultiDiscrete(
            np.full(n, self.env.single_action_space.n, dtype=np.int64)
        )
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._started = False

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Reset every game.

        Args:
            seed: an int reseeds the env's generator (same seed, same starts and seat draws); None
                keeps it. One generator drives all B games, so a list of per-game seeds is refused.
            options: must be None or empty (no options are defined).

        Returns:
            ``(obs (B, n, ...), infos)``.

        Raises:
            ValueError: a list of seeds, or non-empty ``options``.
        """
        if isinstance(seed, (list, tuple)):
            raise ValueError("BatchedVectorEnv takes one int seed for all games (one generator), not a list")
        if options:
            raise ValueError(f"BatchedVectorEnv.reset takes no options, got {sorted(options)}")
        if seed is not None:
            reseed(self.env, seed)
        step = self.env.reset()
        self._started = True
        return self._obs(step.obs), self._infos(step)

    def step(self, actions):
        """Step every game with ``actions``: int array of shape ``(B, n)`` in ``action_space``.

        Returns:
            ``(obs, rewards float32 [B], terminations bool [B], truncations bool [B], infos)``.

        Raises:
            RuntimeError: ``reset`` was never called.
            ValueError: actions of the wrong shape or outside ``0..A-1``.
        """
        if not self._started:
            raise RuntimeError("call reset() before step()")
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs, self.num_agents) or not np.issubdtype(actions.dtype, np.integer):
            raise ValueError(
                f"actions must be an integer array of shape {(self.num_envs, self.num_agents)} "
                f"[num_envs, num_agents], got {actions.dtype} {actions.shape}"
            )
        A = int(self.single_action_space.nvec[0])
        if actions.size and (actions.min() < 0 or actions.max() >= A):
            raise ValueError(
                f"actions must be in 0..{A - 1}, got values in [{actions.min()}, {actions.max()}]"
            )
        step = self.env.step(torch.as_tensor(actions.astype(np.int64), device=self.env.device))
        infos = self._infos(step)
        done = to_numpy(step.terminated | step.truncated)
        if done.any():
            final = step.final_obs if step.final_obs is not None else step.obs
            infos["final_obs"] = self._obs(final)
            infos["_final_obs"] = done
        return (
            self._obs(step.obs),
            to_numpy(step.reward).astype(np.float32),
            to_numpy(step.terminated),
            to_numpy(step.truncated),
            infos,
        )

    def _obs(self, obs: torch.Tensor) -> np.ndarray:
        return to_numpy(obs).astype(self.single_observation_space.dtype, copy=False)

    def _infos(self, step) -> dict[str, np.ndarray]:
        values = {
            "action_mask": to_numpy(step.avail_actions).astype(bool),
            "shaped_reward": to_numpy(step.shaped_by_agent).astype(np.float32),
            "sparse_reward": to_numpy(step.sparse_by_agent).astype(np.float32),
            **{k: to_numpy(v) for k, v in step.infos.items()},
        }
        infos: dict[str, np.ndarray] = {}
        for key, value in values.items():
            infos[key] = value
            infos[f"_{key}"] = np.ones(self.num_envs, dtype=bool)
        return infos
