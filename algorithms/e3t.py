"""E3T: one ego trained with a mixture partner (its lagged copy mixed with uniform random actions).

Method (E3T, Yan et al. 2023, as benchmarked by ZSC-Eval; docs/reference-protocol.md "E3T"). A single
ego policy pi_ego learns with PPO, without any population. Its partner in every training game is
the *mixture partner*

    pi_mix(a | o) = (1 - epsilon) * pi_partner(a | o) + epsilon / |A|,

i.e. the partner samples a ~ pi_partner(. | o) and then, independently for every seat and step,
replaces it with probability epsilon by an action drawn uniformly from the **whole** action space
(the available-action mask is ignored, as in the reference's ``R_MAPPOPolicy_Epsilon.get_actions``).
The copy pi_partner is a slowly moving copy of the ego: it starts from its own random
initialisation and after every PPO iteration its actor and critic parameters move towards the
ego's by Polyak averaging,

    theta_partner <- (1 - c) * theta_partner + c * theta_ego,    c = ``algo.copy_factor`` = 0.1,

(the reference's ``R_MAPPO_Target.update_from_source``; the E3T paper describes the partner as the
current ego itself). The random half of the mixture keeps the ego robust to partners it has never
seen, while the copy half keeps it able to cooperate with a competent partner; the method trains
one policy for the price of self-play. The partner is never trained by gradient: the ego learns
from its own seat's samples only. The ego's seat is drawn uniformly at every episode start (two
arms, ZSC-Eval's ``--random_index``). Its reward is the ordinary one: team sparse reward plus its
own shaped reward scaled by the annealed shaping factor (docs/overcooked-rules.md §3.3).

``algo.epsilon`` defaults to 0.5, the ZSC-Eval paper's value (the reference's Overcooked script
uses 0.25, docs/differences.md). The E3T paper's partner-modelling module, absent from the
reference, is ``algo.partner_model=true``: the ego's actor predicts the partner's next action from
its observation history (a GRU ego), is trained with cross-entropy on the partner's actual actions,
and conditions its policy on the predicted distribution (:class:`E3TOptions`).

Settings (``paper`` preset, docs/reference-protocol.md "Training settings"): CNN without GRU, 100 games of 400
steps per iteration, 1e7 env steps, entropy 0.2 -> 0.05 -> 0.01 at 0 / 6e6 / 1e7, shaping horizon
1e8.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from zsceval.registry import register
from zsceval.rl.agent import ActOutput, register_agent, sample_actions
from zsceval.rl.algorithm import Algorithm
from zsceval.rl.config import ConfigError, TrainConfig
from zsceval.rl.policy import Policy
from zsceval.rl.seating import Arm, ego_partner_arms

__all__ = ["E3T", "E3TOptions", "EpsilonMixtureAgent", "polyak_"]


@register_agent("epsilon_mixture")
class EpsilonMixtureAgent(nn.Module):
    """A policy whose sampled action is replaced, per row and step, by a uniform random action.

    With probability ``epsilon`` (one Bernoulli draw per row and step) the action is replaced by a
    draw uniform over all A actions, whatever the available-action mask says (docs/reference-protocol.md
    "E3T"). Implements the :class:`~zsceval.rl.agent.Agent` protocol; the state is the wrapped
    policy's recurrent state.

    Args:
        policy: the wrapped policy (its weights are used as they are at each call).
        epsilon: replacement probability in [0, 1].

    Raises:
        ValueError: ``epsilon`` outside [0, 1].
    """

    def __init__(self, policy: Policy, epsilon: float) -> None:
        super().__init__()
        epsilon = float(epsilon)
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")
        self.policy = policy
        self.epsilon = epsilon

    @property
    def spec(self) -> dict[str, Any]:
        """JSON-able description for :meth:`from_spec`: the policy's spec and epsilon."""
        return {"policy_spec": self.policy.spec, "epsilon": self.epsilon}

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> EpsilonMixtureAgent:
        """An agent with an untrained policy shaped by ``spec`` (fill it with ``load_state_dict``)."""
        return cls(Policy.from_spec(spec["policy_spec"]), spec["epsilon"])

    @property
    def num_actions(self) -> int:
        """A, the size of the action space."""
        return int(self.policy.spec["num_actions"])

    def initial_state(self, rows: int, device: torch.device | str) -> torch.Tensor:
        """The wrapped policy's zero state ``float32 [rows, hidden]``."""
        return self.policy.initial_state(rows, device)

    @torch.no_grad()
    def act(
        self,
        obs: torch.Tensor,
        avail: torch.Tensor | None,
        state: torch.Tensor,
        starts: torch.Tensor,
        generator: torch.Generator | None = None,
        deterministic: bool = False,
    ) -> ActOutput:
        """Actions of N rows from the mixture.

        From ``generator`` it takes, in this order: the policy's action draw
        (:func:`~zsceval.rl.agent.sample_actions`, none when ``deterministic``), N uniforms for the
        replacement coins and N uniform actions in ``0..A-1``; the last two are drawn at every call,
        also when ``deterministic`` (which only makes the policy part arg-max: the partner stays a
        mixture). Rows are independent: the result of a row does not depend on the others.

        Args:
            obs: ``[N, *obs_shape]``; avail: ``bool [N, A]`` or None (masks the policy part only).
            state: ``float32 [N, hidden]`` the policy's state before this step.
            starts: ``bool [N]`` rows whose episode starts at this step.
            generator: torch generator on the agent's device; None uses the global one.
            deterministic: arg-max for the policy part.

        Returns:
            :class:`~zsceval.rl.agent.ActOutput`: ``actions int64 [N]``; ``log_probs float32 [N]``
            the log-probability of each action under the mixture,
            ``log((1 - epsilon) * pi(a | o) + epsilon / A)``; the policy's new state; and
            ``extras["random"] bool [N]`` (rows whose action was replaced).
        """
        logits, h_new = self.policy.logits(obs, state, starts)
        actions, _ = sample_actions(logits, avail, generator, deterministic)
        n, A = actions.shape[0], logits.shape[-1]
        coin = torch.rand(n, generator=generator, device=actions.device)
        uniform = torch.randint(0, A, (n,), generator=generator, device=actions.device)
        replaced = coin < self.epsilon
        actions = torch.where(replaced, uniform, actions)
        masked = logits if avail is None else logits.masked_fill(~avail, -1e9)
        probs = torch.softmax(masked.float(), dim=-1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)
        log_probs = torch.log((1.0 - self.epsilon) * probs + self.epsilon / A)
        return ActOutput(actions, log_probs, h_new, {"random": replaced})

    def extra_repr(self) -> str:
        return f"epsilon={self.epsilon}"


