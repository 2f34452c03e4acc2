"""The n-agent batched environment protocol shared by every environment and training core.

Glossary (used across ``zsceval``):

* **env / game**: one independent episode; a batched environment runs ``num_envs`` (B) of them.
* **agent / slot**: a controlled player index ``0..num_agents-1`` (n) *as the learner sees it*.
  With seat randomization an agent slot may drive a different seat (player) of the game;
  everything in :class:`Step` is reported in slot order.
* **env step**: one joint action for all agents in all B games counts as B env steps.

A batched environment implements :class:`BatchedEnv`: sizes (``num_envs``, ``num_agents``,
``num_actions``), Gymnasium spaces of *one* agent's observation and action
(``single_observation_space``, ``single_critic_observation_space``, ``single_action_space``; the
batched arrays have leading dims ``[B, n]``), ``possible_agents``, ``event_names``, ``horizon``,
``device``, ``reset() -> Step``, ``step(actions) -> Step``, ``spec_dict()`` and
``state_dict()`` / ``load_state_dict(state)`` for exact resume. Environments are built by name
through ``zsceval.envs.registry.make``.

Episodes end only by truncation at the horizon in Overcooked; ``terminated`` and ``truncated`` are
nevertheless kept apart (Gymnasium), and the observations of the state that was cut off are
returned in ``final_obs`` so that a learner can bootstrap its value there. Finished games are reset
automatically (a masked select), so ``obs`` after a done step is already the first observation of
the next episode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import torch

if TYPE_CHECKING:
    import gymnasium

__all__ = [
    "BatchedEnv",
    "Step",
    "agent_names",
    "box_space",
    "check_state_config",
    "critic_view",
    "discrete_space",
    "restore_generator",
    "restored_tensor",
]


def agent_names(num_agents: int) -> tuple[str, ...]:
    """``possible_agents`` of an n-agent env: ``("agent_0", ..., "agent_{n-1}")`` (PettingZoo)."""
    return tuple(f"agent_{k}" for k in range(num_agents))


def box_space(low, high, dtype: torch.dtype) -> gymnasium.spaces.Box:
    """A ``gymnasium.spaces.Box`` with element-wise bounds, of a torch dtype.

    Args:
        low: array-like of the space's shape (or a scalar, then ``high`` gives the shape).
        high: array-like of the space's shape (numpy array or tensor).
        dtype: ``torch.uint8`` or ``torch.float32`` (the dtype the env returns).

    Raises:
        ValueError: a dtype without a numpy equivalent listed here.
    """
    import gymnasium

    np_dtypes = {torch.uint8: np.uint8, torch.float32: np.float32, torch.int64: np.int64}
    if dtype not in np_dtypes:
        raise ValueError(f"unsupported observation dtype {dtype}; use one of {list(np_dtypes)}")
    np_dtype = np_dtypes[dtype]
    high = np.asarray(high.cpu() if isinstance(high, torch.Tensor) else high).astype(np_dtype)
    low = np.broadcast_to(np.asarray(low, dtype=np_dtype), high.shape).copy()
    return gymnasium.spaces.Box(low=low, high=high, shape=high.shape, dtype=np_dtype)


def discrete_space(n: int) -> gymnasium.spaces.Discrete:
    """``gymnasium.spaces.Discrete(n)``: one agent's action index in ``0..n-1``."""
    import gymnasium

    return gymnasium.spaces.Discrete(n)


