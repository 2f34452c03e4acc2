"""Behavior-preferring agent with its best response (HSP stage 1; ZSC-Eval partner candidates).

Method (ZSC-Eval Sec. 4.1, Alg. 1; HSP). Two policies learn together with independent PPO: the
*biased* agent pi_w maximizes a hidden, behavior-preferring reward

    r_w(s, a) = w_sparse * r_sparse(s, a) + sum_j w_j * phi_j(s, a),

where phi_j counts event j of the biased agent at that step (the layout's ZSC-Eval event list,
docs/overcooked-rules.md §3.1 / 5.5) and r_sparse is the team sparse reward. It gets **no** default shaping.
Its partner, the approximate best response BR(pi_w), learns from the ordinary reward: team sparse
plus its own base shaped reward scaled by the annealed shaping factor (docs/overcooked-rules.md §3.5).
The biased agent's seat is drawn at random for every game at every episode start (n arms: pi_w in
one seat, its BR in every other seat; ZSC-Eval's ``random_index`` for bias agents), so both learn to
play every seat.

Football (3 players; ZSC-Eval ``scripts/grf/train/train_hsp.py``, docs/reference-protocol.md "Football"): w
weights the 8 GRF events (its ``score`` event takes the place of the sparse weight, so w has no
sparse entry) and pi_w keeps gfootball's checkpoint reward with weight 1:
``r_w = sum_j w_j * phi_j + checkpoints``. The BR learns from the env's own per-agent reward.

``algo.weights`` is the weight vector w: one entry per event in the env's event order, then the
sparse weight (18 entries on classic layouts, 30 on multi-recipe ones, 8 in Football); see
``zsceval.generation.reward_space`` for the per-layout grids.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from zsceval.envs.base import Step
from zsceval.envs.football.events import EVENT_NAMES as FOOTBALL_EVENTS
from zsceval.envs.overcooked import CLASSIC_EVENTS, MULTI_RECIPE_EVENTS, load_layout
from zsceval.registry import register
from zsceval.rl.algorithm import Algorithm, default_training_reward
from zsceval.rl.config import ConfigError, TrainConfig
from zsceval.rl.policy import Policy
from zsceval.rl.seating import Arm, Seating, ego_partner_arms

BIASED = 0  # actor index of pi_w (learners come first, in build_learners order)


@dataclass(frozen=True)
class BiasedOptions:
    """Options of the ``biased`` algorithm (``algo.*`` config keys)."""

    weights: tuple[float, ...] = ()
    """w: event weights in the env's event order, then the sparse-reward weight (ZSC-Eval ``w0``)."""


@register("biased", "Behavior-preferring agent pi_w + its best response (HSP stage 1, ZSC-Eval partners).")
class Biased(Algorithm):
    """pi_w (hidden reward w, no shaping) and BR(pi_w) (sparse + annealed shaping), random seats."""

    Options = BiasedOptions

    def __init__(self, config, num_envs: int, num_agents: int, device) -> None:
        super().__init__(config, num_envs, num_agents, device)
        w = tuple(float(x) for x in self.options.weights)
        if config.env.name == "football":
            events, where, sparse = FOOTBALL_EVENTS, "Football", False
        else:
            layout = load_layout(config.env.layout)
            events = MULTI_RECIPE_EVENTS if layout.dynamics == "multi_recipe" else CLASSIC_EVENTS
            where, sparse = f"layout {layout.name!r}", True
        if len(w) != len(events) + sparse:
            then = " then the sparse weight" if sparse else ""
            raise ConfigError(
                f"algo.weights needs {len(events) + sparse} entries for {where} "
                f"({len(events)} events{then}), got {len(w)}"
            )
        self.w_events = torch.tensor(w[: len(events)], dtype=torch.float32, device=self.device)
        self.w_sparse = w[-1] if sparse else 0.0
        self.checkpoint_reward = not sparse  # Football: gfootball's checkpoint reward, weight 1

    @classmethod
    def preset_config(cls, preset: str, cfg: TrainConfig) -> dict[str, Any]:
        """``paper`` on Overcooked: the reference's bias-agent schedules over the run's T env steps
        (``scripts/overcooked/shell/train_bias_agents.sh``, T = 1e7): entropy 0.2 -> 0.05 -> 0.001 at
        0 / 0.6 T / T (blocked_corridor 0.8 T, as every method there: ``late_exploration``), and the
        BR's shaping annealed over T, where SP and the BRs of the mid checkpoints keep 1e8 (the preset's).
        Other presets and Football: nothing beyond the preset (docs/differences.md)."""
        if preset != "paper" or cfg.env.name != "overcooked":
            return {}
        total = int(cfg.run.total_steps)
        ppo = {"entropy_coefs": [0.2, 0.05, 0.001], "entropy_milestones": [0, round(0.6 * total), total]}
        return {"ppo": ppo, "shaping": {"horizon": total}}

    def build_learners(self, make_policy: Callable[[], Policy]) -> dict[str, Policy]:
        """The biased agent pi_w (reported as the ego) and its best-response partner."""
        return {"biased": make_policy(), "br": make_policy()}

    def arms(self) -> list[Arm]:
        """pi_w in seat 0 or seat 1, its BR in the other (drawn uniformly per game and episode)."""
        return ego_partner_arms("biased", "br", self.num_agents)

    def eval_seats(self, learners: list[str], partners: list[str]) -> list[str]:
        """Evaluate the pair: pi_w in seat 0 with its best response in the other seats."""
        return ["biased"] + ["br"] * (self.num_agents - 1)

    def training_reward(self, step: Step, shaping_factor: float, seating: Seating) -> torch.Tensor:
        """``float32 [B, n]``: r_w for pi_w's seat, the ordinary reward for its BR's seats (team sparse
        + rsf * own shaped in Overcooked, the env's own per-agent reward in Football)."""
        hidden = step.events.float() @ self.w_events + self.w_sparse * step.reward.unsqueeze(-1)
        if self.checkpoint_reward:
            hidden = hidden + step.infos["checkpoint_reward"]
        ordinary = default_training_reward(step, shaping_factor)
        return torch.where(seating.actor == BIASED, hidden, ordinary)
