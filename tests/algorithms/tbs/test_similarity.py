"""TBS Eq. 5: cross-play similarity on hand-computed matrices."""

import numpy as np
import pytest

from zsceval.algorithms.tbs.similarity import CLUSTERING_OFFSET, clustering_affinity, cross_play_similarity

# J[a, b]: agent 1 of pair a (seat 0) with agent 2 of pair b (seat 1).
# Pair 0 scores 10 in self-play; pairs 1 and 2 score 0 in self-play and with each other.
J3 = np.array(
    [
        [10.0, 4.0, 12.0],
        [1.0, 0.0, 0.0],
        [3.0, 0.0, 0.0],
    ]
)


def test_eq5_hand_computed_3x3():
    S = cross_play_similarity(J3)
    # s(0, 1) = (J01 + J10) / (J00 + J11) = (4 + 1) / (10 + 0) = 0.5
    assert S[0, 1] == pytest.approx(0.5)
    # s(0, 2) = (12 + 3) / (10 + 0) = 1.5 -> clamped to 1
    assert S[0, 2] == pytest.approx(1.0)
    # s(1, 2) = (0 + 0) / (0 + 0): both pairs fail everywhere -> 1
    assert S[1, 2] == 1.0
    # diagonal: 2 J_AA / 2 J_AA = 1, or 0 / 0 = 1
    np.testing.assert_array_equal(np.diag(S), [1.0, 1.0, 1.0])
    expected = np.array([[1.0, 0.5, 1.0], [0.5, 1.0, 1.0], [1.0, 1.0, 1.0]])
    np.testing.assert_allclose(S, expected)
    assert S.dtype == np.float64


def test_below_one_is_not_clamped_and_ratio_uses_both_self_plays():
    J = np.array([[20.0, 6.0], [2.0, 12.0]])
    # (6 + 2) / (20 + 12) = 0.25
    S = cross_play_similarity(J)
    assert S[0, 1] == pytest.approx(0.25)
    assert S[1, 0] == pytest.approx(0.25)


def test_positive_numerator_over_zero_denominator_is_one():
    J = np.array([[0.0, 5.0], [0.0, 0.0]])  # cross-play scores, both self-plays fail
    S = cross_play_similarity(J)
    np.testing.assert_array_equal(S, np.ones((2, 2)))


def test_offset_added_to_every_entry():
    S0 = cross_play_similarity(J3)
    S1 = cross_play_similarity(J3, offset=1e-4)
    np.testing.assert_allclose(S1 - S0, np.full((3, 3), 1e-4), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(clustering_affinity(J3), S1)
    assert CLUSTERING_OFFSET == 1e-4
    assert S1[0, 1] == pytest.approx(0.5001)


def test_symmetric_output_for_asymmetric_returns():
    rng = np.random.default_rng(0)
    J = rng.uniform(0, 100, size=(7, 7))
    S = cross_play_similarity(J)
    np.testing.assert_array_equal(S, S.T)
    assert (S >= 0).all() and (S <= 1).all()
    a, b = 2, 5
    expected = min(1.0, (J[a, b] + J[b, a]) / (J[a, a] + J[b, b]))
    assert S[a, b] == pytest.approx(expected)


def test_integer_returns_accepted():
    S = cross_play_similarity(np.array([[20, 0], [20, 20]]))
    assert S[0, 1] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("J", "match"),
    [
        (np.array([[1.0, np.nan], [0.0, 1.0]]), "NaN"),
        (np.array([[1.0, -0.5], [0.0, 1.0]]), "negative"),
        (np.array([[1.0, np.inf], [0.0, 1.0]]), "infinite"),
        (np.ones((2, 3)), "square"),
        (np.ones(4), "square"),
        (np.zeros((0, 0)), "empty"),
    ],
)
def test_invalid_returns_raise(J, match):
    with pytest.raises(ValueError, match=match):
        cross_play_similarity(J)


def test_invalid_offset_raises():
    with pytest.raises(ValueError, match="offset"):
        cross_play_similarity(J3, offset=-1e-4)
