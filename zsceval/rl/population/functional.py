"""Shared machinery of stacked members: functional forwards and the grouping of rows by member.

The forwards are modules whose ``forward`` runs a :class:`~zsceval.rl.policy.Policy`'s networks
(its own encoder and head modules) with weights supplied by :func:`torch.func.functional_call`;
the GRU cell is written out with :func:`~torch.nn.functional.linear` (the formula of
``nn.GRUCell``) because ``aten::gru_cell`` has no vmap batching rule (vmap would fall back to a
slow per-member loop).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn
from torch.nn import functional as F

from zsceval.rl.networks import ObsColumns
from zsceval.rl.policy import Policy

MAX_PADDING = 2.0
"""The vmapped forward computes ``present members x largest group`` rows; above this multiple of
the real row count callers loop over members instead."""
CPU_LOOP_ROWS = 1024
"""On CPU, members with at least this many rows each are evaluated one after another."""


def gru_cell(gru: nn.GRUCell, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """``nn.GRUCell`` step ``h' = (1 - z) * n + z * h`` with ``gru``'s weights (vmap-friendly)."""
    r_i, z_i, n_i = F.linear(x, gru.weight_ih, gru.bias_ih).chunk(3, -1)
    r_h, z_h, n_h = F.linear(h, gru.weight_hh, gru.bias_hh).chunk(3, -1)
    r = torch.sigmoid(r_i + r_h)
    z = torch.sigmoid(z_i + z_h)
    n = torch.tanh(n_i + r * n_h)
    return (1 - z) * n + z * h


class _Template(nn.Module):
    """Holds a policy's ``actor`` and ``critic`` under the same names, so the keys of
    ``Policy.state_dict()`` address its parameters in ``functional_call``."""

    def __init__(self, policy: Policy) -> None:
        super().__init__()
        self.actor = policy.actor
        self.critic = policy.critic

    def _net(self, side: str) -> nn.Module:
        return self.actor if side == "actor" else self.critic


class StepForward(_Template):
    """One env step of the actor or critic: ``(side, obs [N, ...], h [N, hidden], starts bool [N])
    -> (out float32 [N, D], h float32 [N, hidden])`` (as ``Policy.logits`` / ``Policy.value``);
    with ``columns``, ``obs`` is ``float32 [N, S]``, its varying entries
    (:class:`~zsceval.rl.networks.ObsColumns`)."""

    def forward(
        self, side: str, obs: torch.Tensor, h: torch.Tensor, starts: torch.Tensor,
        columns: ObsColumns | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        net = self._net(side)
        x = net.trunk.encoder(obs, columns=columns)
        if net.trunk.gru is None:
            return net.out(x).float(), h
        h = gru_cell(net.trunk.gru, x, h * (~starts).unsqueeze(-1).to(h.dtype))
        return net.out(h).float(), h.float()


class SequenceForward(_Template):
    """A chunk of L steps of actor and critic (as ``Policy.evaluate`` before the softmax).

    ``(obs [L, G, ...], critic_obs [L, G, ...], h_actor, h_critic [G, hidden], starts bool [L, G])
    -> (logits float32 [L, G, A], values float32 [L, G])``. With ``columns`` (``critic_columns``),
    ``obs`` (``critic_obs``) is ``float32 [L, G, S]``, its varying entries
    (:class:`~zsceval.rl.networks.ObsColumns`).
    """

    def _sequence(
        self, side: str, obs: torch.Tensor, h: torch.Tensor, starts: torch.Tensor,
        columns: ObsColumns | None = None,
    ) -> torch.Tensor:  # fmt: skip
        net = self._net(side)
        L, G = obs.shape[:2]
        x = net.trunk.encoder(obs.reshape(L * G, *obs.shape[2:]), columns=columns)
        if net.trunk.gru is None:
            return net.out(x).reshape(L, G, -1).float()
        x = x.reshape(L, G, -1)
        keep = (~starts).unsqueeze(-1)
        outs = []
        for t in range(L):
            h = gru_cell(net.trunk.gru, x[t], h * keep[t].to(h.dtype))
            outs.append(h)
        return net.out(torch.stack(outs)).float()

    def forward(
        self,
        obs: torch.Tensor,
        critic_obs: torch.Tensor,
        h_actor: torch.Tensor,
        h_critic: torch.Tensor,
        starts: torch.Tensor,
        columns: ObsColumns | None = None,
        critic_columns: ObsColumns | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self._sequence("actor", obs, h_actor, starts, columns)
        values = self._sequence("critic", critic_obs, h_critic, starts, critic_columns).squeeze(-1)
        return logits, values


def static_slots(member: torch.Tensor, num_members: int, capacity: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows grouped by member into ``capacity`` slots per member, with static shapes.

    The sync-free counterpart of :meth:`Layout.padded` (no host read of the group sizes, so it
    traces into one ``torch.compile`` graph): every member gets ``capacity`` slots whatever its
    row count, a member's unused slots repeat its last row (or row 0 for a member without rows).

    Args:
        member: ``int64 [N]`` member of each row, in ``[0, num_members]``; rows of member
            ``num_members`` (e.g. rows driven by someone else) get no slot: their ``pos`` points
            past the ``num_members * capacity`` slots.
        num_members: M.
        capacity: C, slots per member; at least the largest group (``N`` is always enough).
            Rows ranked beyond C in their group would read another group's slot: the caller
            guarantees the bound (nothing here checks it, as that would read the counts).

    Returns:
        ``(idx int64 [M * C], pos int64 [N])``: slot ``m * C + r`` holds row ``idx[m * C + r]``
        (member m's r-th row), and row i's output is slot ``pos[i]``.
    """
    N, M, C = member.shape[0], num_members, capacity
    device = member.device
    counts = (member.unsqueeze(0) == torch.arange(M + 1, device=device).unsqueeze(1)).sum(1)  # [M + 1]
    first = torch.cumsum(counts, 0) - counts
    order = torch.argsort(member, stable=True)
    rank = torch.arange(C, device=device)
    slot = first[:M].unsqueeze(1) + torch.minimum(rank, counts[:M].unsqueeze(1) - 1)
    idx = order.index_select(0, slot.reshape(-1).clamp(0, max(N - 1, 0)))
    group = member.index_select(0, order)
    sorted_pos = group * C + torch.arange(N, device=device) - first.index_select(0, group)
    pos = torch.empty_like(order).scatter_(0, order, sorted_pos)
    return idx, pos


