"""Observation / critic-state / action-mask encoding on hand-built raw observation dicts."""

import numpy as np
import pytest

from zsceval.envs.football import features as F


def make_obs(active=2, **overrides):
    obs = {
        "left_team": np.array([[-1.0, 0.0], [0.6, 0.0], [0.7, 0.2], [0.7, -0.2]]),
        "left_team_direction": np.array([[0.0, 0.0], [0.01, 0.0], [0.0, -0.02], [0.03, 0.01]]),
        "right_team": np.array([[1.0, 0.0], [0.75, 0.0]]),
        "right_team_direction": np.array([[0.0, 0.005], [-0.01, 0.0]]),
        "ball": np.array([0.62, 0.0, 0.1]),
        "ball_direction": np.array([0.01, 0.0, -0.002]),
        "ball_owned_team": 0,
        "ball_owned_player": 1,
        "game_mode": 0,
        "score": [0, 0],
        "steps_left": 400,
        "active": active,
        "sticky_actions": np.array([0, 0, 0, 0, 1, 0, 0, 0, 1, 0]),
    }
    obs.update(overrides)
    return obs


def field(vec, name):
    return vec[dict(F.OBS_FIELDS)[name]]


def test_obs_fields_cover_58_dims_in_order():
    assert F.obs_dim(4, 2) == 58
    starts = [s.start for _, s in F.OBS_FIELDS]
    stops = [s.stop for _, s in F.OBS_FIELDS]
    assert starts[0] == 0 and stops[-1] == 58
    assert starts[1:] == stops[:-1]
    assert [n for n, _ in F.OBS_FIELDS][:3] == ["own_position", "own_direction", "sticky_sprint_dribble"]
    assert F.obs_dim(11, 11) == 7 * 11 + 6 * 11 + 18


def test_encode_observation_by_hand():
    v = F.encode_observation(make_obs(active=2), 4, 2)
    assert v.shape == (58,) and v.dtype == np.float32
    np.testing.assert_allclose(v[0:2], [0.7, 0.2], atol=1e-6)  # own position
    np.testing.assert_allclose(v[2:4], [0.0, -0.02], atol=1e-6)  # own direction
    np.testing.assert_allclose(v[4:6], [1.0, 0.0])  # sprinting, not dribbling
    # teammates 0, 1, 3 minus own (0.7, 0.2)
    np.testing.assert_allclose(v[6:12], [-1.7, -0.2, -0.1, -0.2, 0.0, -0.4], atol=1e-6)
    # opponents (1, 0), (0.75, 0) minus own
    np.testing.assert_allclose(v[12:16], [0.3, -0.2, 0.05, -0.2], atol=1e-6)
    np.testing.assert_allclose(v[16:18], [-0.08, -0.2], atol=1e-6)  # ball (x, y) minus own
    np.testing.assert_allclose(v[18:24], [-1.0, 0.0, 0.6, 0.0, 0.7, -0.2], atol=1e-6)  # teammates
    np.testing.assert_allclose(v[24:30], [0.0, 0.0, 0.01, 0.0, 0.03, 0.01], atol=1e-6)  # their dirs
    np.testing.assert_allclose(v[30:34], [1.0, 0.0, 0.75, 0.0], atol=1e-6)
    np.testing.assert_allclose(v[34:38], [0.0, 0.005, -0.01, 0.0], atol=1e-6)
    np.testing.assert_allclose(v[38:41], [0.62, 0.0, 0.1], atol=1e-6)
    np.testing.assert_allclose(v[41:44], [0.01, 0.0, -0.002], atol=1e-6)
    np.testing.assert_array_equal(v[44:47], [0, 1, 0])  # owned by left
    np.testing.assert_array_equal(v[47:54], [1, 0, 0, 0, 0, 0, 0])  # normal mode
    np.testing.assert_array_equal(v[54:58], [0, 0, 1, 0])  # own index 2
    np.testing.assert_array_equal(field(v, "own_index_onehot"), v[54:58])


