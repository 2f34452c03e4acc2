"""EventTracker on hand-made sequences of raw observation dicts (agent slots 0, 1, 2 = players 1, 2, 3)."""

import numpy as np
import pytest

from zsceval.envs.football.events import EVENT_NAMES, EventTracker
from zsceval.envs.football.features import NO_OP, SHORT_PASS, SHOT, SLIDE, TOP

NONE, US, OPP = -1, 0, 1


def ob(team=NONE, player=-1, score=0, opp_score=0, mode=0):
    return {
        "ball_owned_team": team,
        "ball_owned_player": player,
        "game_mode": mode,
        "score": [score, opp_score],
    }


def ev(name, agent, rows):
    return int(rows[agent, EVENT_NAMES.index(name)])


def run(tracker, steps):
    """steps: list of (actions, next_obs); the first prev obs is a free ball. Returns the summed events."""
    prev = ob()
    total = np.zeros((3, 8), dtype=np.int64)
    for actions, nxt in steps:
        total += tracker.observe(actions, prev, nxt)
        prev = nxt
    return total


def only(total, expected):
    """All counts are zero except ``expected`` {(name, agent): count}."""
    want = np.zeros((3, 8), dtype=np.int64)
    for (name, agent), c in expected.items():
        want[agent, EVENT_NAMES.index(name)] = c
    np.testing.assert_array_equal(total, want)


def test_event_names_and_row_shape():
    assert EVENT_NAMES == ("pass", "actual_pass", "shot", "slide", "catch", "assist", "possession", "score")
    t = EventTracker([1, 2, 3])
    rows = t.observe([0, 0, 0], ob(), ob())
    assert rows.shape == (3, 8) and rows.dtype == np.int16 and not rows.any()


def test_pass_is_counted_when_the_controlled_owner_chooses_a_pass():
    t = EventTracker([1, 2, 3])
    rows = t.observe([NO_OP, SHORT_PASS, NO_OP], ob(US, 2), ob(US, 2))
    only(rows, {("pass", 1): 1, ("possession", 1): 1})
    # a pass chosen by an agent that does not own the ball is no pass
    rows = t.observe([SHORT_PASS, NO_OP, SHORT_PASS], ob(US, 2), ob(US, 2))
    only(rows, {("possession", 1): 1})


def test_actual_pass_and_catch_between_controlled_teammates():
    t = EventTracker([1, 2, 3])
    total = run(
        t,
        [
            ([NO_OP] * 3, ob(US, 1)),  # agent 0 gets the ball
            ([SHORT_PASS, NO_OP, NO_OP], ob()),  # passes: ball in flight
            ([NO_OP] * 3, ob()),
            ([NO_OP] * 3, ob(US, 3)),  # agent 2 receives
            ([NO_OP] * 3, ob(US, 3)),
        ],
    )
    only(
        total,
        {("possession", 0): 1, ("pass", 0): 1, ("actual_pass", 0): 1, ("catch", 2): 1, ("possession", 2): 1},
    )


def test_no_catch_from_an_uncontrolled_teammate_or_an_opponent():
    t = EventTracker([1, 2, 3])
    total = run(t, [([NO_OP] * 3, ob(US, 0)), ([NO_OP] * 3, ob()), ([NO_OP] * 3, ob(US, 2))])
    only(total, {})  # the keeper (player 0) is not controlled
    t = EventTracker([1, 2, 3])
    total = run(t, [([NO_OP] * 3, ob(OPP, 1)), ([NO_OP] * 3, ob(US, 2))])
    only(total, {})


def test_shot_and_possession():
    t = EventTracker([1, 2, 3])
    total = run(t, [([NO_OP] * 3, ob(US, 3)), ([NO_OP] * 3, ob(US, 3)), ([NO_OP, NO_OP, SHOT], ob())])
    only(total, {("possession", 2): 2, ("shot", 2): 1})


def test_possession_is_not_counted_for_uncontrolled_players_or_opponents():
    t = EventTracker([1, 2, 3])
    total = run(t, [([SHOT] * 3, ob(US, 0)), ([SHOT] * 3, ob(OPP, 1)), ([SHOT] * 3, ob(OPP, 1))])
    only(total, {})