@dataclass
class Layout:
    """Rows grouped by member for one batched forward.

    Attributes:
        counts: rows per member (length M, host ints).
        order: ``int64 [N]`` row indices sorted by member (stable).
        present: members with at least one row (host ints, ascending).
        largest: the largest group (G).
    """

    counts: list[int]
    order: torch.Tensor
    present: list[int]
    largest: int
    _padded: tuple[torch.Tensor, torch.Tensor] | None = field(default=None, repr=False, compare=False)
    _present_index: torch.Tensor | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, member: torch.Tensor, num_members: int) -> Layout:
        """Group ``member int64 [N]``; one host synchronization.

        Raises:
            IndexError: a member index outside ``[0, num_members)``.
        """
        M = num_members
        bad = (member < 0) | (member >= M)
        counts = torch.bincount(torch.where(bad, M, member), minlength=M + 1).tolist()
        if counts[M]:
            raise IndexError(f"member assignment outside [0, {M}) for {counts[M]} rows")
        counts = counts[:M]
        present = [m for m, c in enumerate(counts) if c]
        return cls(counts, torch.argsort(member, stable=True), present, max(counts, default=0))

    def rows_of(self) -> list[tuple[int, torch.Tensor]]:
        """``[(member, row indices int64 [count])]`` for the present members."""
        out, start = [], 0
        for m in self.present:
            out.append((m, self.order[start : start + self.counts[m]]))
            start += self.counts[m]
        return out

    def padded(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(idx int64 [P * G], pos int64 [N])`` for P present members padded to G rows each.

        Slot ``p * G + r`` holds member ``present[p]``'s r-th row (``idx``), or repeats the group's
        first row when the group has fewer rows; row ``i``'s output is slot ``pos[i]``. Computed
        once per layout (a layout kept across steps costs no host synchronization here).
        """
        if self._padded is None:
            self._padded = self._compute_padded()
        return self._padded

    def present_index(self) -> torch.Tensor:
        """``int64 [P]`` the present members on the rows' device (built once per layout)."""
        if self._present_index is None:
            self._present_index = torch.tensor(self.present, device=self.order.device)
        return self._present_index

    def _compute_padded(self) -> tuple[torch.Tensor, torch.Tensor]:
        device = self.order.device
        P, G = len(self.present), self.largest
        counts_t = torch.tensor([self.counts[m] for m in self.present], device=device)
        first = torch.cumsum(counts_t, 0) - counts_t
        rank = torch.arange(G, device=device)
        slot = first.unsqueeze(1) + torch.minimum(rank, counts_t.unsqueeze(1) - 1)
        idx = self.order[slot.reshape(-1)]
        group = torch.repeat_interleave(torch.arange(P, device=device), counts_t)
        pos = torch.empty_like(self.order)
        pos[self.order] = group * G + torch.arange(self.order.numel(), device=device) - first[group]
        return idx, pos

    def strategy(self, kind: str, device: torch.device) -> str:
        """``loop`` when padding would exceed :data:`MAX_PADDING`, for a CNN on CPU (vmapped
        grouped convolutions are ~2.5x slower than a loop there) or for groups of at least
        :data:`CPU_LOOP_ROWS` rows per member on CPU (training minibatches: each member's matmuls
        already fill the cores, and the vmapped batched matmuls were ~1.3x slower, measured with
        8 quick MLP members of 4,000 rows each), else ``vmap``."""
        rows = sum(self.counts)
        if len(self.present) * self.largest > MAX_PADDING * rows:
            return "loop"
        if device.type == "cpu" and (kind == "cnn" or rows >= CPU_LOOP_ROWS * len(self.present)):
            return "loop"
        return "vmap"
