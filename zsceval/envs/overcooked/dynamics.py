"""The batched transition, split by phase: interact, move, cook (docs/overcooked-rules.md §2.2).

All functions work on every game at once; the only Python loops are over players (n = 2) and
player pairs. Actions here are in *player* order (the env maps agent slots to seats).
"""

from __future__ import annotations

import torch

from .constants import ACTION, INTERACTION, OBJ
from .state import State
from .tables import AUX_DELIVER, AUX_POT, DISH_PICKUP_REWARD, NUM_O, NUM_PS, Tables


def pot_state(o: torch.Tensor, seq: torch.Tensor, tick: torch.Tensor, T: Tables) -> torch.Tensor:
    """Pot-state index (tables.PS_*) of cells with object ``o``, soup ``seq`` and ``tick`` (int64)."""
    idle = torch.where(T.seq_len[seq] == 3, 2, 1)
    busy = torch.where(tick >= T.seq_time[seq], 4, 3)
    return torch.where(o != OBJ.SOUP, 0, torch.where(tick < 0, idle, busy))


def facing(state: State, T: Tables) -> tuple[torch.Tensor, ...]:
    """Facing cell of every player and what is there.

    Returns:
        ``(f, t, o, seq, tick)``, each ``int64 [B, n]``: the faced cell's flat index, terrain,
        object kind, soup sequence code and soup tick.
    """
    f = state.pos + T.delta[state.ori]
    o = state.obj.gather(1, f).long()
    seq = state.obj_seq.gather(1, f).long()
    tick = state.obj_tick.gather(1, f).long()
    return f, T.terrain[f], o, seq, tick


def table_index(t, h, o, ps):
    """Flat index into ``Tables.code_table`` / ``avail_table``."""
    return ((t * 5 + h) * NUM_O + o) * NUM_PS + ps


def interact(state: State, actions: torch.Tensor, T: Tables, out: dict[str, torch.Tensor]) -> None:
    """Resolve INTERACT actions sequentially in player order, in place (docs/overcooked-rules.md §2.5, §5.2).

    Each player uses its start-of-step position and orientation and sees the state as modified by
    lower-indexed players. Writes ``out['sparse'|'shaped'|'events'|'kind'|'cell']`` for each player.
    """
    n = actions.shape[1]
    # Start-of-step pot snapshot for the useful-dish rule: ready, cooking or partially full pots
    # (an idle pot holding 3 ingredients does not count, as in overcooked-ai).
    pot_o = state.obj.index_select(1, T.pot_cells)
    pot_seq = state.obj_seq.index_select(1, T.pot_cells).long()
    idle_full = (state.obj_tick.index_select(1, T.pot_cells) < 0) & (T.seq_len[pot_seq] == 3)
    busy_pots = ((pot_o == OBJ.SOUP) & ~idle_full).sum(1)
    # Dishes on counters, kept up to date as players put and take dishes below.
    counter_dishes = (state.obj.index_select(1, T.counter_cells) == OBJ.DISH).sum(1)

    f_all = state.pos + T.delta[state.ori]
    for k in range(n):
        f = f_all[:, k : k + 1]
        h = state.held[:, k]
        hseq, htick = state.held_seq[:, k], state.held_tick[:, k]
        o = state.obj.gather(1, f).squeeze(1).long()
        cseq = state.obj_seq.gather(1, f).squeeze(1).long()
        ctick = state.obj_tick.gather(1, f).squeeze(1).long()
        t = T.terrain[f.squeeze(1)]
        code = T.code_table[table_index(t, h, o, pot_state(o, cseq, ctick, T))]
        code = torch.where(actions[:, k] == ACTION.INTERACT, code, 0)

        potadd = (code == INTERACTION.POT_ONION) | (code == INTERACTION.POT_TOMATO)
        deliver = code == INTERACTION.DELIVER
        ingredient = code - (INTERACTION.POT_ONION - 1)  # 1 onion, 2 tomato when potadd
        aux = torch.where(
            potadd, AUX_POT + cseq * 3 + ingredient, torch.where(deliver, AUX_DELIVER + hseq, 0)
        )

        # USEFUL_DISH_PICKUP (docs/overcooked-rules.md §3.1 row 8): no dish on any counter now, and fewer
        # dishes in hands now than busy pots in the snapshot. Defined for two players only (overcooked-ai).
        useful = (code == INTERACTION.PICKUP_DISH_DISPENSER) & (n == 2)
        useful &= counter_dishes == 0
        useful &= (state.held == OBJ.DISH).sum(1) < busy_pots
        counter_dishes += (code == INTERACTION.PUT_DISH_COUNTER).long()
        counter_dishes -= (code == INTERACTION.PICKUP_DISH_COUNTER).long()

        # index_select: row lookups into small tables (much faster than advanced indexing).
        events = T.code_events.index_select(0, code) + T.aux_events.index_select(0, aux)
        out["events"][:, k] = events + useful[:, None] * T.useful_dish_event
        out["shaped"][:, k] = T.code_shaped[code] + T.aux_shaped[aux] + useful * DISH_PICKUP_REWARD
        out["sparse"][:, k] = T.aux_sparse[aux]
        out["kind"][:, k] = code
        out["cell"][:, k] = torch.where(code > 0, f.squeeze(1), -1)

        hn, cn = T.held_new[code], T.cell_new[code]
        takes_soup = (code == INTERACTION.PICKUP_SOUP_COUNTER) | (code == INTERACTION.SOUP_PICKUP_POT)
        gives_soup = code == INTERACTION.PUT_SOUP_COUNTER
        held_changes, cell_clears = hn >= 0, cn == OBJ.NONE
        new_h = torch.where(held_changes, hn, h)
        new_hseq = torch.where(takes_soup, cseq, torch.where(held_changes, 0, hseq))
        new_htick = torch.where(takes_soup, ctick, torch.where(held_changes, -1, htick))

        new_o = torch.where(cn >= 0, cn, o)
        grown = cseq + ingredient * T.pow3[T.seq_len[cseq]]
        new_seq = torch.where(gives_soup, hseq, torch.where(potadd, grown, torch.where(cell_clears, 0, cseq)))
        cook = code == INTERACTION.COOK
        new_tick = torch.where(gives_soup, htick, torch.where(cook, 0, torch.where(cell_clears, -1, ctick)))
        appears = (o == OBJ.NONE) & (new_o != OBJ.NONE)
        stamp = torch.where(appears, state.timestep * n + k, state.obj_stamp.gather(1, f).squeeze(1))
        # Write back only now: h, hseq and htick are views of the state's tensors.
        state.held[:, k] = new_h
        state.held_seq[:, k] = new_hseq
        state.held_tick[:, k] = new_htick
        state.obj.scatter_(1, f, new_o.to(torch.int8)[:, None])
        state.obj_seq.scatter_(1, f, new_seq.to(torch.int8)[:, None])
        state.obj_tick.scatter_(1, f, new_tick.to(torch.int16)[:, None])
        state.obj_stamp.scatter_(1, f, stamp[:, None])