def test_slide_is_counted_when_chosen_while_owning():
    t = EventTracker([1, 2, 3])
    rows = t.observe([SLIDE, NO_OP, NO_OP], ob(US, 1), ob(US, 1))
    only(rows, {("slide", 0): 1, ("possession", 0): 1})


def test_score_and_assist():
    t = EventTracker([1, 2, 3])
    total = run(
        t,
        [
            ([NO_OP] * 3, ob(US, 1)),
            ([NO_OP] * 3, ob(US, 1)),
            ([SHORT_PASS, NO_OP, NO_OP], ob(US, 2)),  # agent 0 -> agent 1 directly
            ([NO_OP, TOP, NO_OP], ob(US, 2)),
            ([NO_OP, SHOT, NO_OP], ob()),
            ([NO_OP] * 3, ob(score=1)),  # goal
        ],
    )
    only(
        total,
        {
            ("possession", 0): 2,
            ("pass", 0): 1,
            ("actual_pass", 0): 1,
            ("catch", 1): 1,
            ("possession", 1): 2,
            ("shot", 1): 1,
            ("score", 1): 1,
            ("assist", 0): 1,
        },
    )


def test_score_without_assist_when_the_ball_came_from_the_keeper_or_an_opponent():
    for giver in (ob(US, 0), ob(OPP, 1)):
        t = EventTracker([1, 2, 3])
        total = run(t, [([NO_OP] * 3, giver), ([NO_OP] * 3, ob(US, 2)), ([NO_OP, SHOT, NO_OP], ob(score=1))])
        assert ev("score", 1, total) == 1
        assert total[:, EVENT_NAMES.index("assist")].sum() == 0


def test_score_is_credited_once_and_not_to_uncontrolled_players():
    t = EventTracker([1, 2, 3])
    total = run(t, [([NO_OP] * 3, ob(US, 3)), ([NO_OP] * 3, ob(score=1)), ([NO_OP] * 3, ob(score=1))])
    only(total, {("possession", 2): 1, ("score", 2): 1})
    t = EventTracker([1, 2, 3])
    total = run(t, [([NO_OP] * 3, ob(US, 0)), ([NO_OP] * 3, ob(score=1))])
    only(total, {})


def test_reset_clears_the_ball_tracer_and_totals():
    t = EventTracker([1, 2, 3])
    run(t, [([NO_OP] * 3, ob(US, 1)), ([NO_OP] * 3, ob())])
    assert t.totals.sum() == 1
    t.reset()
    assert t.totals.sum() == 0 and t.ball_tracer == []
    # the previous episode's owner (agent 0) must not make this a catch
    total = run(t, [([NO_OP] * 3, ob(US, 2))])
    only(total, {})


def test_dynamic_active_mapping():
    # The reset mapping is players (0, 2, 3); during play agent 0 controls player 1 instead.
    t = EventTracker([0, 2, 3])
    rows = t.observe(
        [SHORT_PASS, NO_OP, NO_OP], ob(US, 1), ob(), prev_active=[1, 2, 3], next_active=[1, 2, 3]
    )
    only(rows, {("pass", 0): 1, ("possession", 0): 1})
    rows = t.observe([NO_OP] * 3, ob(), ob(US, 3), prev_active=[1, 2, 3], next_active=[1, 2, 3])
    only(rows, {("catch", 2): 1, ("actual_pass", 0): 1})
    # with the fixed reset mapping, player 1 belongs to no agent
    t = EventTracker([0, 2, 3])
    rows = t.observe([SHORT_PASS, NO_OP, NO_OP], ob(US, 1), ob())
    only(rows, {})


def test_bad_arguments():
    with pytest.raises(ValueError, match="distinct"):
        EventTracker([1, 1, 2])
    t = EventTracker([1, 2, 3])
    with pytest.raises(ValueError, match="expected 3"):
        t.observe([0, 0], ob(), ob())
    with pytest.raises(ValueError, match="3 of them"):
        t.observe([0, 0, 0], ob(), ob(), prev_active=[1, 2])
