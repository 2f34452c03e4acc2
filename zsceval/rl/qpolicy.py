"""A Q-network agent: per-agent action values, acting epsilon-greedily over the available actions.

The value-based core (:mod:`zsceval.rl.pqn`) trains it; frozen, it acts greedily. It reuses the
:class:`~zsceval.rl.policy.Policy` networks and spec: the actor network's head outputs the Q-values
``Q(o, .) float32 [N, A]`` (with ``model.layer_norm`` for PQN's LayerNorm networks), so a
:class:`~zsceval.rl.population.pool.PolicyPool` stacks Q-networks like any policy. The critic is
built by the shared class but never used or trained.
"""

from __future__ import annotations

from typing import Any

import torch

from zsceval.rl.agent import ActOutput, register_agent
from zsceval.rl.networks import masked_logits
from zsceval.rl.policy import Policy

__all__ = ["QPolicy", "epsilon_greedy", "greedy_probs"]


def epsilon_greedy(
    q: torch.Tensor,
    avail: torch.Tensor | None,
    epsilon: float,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Epsilon-greedy actions over the available actions (JaxMARL PQN's exploration).

    With probability ``epsilon`` a row takes a uniformly random *available* action, otherwise the
    arg-max of its masked Q-values. One uniform draw ``[N]`` and one ``[N, A]`` are taken from
    ``generator`` when ``epsilon > 0`` (none when it is 0).

    Args:
        q: ``float32 [N, A]`` action values.
        avail: ``bool [N, A]`` available actions, or None (all).
        epsilon: exploration probability in [0, 1].
        generator: torch generator on ``q.device``.

    Returns:
        ``(actions int64 [N], log_probs float32 [N])``: the log-probability of each action under the
        epsilon-greedy distribution (0 when greedy).
    """
    greedy = masked_logits(q, avail).argmax(-1)
    if epsilon <= 0:
        return greedy, torch.zeros(q.shape[0], device=q.device)
    probs = greedy_probs(q, avail, epsilon)
    explore = torch.rand(q.shape[0], generator=generator, device=q.device) < epsilon
    u = torch.rand(q.shape, generator=generator, device=q.device)
    allowed = torch.ones_like(q, dtype=torch.bool) if avail is None else avail
    random = torch.where(allowed, u, -1.0).argmax(-1)  # uniform over the allowed actions
    actions = torch.where(explore, random, greedy)
    return actions, probs.gather(-1, actions.unsqueeze(-1)).squeeze(-1).log()


def greedy_probs(q: torch.Tensor, avail: torch.Tensor | None, epsilon: float) -> torch.Tensor:
    """``float32 [N, A]`` action probabilities of the epsilon-greedy policy:
    ``(1 - epsilon) * [a = argmax] + epsilon / |available|`` on available actions, 0 elsewhere."""
    allowed = torch.ones_like(q, dtype=torch.bool) if avail is None else avail
    greedy = masked_logits(q, avail).argmax(-1)
    probs = allowed.float() * (epsilon / allowed.sum(-1, keepdim=True).clamp(min=1))
    return probs.scatter_add(-1, greedy.unsqueeze(-1), torch.full_like(probs[:, :1], 1.0 - epsilon))


@register_agent("q")
class QPolicy(Policy):
    """Per-agent Q-network ``Q(o_i, .)`` (feed-forward), registered as agent class ``q``.

    Attributes:
        epsilon: exploration probability while acting; the value-based core sets it during its
            rollouts and resets it to 0, so a saved or frozen Q-network acts greedily.

    Args:
        spec: from :func:`zsceval.rl.policy.network_spec` (``model.recurrent`` must be false).

    Raises:
        ValueError: a recurrent spec (PQN's networks are feed-forward).
    """

    def __init__(self, spec: dict[str, Any]) -> None:
        if spec["model"].get("recurrent"):
            raise ValueError(
                "a Q-network is feed-forward: set model.recurrent=false for value-based algorithms"
            )
        super().__init__(spec)
        self.epsilon = 0.0

    def q_values(self, obs: torch.Tensor, starts: torch.Tensor | None = None) -> torch.Tensor:
        """``Q(o, .) float32 [N, A]`` of ``obs [N, *obs_shape]``, with gradients."""
        with self._autocast():
            feats, _ = self.actor.trunk.step(obs, None, starts)
            q = self.actor.out(feats)
        return q.float()

    @torch.no_grad()
    def act(
        self,
        obs: torch.Tensor,
        avail: torch.Tensor | None,
        h: torch.Tensor,
        starts: torch.Tensor,
        generator: torch.Generator | None = None,
        deterministic: bool = False,
    ) -> ActOutput:
        """Epsilon-greedy actions (greedy when ``deterministic`` or ``epsilon`` is 0).

        Returns:
            :class:`~zsceval.rl.agent.ActOutput` with ``extras["q"] float32 [N, A]``.
        """
        q = self.q_values(obs, starts)
        eps = 0.0 if deterministic else float(self.epsilon)
        actions, logp = epsilon_greedy(q, avail, eps, generator)
        return ActOutput(actions, logp, h, {"q": q})
