"""Text rendering of one game.

Each cell is three characters: the terrain character (``X O T D P S``, blank for floor) followed by
what lies there (``o`` onion, ``t`` tomato, ``d`` dish, ``s`` soup; for a pot, its ingredient count
with ``*`` when cooking or ``!`` when ready). A player is drawn as its number and an arrow
(``^ v > <``) followed by what it holds. Soup details and held objects are listed under the grid.
"""

from __future__ import annotations

from .constants import OBJ_NAMES, SEQ_INGREDIENTS, Obj
from .layout import INGREDIENTS, Layout
from .state import State
from .tables import Tables

_SYMBOL = {Obj.ONION: "o", Obj.TOMATO: "t", Obj.DISH: "d", Obj.SOUP: "s"}
_ARROW = "^v><"
_DIR_NAME = ("north", "south", "east", "west")


def _soup_text(seq: int, tick: int, T: Tables) -> str:
    names = ",".join(INGREDIENTS[g - 1] for g in SEQ_INGREDIENTS[seq])
    time = int(T.seq_time[seq])
    status = "idle" if tick < 0 else ("ready" if tick >= time else f"cooking {tick}/{time}")
    return f"soup[{names}] {status}"


def render_state(state: State, i: int, layout: Layout, T: Tables) -> str:
    """A multi-line text picture of game ``i`` (legend in the module docstring)."""
    W, H = layout.width, layout.height
    obj, seq, tick = state.obj[i].tolist(), state.obj_seq[i].tolist(), state.obj_tick[i].tolist()
    pos, ori, held = state.pos[i].tolist(), state.ori[i].tolist(), state.held[i].tolist()
    held_seq, held_tick = state.held_seq[i].tolist(), state.held_tick[i].tolist()
    at = {c: p for p, c in enumerate(pos)}
    lines = [f"{layout.name}  t={int(state.timestep[i])}"]
    notes = []
    for y in range(H):
        row = []
        for x in range(W):
            c = y * W + x
            if c in at:
                p = at[c]
                row.append(f"{p + 1}{_ARROW[ori[p]]}{_SYMBOL.get(held[p], ' ')}")
                continue
            ch = layout.terrain[y][x]
            if ch == "P" and obj[c] == Obj.SOUP:
                n = len(SEQ_INGREDIENTS[seq[c]])
                mark = " " if tick[c] < 0 else ("!" if tick[c] >= int(T.seq_time[seq[c]]) else "*")
                row.append(f"P{n}{mark}")
                notes.append(f"pot ({x},{y}): {_soup_text(seq[c], tick[c], T)}")
            else:
                row.append(f"{ch}{_SYMBOL.get(obj[c], ' ')} ")
                if obj[c] == Obj.SOUP:
                    notes.append(f"counter ({x},{y}): {_soup_text(seq[c], tick[c], T)}")
        lines.append("".join(row).rstrip())
    for p in range(len(pos)):
        what = "nothing"
        if held[p] == Obj.SOUP:
            what = _soup_text(held_seq[p], held_tick[p], T)
        elif held[p]:
            what = OBJ_NAMES[Obj(held[p])]
        x, y = pos[p] % W, pos[p] // W
        notes.append(f"player {p + 1} at ({x},{y}) facing {_DIR_NAME[ori[p]]}, holding {what}")
    return "\n".join(lines + notes)
