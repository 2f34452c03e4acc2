"""Self-play (SP): one policy learns by playing with copies of itself.

Method. A single policy pi_theta drives every seat of every game (one arm: the ego in every seat).
Each seat's experience (its own observation, the critic's observation, its action and its reward)
is a sample for the same MAPPO update, so the policy improves as its own partner improves.
Following ZSC-Eval (docs/reference-protocol.md "Training settings"), the per-seat training reward is the team
sparse reward plus the seat's own shaped reward scaled by a shaping factor that anneals linearly
from 1 over ``shaping.horizon`` env steps (1e8 for SP, so it barely anneals within the 1e7-step
budget), and the entropy coefficient follows the piecewise-linear schedule 0.2 -> 0.05 -> 0.01 at
0 / 5e6 / 1e7 env steps.

SP converges to conventions that work with itself and is the standard ZSC baseline: its
self-play return is high while its return with unseen partners is low (ZSC-Eval Table 4).

Everything here is the default behaviour of :class:`~zsceval.rl.algorithm.Algorithm`; the
plug-in spells it out so that it reads as the method it implements.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from zsceval.envs.base import Step
from zsceval.registry import register
from zsceval.rl.algorithm import Algorithm, default_training_reward
from zsceval.rl.policy import Policy
from zsceval.rl.seating import Arm, Seating, self_play_arm


@register("sp", "Self-play: one shared policy in every seat (MAPPO, annealed shaping).")
class SelfPlay(Algorithm):
    """Self-play: one shared policy in every seat (MAPPO, annealed shaping)."""

    core = "ppo"

    def build_learners(self, make_policy: Callable[[], Policy]) -> dict[str, Policy]:
        """One trainable policy, the ego agent."""
        return {"ego": make_policy()}

    def arms(self) -> list[Arm]:
        """One arm: the ego in every seat."""
        return [self_play_arm("ego", self.num_agents)]

    def training_reward(self, step: Step, shaping_factor: float, seating: Seating) -> torch.Tensor:
        """``team_sparse + rsf * own_shaped`` for every seat (docs/overcooked-rules.md §3.3)."""
        return default_training_reward(step, shaping_factor)
