"""Observation, critic-state and action-mask encoding of one GRF game, as ZSC-Eval encodes it.

Everything here is pure numpy on gfootball's *raw* observation dicts (one dict per controlled
player, ``env.unwrapped.observation()``), so it is testable without the simulator.

Source: docs/reference-protocol.md "Football"; ZSC-Eval
``zsceval/envs/grf/raw_feature_process.py: FeatureEncoder.encode_each / encode_state /
get_available_actions`` (representation ``simple115v2_custom``).

Coordinates are gfootball's pitch units: x in [-1, 1] (our goal at -1), y in [-0.42, 0.42],
ball z in metres-like units; directions are per-frame displacements in the same units.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

# ---------------------------------------------------------------------------------------------
# gfootball's default 19-action set (``gfootball/env/football_action_set.py: action_set_v1``).
NO_OP = 0
LEFT = 1
TOP_LEFT = 2
TOP = 3
TOP_RIGHT = 4
RIGHT = 5
BOTTOM_RIGHT = 6
BOTTOM = 7
BOTTOM_LEFT = 8
LONG_PASS = 9
HIGH_PASS = 10
SHORT_PASS = 11
SHOT = 12
SPRINT = 13
RELEASE_MOVE = 14
RELEASE_SPRINT = 15
SLIDE = 16
DRIBBLE = 17
RELEASE_DRIBBLE = 18

ACTION_NAMES: tuple[str, ...] = (
    "NO_OP",
    "LEFT",
    "TOP_LEFT",
    "TOP",
    "TOP_RIGHT",
    "RIGHT",
    "BOTTOM_RIGHT",
    "BOTTOM",
    "BOTTOM_LEFT",
    "LONG_PASS",
    "HIGH_PASS",
    "SHORT_PASS",
    "SHOT",
    "SPRINT",
    "RELEASE_MOVE",
    "RELEASE_SPRINT",
    "SLIDE",
    "DRIBBLE",
    "RELEASE_DRIBBLE",
)
NUM_ACTIONS = len(ACTION_NAMES)  # 19
PASS_ACTIONS: tuple[int, ...] = (LONG_PASS, HIGH_PASS, SHORT_PASS)

# Indices into ``obs["sticky_actions"]`` (10 flags): 0..7 are the eight directions.
STICKY_SPRINT = 8
STICKY_DRIBBLE = 9

# gfootball game modes (``obs["game_mode"]``).
GAME_MODES: tuple[str, ...] = ("Normal", "KickOff", "GoalKick", "FreeKick", "Corner", "ThrowIn", "Penalty")
NUM_GAME_MODES = len(GAME_MODES)  # 7
MODE_GOAL_KICK = 2
MODE_CORNER = 4
MODE_PENALTY = 6

# ``obs["ball_owned_team"]`` values.
BALL_NO_OWNER = -1
BALL_OWNED_BY_US = 0  # the left team, which we control
BALL_OWNED_BY_OPP = 1


def obs_dim(num_left: int, num_right: int) -> int:
    """Length of :func:`encode_observation`'s vector: ``7 * num_left + 6 * num_right + 18``."""
    return 7 * num_left + 6 * num_right + 18


def state_dim(num_left: int, num_right: int, num_controlled: int) -> int:
    """Length of :func:`encode_state`'s vector: ``4 * (n1 + n2) + n0 * n1 + 16``."""
    return 4 * (num_left + num_right) + num_controlled * num_left + 16


def obs_fields(num_left: int = 4, num_right: int = 2) -> list[tuple[str, slice]]:
    """(name, slice) of every block of :func:`encode_observation`'s vector, in order.

    With the defaults (4 left, 2 right players) the blocks cover exactly the 58 dims; this is the
    table of docs/reference-protocol.md "Football".
    """
    sizes = [
        ("own_position", 2),
        ("own_direction", 2),
        ("sticky_sprint_dribble", 2),
        ("teammates_relative_position", 2 * (num_left - 1)),
        ("opponents_relative_position", 2 * num_right),
        ("ball_relative_position", 2),
        ("teammates_position", 2 * (num_left - 1)),
        ("teammates_direction", 2 * (num_left - 1)),
        ("opponents_position", 2 * num_right),
        ("opponents_direction", 2 * num_right),
        ("ball_position", 3),
        ("ball_direction", 3),
        ("ball_owner_onehot", 3),
        ("game_mode_onehot", NUM_GAME_MODES),
        ("own_index_onehot", num_left),
    ]
    fields = []
    start = 0
    for name, size in sizes:
        fields.append((name, slice(start, start + size)))
        start += size
    assert start == obs_dim(num_left, num_right)
    return fields


