"""A plain-Python reading of the rules (one game, no tensors), to check the batched engine against.

Cells are ``(row, col)`` tuples; a layout is a list of cells, one per card.
"""

from __future__ import annotations

from collections import deque


def neighbours(cell: tuple[int, int]) -> list[tuple[int, int]]:
    r, c = cell
    return [(r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)]


def connected(cells: list[tuple[int, int]]) -> bool:
    """All cards of ``cells`` form one group through shared sides (breadth-first search)."""
    if not cells:
        return True
    occupied = set(cells)
    seen, queue = {cells[0]}, deque([cells[0]])
    while queue:
        for nb in neighbours(queue.popleft()):
            if nb in occupied and nb not in seen:
                seen.add(nb)
                queue.append(nb)
    return len(seen) == len(occupied)


def legal_targets(cells: list[tuple[int, int]], card: int, grid: int) -> set[tuple[int, int]]:
    """Every cell card ``card`` may move to: inside the field, empty, not its own, and the layout
    after the move connected (the definition, by brute force)."""
    out = set()
    for r in range(grid):
        for c in range(grid):
            if (r, c) in cells:
                continue
            moved = list(cells)
            moved[card] = (r, c)
            if connected(moved):
                out.add((r, c))
    return out


def clustered(cells: list[tuple[int, int]], colours: list[int]) -> list[bool]:
    """Per colour: its cards form one group on their own (YLE Eq. 2)."""
    pairs = list(zip(cells, colours, strict=True))
    return [connected([p for p, k in pairs if k == c]) for c in range(max(colours) + 1)]


def score(statuses: list[int], shows_colour_under: list[bool]) -> int:
    """YLE Eq. 1 from hint statuses (1 face down, 2 face up, 3 placed) and, per hint, whether it
    shows the colour of the card under it (used for placed hints only)."""
    face_down = sum(s == 1 for s in statuses)
    revealed = sum(s == 2 for s in statuses)
    correct = sum(s == 3 and ok for s, ok in zip(statuses, shows_colour_under, strict=True))
    wrong = sum(s == 3 and not ok for s, ok in zip(statuses, shows_colour_under, strict=True))
    return 5 * face_down + 2 * revealed + correct - wrong
