"""Trajectory Diversity (TrajeDi; Lupu et al., ICML 2021), as ZSC-Eval trains it, without its defects.

Method. Stage 1 trains N self-play members and, besides PPO, maximises the Jensen-Shannon
divergence of their trajectory distributions,

    JSD = (1/N) sum_i E_{tau ~ pi_i} [ log pi_i(tau) - log pi_bar(tau) ],
    pi_bar(tau) = (1/N) sum_k pi_k(tau),

with TrajeDi's *local* trajectories: the log-likelihood of the action history around step t,
discounted by its distance to t,

    l~_k(t) = sum_{t'} gamma^{|t - t'|} log pi_k(a_t' | o_t'),   gamma = 0.5,

summed over the steps of the same episode in the rollout. Every term is a log-probability, so the
estimator stays in log space (``log pi_bar = logsumexp_k l~_k - log N``) and cannot overflow. The
gradient of each member's expectation has a direct part and a score-function part
(``(d - b) * grad l~_i`` with the baseline b = the member's mean d), and every member's data counts
for every member through pi_bar (the full population, not one sampled partner). After each rollout
the members take one step on ``-weight * JSD`` (weight 0.1) with their PPO actor optimizer, then
the normal PPO update, as ZSC-Eval's separate JSD actor step (``traj_use_co_update`` off;
``zsceval/algorithms/population/traj.py: Traj_Trainer.train`` then ``r_mappo.py:
R_MAPPO.update_actor``; docs/reference-protocol.md "TrajeDi"). The step shares Adam's moments with PPO's
updates (:meth:`~zsceval.rl.ppo.PPOCore.actor_step`), so it scales with the weight against
PPO's gradients; a separate Adam would move each weight about one learning rate whatever the
weight. As there, each member's actor gradient is clipped at ``ppo.max_grad_norm``; unlike there
(defect 3), gradients are zeroed before the step, so none are left from the last PPO minibatch.

Stage 2 is FCP's: a recurrent ego against the members' init / mid / final checkpoints, uniform arms.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch

from zsceval.algorithms.base.stage1 import PopulationSelfPlay, member_log_probs
from zsceval.algorithms.base.stage2 import PopulationEgo
from zsceval.registry import register
from zsceval.rl.rollout import Rollout


def discounted_window(log_probs: torch.Tensor, starts: torch.Tensor, gamma: float) -> torch.Tensor:
    """Local trajectory log-likelihood ``l~(t) = sum_{t'} gamma^|t-t'| l(t')`` within each episode.

    Args:
        log_probs: ``float32 [..., T, R]`` per-step log-probabilities (with gradients).
        starts: ``bool [T, R]`` episode starts (a window never crosses one, nor the rollout's ends).
        gamma: discount per step of distance.

    Returns:
        ``float32 [..., T, R]``, differentiable.
    """
    T = log_probs.shape[-2]
    keep = (~starts).to(log_probs.dtype)  # 0 where step t starts an episode
    forward, backward = [], [None] * T
    acc = torch.zeros_like(log_probs[..., 0, :])
    for t in range(T):
        acc = log_probs[..., t, :] + gamma * acc * keep[t]
        forward.append(acc)
    acc = torch.zeros_like(acc)
    for t in range(T - 1, -1, -1):
        nxt = keep[t + 1] if t + 1 < T else torch.zeros_like(keep[0])
        acc = log_probs[..., t, :] + gamma * acc * nxt
        backward[t] = acc
    return torch.stack(forward, -2) + torch.stack(backward, -2) - log_probs


def trajectory_jsd(
    log_probs: torch.Tensor, owner: torch.Tensor, starts: torch.Tensor, gamma: float, baseline: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """TrajeDi's JSD estimate over local trajectories and its surrogate for gradient ascent.

    Args:
        log_probs: ``float32 [K, T, R]``: ``log pi_k(a_t | o_t)`` of every member k on every stored
            step (with gradients for the members being trained).
        owner: ``int64 [T, R]`` the member that drove (and so sampled) each step.
        starts: ``bool [T, R]`` episode starts.
        gamma: the local-trajectory discount (0.5).
        baseline: subtract each member's mean ``d`` in the score-function term (variance reduction;
            it does not change the expected gradient).

    Returns:
        ``(jsd, surrogate)``: the estimate (no gradient) and a scalar whose gradient is the
        estimator's gradient of the JSD; each member's samples are averaged, then the members.
    """
    K = log_probs.shape[0]
    local = discounted_window(log_probs, starts, gamma)
    log_mix = torch.logsumexp(local, 0) - math.log(K)
    own = local.gather(0, owner.unsqueeze(0)).squeeze(0)
    d = own - log_mix
    jsd_terms, surrogate_terms = [], []
    for i in torch.unique(owner).tolist():
        m = owner == i
        di, oi = d[m], own[m]
        b = di.detach().mean() if baseline else 0.0
        jsd_terms.append(di.detach().mean())
        surrogate_terms.append((di + (di.detach() - b) * oi).mean())
    return torch.stack(jsd_terms).mean(), torch.stack(surrogate_terms).mean()


@dataclasses.dataclass(frozen=True)
class TrajeDiStage1Options:
    """``algo.*`` options of TrajeDi stage 1."""

    jsd_weight: float = 0.1
    """Weight of the JSD term (ZSC-Eval ``traj_entropy_alpha``)."""
    jsd_gamma: float = 0.5
    """Discount of the local trajectory (ZSC-Eval ``traj_gamma``)."""
    jsd_games: int = 0
    """Games per member the JSD step uses from each rollout (0: all): a uniform subsample, so an
    unbiased estimate at lower cost."""


@register("trajedi-stage1", "TrajeDi stage 1: N self-play members with a trajectory-diversity (JSD) term.")
class TrajeDiStage1(PopulationSelfPlay):
    """Self-play members that also ascend the population's trajectory JSD."""

    Options = TrajeDiStage1Options
    rollout_fields = ("obs", "avail", "actions", "starts", "actor")
    paper_entropy_milestones = (0.0, 6e6, 1e7)

    @classmethod
    def preset_config(cls, preset: str, cfg: Any) -> dict[str, Any]:
        """The population's budget (:class:`PopulationSelfPlay`); ``quick``: the JSD step on 32
        games per member (a subsample of the 512)."""
        out = super().preset_config(preset, cfg)
        if preset == "quick":
            out["algo"] = {"jsd_games": 32}
        return out

    def _rows(self, rollout: Rollout) -> torch.Tensor:
        """Flat rows (``game * n + seat``) used by the JSD step."""
        B, n = rollout.B, rollout.n
        games = torch.arange(B, device=rollout.actions.device)
        if self.options.jsd_games > 0:  # game g plays member g mod N: keep each member's first games
            games = games[games // self.num_arms < self.options.jsd_games]
        return (games.unsqueeze(1) * n + torch.arange(n, device=games.device)).reshape(-1)

    def on_rollout(self, rollout: Rollout, episodes: Any) -> None:
        """One step of every member's PPO actor optimizer on ``-jsd_weight * JSD`` (gradients zeroed
        before and after, per-member clipping; :meth:`~zsceval.rl.ppo.PPOCore.actor_step`).

        Raises:
            RuntimeError: the learning core has no ``actor_step`` (TrajeDi needs the ``ppo`` core).
        """
        core = self.learning_core
        if not hasattr(core, "actor_step"):
            raise RuntimeError("TrajeDi's JSD step needs the ppo core's actor optimizers (learning_core)")
        flat, T = rollout.flat, rollout.T
        rows = self._rows(rollout)
        pick = lambda x: flat(x)[:T].index_select(1, rows)  # noqa: E731
        policies = list(self.learners.values())
        owner = pick(rollout.actor)
        starts = pick(rollout.starts)
        logp = member_log_probs(
            policies, pick(rollout.obs), pick(rollout.avail), pick(rollout.actions), starts, grad=True
        )
        jsd, surrogate = trajectory_jsd(logp, owner, starts, self.options.jsd_gamma)
        loss = -self.options.jsd_weight * surrogate
        core.actor_step(loss)
        self.last_stats = {"trajedi/jsd": float(jsd), "trajedi/jsd_loss": float(loss.detach())}

    def after_iteration(self, iteration: int, env_steps: int, stats: dict[str, float], episodes: Any) -> None:
        """Log the members' curves and the JSD estimate."""
        super().after_iteration(iteration, env_steps, stats, episodes)
        stats.update(getattr(self, "last_stats", {}))


@register("trajedi", "TrajeDi: recurrent ego vs a trajectory-diverse population (Lupu et al. 2021).")
class TrajeDi(PopulationEgo):
    """The TrajeDi ego: uniform over the (partner, seat) arms of the frozen TrajeDi population."""

    stage1_algo = "trajedi-stage1"
