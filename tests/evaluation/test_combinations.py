"""Seat combinations of an ego with partners in n > 2 player games (Football), and their BR keys."""

import itertools
import math

import pytest

from zsceval.evaluation.combinations import (
    Combination,
    br_key,
    br_keys,
    num_seat_combinations,
    seat_combinations,
)


def test_two_partners_three_players_listed_by_hand():
    # ZSC-Eval get_agent_pairs: two partner seats first (partner tuples in product order, then the
    # ego's seat), then one partner seat (partner, then the ego's two seats in combinations order).
    E = -1
    expected = [
        (E, 0, 0), (0, E, 0), (0, 0, E),
        (E, 0, 1), (0, E, 1), (0, 1, E),
        (E, 1, 0), (1, E, 0), (1, 0, E),
        (E, 1, 1), (1, E, 1), (1, 1, E),
        (E, E, 0), (E, 0, E), (0, E, E),
        (E, E, 1), (E, 1, E), (1, E, E),
    ]  # fmt: skip
    combos = seat_combinations(2, 3)
    assert [c.seats for c in combos] == expected
    assert combos[3] == Combination((E, 0, 1), (0, 1), (0,))
    assert combos[13] == Combination((E, 0, E), (0,), (0, 2))


def test_the_papers_count_and_the_formula():
    assert len(seat_combinations(6, 3)) == num_seat_combinations(6, 3) == 36 * 3 + 6 * 3 == 126
    for P, n in itertools.product(range(1, 6), range(2, 6)):
        combos = seat_combinations(P, n)
        assert len(combos) == num_seat_combinations(P, n)
        assert len({c.seats for c in combos}) == len(combos), "no combination twice"
        for c in combos:
            assert len(c.seats) == n and 1 <= len(c.ego_seats) <= n - 1
            assert [c.seats[k] for k in range(n) if k not in c.ego_seats] == list(c.partners)
            assert all(c.seats[k] == -1 for k in c.ego_seats)
    # two players: the ego in each seat with each partner, the usual evaluation
    assert num_seat_combinations(4, 2) == 8
    assert sorted(c.seats for c in seat_combinations(1, 2)) == [(-1, 0), (0, -1)]
    assert num_seat_combinations(3, 4) == sum(3**m * math.comb(4, m) for m in (1, 2, 3))


def test_br_keys_are_the_sets_of_distinct_partners():
    combos = seat_combinations(2, 3)
    assert br_key(combos[0]) == (0,)  # ego with partner 0 twice: partner 0's own BR
    assert br_key(combos[3]) == br_key(combos[6]) == (0, 1)
    assert br_keys(6, 3) == [(p,) for p in range(6)] + list(itertools.combinations(range(6), 2))
    assert len(br_keys(6, 3)) == 21


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="num_partners >= 1 and num_players >= 2"):
        seat_combinations(0, 3)
    with pytest.raises(ValueError, match="num_partners >= 1 and num_players >= 2"):
        seat_combinations(2, 1)
