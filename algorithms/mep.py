"""Maximum-Entropy Population-based training (MEP; Zhao et al., AAAI 2023), as ZSC-Eval trains it.

Method. Stage 1 trains a population of N self-play agents whose rewards carry a population-entropy
bonus: for every stored step of member i, with the action a_t it took,

    p_bar_t = (1/N) * sum_k pi_k(a_t | o_t)        (all N members, the learner included)
    r_t <- r_t + alpha * -log(max(p_bar_t, 1e-5)),  alpha = 0.01,

a one-sample estimate of the cross-entropy between member i and the population's mean policy, so
members are pushed towards actions the population as a whole rarely takes (docs/reference-protocol.md
"MEP"; the bonus enters the rewards before GAE, so it also shapes the value targets).

Stage 2 trains a recurrent ego against the init / mid / final checkpoints of a window of members,
like FCP, but samples the (partner, seat) arms with priority on the partners it plays worst with:
with ``R_i`` the running average ``R_i <- 0.95 R_i + 0.05 a_i`` of arm i's training sparse return,

    rank_i = dense rank of 1 / (R_i + 1e-6)   (lowest return -> highest rank)
    P(i) = rank_i^alpha / sum_j rank_j^alpha,  alpha = 0.5 / 1.0 / 1.5 for populations 12 / 24 / 36.

In games of n > 2 players (Football) stage 2 follows ZSC-Eval's GRF runner (``grf_runner.py:
train_mep``): the prioritized units are the *unordered* combinations of the ego and its partners
(:func:`~zsceval.algorithms.base.stage2.arm_multiset`), each with its running return over all its
seatings; their probabilities are floored at 1 / (number of arms) and renormalised, and each is
split equally over its distinct seat orderings (the reference's random permutation). Stage 1 needs
nothing new: every seat of a member's self-play games carries the bonus.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from zsceval.algorithms.base.stage1 import PopulationSelfPlay, member_log_probs
from zsceval.algorithms.base.stage2 import PopulationEgo, PopulationEgoOptions, arm_multiset
from zsceval.registry import register
from zsceval.rl.config import population_size
from zsceval.rl.rollout import Rollout

ENTROPY_FLOOR = 1e-5
RUNNING_AVERAGE = 0.95


def population_entropy_bonus(log_probs: torch.Tensor, alpha: float) -> torch.Tensor:
    """MEP's reward bonus ``alpha * -log(max(mean_k pi_k(a_t|o_t), 1e-5))``.

    Args:
        log_probs: ``float32 [K, ...]``: ``log pi_k(a_t | o_t)`` of the taken action under each of the
            K members (the learner included).
        alpha: bonus weight (``mep_entropy_alpha``, 0.01 in ZSC-Eval's Overcooked scripts).

    Returns:
        ``float32 [...]`` bonus per step.
    """
    mean = log_probs.exp().mean(0)
    return -alpha * torch.log(mean.clamp_min(ENTROPY_FLOOR))


def prioritized_probs(returns: torch.Tensor, seen: torch.Tensor, alpha: float) -> torch.Tensor:
    """MEP stage 2's arm probabilities ``P(i) ∝ rank(1 / R_i)^alpha`` (docs/reference-protocol.md "MEP").

    Args:
        returns: ``float [A]`` running-average return per arm.
        seen: ``bool [A]`` arms with data; the others take the mean of the seen ones (uniform if none).
        alpha: the exponent.

    Returns:
        ``float64 [A]`` probabilities (dense ranks: equal returns share a rank).
    """
    r = returns.double().clone()
    if not bool(seen.any()):
        return torch.full_like(r, 1.0 / r.numel())
    r[~seen] = r[seen].mean()
    inverse = 1.0 / (r + 1e-6)
    _, rank = torch.unique(inverse, sorted=True, return_inverse=True)
    weights = (rank + 1).double() ** alpha
    return weights / weights.sum()


@dataclasses.dataclass(frozen=True)
class MEPStage1Options:
    """``algo.*`` options of MEP stage 1."""

    entropy_alpha: float = 0.01
    """Weight of the population-entropy bonus (ZSC-Eval ``mep_entropy_alpha``)."""


@register("mep-stage1", "MEP stage 1: N self-play members with a population-entropy reward bonus.")
class MEPStage1(PopulationSelfPlay):
    """Self-play members whose rewards carry the population-entropy bonus."""

    Options = MEPStage1Options
    paper_entropy_milestones = (0.0, 6e6, 1e7)
    rollout_fields = ("obs", "avail", "actions", "starts", "actor", "rewards")

    def on_rollout(self, rollout: Rollout, episodes: Any) -> None:
        """Add the bonus of every member's stored steps (current parameters of all members)."""
        flat = rollout.flat
        T = rollout.T
        logp = member_log_probs(
            list(self.learners.values()),
            flat(rollout.obs),
            flat(rollout.avail),
            flat(rollout.actions),
            flat(rollout.starts),
        )
        bonus = population_entropy_bonus(logp, self.options.entropy_alpha)
        learner = flat(rollout.actor)[:T] < len(self.learners)
        flat(rollout.rewards).add_(bonus * learner)
        self.last_bonus = float(bonus[learner].mean()) if bool(learner.any()) else 0.0

    def after_iteration(self, iteration: int, env_steps: int, stats: dict[str, float], episodes: Any) -> None:
        """Log the members' curves and the mean bonus per step (``mep/entropy_bonus``)."""
        super().after_iteration(iteration, env_steps, stats, episodes)
        stats["mep/entropy_bonus"] = getattr(self, "last_bonus", 0.0)


@dataclasses.dataclass(frozen=True)
class MEPOptions(PopulationEgoOptions):
    """``algo.*`` options of the MEP ego."""

    prioritized_alpha: float = 0.0
    """Exponent of the prioritized sampling; 0: ``population.size / 24`` (ZSC-Eval's 0.5 / 1.0 / 1.5
    for populations 12 / 24 / 36)."""


@register("mep", "MEP: recurrent ego vs a max-entropy population, prioritized sampling (Zhao et al. 2023).")
class MEP(PopulationEgo):
    """The MEP ego: prioritized (partner, seat) sampling over the frozen MEP population."""

    Options = MEPOptions
    stage1_algo = "mep-stage1"

    @property
    def alpha(self) -> float:
        """The prioritized-sampling exponent."""
        return self.options.prioritized_alpha or population_size(self.config) / 24

    def _units(self) -> torch.Tensor:
        """``int64 [A]`` the prioritized unit of each arm: the arm itself for two players, its
        unordered combination for more (GRF)."""
        if getattr(self, "_unit_of_arm", None) is None:
            arms = self.arms()
            if self.num_agents == 2:
                self._unit_of_arm = torch.arange(len(arms))
            else:
                index: dict[tuple, int] = {}
                units = [index.setdefault(arm_multiset(a), len(index)) for a in arms]
                self._unit_of_arm = torch.tensor(units)
        return self._unit_of_arm

    def _ensure_state(self) -> None:
        num = self.num_arms if self.num_agents == 2 else int(self._units().max()) + 1
        if getattr(self, "running", None) is None or self.running.numel() != num:
            self.running = torch.zeros(num, dtype=torch.float64)
            self.seen = torch.zeros(num, dtype=torch.bool)

    def probabilities(self) -> torch.Tensor:
        """``float64 [A]`` current arm probabilities (for n > 2 players: the units' prioritized
        probabilities floored at 1 / A, split over each unit's seatings)."""
        self._ensure_state()
        probs = prioritized_probs(self.running, self.seen, self.alpha)
        if self.num_agents == 2:
            return probs
        units = self._units()
        floor = 1.0 / units.numel()
        if float(probs.min()) < floor:
            probs = probs.clamp_min(floor)
            probs = probs / probs.sum()
        orderings = torch.bincount(units).double()
        return probs[units] / orderings[units]

    def assign(self, games: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        """Each game draws its arm i.i.d. from :meth:`probabilities`."""
        probs = self.probabilities().to(device=games.device, dtype=torch.float32)
        return torch.multinomial(probs, games.numel(), replacement=True, generator=generator)

    def after_iteration(self, iteration: int, env_steps: int, stats: dict[str, float], episodes: Any) -> None:
        """Running average of each arm's mean training sparse return over the episodes that ended."""
        self._ensure_state()
        if len(episodes):
            units = episodes.arm if self.num_agents == 2 else self._units()[episodes.arm.long()]
            for a in torch.unique(units).tolist():
                value = float(episodes.sparse[units == a].mean())
                if bool(self.seen[a]):
                    self.running[a] = RUNNING_AVERAGE * self.running[a] + (1 - RUNNING_AVERAGE) * value
                else:
                    self.running[a], self.seen[a] = value, True
        probs = self.probabilities()
        stats["mep/max_arm_prob"] = float(probs.max())
        stats["mep/min_arm_prob"] = float(probs.min())

    def state_dict(self) -> dict[str, Any]:
        """The running averages."""
        self._ensure_state()
        return {"running": self.running.clone(), "seen": self.seen.clone()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.running = state["running"].double().cpu()
        self.seen = state["seen"].bool().cpu()
