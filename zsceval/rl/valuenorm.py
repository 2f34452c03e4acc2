"""Running normalization of value targets (MAPPO's ``ValueNorm``; no PopArt output rescaling)."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["ValueNorm"]


class ValueNorm(nn.Module):
    """Debiased exponential running mean and variance of value targets (Yu et al. 2022, MAPPO).

    The critic predicts *normalized* values; targets are normalized with the running statistics
    and predictions are denormalized before GAE. Unlike PopArt, the critic's last layer is not
    rescaled when the statistics move.

    Args:
        beta: EMA weight of the old statistics (MAPPO: 0.99999).
        epsilon: floor of the debiasing term (MAPPO: 1e-5).
        min_var: floor of the variance (MAPPO: 1e-2).
    """

    def __init__(self, beta: float = 0.99999, epsilon: float = 1e-5, min_var: float = 1e-2) -> None:
        super().__init__()
        self.beta, self.epsilon, self.min_var = beta, epsilon, min_var
        self.register_buffer("running_mean", torch.zeros((), dtype=torch.float64))
        self.register_buffer("running_mean_sq", torch.zeros((), dtype=torch.float64))
        self.register_buffer("debiasing_term", torch.zeros((), dtype=torch.float64))

    def mean_var(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Debiased ``(mean, var)`` as float32 scalars."""
        debias = self.debiasing_term.clamp(min=self.epsilon)
        mean = self.running_mean / debias
        var = (self.running_mean_sq / debias - mean**2).clamp(min=self.min_var)
        return mean.float(), var.float()

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Fold a batch of (unnormalized) targets ``x`` (any shape, float) into the statistics."""
        x = x.detach().double()
        self.running_mean.mul_(self.beta).add_(x.mean() * (1 - self.beta))
        self.running_mean_sq.mul_(self.beta).add_((x**2).mean() * (1 - self.beta))
        self.debiasing_term.mul_(self.beta).add_(1 - self.beta)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        """``(x - mean) / std``."""
        mean, var = self.mean_var()
        return (x - mean) / var.sqrt()

    def denormalize(self, x: torch.Tensor) -> torch.Tensor:
        """``x * std + mean``."""
        mean, var = self.mean_var()
        return x * var.sqrt() + mean