OBS_FIELDS: list[tuple[str, slice]] = obs_fields(4, 2)
"""The 58 dims of the 3-vs-1-with-keeper observation (4 left, 2 right players)."""


# ---------------------------------------------------------------------------------------------
def _array(obs: Mapping, key: str, shape: tuple[int, ...]) -> np.ndarray:
    if key not in obs:
        raise ValueError(f"observation dict lacks key {key!r}; it has {sorted(obs)}")
    arr = np.asarray(obs[key], dtype=np.float32)
    if arr.shape != shape:
        raise ValueError(f"obs[{key!r}] has shape {arr.shape}, expected {shape}")
    return arr


def _owner_onehot(obs: Mapping) -> np.ndarray:
    team = int(obs["ball_owned_team"])
    if team not in (BALL_NO_OWNER, BALL_OWNED_BY_US, BALL_OWNED_BY_OPP):
        raise ValueError(f"obs['ball_owned_team'] = {team}; valid values are -1 (none), 0 (left), 1 (right)")
    out = np.zeros(3, dtype=np.float32)
    out[team + 1] = 1.0
    return out


def _mode_onehot(obs: Mapping) -> np.ndarray:
    mode = int(obs["game_mode"])
    if not 0 <= mode < NUM_GAME_MODES:
        raise ValueError(f"obs['game_mode'] = {mode}; valid values are 0..6 ({', '.join(GAME_MODES)})")
    out = np.zeros(NUM_GAME_MODES, dtype=np.float32)
    out[mode] = 1.0
    return out


def _active(obs: Mapping, num_left: int) -> int:
    p = int(obs["active"])
    if not 0 <= p < num_left:
        raise ValueError(f"obs['active'] = {p}; valid values are 0..{num_left - 1} (left-team indices)")
    return p


def _num_right(obs: Mapping) -> int:
    return int(np.asarray(obs["right_team"]).reshape(-1, 2).shape[0])


def encode_observation(obs: Mapping, num_left: int, num_right: int) -> np.ndarray:
    """Encode one controlled player's raw observation dict (``simple115v2_custom``).

    Args:
        obs: gfootball raw observation of one controlled player, with keys ``left_team``
            [num_left, 2], ``left_team_direction`` [num_left, 2], ``right_team`` [num_right, 2],
            ``right_team_direction`` [num_right, 2], ``ball`` [3], ``ball_direction`` [3],
            ``ball_owned_team`` (-1/0/1), ``game_mode`` (0..6), ``active`` (left-team index of
            this player) and ``sticky_actions`` [10].
        num_left, num_right: players per team (4 and 2 in 3-vs-1-with-keeper).

    Returns:
        float32 [7 * num_left + 6 * num_right + 18] (58 for 4 / 2), blocks as in
        :data:`OBS_FIELDS`: own position, own direction, (sprinting, dribbling), the other left
        players' positions minus own, the right players' positions minus own, ball (x, y) minus
        own, the other left players' positions and directions, right positions and directions,
        ball (x, y, z), ball direction, owner one-hot (none, left, right), game-mode one-hot,
        one-hot of own left-team index.

    Raises:
        ValueError: missing key, wrong shape, or an out-of-range ``active`` / ``game_mode`` /
            ``ball_owned_team``.

    Source: ZSC-Eval ``raw_feature_process.py: FeatureEncoder.encode_each``.
    """
    left = _array(obs, "left_team", (num_left, 2))
    left_dir = _array(obs, "left_team_direction", (num_left, 2))
    right = _array(obs, "right_team", (num_right, 2))
    right_dir = _array(obs, "right_team_direction", (num_right, 2))
    ball = _array(obs, "ball", (3,))
    ball_dir = _array(obs, "ball_direction", (3,))
    sticky = _array(obs, "sticky_actions", (10,))
    p = _active(obs, num_left)
    me = left[p]
    others = np.delete(left, p, axis=0)
    others_dir = np.delete(left_dir, p, axis=0)
    onehot_me = np.zeros(num_left, dtype=np.float32)
    onehot_me[p] = 1.0
    feat = np.concatenate(
        [
            me,
            left_dir[p],
            sticky[[STICKY_SPRINT, STICKY_DRIBBLE]],
            (others - me).ravel(),
            (right - me).ravel(),
            ball[:2] - me,
            others.ravel(),
            others_dir.ravel(),
            right.ravel(),
            right_dir.ravel(),
            ball,
            ball_dir,
            _owner_onehot(obs),
            _mode_onehot(obs),
            onehot_me,
        ]
    ).astype(np.float32, copy=False)
    return feat