def move(state: State, actions: torch.Tensor, T: Tables, out: dict[str, torch.Tensor]) -> None:
    """Resolve movement simultaneously, in place (docs/overcooked-rules.md §2.3-2.4); adds movement events.

    A direction action always turns the player; the move happens only onto floor; if any two
    players would end on the same cell or swap cells, every player stays where it was.
    """
    pos, ori = state.pos, state.ori
    is_move = actions < ACTION.STAY
    new_ori = torch.where(is_move, actions, ori)
    target = pos + T.delta[actions]
    tentative = torch.where(is_move & T.walkable[target], target, pos)
    n = actions.shape[1]
    collision = torch.zeros_like(actions[:, 0], dtype=torch.bool)
    for i in range(n):
        for j in range(i + 1, n):
            ti, tj, pi, pj = tentative[:, i], tentative[:, j], pos[:, i], pos[:, j]
            collision |= (ti == tj) | ((ti == pj) & (tj == pi))
    new_pos = torch.where(collision[:, None], pos, tentative)
    idle = is_move & (new_pos == pos) & (new_ori == ori)
    move_code = torch.where(actions == ACTION.STAY, 1, torch.where(is_move, 2 + idle.long(), 0))
    out["events"] += T.move_events.index_select(0, move_code.flatten()).view(*move_code.shape, -1)
    state.pos = new_pos
    state.ori = new_ori


def cook(state: State, T: Tables, auto_start: bool) -> None:
    """Environment effects, in place: timestep += 1, then every cooking pot soup ticks.

    With ``auto_start`` (classic dynamics) an idle pot soup with 3 ingredients starts cooking
    first, so it reaches tick 1 in the step its third ingredient was added (docs/overcooked-rules.md §2.6,
    §5.2 item 3).
    """
    state.timestep += 1
    o = state.obj.index_select(1, T.pot_cells)
    seq = state.obj_seq.index_select(1, T.pot_cells).long()
    tick = state.obj_tick.index_select(1, T.pot_cells)
    has_soup = o == OBJ.SOUP
    if auto_start:
        tick = torch.where(has_soup & (tick < 0) & (T.seq_len[seq] == 3), 0, tick)
    cooking = has_soup & (tick >= 0) & (tick < T.seq_time[seq])
    state.obj_tick[:, T.pot_cells] = tick + cooking.to(tick.dtype)


def available_actions(state: State, T: Tables) -> torch.Tensor:
    """``bool [B, n, 6]`` action mask in player order (docs/overcooked-rules.md §4.6).

    A direction is masked iff the neighbour that way is not floor and the player already faces
    it; STAY is never masked; INTERACT is masked when it is a guaranteed idle interaction.
    """
    B, n = state.pos.shape
    f, t, o, seq, tick = facing(state, T)
    avail = torch.empty(B, n, 6, dtype=torch.bool, device=state.pos.device)
    dirs = torch.arange(4, device=state.pos.device)
    avail[..., :4] = T.nb_walkable[state.pos] | (state.ori[..., None] != dirs)
    avail[..., 4] = True
    avail[..., 5] = T.avail_table[table_index(t, state.held, o, pot_state(o, seq, tick, T))]
    return avail
