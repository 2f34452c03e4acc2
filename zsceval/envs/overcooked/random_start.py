"""Randomized start states: ZSC-Eval's ``random_start_prob`` (docs/overcooked-rules.md §5.9).

ZSC-Eval's multi-recipe wrapper can start an episode from a random state instead of the empty
kitchen: every counter independently holds one of {onion, tomato, dish, a ready soup of three
equal ingredients, nothing}, drawn uniformly; every pot holds 0-3 ingredients of one random kind,
and a 3-ingredient pot is ready (ZSC-Eval sets tick 20; here the recipe's cook time, which is 20
for every 3-ingredient recipe of the shipped layouts, so that the soup is ready on any layout).
Players stay on their start cells, facing north, empty-handed. It is a training-time exploration
aid (never used in evaluation): games that start with ready soups on the counters and part-filled
pots show the learner what delivering an order is worth before it can cook one.

Classic (onion-only) layouts draw from the same distribution without tomatoes. ZSC-Eval's classic
wrapper ignores the option (its random start returns the standard state); here it works on both
dynamics, a documented extension (docs/differences.md).
"""

from __future__ import annotations

import torch

from .constants import Obj, encode_seq
from .state import State
from .tables import Tables

__all__ = ["randomize_start"]

# SAME_SEQ[kind - 1, count]: sequence code of `count` ingredients of one kind (1 onion, 2 tomato).
SAME_SEQ = torch.tensor([[encode_seq([kind] * count) for count in range(4)] for kind in (1, 2)])


def randomize_start(
    state: State, mask: torch.Tensor, tables: Tables, multi_recipe: bool, generator: torch.Generator
) -> None:
    """In place: games where ``mask`` is set get a random kitchen.

    Args:
        state: a standard start state of B games (``State.start``: no objects anywhere); only the
            cell objects of masked games change (``obj`` int8, ``obj_seq`` int8, ``obj_tick``
            int16 and ``obj_stamp`` int64, all ``[B, H*W]``). Random objects get negative stamps,
            in cell order, so they precede every object placed in play when exported.
        mask: ``bool [B]`` on the state's device, the games to randomize.
        tables: the layout's tables (counter and pot cells, recipe cook times).
        multi_recipe: draw tomatoes too (multi-recipe layouts); classic layouts draw onions only.
        generator: the ``torch.Generator`` to draw from (the env's, for reproducibility). The same
            number of draws is made whatever ``mask`` holds.
    """
    dev = state.obj.device
    B, HW = state.obj.shape
    kinds = 2 if multi_recipe else 1  # ingredient kinds: 1 onion, 2 tomato
    same_seq = SAME_SEQ.to(dev)
    rand = state.clone()

    # Counters: uniform over {ingredients..., dish, ready soup, nothing}.
    cells = tables.counter_cells
    choice = torch.randint(kinds + 3, (B, cells.numel()), generator=generator, device=dev)
    soup_kind = torch.randint(kinds, (B, cells.numel()), generator=generator, device=dev)
    options = [Obj.ONION, Obj.TOMATO][:kinds] + [Obj.DISH, Obj.SOUP, Obj.NONE]
    obj = torch.tensor(options, device=dev)[choice]
    seq = torch.where(obj == Obj.SOUP, same_seq[soup_kind, 3], 0)
    tick = torch.where(obj == Obj.SOUP, tables.seq_time[seq], -1)
    _scatter(rand, cells, obj, seq, tick)

    # Pots: 0-3 ingredients of one kind; a full pot is ready, a partial one idle.
    cells = tables.pot_cells
    count = torch.randint(4, (B, cells.numel()), generator=generator, device=dev)
    kind = torch.randint(kinds, (B, cells.numel()), generator=generator, device=dev)
    seq = same_seq[kind, count]
    tick = torch.where(count == 3, tables.seq_time[seq], -1)
    _scatter(rand, cells, (count > 0) * int(Obj.SOUP), seq, tick)

    stamp = torch.arange(HW, device=dev) - HW
    rand.obj_stamp.copy_(torch.where(rand.obj != 0, stamp, rand.obj_stamp))
    state.assign_where(mask, rand)


def _scatter(state: State, cells: torch.Tensor, obj, seq, tick) -> None:
    """Write ``[B, len(cells)]`` object kinds, sequence codes and ticks onto ``cells``."""
    idx = cells.expand(state.obj.shape[0], -1)
    state.obj.scatter_(1, idx, obj.to(state.obj.dtype))
    state.obj_seq.scatter_(1, idx, seq.to(state.obj_seq.dtype))
    state.obj_tick.scatter_(1, idx, tick.to(state.obj_tick.dtype))
