"""FootballGame on the real simulator (skipped without gfootball) and the scenario registration."""

import sys

import numpy as np
import pytest

from zsceval.envs.football.events import EVENT_NAMES
from zsceval.envs.football.game import GAME_STEP_KEYS, INSTALL_HINT, FootballGame
from zsceval.envs.football.scenario import register_scenario, scenario_level

SKIP_REASON = (
    "pip install --no-build-isolation gfootball==2.10.2 (needs Debian packages: see docs/football.md)"
)


def _have_gfootball() -> bool:
    try:
        import gfootball.env  # noqa: F401
    except ImportError:
        return False
    return True


HAVE_GFOOTBALL = _have_gfootball()
needs_gfootball = pytest.mark.skipif(not HAVE_GFOOTBALL, reason=SKIP_REASON)

SHAPES = {
    "obs": ((3, 58), np.float32),
    "avail_actions": ((3, 19), np.bool_),
    "reward": ((), np.float32),
    "sparse_by_agent": ((3,), np.float32),
    "shaped_by_agent": ((3,), np.float32),
    "events": ((3, 8), np.int16),
    "terminated": ((), np.bool_),
    "truncated": ((), np.bool_),
    "critic_obs": ((3, 52), np.float32),
    "checkpoint_reward": ((3,), np.float32),
}


def check_step(s):
    assert set(s) == set(GAME_STEP_KEYS) == set(SHAPES)
    for k, (shape, dtype) in SHAPES.items():
        assert s[k].shape == shape and s[k].dtype == dtype, (k, s[k].shape, s[k].dtype)
    assert s["avail_actions"].any(axis=1).all()
    assert (s["critic_obs"] == s["critic_obs"][0]).all()
    assert np.isfinite(s["obs"]).all() and np.isfinite(s["critic_obs"]).all()


def random_available(rng, s):
    return np.array([rng.choice(np.flatnonzero(m)) for m in s["avail_actions"]], dtype=np.int64)


@pytest.fixture(scope="module")
def game():
    pytest.importorskip("gfootball.env", reason=SKIP_REASON)
    g = FootballGame(seed=7)
    yield g
    g.close()


def test_scenario_level_names_and_validation():
    assert scenario_level() == "zsceval_academy_3_vs_1_with_keeper_hard_d0p9500_t400"
    assert scenario_level(1.0, 200) == "zsceval_academy_3_vs_1_with_keeper_hard_d1p0000_t200"
    with pytest.raises(ValueError, match="difficulty must be in \\[0, 1\\]"):
        scenario_level(1.5)
    with pytest.raises(ValueError, match="positive integer"):
        scenario_level(0.95, 0)


def test_missing_gfootball_raises_importerror_with_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "gfootball.env", None)  # makes `import gfootball.env` fail
    with pytest.raises(ImportError, match="pip install --no-build-isolation gfootball==2.10.2"):
        FootballGame()
    assert "docs/football.md" in INSTALL_HINT


@needs_gfootball
def test_scenario_is_registered_without_touching_site_packages():
    import gfootball.scenarios
    from gfootball.env import config

    level = register_scenario(0.95, 400)
    assert f"gfootball.scenarios.{level}" in sys.modules
    # gfootball's own loader builds it, and the built-in file is left as shipped (difficulty 0.6)
    cfg = config.Config({"level": level}).ScenarioConfig()
    assert cfg.game_duration == 400 and abs(cfg.right_team_difficulty - 0.95) < 1e-6
    assert not cfg.deterministic and not cfg.offsides
    assert (
        cfg.end_episode_on_score and cfg.end_episode_on_out_of_play and cfg.end_episode_on_possession_change
    )
    left = [(p.position[0], p.position[1], str(p.role)) for p in cfg.left_team]
    right = [(p.position[0], p.position[1], str(p.role)) for p in cfg.right_team]
    assert [r for *_, r in left] == ["e_PlayerRole_GK"] + ["e_PlayerRole_CM"] * 3
    assert [r for *_, r in right] == ["e_PlayerRole_GK", "e_PlayerRole_CB"]
    np.testing.assert_allclose(
        [xy for *xy, _ in left], [[-1, 0], [0.6, 0], [0.7, 0.2], [0.7, -0.2]], atol=1e-6
    )
    np.testing.assert_allclose([xy for *xy, _ in right], [[-1, 0], [-0.75, 0]], atol=1e-6)
    np.testing.assert_allclose([cfg.ball_position[0], cfg.ball_position[1]], [0.62, 0.0], atol=1e-6)
    builtin = config.Config({"level": "academy_3_vs_1_with_keeper"}).ScenarioConfig()
    assert abs(builtin.right_team_difficulty - 0.6) < 1e-6
    assert hasattr(gfootball.scenarios, level)


