"""The batched Overcooked state: a dataclass of tensors with a leading game dimension B.

Cells are addressed by their flat index ``y * W + x``. A soup's contents are an ingredient
*sequence code* (see ``constants.encode_seq``) so that insertion order, ingredient types and counts
are all kept in one small integer; ``tick`` is overcooked-ai's ``cooking_tick`` (-1 while idle).
Objects never lie on floor cells and players stand only on floor cells, so held objects and cell
objects never share a cell.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch

__all__ = ["State"]


@dataclass
class State:
    """Batched game state (B games, n players in *player* order).

    Attributes:
        pos: ``int64 [B, n]`` flat cell index of each player.
        ori: ``int64 [B, n]`` orientation (0 N, 1 S, 2 E, 3 W).
        held: ``int64 [B, n]`` held object kind (``Obj``; 0 = nothing).
        held_seq: ``int64 [B, n]`` ingredient sequence code of a held soup (0 otherwise).
        held_tick: ``int64 [B, n]`` cooking tick of a held soup (-1 otherwise).
        obj: ``int8 [B, HW]`` object kind on each cell (counters and pots only).
        obj_seq: ``int8 [B, HW]`` ingredient sequence code of the soup on a cell (0 otherwise).
        obj_tick: ``int16 [B, HW]`` cooking tick of the soup on a cell (-1 idle or no soup).
        obj_stamp: ``int64 [B, HW]`` insertion stamp of the object on a cell; exported object
            lists are ordered by it, reproducing overcooked-ai's dict insertion order.
        timestep: ``int64 [B]`` env steps since the episode started.
        seats: ``int64 [B, n]`` player (seat) driven by each agent slot; identity unless seat
            randomization is on (ZSC-Eval ``agent_idx``).
    """

    pos: torch.Tensor
    ori: torch.Tensor
    held: torch.Tensor
    held_seq: torch.Tensor
    held_tick: torch.Tensor
    obj: torch.Tensor
    obj_seq: torch.Tensor
    obj_tick: torch.Tensor
    obj_stamp: torch.Tensor
    timestep: torch.Tensor
    seats: torch.Tensor

    @classmethod
    def start(cls, start_cells: list[int], num_envs: int, num_cells: int, device: torch.device) -> State:
        """Standard start state: players on their start cells facing NORTH, nothing anywhere."""
        B, n = num_envs, len(start_cells)

        def z(*shape, dtype=torch.int64, fill=0):
            return torch.full(shape, fill, dtype=dtype, device=device)

        return cls(
            pos=torch.tensor(start_cells, dtype=torch.int64, device=device).repeat(B, 1),
            ori=z(B, n),
            held=z(B, n),
            held_seq=z(B, n),
            held_tick=z(B, n, fill=-1),
            obj=z(B, num_cells, dtype=torch.int8),
            obj_seq=z(B, num_cells, dtype=torch.int8),
            obj_tick=z(B, num_cells, dtype=torch.int16, fill=-1),
            obj_stamp=z(B, num_cells),
            timestep=z(B),
            seats=torch.arange(n, device=device).repeat(B, 1),
        )

    def assign_where(self, mask: torch.Tensor, other: State) -> None:
        """In place: games where ``mask`` (``bool [B]``) is set take ``other``'s values."""
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            m = mask.view(-1, *([1] * (mine.dim() - 1)))
            mine.copy_(torch.where(m, theirs, mine))

    def clone(self) -> State:
        """A deep copy (new tensors)."""
        return State(**{f.name: getattr(self, f.name).clone() for f in fields(self)})
