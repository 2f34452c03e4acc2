"""Best response (BR) to a fixed partner.

Method. One policy learns, with PPO, to play with a frozen partner policy loaded from a
checkpoint; the BR's seat is drawn at random per game at every episode start so that it can play
either seat. Its reward is the ordinary one: team sparse reward plus its own base shaped reward
scaled by the annealed shaping factor (overcooked-spec 3.3). ZSC-Eval trains such BRs for the
``mid`` checkpoints of selected partners (App. C: MLP policy, 1e7 steps); a BR's return with its
partner is the denominator of BR-Prox.

``algo.partner`` is a run directory, checkpoint directory or ``meta.json``; ``PATH#name`` (or
``algo.partner_policy``) picks a policy of a multi-policy checkpoint (e.g. ``#biased``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from zsceval.registry import register
from zsceval.rl.algorithm import Algorithm
from zsceval.rl.checkpoint import load_policy
from zsceval.rl.config import ConfigError
from zsceval.rl.policy import Policy

from .biased import random_seats_at_episode_start


@dataclass(frozen=True)
class BROptions:
    """Options of the ``br`` algorithm (``algo.*`` config keys)."""

    partner: str = ""
    """Checkpoint of the fixed partner (run dir, checkpoint dir or meta.json; ``PATH#policy``)."""
    partner_policy: str = ""
    """Policy name inside the partner checkpoint (default: its ego policy)."""


@register("br", "Best response to a fixed partner checkpoint (random seats, annealed shaping).")
class BestResponse(Algorithm):
    """One learner (the BR) with a frozen partner."""

    Options = BROptions

    def __init__(self, config, num_envs: int, num_agents: int, device) -> None:
        super().__init__(config, num_envs, num_agents, device)
        if not self.options.partner:
            raise ConfigError("algorithm 'br' needs algo.partner=CHECKPOINT")
        if num_agents != 2:
            raise ConfigError(f"'br' needs 2 agents, the env has {num_agents}")
        self.seats: torch.Tensor | None = None

    def build_learners(self, make_policy: Callable[[], Policy]) -> dict[str, Policy]:
        """The best response (the ego)."""
        return {"br": make_policy()}

    def build_partners(self, make_policy: Callable[[], Policy]) -> dict[str, Policy]:
        """The frozen partner, checked against this run's observation spec."""
        partner, _ = load_policy(self.options.partner, self.options.partner_policy or None, self.device)
        expected = make_policy().spec
        for key in ("obs_shape", "num_actions"):
            if partner.spec[key] != expected[key]:
                raise ConfigError(
                    f"partner {self.options.partner} has {key} {partner.spec[key]}, "
                    f"this layout needs {expected[key]}"
                )
        return {"partner": partner}

    def eval_seats(self, learners: list[str], partners: list[str]) -> list[str]:
        """Evaluate the BR with its fixed partner."""
        return ["br", "partner"]

    def assign_seats(self, iteration: int, generator: torch.Generator) -> torch.Tensor:
        """The BR in a random seat per game (``random_seats_at_episode_start``)."""
        self.seats = random_seats_at_episode_start(self, iteration, generator, self.seats)
        return self.seats

    def state_dict(self) -> dict:
        return {"seats": None if self.seats is None else self.seats.tolist()}

    def load_state_dict(self, state: dict) -> None:
        seats = state.get("seats")
        self.seats = None if seats is None else torch.tensor(seats, dtype=torch.int64, device=self.device)
