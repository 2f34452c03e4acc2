"""Compiled graphs of the PPO core (``run.compile: full``): per learner, its critic value
(collection) and its minibatch step, each compiled with ``torch.compile(fullgraph=True,
dynamic=False)``.

The minibatch step is two graphs, :func:`~zsceval.rl.loss.minibatch_loss` (the forward; its
backward through AOT autograd) and :func:`~zsceval.rl.loss.clip_and_step` (clipping and the
optimizer steps): dynamo does not trace ``backward()``, which runs the loss graph's compiled
backward between them. The learner groups use them (:class:`zsceval.rl.learner_group.SeparateLearners`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from zsceval.rl.config import PPOConfig
from zsceval.rl.loss import clip_and_step, minibatch_loss
from zsceval.rl.policy import Policy

__all__ = ["CompiledLearner", "compile_learner"]


@dataclass
class CompiledLearner:
    """One learner's compiled graphs.

    Attributes:
        loss: ``(minibatch, entropy_coef float32 []) -> (total, statistics, outputs)``, the compiled
            :func:`~zsceval.rl.loss.minibatch_loss` of the learner.
        step: ``() -> [actor norm, critic norm]``: clip the learner's actor and critic gradients at
            ``ppo.max_grad_norm`` apart and step its optimizers (:func:`~zsceval.rl.loss.clip_and_step`).
        value: the compiled :meth:`Policy.value <zsceval.rl.policy.Policy.value>`.
    """

    loss: Callable
    step: Callable
    value: Callable


def compile_learner(policy: Policy, optimizers: Sequence[torch.optim.Optimizer], cfg: PPOConfig,
                    backend: str = "inductor", mode: str | None = None) -> CompiledLearner:  # fmt: skip
    """Compile one learner's value and minibatch step.

    Shapes are static for a learner that drives every row (self-play): minibatches of
    ``ceil(S / num_minibatches)`` sequences (and a smaller last one if S does not divide). A
    learner whose row count changes per iteration (population seatings) recompiles per shape until
    dynamo's cache limit, then runs eagerly.

    Args:
        policy: the learner.
        optimizers: its optimizers (actor, critic, and a plug-in's extra), stepped in this order.
        cfg: ``ppo`` (the loss's coefficients, ``max_grad_norm``).
        backend: ``torch.compile`` backend (``inductor``; ``aot_eager`` in tests).
        mode: ``torch.compile`` mode of the value graph (``"reduce-overhead"``: CUDA graphs, on
            CUDA only); the minibatch step uses the default mode.
    """
    opts = dict(fullgraph=True, dynamic=False, backend=backend)
    groups = (list(policy.actor.parameters()), list(policy.critic.parameters()))
    optimizers = list(optimizers)

    def loss(mb, coef, p=policy, cfg=cfg):
        return minibatch_loss(p, mb, coef, cfg)

    def step(groups=groups, optimizers=optimizers, max_norm=cfg.max_grad_norm):
        return clip_and_step(groups, optimizers, max_norm, raw_step=True)

    return CompiledLearner(
        torch.compile(loss, **opts),
        torch.compile(step, **opts),
        torch.compile(policy.value, mode=mode, **opts),
    )
