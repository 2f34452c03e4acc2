"""Seat combinations of an ego with partners in games of n > 2 players (Football's 3 players).

ZSC-Eval pairs the ego with *combinations* of partners (``grf_runner.py: get_agent_pairs``,
``scripts/grf/eval/extract_combination_results.py``; docs/reference-protocol.md "Football"): for m = n - 1
partner seats down to 1, every ordered m-tuple of partners drawn *with replacement*
(``itertools.product``), times every choice of the n - m seats the ego's copies take. With P
partners there are ``sum_{m=1}^{n-1} P^m * C(n, n - m)`` combinations: 126 for P = 6, n = 3; 2P for
n = 2 (the ego in each seat with one partner, the two-player evaluation).

The BR-Prox reference of a combination is the BR of its set of distinct partners (:func:`br_key`):
a single partner's own BR, or a BR trained with that pair of partners (ZSC-Eval trains one per pair
of partners, ``scripts/prep/gen_train_br_ymls.py``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

__all__ = ["Combination", "br_key", "br_keys", "num_seat_combinations", "seat_combinations"]


@dataclass(frozen=True)
class Combination:
    """One seating of the ego and partners.

    Attributes:
        seats: per seat, -1 for an ego copy or the partner index ``p >= 0``; length n.
        partners: the partner indices in seat order (length m, repeats allowed).
        ego_seats: the seats the ego's copies take (length n - m >= 1).
    """

    seats: tuple[int, ...]
    partners: tuple[int, ...]
    ego_seats: tuple[int, ...]


def seat_combinations(num_partners: int, num_players: int) -> list[Combination]:
    """Every combination, in the reference's order (``get_agent_pairs``): m = n - 1 partner seats
    first (down to 1); for each m the partner tuples in ``itertools.product`` order, and for each
    tuple the choices of ego seats in ``itertools.combinations`` order.

    Raises:
        ValueError: fewer than 1 partner or 2 players.
    """
    P, n = int(num_partners), int(num_players)
    if P < 1 or n < 2:
        raise ValueError(f"need num_partners >= 1 and num_players >= 2, got {P} and {n}")
    out = []
    for m in range(n - 1, 0, -1):
        for tup in itertools.product(range(P), repeat=m):
            for ego_seats in itertools.combinations(range(n), n - m):
                others = [k for k in range(n) if k not in ego_seats]
                seats = [-1] * n
                for k, p in zip(others, tup):
                    seats[k] = p
                out.append(Combination(tuple(seats), tuple(tup), tuple(ego_seats)))
    return out


def num_seat_combinations(num_partners: int, num_players: int) -> int:
    """``sum_{m=1}^{n-1} P^m * C(n, n - m)``, the length of :func:`seat_combinations`."""
    P, n = int(num_partners), int(num_players)
    return sum(P**m * math.comb(n, n - m) for m in range(1, n))


def br_key(combo: Combination) -> tuple[int, ...]:
    """The partner set whose BR is the combination's reference: its distinct partners, sorted."""
    return tuple(sorted(set(combo.partners)))


def br_keys(num_partners: int, num_players: int) -> list[tuple[int, ...]]:
    """Every distinct :func:`br_key` the combinations need, sorted by size then indices (P = 6,
    n = 3: the 6 single partners and the 15 pairs)."""
    keys = {br_key(c) for c in seat_combinations(num_partners, num_players)}
    return sorted(keys, key=lambda k: (len(k), k))