def encode_state(obs_dicts: Sequence[Mapping], num_left: int) -> np.ndarray:
    """Encode the centralized-critic state shared by all controlled players.

    Args:
        obs_dicts: the raw observation dicts of the n0 controlled players, in agent-slot order
            (global fields are read from the first; ``active`` from each).
        num_left: left-team size n1 (4); the right-team size n2 is read from ``right_team``.

    Returns:
        float32 [4 * (n1 + n2) + n0 * n1 + 16] (52 for 4 / 2 / 3): left positions, left
        directions, right positions, right directions, ball (x, y, z), ball direction, owner
        one-hot (3), game-mode one-hot (7), then one n1-way one-hot of ``active`` per controlled
        player. The reference builds the identical vector once per agent; stack it yourself.

    Raises:
        ValueError: empty ``obs_dicts`` or any malformed dict (see :func:`encode_observation`).

    Source: ZSC-Eval ``raw_feature_process.py: FeatureEncoder.encode_state`` (without the
    optional policy-id feature).
    """
    if len(obs_dicts) == 0:
        raise ValueError("encode_state needs at least one observation dict")
    obs = obs_dicts[0]
    num_right = _num_right(obs)
    parts = [
        _array(obs, "left_team", (num_left, 2)).ravel(),
        _array(obs, "left_team_direction", (num_left, 2)).ravel(),
        _array(obs, "right_team", (num_right, 2)).ravel(),
        _array(obs, "right_team_direction", (num_right, 2)).ravel(),
        _array(obs, "ball", (3,)),
        _array(obs, "ball_direction", (3,)),
        _owner_onehot(obs),
        _mode_onehot(obs),
    ]
    active = np.zeros((len(obs_dicts), num_left), dtype=np.float32)
    for i, o in enumerate(obs_dicts):
        active[i, _active(o, num_left)] = 1.0
    parts.append(active.ravel())
    return np.concatenate(parts).astype(np.float32, copy=False)


def available_actions(obs: Mapping) -> np.ndarray:
    """The reference's action mask for one controlled player.

    Rules, in order (docs/reference-protocol.md "Football"):

    - SLIDE off when our team owns the ball (``ball_owned_team == 0``) or the player is dribbling;
    - RELEASE_SPRINT off unless sprinting (``sticky_actions[8]``);
    - RELEASE_DRIBBLE off unless dribbling (``sticky_actions[9]``);
    - RELEASE_MOVE off if no direction (``sticky_actions[0:8]``) is held;
    - set pieces override everything: our goal kick (mode 2 with ball x < -0.7) and our corner
      (mode 4 with ball x > 0.9) allow only NO_OP and the three passes; our penalty (mode 6 with
      ball x > 0.6) allows only NO_OP and SHOT.

    Args:
        obs: raw observation dict with ``ball_owned_team``, ``sticky_actions`` [10], ``ball`` [3]
            and ``game_mode``.

    Returns:
        bool [19]; at least NO_OP is always allowed.

    Source: ZSC-Eval ``raw_feature_process.py: FeatureEncoder.get_available_actions``.
    """
    sticky = _array(obs, "sticky_actions", (10,))
    ball = _array(obs, "ball", (3,))
    mode = int(obs["game_mode"])
    if not 0 <= mode < NUM_GAME_MODES:
        raise ValueError(f"obs['game_mode'] = {mode}; valid values are 0..6 ({', '.join(GAME_MODES)})")
    avail = np.ones(NUM_ACTIONS, dtype=bool)
    if int(obs["ball_owned_team"]) == BALL_OWNED_BY_US:
        avail[SLIDE] = False
    if sticky[STICKY_SPRINT] == 0:
        avail[RELEASE_SPRINT] = False
    if sticky[STICKY_DRIBBLE] == 1:
        avail[SLIDE] = False
    else:
        avail[RELEASE_DRIBBLE] = False
    if not np.any(sticky[:8]):
        avail[RELEASE_MOVE] = False

    ball_x = float(ball[0])
    if (mode == MODE_GOAL_KICK and ball_x < -0.7) or (mode == MODE_CORNER and ball_x > 0.9):
        avail[:] = False
        avail[[NO_OP, *PASS_ACTIONS]] = True
    elif mode == MODE_PENALTY and ball_x > 0.6:
        avail[:] = False
        avail[[NO_OP, SHOT]] = True
    return avail