@torch.no_grad()
def polyak_(target: Policy, source: Policy, c: float) -> None:
    """``target <- (1 - c) * target + c * source`` for every actor and critic parameter, in place.

    Computed literally as ``(1 - c) * t + c * s`` in the parameters' dtype (the reference's
    ``R_MAPPO_Target.update_from_source``; docs/reference-protocol.md "E3T"). Buffers (the value
    normalizer) are left alone: the partner's critic is never queried.

    Raises:
        ValueError: the two policies' parameter shapes differ.
    """
    for part in ("actor", "critic"):
        tgt = dict(getattr(target, part).named_parameters())
        src = dict(getattr(source, part).named_parameters())
        if tgt.keys() != src.keys():
            raise ValueError(f"{part} parameters differ: {sorted(tgt.keys() ^ src.keys())}")
        for name, t in tgt.items():
            s = src[name]
            if t.shape != s.shape:
                raise ValueError(f"{part}.{name}: shape {tuple(t.shape)} vs {tuple(s.shape)}")
            t.copy_((1.0 - c) * t + c * s)


@dataclass(frozen=True)
class E3TOptions:
    """Options of the ``e3t`` algorithm (``algo.*`` config keys)."""

    epsilon: float = 0.5
    """Probability that the partner's action is replaced by a uniform random one (ZSC-Eval paper:
    0.5; the reference's Overcooked script: 0.25)."""
    copy_factor: float = 0.1
    """c of the Polyak update partner <- (1 - c) * partner + c * ego after every iteration."""
    partner_model: bool = False
    """The E3T paper's partner-modelling module: the ego's actor predicts the partner's next action
    from its observation history (the GRU: ``quick``/``paper`` then make the ego recurrent), trained
    with cross-entropy on the partner's actual actions, and its prediction is an input of the policy."""
    partner_model_coef: float = 1.0
    """Weight of the partner-prediction cross-entropy in the ego's loss."""


