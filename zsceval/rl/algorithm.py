"""The plug-in interface: what an algorithm decides on top of the shared MAPPO core.

An algorithm (SP, FCP, HSP, ...) is a subclass of :class:`Algorithm` registered by name
(:func:`zsceval.registry.register`). The :class:`~zsceval.rl.trainer.Trainer` owns the loop
(collect, GAE, PPO update, checkpoints); the algorithm answers four questions:

1. *Which policies are trained?* :meth:`Algorithm.build_learners` (names -> fresh policies).
2. *Which fixed policies play with them?* :meth:`Algorithm.build_partners` (frozen: they act, they
   are never updated).
3. *Who sits where?* :meth:`Algorithm.assign_seats` returns, for each game and seat, the index of
   the policy that drives it (learners first, then partners) for the coming rollout.
4. *What reward does each seat learn from?* :meth:`Algorithm.training_reward` builds it from the
   step's sparse reward, shaped reward and events.

Everything else (rollout storage, GAE, losses, schedules, checkpoints, resume) is shared.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from collections.abc import Callable
from typing import Any, ClassVar

import torch

from zsceval.envs.base import Step
from zsceval.rl.config import ConfigError, TrainConfig
from zsceval.rl.policy import Policy

__all__ = ["Algorithm", "default_training_reward"]


def default_training_reward(step: Step, shaping_factor: float) -> torch.Tensor:
    """ZSC-Eval's per-agent reward: ``team_sparse + rsf * own_shaped`` (overcooked-spec 3.3).

    Args:
        step: the env step (``reward float32 [B]``, ``shaped_by_agent float32 [B, n]``).
        shaping_factor: current rsf (overcooked-spec 3.6).

    Returns:
        ``float32 [B, n]``: every agent gets the full team sparse reward plus its own shaped reward.
    """
    return step.reward.unsqueeze(-1) + shaping_factor * step.shaped_by_agent


class Algorithm:
    """Base class of algorithm plug-ins; the defaults implement self-play with one shared policy.

    Class attributes:
        name: registry name (set by :func:`zsceval.registry.register`).
        description: one line shown by ``zsceval algos``.
        Options: optional frozen dataclass validating the ``algo:`` config section.

    Args:
        config: the resolved run config.
        num_envs: B, games per batch.
        num_agents: n, seats per game.
        device: torch device of env and networks.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    Options: ClassVar[type | None] = None

    def __init__(self, config: TrainConfig, num_envs: int, num_agents: int, device: torch.device) -> None:
        self.config = config
        self.num_envs = num_envs
        self.num_agents = num_agents
        self.device = torch.device(device)
        self.options = self.parse_options(config.algo)

    @classmethod
    def parse_options(cls, values: dict[str, Any]) -> Any:
        """Validate the ``algo:`` section against :attr:`Options`.

        Raises:
            ConfigError: an unknown key (closest valid one named) or an unexpected section.
        """
        if cls.Options is None:
            if values:
                raise ConfigError(f"algorithm '{cls.name}' takes no 'algo.*' options, got {sorted(values)}")
            return None
        names = [f.name for f in dataclasses.fields(cls.Options)]
        for key in values:
            if key not in names:
                close = difflib.get_close_matches(key, names, n=1)
                hint = f"; did you mean 'algo.{close[0]}'?" if close else ""
                raise ConfigError(f"unknown config key 'algo.{key}' for algorithm '{cls.name}'{hint}")
        from zsceval.rl.config import coerce_value

        try:
            hints = typing.get_type_hints(cls.Options)
        except (NameError, TypeError):
            return cls.Options(**values)
        return cls.Options(**{k: coerce_value(v, hints[k], f"algo.{k}") for k, v in values.items()})

    # -- policies --------------------------------------------------------------------------------
    def build_learners(self, make_policy: Callable[[], Policy]) -> dict[str, Policy]:
        """Trainable policies by name; the first one is the *ego* policy that gets evaluated."""
        return {"ego": make_policy()}

    def build_partners(self, make_policy: Callable[[], Policy]) -> dict[str, Policy]:
        """Frozen policies by name (they act but are not trained). Default: none."""
        return {}

    def assign_seats(self, iteration: int, generator: torch.Generator) -> torch.Tensor:
        """Policy index driving each seat in the coming rollout.

        Args:
            iteration: 0-based iteration about to be collected.
            generator: the trainer's torch generator (for random partner choice), on ``device``.

        Returns:
            ``int64 [B, n]`` on ``device``, indices into ``[*learners, *partners]``. Default:
            the ego policy in every seat (self-play).
        """
        return torch.zeros(self.num_envs, self.num_agents, dtype=torch.int64, device=self.device)

    def training_reward(self, step: Step, shaping_factor: float) -> torch.Tensor:
        """``float32 [B, n]`` reward each seat learns from (default: :func:`default_training_reward`)."""
        return default_training_reward(step, shaping_factor)

    def eval_seats(self, learners: list[str], partners: list[str]) -> list[str]:
        """Policy names seated in the final evaluation (``eval.json``), one per seat.

        Default: the ego (first learner) in every seat, i.e. self-play.
        """
        return [learners[0]] * self.num_agents

    def after_iteration(self, iteration: int, env_steps: int, stats: dict[str, float]) -> None:
        """Hook called after each PPO update (e.g. to update partner-sampling priorities)."""

    # -- resumable plug-in state -----------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """JSON-able plug-in state saved with every checkpoint (default: nothing)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
