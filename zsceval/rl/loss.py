"""The MAPPO losses for one minibatch (Yu et al. 2022; ZSC-Eval's defaults) and the clipped
optimizer step of a learner (the two halves of a PPO gradient step, :mod:`zsceval.rl.learner_group`).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch.nn import functional as F

if TYPE_CHECKING:
    from zsceval.rl.config import PPOConfig
    from zsceval.rl.policy import Policy

__all__ = ["PPOLoss", "clip_and_step", "minibatch_loss", "ppo_loss", "ppo_terms"]


@dataclass
class PPOLoss:
    """Loss terms of one minibatch (scalars; ``total`` carries the gradient).

    Attributes:
        total: ``policy - entropy_coef * entropy + value_coef * value``.
        policy: clipped surrogate loss.
        value: (clipped) Huber value loss in normalized units.
        entropy: mean policy entropy (nats).
        approx_kl: mean ``(ratio - 1) - log ratio`` (Schulman's low-variance KL estimate).
        clip_fraction: fraction of samples whose ratio left ``[1 - clip, 1 + clip]``.
    """

    total: torch.Tensor
    policy: torch.Tensor
    value: torch.Tensor
    entropy: torch.Tensor
    approx_kl: torch.Tensor
    clip_fraction: torch.Tensor


def ppo_loss(
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    entropy: torch.Tensor,
    values: torch.Tensor,
    old_values: torch.Tensor,
    targets: torch.Tensor,
    *,
    clip: float,
    entropy_coef: float,
    value_coef: float,
    huber_delta: float,
    clip_value_loss: bool,
    weight: torch.Tensor | None = None,
    groups: tuple[torch.Tensor, int] | None = None,
) -> PPOLoss:
    """Clipped policy loss, clipped Huber value loss and entropy bonus.

    All tensors have the same shape (one entry per sample). Values and targets are in the value
    normalizer's units. Means are taken over the samples, or weighted by ``weight`` (``float32``,
    same shape, 0 for samples that do not belong to this learner: a recurrent chunk may hold
    another actor's steps after an episode start).

    With ``groups = (group, G)`` (``group int64 [S]``: the group of each sample column, samples
    ``[L, S]``; ``weight`` required) each term is a mean per group, ``float32 [G]``, and ``total``
    is the sum of the groups' losses, so that each group gets its own loss's gradient (the learners
    of a stacked update, :mod:`zsceval.rl.stacked_update`).

    Args:
        log_probs: log pi(a|o) under the current policy.
        old_log_probs: log pi_old(a|o) recorded during collection.
        advantages: normalized GAE advantages.
        entropy: policy entropy per sample.
        values: current normalized value predictions.
        old_values: normalized predictions recorded during collection.
        targets: normalized value targets (GAE returns).
        clip: ratio clip epsilon (ZSC-Eval 0.2), also the value-clip range.
        entropy_coef: entropy bonus weight (scheduled).
        value_coef: value loss weight (ZSC-Eval 1).
        huber_delta: Huber delta (ZSC-Eval 10).
        clip_value_loss: use ``max(huber(clipped), huber(unclipped))`` (MAPPO).
        weight: optional sample weights (see above).
        groups: optional sample groups (see above).
    """
    if groups is not None:
        group, count = groups
        per_group = torch.zeros(count, dtype=weight.dtype, device=weight.device).index_add_(
            0, group, weight.sum(0)
        )

        def mean(x: torch.Tensor) -> torch.Tensor:
            sums = torch.zeros(count, dtype=x.dtype, device=x.device).index_add_(
                0, group, (x * weight).sum(0)
            )
            return sums / per_group

    else:
        mean = torch.mean if weight is None else (lambda x: (x * weight).sum() / weight.sum())
    log_ratio = log_probs - old_log_probs
    ratio = log_ratio.exp()
    surr1 = ratio * advantages
    surr2 = ratio.clamp(1.0 - clip, 1.0 + clip) * advantages
    policy = -mean(torch.min(surr1, surr2))
    value_err = F.huber_loss(values, targets, reduction="none", delta=huber_delta)
    if clip_value_loss:
        clipped = old_values + (values - old_values).clamp(-clip, clip)
        value_err = torch.max(value_err, F.huber_loss(clipped, targets, reduction="none", delta=huber_delta))
    value = mean(value_err)
    ent = mean(entropy)
    total = policy - entropy_coef * ent + value_coef * value
    if groups is not None:
        total = total.sum()
    with torch.no_grad():
        approx_kl = mean((ratio - 1) - log_ratio)
        clip_fraction = mean(((ratio - 1.0).abs() > clip).float())
    return PPOLoss(total, policy.detach(), value.detach(), ent.detach(), approx_kl, clip_fraction)


def minibatch_loss(policy: Policy, mb: dict[str, Any], entropy_coef: float | torch.Tensor, cfg: PPOConfig
                   ) -> tuple[torch.Tensor, dict[str, torch.Tensor], dict[str, torch.Tensor]]:  # fmt: skip
    """PPO loss of one minibatch: re-evaluate its actions, clipped policy and value losses, entropy.

    A function of tensors with static shapes (no host read, no data-dependent shape), so
    ``torch.compile(fullgraph=True, dynamic=False)`` traces it as one graph (``run.compile: full``;
    pass ``entropy_coef`` as a 0-dim tensor there, or each new value compiles anew).

    Args:
        policy: the learner.
        mb: the minibatch (:meth:`PPOCore._minibatch <zsceval.rl.ppo.PPOCore._minibatch>`):
            ``obs``/``critic_obs`` ``[L, S, ...]``, ``avail bool [L, S, A]``, ``actions int64
            [L, S]``, ``old_log_probs``, ``old_values``, ``advantages``, ``targets`` ``float32 [L,
            S]``, ``starts bool [L, S]``, ``h_actor``/``h_critic`` ``float32 [S, hidden]``, ``weight
            float32 [L, S]`` or None; optionally ``critic_extra float32 [L, S, E]``,
            ``obs_columns`` and ``active bool [L, S]`` (the samples with more than one available
            action, :meth:`Policy.evaluate <zsceval.rl.policy.Policy.evaluate>`).
        entropy_coef: the entropy bonus coefficient.
        cfg: ``ppo`` (clip, value coefficient, Huber delta, value clipping).

    Returns:
        ``(total loss, statistics, outputs)``: statistics are 0-dim tensors (``policy_loss``,
        ``value_loss``, ``entropy``, ``approx_kl``, ``clip_fraction``); outputs ``log_probs``,
        ``entropy``, ``values`` ``float32 [L, S]`` (for a plug-in's extra loss).
    """
    logp, entropy, values = policy.evaluate(
        mb["obs"], mb["critic_obs"], mb["avail"], mb["actions"],
        mb["h_actor"], mb["h_critic"], mb["starts"], mb.get("critic_extra"), mb.get("obs_columns"),
        mb.get("active"),
    )  # fmt: skip
    total, stats = ppo_terms(mb, logp, entropy, values, entropy_coef, mb["weight"], cfg)
    return total, stats, {"log_probs": logp, "entropy": entropy, "values": values}


def ppo_terms(mb: dict[str, Any], logp: torch.Tensor, entropy: torch.Tensor, values: torch.Tensor,
              entropy_coef: float | torch.Tensor, weight: torch.Tensor | None, cfg: PPOConfig,
              groups: tuple[torch.Tensor, int] | None = None,
              ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:  # fmt: skip
    """:func:`ppo_loss` of a minibatch's re-evaluated ``logp``, ``entropy`` and ``values``
    (``float32 [L, S]``) against its stored ``old_log_probs``, ``advantages``, ``old_values`` and
    ``targets``, with ``cfg``'s clip, value coefficient and Huber delta; ``groups``: as
    :func:`ppo_loss`'s.

    Returns:
        ``(total loss, statistics)``: ``policy_loss``, ``value_loss``, ``entropy``,
        ``approx_kl``, ``clip_fraction``, 0-dim tensors (``float32 [G]`` with ``groups``).
    """
    loss = ppo_loss(
        logp, mb["old_log_probs"], mb["advantages"], entropy, values, mb["old_values"],
        mb["targets"], clip=cfg.clip, entropy_coef=entropy_coef, value_coef=cfg.value_loss_coef,
        huber_delta=cfg.huber_delta, clip_value_loss=cfg.clip_value_loss, weight=weight, groups=groups,
    )  # fmt: skip
    stats = {
        "policy_loss": loss.policy,
        "value_loss": loss.value,
        "entropy": loss.entropy,
        "approx_kl": loss.approx_kl,
        "clip_fraction": loss.clip_fraction,
    }
    return loss.total, stats


def clip_and_step(groups: Sequence[Sequence[torch.nn.Parameter]], optimizers: Iterable[torch.optim.Optimizer],
                  max_norm: float, *, raw_step: bool = False) -> list[torch.Tensor]:  # fmt: skip
    """Clip the gradients of each parameter group at ``max_norm`` apart, then step every optimizer.

    Args:
        groups: parameter groups clipped separately (the actor's, the critic's).
        optimizers: stepped in order after clipping.
        max_norm: gradient-norm limit of each group.
        raw_step: call the optimizer's step function without ``Optimizer.step``'s wrapper, whose
            deliberate ``torch._dynamo.graph_break()`` (around its no-grad switch) would split a
            compiled graph; the wrapper's profiler record and step hooks are skipped. Set for
            ``torch.compile(fullgraph=True)``; the eager update keeps ``opt.step()``.

    Returns:
        ``float32 []`` gradient norm of each group before clipping.
    """
    with torch.no_grad():
        norms = [torch.nn.utils.clip_grad_norm_(g, max_norm) for g in groups]
        for opt in optimizers:
            if raw_step:
                inspect.unwrap(type(opt).step)(opt)
            else:
                opt.step()
    return norms
