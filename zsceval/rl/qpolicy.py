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
from zsceval.rl.networks import ObsColumns, masked_logits
from zsceval.rl.policy import Policy

__all__ = ["QPolicy", "epsilon_greedy", "epsilon_noise", "greedy_probs"]


def epsilon_noise(
    rows: int, num_actions: int, generator: torch.Generator | None = None, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """The uniform draws :func:`epsilon_greedy` takes from ``generator``, as one tensor.

    Returns:
        ``float32 [rows, 1 + num_actions]``: column 0 the exploration draw ``[rows]``, then the
        ``[rows, num_actions]`` draw that picks the random action, drawn in that order (so
        ``epsilon_greedy(..., noise=epsilon_noise(N, A, g))`` equals ``epsilon_greedy(..., g)``
        from the same generator state).
    """
    explore = torch.rand(rows, generator=generator, device=device)
    u = torch.rand(rows, num_actions, generator=generator, device=device)
    return torch.cat([explore.unsqueeze(1), u], 1)


def epsilon_greedy(
    q: torch.Tensor,
    avail: torch.Tensor | None,
    epsilon: float | torch.Tensor,
    generator: torch.Generator | None = None,
    noise: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Epsilon-greedy actions over the available actions (JaxMARL PQN's exploration).

    With probability ``epsilon`` a row takes a uniformly random *available* action, otherwise the
    arg-max of its masked Q-values. One uniform draw ``[N]`` and one ``[N, A]`` are taken from
    ``generator`` when ``epsilon > 0`` (none when it is the number 0). Static shapes throughout,
    no host synchronization: with ``noise`` (and a tensor ``epsilon``, so that a schedule does not
    recompile) it traces as one graph (``torch.compile(fullgraph=True)``).

    Args:
        q: ``float32 [N, A]`` action values.
        avail: ``bool [N, A]`` available actions, or None (all).
        epsilon: exploration probability in [0, 1]: a number, or a 0-dim float tensor (then the
            exploration draws are always used; 0 gives the greedy actions and log-probability 0).
        generator: torch generator on ``q.device``.
        noise: ``float32 [N, 1 + A]`` uniform draws in [0, 1) used instead of ``generator``
            (:func:`epsilon_noise` draws them as this function would).

    Returns:
        ``(actions int64 [N], log_probs float32 [N])``: the log-probability of each action under the
        epsilon-greedy distribution (0 when greedy).
    """
    greedy = masked_logits(q, avail).argmax(-1)
    if not isinstance(epsilon, torch.Tensor) and epsilon <= 0:
        return greedy, torch.zeros(q.shape[0], device=q.device)
    probs = greedy_probs(q, avail, epsilon)
    if noise is None:
        noise = epsilon_noise(q.shape[0], q.shape[1], generator, q.device)
    explore = noise[:, 0] < epsilon
    allowed = torch.ones_like(q, dtype=torch.bool) if avail is None else avail
    random = torch.where(allowed, noise[:, 1:], -1.0).argmax(-1)  # uniform over the allowed actions
    actions = torch.where(explore, random, greedy)
    return actions, probs.gather(-1, actions.unsqueeze(-1)).squeeze(-1).log()


def greedy_probs(q: torch.Tensor, avail: torch.Tensor | None, epsilon: float | torch.Tensor) -> torch.Tensor:
    """``float32 [N, A]`` action probabilities of the epsilon-greedy policy:
    ``(1 - epsilon) * [a = argmax] + epsilon / |available|`` on available actions, 0 elsewhere
    (``epsilon`` a number or a 0-dim float tensor)."""
    allowed = torch.ones_like(q, dtype=torch.bool) if avail is None else avail
    greedy = masked_logits(q, avail).argmax(-1)
    probs = allowed.float() * (epsilon / allowed.sum(-1, keepdim=True).clamp(min=1))
    if isinstance(epsilon, torch.Tensor):
        top = (1.0 - epsilon.to(probs.dtype)).expand_as(probs[:, :1])
    else:
        top = torch.full_like(probs[:, :1], 1.0 - epsilon)
    return probs.scatter_add(-1, greedy.unsqueeze(-1), top)


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

    def q_values(
        self, obs: torch.Tensor, starts: torch.Tensor | None = None, columns: ObsColumns | None = None
    ) -> torch.Tensor:
        """``Q(o, .) float32 [N, A]`` of ``obs [N, *obs_shape]``, with gradients; with ``columns``
        (an ``mlp`` model), ``obs`` is ``float32 [N, S]``, its varying entries
        (:func:`~zsceval.rl.networks.compress_observation`)."""
        with self._autocast():
            feats, _ = self.actor.trunk.step(obs, None, starts, columns=columns)
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
        noise: torch.Tensor | None = None,
        epsilon: float | torch.Tensor | None = None,
    ) -> ActOutput:
        """Epsilon-greedy actions (greedy when ``deterministic`` or ``epsilon`` is 0).

        Args:
            obs, avail, h, starts, generator, deterministic: as :meth:`Policy.act`.
            noise: ``float32 [N, 1 + A]`` uniform draws used instead of ``generator``
                (:func:`epsilon_noise`); a compiled acting graph takes its randomness as an input.
            epsilon: exploration probability instead of :attr:`epsilon` (a number or a 0-dim
                float tensor: a compiled graph that takes it as a tensor does not recompile when
                it changes).

        Returns:
            :class:`~zsceval.rl.agent.ActOutput` with ``extras["q"] float32 [N, A]``.
        """
        q = self.q_values(obs, starts)
        eps = self.epsilon if epsilon is None else epsilon
        eps = 0.0 if deterministic else (eps if isinstance(eps, torch.Tensor) else float(eps))
        actions, logp = epsilon_greedy(q, avail, eps, generator, noise)
        return ActOutput(actions, logp, h, {"q": q})