def test_encode_observation_owner_mode_and_active_change_blocks():
    v = F.encode_observation(make_obs(active=0, ball_owned_team=-1, game_mode=6), 4, 2)
    np.testing.assert_allclose(field(v, "own_position"), [-1.0, 0.0])
    np.testing.assert_allclose(field(v, "teammates_position"), [0.6, 0.0, 0.7, 0.2, 0.7, -0.2], atol=1e-6)
    np.testing.assert_array_equal(field(v, "ball_owner_onehot"), [1, 0, 0])
    np.testing.assert_array_equal(field(v, "game_mode_onehot"), [0, 0, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(field(v, "own_index_onehot"), [1, 0, 0, 0])
    v = F.encode_observation(make_obs(ball_owned_team=1), 4, 2)
    np.testing.assert_array_equal(field(v, "ball_owner_onehot"), [0, 0, 1])


@pytest.mark.parametrize(
    "override, match",
    [
        ({"active": 4}, "valid values are 0..3"),
        ({"game_mode": 7}, "valid values are 0..6"),
        ({"ball_owned_team": 2}, "valid values are -1"),
        ({"left_team": np.zeros((3, 2))}, "expected \\(4, 2\\)"),
    ],
)
def test_encode_observation_rejects_bad_input(override, match):
    with pytest.raises(ValueError, match=match):
        F.encode_observation(make_obs(**override), 4, 2)


def test_encode_state_by_hand():
    dicts = [make_obs(active=1), make_obs(active=2), make_obs(active=3)]
    s = F.encode_state(dicts, 4)
    assert s.shape == (52,) == (F.state_dim(4, 2, 3),) and s.dtype == np.float32
    np.testing.assert_allclose(s[0:8], [-1.0, 0.0, 0.6, 0.0, 0.7, 0.2, 0.7, -0.2], atol=1e-6)
    np.testing.assert_allclose(s[8:16], [0.0, 0.0, 0.01, 0.0, 0.0, -0.02, 0.03, 0.01], atol=1e-6)
    np.testing.assert_allclose(s[16:20], [1.0, 0.0, 0.75, 0.0], atol=1e-6)
    np.testing.assert_allclose(s[20:24], [0.0, 0.005, -0.01, 0.0], atol=1e-6)
    np.testing.assert_allclose(s[24:30], [0.62, 0.0, 0.1, 0.01, 0.0, -0.002], atol=1e-6)
    np.testing.assert_array_equal(s[30:33], [0, 1, 0])
    np.testing.assert_array_equal(s[33:40], [1, 0, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(s[40:52], [0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1])
    # The order of the controlled players moves only the one-hot blocks.
    s2 = F.encode_state([dicts[2], dicts[0], dicts[1]], 4)
    np.testing.assert_array_equal(s2[:40], s[:40])
    np.testing.assert_array_equal(s2[40:52], [0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0])
    with pytest.raises(ValueError, match="at least one"):
        F.encode_state([], 4)


def allowed(mask):
    return [F.ACTION_NAMES[i] for i in np.flatnonzero(mask)]


def test_mask_normal_play_with_our_ball_sprinting_and_moving():
    m = F.available_actions(make_obs())
    assert m.shape == (19,) and m.dtype == bool
    # our team owns -> no SLIDE; not dribbling -> no RELEASE_DRIBBLE; sprinting and moving -> both releases ok
    assert set(F.ACTION_NAMES) - set(allowed(m)) == {"SLIDE", "RELEASE_DRIBBLE"}


def test_mask_sticky_rules():
    idle = np.zeros(10)
    m = F.available_actions(make_obs(ball_owned_team=1, sticky_actions=idle))
    assert set(F.ACTION_NAMES) - set(allowed(m)) == {"RELEASE_SPRINT", "RELEASE_DRIBBLE", "RELEASE_MOVE"}
    dribbling = np.array([0, 0, 0, 0, 0, 0, 0, 0, 0, 1])
    m = F.available_actions(make_obs(ball_owned_team=-1, sticky_actions=dribbling))
    assert set(F.ACTION_NAMES) - set(allowed(m)) == {"SLIDE", "RELEASE_SPRINT", "RELEASE_MOVE"}
    assert m[F.RELEASE_DRIBBLE]


@pytest.mark.parametrize(
    "mode, ball_x, expected",
    [
        (2, -0.8, {"NO_OP", "LONG_PASS", "HIGH_PASS", "SHORT_PASS"}),  # our goal kick
        (4, 0.95, {"NO_OP", "LONG_PASS", "HIGH_PASS", "SHORT_PASS"}),  # our corner
        (6, 0.7, {"NO_OP", "SHOT"}),  # our penalty
    ],
)
def test_mask_set_pieces(mode, ball_x, expected):
    m = F.available_actions(make_obs(game_mode=mode, ball=np.array([ball_x, 0.0, 0.0])))
    assert set(allowed(m)) == expected


@pytest.mark.parametrize("mode, ball_x", [(2, 0.8), (4, -0.95), (6, -0.7), (3, 0.95)])
def test_mask_set_pieces_of_the_opponent_leave_the_normal_rules(mode, ball_x):
    m = F.available_actions(make_obs(game_mode=mode, ball=np.array([ball_x, 0.0, 0.0])))
    assert set(F.ACTION_NAMES) - set(allowed(m)) == {"SLIDE", "RELEASE_DRIBBLE"}