def critic_view(obs: torch.Tensor) -> torch.Tensor:
    """Centralized-critic observation built from per-agent observations.

    For agent k the critic sees its own encoding followed by the other agents' encodings in
    cyclic order (k, k+1, ..., k-1), concatenated on the channel axis (ZSC-Eval "share_obs",
    docs/overcooked-rules.md §4.4; for two agents: slot 0 -> [o0, o1], slot 1 -> [o1, o0]).

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
            no-op (docs/overcooked-rules.md §4.6); STAY is always available.
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
        infos: env-specific extras, ``{name: tensor}`` each with leading dim B (Gymnasium's
            vector-env infos as a dict of arrays); the keys are documented by the env. Tensors
            are owned by the caller (the env never writes into them later). Keys the cores read:
            ``full_obs`` (partial views), ``critic_obs`` / ``final_critic_obs`` (an env's own
            critic input) and ``reward_by_agent`` (``float32 [B, n]``, an env's own per-agent
            training reward, which :func:`zsceval.rl.algorithm.default_training_reward` then uses
            in place of ``reward + rsf * shaped_by_agent``; Football).

    ``obs`` and ``final_obs`` have the dtype of ``env.single_observation_space`` (uint8 for
    Overcooked; the toy env can return float32).
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
    infos: dict[str, torch.Tensor] = field(default_factory=dict)

    @property
    def done(self) -> torch.Tensor:
        """``bool [B]``: ``terminated | truncated``."""
        return self.terminated | self.truncated

    @property
    def critic_obs(self) -> torch.Tensor:
        """``uint8 [B, n, H, W, n*C]`` centralized-critic observation (see :func:`critic_view`): of
        the full state when the env's views are partial (``infos["full_obs"]``; centralized
        training, decentralized execution). An env with a critic input of its own (Football's
        52-dim state vector) returns it as ``infos["critic_obs"]`` ``[B, n, *critic_obs_shape]``,
        which is used as is."""
        if "critic_obs" in self.infos:
            return self.infos["critic_obs"]
        return critic_view(self.infos.get("full_obs", self.obs))

    @property
    def final_critic_obs(self) -> torch.Tensor | None:
        """Critic observation of the pre-reset state, or ``None`` (see ``final_obs``)."""
        if self.final_obs is None:
            return None
        if "critic_obs" in self.infos:
            return self.infos.get("final_critic_obs", self.infos["critic_obs"])
        return critic_view(self.infos.get("final_full_obs", self.final_obs))


@runtime_checkable
class BatchedEnv(Protocol):
    """What every batched n-agent environment provides (``isinstance(env, BatchedEnv)`` checks
    that the members exist; ``tests/envs/test_protocol.py`` checks what they return).

    B games are stepped together; every per-agent array is in agent-slot order.

    Attributes:
        num_envs: B, the number of games.
        num_agents: n, the number of agents per game.
        possible_agents: ``("agent_0", ..., "agent_{n-1}")``, length n (PettingZoo).
        num_actions: A, the size of every agent's discrete action set.
        single_observation_space: ``gymnasium.spaces.Box`` of one agent's observation, with the
            exact shape, dtype and element-wise bounds of ``Step.obs[b, k]``.
        single_critic_observation_space: ``Box`` of ``Step.critic_obs[b, k]``.
        single_action_space: ``gymnasium.spaces.Discrete(num_actions)``.
        obs_shape: ``single_observation_space.shape``.
        critic_obs_shape: ``single_critic_observation_space.shape``.
        event_names: names of the E per-agent event counts in ``Step.events``.
        horizon: episode length in env steps (episodes are truncated there).
        device: the ``torch.device`` holding state and returned tensors.
    """

    num_envs: int
    num_agents: int
    num_actions: int
    horizon: int
    device: torch.device

    @property
    def possible_agents(self) -> tuple[str, ...]: ...

    @property
    def single_observation_space(self) -> gymnasium.spaces.Box: ...

    @property
    def single_critic_observation_space(self) -> gymnasium.spaces.Box: ...

    @property
    def single_action_space(self) -> gymnasium.spaces.Discrete: ...

    @property
    def obs_shape(self) -> tuple[int, ...]: ...

    @property
    def critic_obs_shape(self) -> tuple[int, ...]: ...

    @property
    def event_names(self) -> tuple[str, ...]: ...

    def reset(self) -> Step:
        """Reset every game; returns zero rewards and events, ``truncated`` all False."""
        ...

    def step(self, actions: torch.Tensor) -> Step:
        """Advance every game by one joint action ``int64 [B, n]``; finished games auto-reset.

        Raises:
            ValueError: actions of the wrong shape, dtype or range.
        """
        ...

    def spec_dict(self) -> dict[str, Any]:
        """JSON-able description of what a policy trained here observes and does."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Everything the next steps depend on (game state, timers, generator state), as tensors
        (on ``device``; a generator state is a CPU ``uint8`` tensor), ints, floats, strs and
        lists/dicts of those: a fresh env of the same config that loads it steps bit-identically.
        The returned tensors are copies (later steps do not change them)."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore ``state_dict()`` output; continue with ``step`` (not ``reset``, which starts new
        episodes).

        Raises:
            ValueError: the state was saved by an env of another kind or config, or is malformed.
        """
        ...


# ---------------------------------------------------------------------------- state-dict helpers
def check_state_config(state: dict[str, Any], expected: dict[str, Any], kind: str) -> None:
    """Check that ``state["config"]`` (saved by ``state_dict``) equals ``expected``.

    Raises:
        ValueError: ``state`` is not a dict with a ``config`` entry, or a value differs (each
            difference is named: ``key: saved ... != this env ...``).
    """
    if not isinstance(state, dict) or not isinstance(state.get("config"), dict):
        raise ValueError(f"not a {kind} env state dict (no 'config' entry); got {type(state).__name__}")
    saved = state["config"]
    diffs = [
        f"{key}: saved {saved.get(key)!r} != this env {value!r}"
        for key, value in expected.items()
        if saved.get(key) != value
    ]
    if diffs:
        raise ValueError(f"{kind} env state was saved with another config: " + "; ".join(diffs))


def restored_tensor(value: Any, name: str, like: torch.Tensor) -> torch.Tensor:
    """A copy of saved tensor ``value`` on ``like``'s device, checked against ``like``'s shape and dtype.

    Raises:
        ValueError: ``value`` is not a tensor or its shape or dtype differ from ``like``'s.
    """
    if not isinstance(value, torch.Tensor):
        raise ValueError(f"env state entry '{name}' must be a tensor, got {type(value).__name__}")
    if value.shape != like.shape or value.dtype != like.dtype:
        raise ValueError(
            f"env state entry '{name}' is {value.dtype} {list(value.shape)}, "
            f"expected {like.dtype} {list(like.shape)}"
        )
    return value.to(like.device, copy=True)


def restore_generator(generator: torch.Generator, value: Any) -> None:
    """Set ``generator`` to a saved ``generator.get_state()`` (a ``uint8`` tensor, any device).

    Raises:
        ValueError: ``value`` is not a uint8 tensor of the generator's state size.
    """
    current = generator.get_state()
    if not isinstance(value, torch.Tensor) or value.dtype != torch.uint8 or value.shape != current.shape:
        is_tensor = isinstance(value, torch.Tensor)
        got = f"{value.dtype} {list(value.shape)}" if is_tensor else type(value).__name__
        raise ValueError(f"env state entry 'generator' must be uint8 {list(current.shape)}, got {got}")
    generator.set_state(value.detach().cpu().clone())
