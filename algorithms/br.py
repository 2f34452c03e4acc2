"""Best response (BR) to a fixed partner.

Method. One policy learns, with PPO, to play with a frozen partner agent loaded from a
checkpoint; the BR's seat is drawn at random per game at every episode start (two arms) so that it
can play either seat. Its reward is the ordinary one: team sparse reward plus its own base shaped reward
scaled by the annealed shaping factor (overcooked-spec 3.3). ZSC-Eval trains such BRs for the
``mid`` checkpoints of selected partners (App. C: MLP policy, 1e7 steps); a BR's return with its
partner is the denominator of BR-Prox.

``algo.partner`` is a run directory, checkpoint directory or ``meta.json``; ``PATH#name`` (or
``algo.partner_policy``) picks a policy of a multi-policy checkpoint (e.g. ``#biased``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from zsceval.registry import register
from zsceval.rl.algorithm import Algorithm
from zsceval.rl.checkpoint import load_agent
from zsceval.rl.config import ConfigError
from zsceval.rl.policy import Policy
from zsceval.rl.seating import Arm, ego_partner_arms


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

    def build_learners(self, make_policy: Callable[[], Policy]) -> dict[str, Policy]:
        """The best response (the ego)."""
        return {"br": make_policy()}

    def build_partners(self, make_policy: Callable[[], Policy]) -> dict:
        """The frozen partner agent (any agent class), checked against this run's env spec."""
        partner, meta = load_agent(self.options.partner, self.options.partner_policy or None, self.device)
        expected = make_policy().spec
        saved = meta.get("env_spec", {})
        for key in ("obs_shape", "num_actions"):
            if key in saved and saved[key] != expected[key]:
                raise ConfigError(
                    f"partner {self.options.partner} has {key} {saved[key]}, "
                    f"this layout needs {expected[key]}"
                )
        return {"partner": partner}

    def eval_seats(self, learners: list[str], partners: list[str]) -> list[str]:
        """Evaluate the BR with its fixed partner."""
        return ["br", "partner"]

    def arms(self) -> list[Arm]:
        """The BR in seat 0 or 1 (every seat for n > 2 players), the partner in the others."""
        return ego_partner_arms("br", "partner", self.num_agents)
