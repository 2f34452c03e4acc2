"""Randomized start states: ZSC-Eval's ``random_start_prob`` (overcooked-spec section 5.9).

ZSC-Eval's multi-recipe wrapper can start an episode from a random state instead of the empty
kitchen: every counter independently holds one of {onion, tomato, dish, a ready soup of three
equal ingredients, nothing}, drawn uniformly; every pot holds 0-3 ingredients of one random kind,
and a 3-ingredient pot is ready (cooked to tick 20). Players stay on their start cells, facing
north, empty-handed. It is a training-time exploration aid (never used in evaluation): games that
start with ready soups on the counters and part-filled pots show the learner what delivering an
order is worth before it can cook one.

Classic (onion-only) layouts draw from the same distribution without tomatoes. ZSC-Eval's classic
wrapper ignores the option (its random start returns the standard state); here it works on both
dynamics, a documented extension (docs/differences.md).
"""

from __future__ import annotations

import torch

from .constants import Obj
from .state import State
from .tables import Tables

__all__ = ["randomize_start"]


def _same_ingredient_seq(kind: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """Sequence code of ``count`` ingredients of one ``kind`` (1 onion, 2 tomato).

    seq = kind * (1 + 3 + ... + 3**(count-1)) = kind * (3**count - 1) / 2 (constants.encode_seq).
    """
    return kind * (3**count - 1) // 2


def randomize_start(state: State, mask: torch.Tensor, tables: Tables, multi_recipe: bool, generator) -> None:
    """In place: games where ``mask`` (``bool [B]``) is set get a random kitchen.

    Args:
        state: a standard start state (``State.start``) of B games; only the cell objects of
            masked games change (``obj``, ``obj_seq``, ``obj_tick``, ``obj_stamp``).
        mask: ``bool [B]``, the games to randomize.
        tables: the layout's tables (counter and pot cells, recipe cook times).
        multi_recipe: draw tomatoes too (multi-recipe layouts).
        generator: the ``torch.Generator`` to draw from (the env's, for reproducibility).
    """
    if not bool(mask.any()):
        return
    dev = state.obj.device
    B = state.obj.shape[0]
    n_kinds = 2 if multi_recipe else 1  # ingredient kinds 1 onion, 2 tomato

    def draw(high: int, *shape) -> torch.Tensor:
        return torch.randint(high, shape, generator=generator, device=dev)

    obj = torch.zeros_like(state.obj, dtype=torch.int64)
    seq = torch.zeros_like(obj)
    tick = torch.full_like(obj, -1)

    # Counters: uniform over {ingredients..., dish, ready soup, nothing}.
    counters = tables.counter_cells
    if counters.numel():
        choice = draw(n_kinds + 3, B, counters.numel())
        ingredient = choice < n_kinds
        is_dish = choice == n_kinds
        is_soup = choice == n_kinds + 1
        soup_kind = 1 + draw(n_kinds, B, counters.numel())
        soup_seq = _same_ingredient_seq(soup_kind, torch.full_like(soup_kind, 3))
        c_obj = torch.where(ingredient, choice + Obj.ONION, torch.zeros_like(choice))
        c_obj = torch.where(is_dish, torch.full_like(choice, Obj.DISH), c_obj)
        c_obj = torch.where(is_soup, torch.full_like(choice, Obj.SOUP), c_obj)
        c_seq = torch.where(is_soup, soup_seq, torch.zeros_like(choice))
        c_tick = torch.where(is_soup, tables.seq_time[c_seq], torch.full_like(choice, -1))
        idx = counters.expand(B, -1)
        obj.scatter_(1, idx, c_obj)
        seq.scatter_(1, idx, c_seq)
        tick.scatter_(1, idx, c_tick)

    # Pots: 0-3 ingredients of one kind; a full pot is ready, a partial one idle.
    pots = tables.pot_cells
    if pots.numel():
        count = draw(4, B, pots.numel())
        kind = 1 + draw(n_kinds, B, pots.numel())
        p_seq = _same_ingredient_seq(kind, count)
        has = count > 0
        p_obj = torch.where(has, torch.full_like(count, Obj.SOUP), torch.zeros_like(count))
        p_tick = torch.where(count == 3, tables.seq_time[p_seq], torch.full_like(count, -1))
        idx = pots.expand(B, -1)
        obj.scatter_(1, idx, p_obj)
        seq.scatter_(1, idx, torch.where(has, p_seq, torch.zeros_like(p_seq)))
        tick.scatter_(1, idx, p_tick)

    HW = obj.shape[1]
    stamp = (torch.arange(HW, device=dev) - HW).expand(B, -1)  # before any in-game object, cell order
    m = mask[:, None]
    state.obj.copy_(torch.where(m, obj.to(state.obj.dtype), state.obj))
    state.obj_seq.copy_(torch.where(m, seq.to(state.obj_seq.dtype), state.obj_seq))
    state.obj_tick.copy_(torch.where(m, tick.to(state.obj_tick.dtype), state.obj_tick))
    state.obj_stamp.copy_(torch.where(m & (obj != 0), stamp, state.obj_stamp))