@register("e3t", "E3T: ego with a mixture partner, its lagged copy + random actions (Yan et al. 2023).")
class E3T(Algorithm):
    """One learner (the ego) with an epsilon-mixture partner that tracks the ego by Polyak averaging."""

    Options = E3TOptions

    def __init__(self, config: TrainConfig, num_envs: int, num_agents: int, device) -> None:
        super().__init__(config, num_envs, num_agents, device)
        o = self.options
        if not 0.0 <= o.epsilon <= 1.0 or math.isnan(o.epsilon):
            raise ConfigError(f"algo.epsilon must be in [0, 1], got {o.epsilon}")
        if not 0.0 <= o.copy_factor <= 1.0 or math.isnan(o.copy_factor):
            raise ConfigError(f"algo.copy_factor must be in [0, 1], got {o.copy_factor}")
        if o.partner_model and num_agents != 2:
            raise ConfigError(
                f"e3t's algo.partner_model predicts one partner's action: 2 players only, the env has "
                f"{num_agents}"
            )
        self.blends = 0
        """Polyak updates applied to the partner so far."""

    @classmethod
    def preset_config(cls, preset: str, cfg: TrainConfig) -> dict[str, Any]:
        """``paper``: the reference's E3T entropy schedule 0.2 -> 0.05 -> 0.01 at 0 / 6e6 / 1e7
        (the preset already has the CNN without GRU, 1e7 steps and shaping horizon 1e8;
        docs/reference-protocol.md "Training settings"). ``quick``: nothing beyond the preset."""
        out: dict[str, Any] = {}
        if preset == "paper":
            out = {
                "run": {"total_steps": 10_000_000},
                "ppo": {"entropy_coefs": [0.2, 0.05, 0.01], "entropy_milestones": [0, 6_000_000, 10_000_000]},
                "shaping": {"horizon": 100_000_000},
            }
        if str(cfg.algo.get("partner_model", False)).lower() == "true":
            out["model"] = {"recurrent": True}  # the partner model reads the recent trajectory
        return out

    def model_spec(self, num_actions: int) -> dict[str, Any]:
        """With ``partner_model``: the actor's partner-prediction head over the A actions."""
        return {"partner_model": num_actions} if self.options.partner_model else {}

    def extra_loss(self, name: str, minibatch: dict, outputs: dict) -> tuple[torch.Tensor, dict] | None:
        """With ``partner_model``: cross-entropy of the predicted partner action against the
        partner's actual action at the same step (``other_actions``), weighted like the PPO loss.

        Returns:
            ``(partner_model_coef * CE, {"e3t/partner_ce", "e3t/partner_accuracy"})`` or None.
        """
        if not self.options.partner_model:
            return None
        policy = outputs["policy"]
        h = minibatch["h_actor"] if policy.recurrent else None
        with policy._autocast():
            feats = policy.actor.trunk.sequence(
                minibatch["obs"], h, minibatch["starts"], columns=minibatch.get("obs_columns")
            )
            logits = policy.actor.partner(feats).float()
        target = minibatch["other_actions"][..., 0]
        ce = F.cross_entropy(logits.flatten(0, 1), target.flatten(), reduction="none").view_as(target)
        hit = (logits.argmax(-1) == target).float()
        w = minibatch.get("weight")
        if w is None:
            w = torch.ones_like(ce)
        w = w / w.sum().clamp_min(1e-8)
        loss = (ce * w).sum()
        stats = {"e3t/partner_ce": loss.detach(), "e3t/partner_accuracy": (hit * w).sum()}
        return self.options.partner_model_coef * loss, stats

    def build_learners(self, make_policy: Callable[[], Policy]) -> dict[str, Policy]:
        """The ego."""
        return {"ego": make_policy()}

    def build_partners(self, make_policy: Callable[[], Policy]) -> dict[str, Any]:
        """The mixture partner around its own randomly initialised copy of the ego's network."""
        self.partner = EpsilonMixtureAgent(make_policy(), self.options.epsilon)
        return {"partner": self.partner}

    def arms(self) -> list[Arm]:
        """The ego in seat 0 or 1 (every seat for n > 2), the mixture partner in the others."""
        return ego_partner_arms("ego", "partner", self.num_agents)

    def eval_seats(self, learners: list[str], partners: list[str]) -> list[str]:
        """The ego with itself (self-play), like SP; ZSC is measured by the benchmark's partners."""
        return [learners[0]] * self.num_agents

    def after_iteration(self, iteration: int, env_steps: int, stats: dict[str, float], episodes: Any) -> None:
        """Polyak step of the partner towards the ego (:func:`polyak_`); logs ``e3t/blends``."""
        polyak_(self.partner.policy, self.learners["ego"], self.options.copy_factor)
        self.blends += 1
        stats["e3t/blends"] = self.blends

    def state_dict(self) -> dict[str, Any]:
        """The partner's weights (tensors) and the number of Polyak steps done."""
        weights = {k: v.detach().clone() for k, v in self.partner.policy.state_dict().items()}
        return {"partner": weights, "blends": self.blends}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (weights moved to the partner's device)."""
        self.partner.policy.load_state_dict(state["partner"])
        self.blends = int(state["blends"])
