"""A composite agent that plays one pool member per episode, drawn at every episode start.

A :class:`MixtureAgent` turns a population (a :class:`~zsceval.rl.population.pool.PolicyPool`) into
one agent: saved with one checkpoint entry (``{"class": "mixture", "spec": ...}``) and evaluated
as a partner like any policy. At each row's episode start it draws a member with the mixture's
probabilities and keeps it until the row's next episode start.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from zsceval.rl.agent import ActOutput, register_agent
from zsceval.rl.population.pool import PolicyPool

__all__ = ["MixtureAgent"]

_MAX_MEMBERS = 2**24
"""Member indices are kept in a float32 state column, exact below 2**24."""


@register_agent("mixture")
class MixtureAgent(nn.Module):
    """Plays pool member ``m ~ probs`` for a whole episode, redrawn at every episode start.

    State: ``float32 [rows, 1 + hidden]``; column 0 is the row's member index (-1 before the
    first draw), columns ``1:`` the member's recurrent state (``hidden`` = 0 when feed-forward).

    Args:
        pool: the members (at least one).
        probs: per-member probabilities ``[M]`` (non-negative, normalized here); default uniform.

    Raises:
        ValueError: empty pool, too many members, or invalid probabilities.
    """

    def __init__(self, pool: PolicyPool, probs: Sequence[float] | torch.Tensor | None = None) -> None:
        super().__init__()
        M = len(pool)
        if M == 0:
            raise ValueError("a mixture needs at least one pool member")
        if M >= _MAX_MEMBERS:
            raise ValueError(f"a mixture holds fewer than {_MAX_MEMBERS} members, got {M}")
        p = torch.full((M,), 1.0 / M) if probs is None else torch.as_tensor(probs, dtype=torch.float64)
        if p.shape != (M,) or not bool(torch.isfinite(p).all()) or bool((p < 0).any()) or float(p.sum()) <= 0:
            raise ValueError(f"probs must be {M} finite non-negative numbers, sum > 0; got {probs}")
        self.pool = pool
        self.register_buffer("probs", (p / p.sum()).to(torch.float32).to(pool.device))

    @property
    def spec(self) -> dict[str, Any]:
        """JSON-able description for :meth:`from_spec`: member spec, member count, probabilities, names."""
        return {
            "member_spec": self.pool.spec,
            "members": len(self.pool),
            "probs": [float(x) for x in self.probs.tolist()],
            "names": list(self.pool.names),
        }

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> MixtureAgent:
        """An agent with all-zero members shaped by ``spec`` (fill it with ``load_state_dict``)."""
        pool = PolicyPool.empty(spec["member_spec"], int(spec["members"]), spec.get("names"))
        return cls(pool, spec["probs"])

    def initial_state(self, rows: int, device: torch.device | str) -> torch.Tensor:
        """``float32 [rows, 1 + hidden]``: member -1 (drawn at the first :meth:`act`), zero state."""
        state = torch.zeros(rows, 1 + self.pool.hidden_size, device=device)
        state[:, 0] = -1
        return state

    def draw(
        self, rows: int, generator: torch.Generator | None = None, noise: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Members ``int64 [rows]`` drawn i.i.d. from ``probs`` (one uniform per row, inverse CDF).

        Members with probability 0 are never drawn. ``noise``: ``float64 [rows]`` uniforms used
        instead of drawing them from ``generator`` (``torch.rand(rows, generator=g,
        dtype=torch.float64)`` gives the same members).
        """
        cdf = torch.cumsum(self.probs.double(), 0)
        cdf = cdf / cdf[-1]
        u = noise
        if u is None:
            u = torch.rand(rows, generator=generator, device=self.probs.device, dtype=torch.float64)
        return torch.searchsorted(cdf, u, right=True).clamp_(max=len(self.pool) - 1)

    @torch.no_grad()
    def act(
        self,
        obs: torch.Tensor,
        avail: torch.Tensor | None,
        state: torch.Tensor,
        starts: torch.Tensor,
        generator: torch.Generator | None = None,
        deterministic: bool = False,
        noise: torch.Tensor | None = None,
        member_noise: torch.Tensor | None = None,
    ) -> ActOutput:
        """Act for N rows with each row's member; rows at an episode start draw a new member first.

        From ``generator`` it takes, in this order, N uniforms for the member draw (taken at every
        call, whether or not a row starts, also when ``deterministic``) and then the action draw
        of :meth:`PolicyPool.act`. Static shapes and no host synchronization inside
        ``torch.compile`` (the pool's ``static`` strategy), where the draws come as inputs.

        Args:
            obs: ``[N, *obs_shape]``; avail: ``bool [N, A]`` or None.
            state: ``float32 [N, 1 + hidden]`` from :meth:`initial_state` or the previous call.
            starts: ``bool [N]`` rows whose episode starts at this step.
            generator: torch generator on the agent's device; None uses the global one.
            deterministic: arg-max actions (the member draw stays random).
            noise: ``float32 [N, A]`` uniforms of the action draw, instead of ``generator``.
            member_noise: ``float64 [N]`` uniforms of the member draw (:meth:`draw`), instead of
                ``generator``.

        Returns:
            :class:`~zsceval.rl.agent.ActOutput` with ``state float32 [N, 1 + hidden]`` and
            ``extras["member"] int64 [N]`` (the member that acted for each row).
        """
        drawn = self.draw(obs.shape[0], generator, member_noise)
        current = state[:, 0].long()
        member = torch.where(starts | (current < 0), drawn, current)
        out = self.pool.act(obs, avail, state[:, 1:], starts, member, generator, deterministic, noise)
        new_state = torch.cat([member.to(state.dtype).unsqueeze(1), out.state], dim=1)
        return ActOutput(out.actions, out.log_probs, new_state, {**out.extras, "member": member})

    def extra_repr(self) -> str:
        return f"members={len(self.pool)}"