@needs_gfootball
def test_attributes_and_reset(game):
    assert (game.num_agents, game.num_actions, game.obs_dim, game.critic_dim) == (3, 19, 58, 52)
    assert game.event_names == EVENT_NAMES and game.horizon == 400 and game.max_episode_steps == 401
    s = game.reset()
    check_step(s)
    for k in ("reward", "sparse_by_agent", "shaped_by_agent", "events", "checkpoint_reward"):
        assert not s[k].any(), k
    assert not s["terminated"] and not s["truncated"]
    raw = game.raw_observation()
    # scenario layout in the observation: right team mirrored into our frame, ball at (0.62, 0)
    np.testing.assert_allclose(raw[0]["left_team"], [[-1, 0], [0.6, 0], [0.7, 0.2], [0.7, -0.2]], atol=0.02)
    np.testing.assert_allclose(raw[0]["right_team"], [[1, 0], [0.75, 0]], atol=0.02)
    np.testing.assert_allclose(raw[0]["ball"][:2], [0.62, 0.0], atol=0.02)
    assert raw[0]["steps_left"] == 401
    for i in range(3):  # each agent's own-position block is the player it controls
        np.testing.assert_allclose(s["obs"][i, :2], raw[i]["left_team"][raw[i]["active"]], atol=1e-6)


@needs_gfootball
def test_random_episodes(game):
    rng = np.random.default_rng(0)
    for _ in range(3):
        s = game.reset()
        steps, goals, sparse_agents, events = 0, 0.0, 0.0, np.zeros((3, 8), dtype=np.int64)
        while True:
            a = random_available(rng, s)
            s = game.step(a)
            check_step(s)
            steps += 1
            goals += float(s["reward"])
            sparse_agents += float(s["sparse_by_agent"].sum())
            events += s["events"]
            np.testing.assert_allclose(
                s["shaped_by_agent"],
                5.0 * s["events"][:, EVENT_NAMES.index("score")] + s["checkpoint_reward"],
                atol=1e-6,
            )
            np.testing.assert_array_equal(s["sparse_by_agent"], s["events"][:, EVENT_NAMES.index("score")])
            if s["terminated"] or s["truncated"]:
                break
            assert steps <= game.max_episode_steps
        assert not (s["terminated"] and s["truncated"])
        raw = game.raw_observation()[0]
        assert goals == raw["score"][0] and sparse_agents <= goals
        assert steps <= game.max_episode_steps and steps == 401 - raw["steps_left"]
        np.testing.assert_array_equal(game.episode_events, events)
    with pytest.raises(RuntimeError, match="call reset"):
        game.step(np.zeros(3, dtype=np.int64))


@needs_gfootball
def test_scripted_goal_is_credited():
    # Seed 3: agent 0 (on the kick-off ball carrier) runs top-right once, then holds SHOT; goal at step 16.
    g = FootballGame(seed=3)
    try:
        s = g.reset()
        steps, goals, events, checkpoints, shaped = 0, 0.0, np.zeros((3, 8)), np.zeros(3), np.zeros(3)
        while not (s["terminated"] or s["truncated"]):
            steps += 1
            s = g.step(np.array([4 if steps == 1 else 12, 0, 0]))
            goals += float(s["reward"])
            events += s["events"]
            checkpoints += s["checkpoint_reward"]
            shaped += s["shaped_by_agent"]
        assert g.raw_observation()[0]["score"] == [1, 0]
        assert goals == 1.0 and bool(s["terminated"]) and not bool(s["truncated"])
        score = EVENT_NAMES.index("score")
        np.testing.assert_array_equal(s["events"][:, score], [1, 0, 0])
        np.testing.assert_array_equal(events[:, score], [1, 0, 0])
        assert events[0, EVENT_NAMES.index("shot")] >= 1 and events[0, EVENT_NAMES.index("possession")] >= 1
        np.testing.assert_array_equal(s["sparse_by_agent"], [1, 0, 0])
        # a goal pays every controlled index all its uncollected bands: 10 x 0.1 per agent in all
        np.testing.assert_allclose(checkpoints, [1.0, 1.0, 1.0], atol=1e-5)
        np.testing.assert_allclose(shaped, [6.0, 1.0, 1.0], atol=1e-5)
    finally:
        g.close()


