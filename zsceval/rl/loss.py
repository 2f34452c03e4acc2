"""The MAPPO losses for one minibatch (Yu et al. 2022; ZSC-Eval's defaults)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.nn import functional as F

__all__ = ["PPOLoss", "ppo_loss"]


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
) -> PPOLoss:
    """Clipped policy loss, clipped Huber value loss and entropy bonus.

    All tensors have the same shape (one entry per sample). Values and targets are in the value
    normalizer's units. Means are taken over the samples, or weighted by ``weight`` (``float32``,
    same shape, 0 for samples that do not belong to this learner: a recurrent chunk may hold
    another actor's steps after an episode start).

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
    """
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
    with torch.no_grad():
        approx_kl = mean((ratio - 1) - log_ratio)
        clip_fraction = mean(((ratio - 1.0).abs() > clip).float())
    return PPOLoss(total, policy.detach(), value.detach(), ent.detach(), approx_kl, clip_fraction)