@needs_gfootball
def test_bad_actions(game):
    game.reset()
    with pytest.raises(ValueError, match="0..18"):
        game.step(np.array([0, 19, 0]))
    with pytest.raises(ValueError, match="3 integers"):
        game.step(np.array([0, 0]))


@needs_gfootball
def test_episode_cap_is_a_truncation():
    g = FootballGame(seed=0, game_duration=10)
    try:
        s = g.reset()
        steps = 0
        while not (s["terminated"] or s["truncated"]):
            s = g.step(np.zeros(3, dtype=np.int64))  # NO_OP: the kick-off player keeps the ball
            steps += 1
        assert steps == 11 == g.max_episode_steps
        assert bool(s["truncated"]) and not bool(s["terminated"])
        assert g.raw_observation()[0]["steps_left"] == 0
        # the kick-off ball carrier was in possession, credited to an agent (dynamic mapping)
        assert g.episode_events[:, EVENT_NAMES.index("possession")].sum() >= 5
        assert s["checkpoint_reward"].sum() == 0.0  # bands were collected at the first touch only
    finally:
        g.close()


@needs_gfootball
def test_reference_event_mapping_keeps_the_reset_players():
    g = FootballGame(seed=0, game_duration=10, event_mapping="reference")
    try:
        g.reset()
        assert g.player_ids == (0, 2, 3)
        for _ in range(8):
            s = g.step(np.zeros(3, dtype=np.int64))
        # player 1 holds the ball, but under the reset mapping no agent controls it
        assert g.raw_observation()[0]["ball_owned_player"] == 1
        assert g.episode_events.sum() == 0 and not s["events"].any()
    finally:
        g.close()
    with pytest.raises(ValueError, match="'dynamic', 'reference'"):
        FootballGame(event_mapping="fixed")


@needs_gfootball
def test_same_seed_same_actions_same_trajectory_and_state_round_trip(game):
    other = FootballGame(seed=7)
    try:
        acts = [np.array([a, 0, 13]) for a in (5, 5, 5, 12, 4, 4, 5, 1, 0, 0, 0, 9)]

        def roll(g):
            out = []
            for a in acts:
                out.append(g.step(a))
                if out[-1]["terminated"] or out[-1]["truncated"]:
                    break
            return out

        game.reset()
        other.reset()
        game.step(np.array([5, 0, 0]))
        other.step(np.array([5, 0, 0]))
        snap = game.get_state()
        a, b = roll(game), roll(other)
        game.set_state(snap)
        c = roll(game)
        assert len(a) == len(b) == len(c)
        for x, y, z in zip(a, b, c):
            for k in GAME_STEP_KEYS:
                np.testing.assert_array_equal(x[k], y[k], err_msg=k)
                np.testing.assert_array_equal(x[k], z[k], err_msg=k)
    finally:
        other.close()


@needs_gfootball
def test_a_game_restored_one_step_before_its_end_finishes_that_step():
    """gfootball writes an 'episode_done' dump on what it counts as an episode's first step; after a
    restore into a fresh game that was the step ending the episode, whose trace it had just deleted
    (AttributeError; every Football resume with a game about to finish hit it)."""
    g, h = FootballGame(seed=3, game_duration=10), FootballGame(seed=3, game_duration=10)
    try:
        g.reset()
        while True:
            snap = g.get_state()
            last = g.step(np.array([0, 0, 0]))
            if last["terminated"] or last["truncated"]:
                break
        h.set_state(snap)
        again = h.step(np.array([0, 0, 0]))
        assert again["terminated"] or again["truncated"]
        for k in GAME_STEP_KEYS:
            np.testing.assert_array_equal(again[k], last[k], err_msg=k)
    finally:
        g.close()
        h.close()
