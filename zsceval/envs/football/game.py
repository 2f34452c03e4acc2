"""One Google Research Football game with 3 controlled players, as ZSC-Eval's FootballEnv plays it.

Source: docs/reference-protocol.md "Football"; ZSC-Eval ``zsceval/envs/grf/grf_env.py: FootballEnv`` (no
``random_index`` agent permutation, no policy-id feature, no last-action feature: those belong to
the batched wrapper).
"""

from __future__ import annotations

import contextlib
import io
import pickle
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from .events import EV_SCORE, EVENT_NAMES, EventTracker
from .features import NUM_ACTIONS, available_actions, encode_observation, encode_state, obs_dim, state_dim
from .rewards import REFERENCE_REWARD, weight_vector
from .scenario import DEFAULT_DIFFICULTY, DEFAULT_GAME_DURATION, register_scenario

INSTALL_HINT = (
    "pip install --no-build-isolation gfootball==2.10.2 (needs Debian packages: see docs/football.md)"
)

GAME_STEP_KEYS: tuple[str, ...] = (
    "obs",
    "avail_actions",
    "reward",
    "sparse_by_agent",
    "shaped_by_agent",
    "events",
    "terminated",
    "truncated",
    "critic_obs",
    "checkpoint_reward",
)
"""Keys of the dict returned by :meth:`FootballGame.reset` and :meth:`FootballGame.step`."""

REPRESENTATIONS = ("raw", "simple115v2")
EVENT_MAPPINGS = ("dynamic", "reference")


def _import_gfootball():
    """``gfootball.env``, imported without old gym's end-of-life notice on stderr (gfootball needs
    ``gym<0.26``; zsceval itself uses gymnasium)."""
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            import gfootball.env as football_env
    except ImportError as exc:  # pragma: no cover - exercised only without gfootball
        raise ImportError(f"gfootball is not importable ({exc}); install it with: {INSTALL_HINT}") from exc
    return football_env


class FootballGame:
    """One gfootball simulator running ZSC-Eval's hard ``academy_3_vs_1_with_keeper``.

    Args:
        seed: ``game_engine_random_seed`` of the engine (the scenario is non-deterministic; the
            seed fixes its random stream and, by its parity, gfootball's team processing order).
            gfootball reuses the seed at every reset, so with equal actions every episode of one
            game, and of two games with the same seed, is identical. Reduced modulo 2**31 - 1 (the
            engine's seed is a C int).
        difficulty: right-team AI difficulty in [0, 1] (reference 0.95).
        game_duration: episode cap in steps (reference 400) = :attr:`horizon`.
        representation: gfootball representation to build, ``"raw"`` (default, cheapest) or
            ``"simple115v2"`` (the reference's); the encoded observation is the same either way.
        reward_weights: per-agent reward weights (see :func:`~zsceval.envs.football.rewards.agent_reward`)
            used for ``shaped_by_agent``; defaults to :data:`REFERENCE_REWARD` (score 5,
            checkpoints 1).
        event_mapping: how events find the agent behind a player: ``"dynamic"`` (default) uses
            each step's ``obs["active"]`` (gfootball re-assigns controlled players during play);
            ``"reference"`` keeps the reset mapping all episode, as ZSC-Eval does (with this
            scenario that mapping is (0, 2, 3): the kick-off ball carrier, player 1, is never
            credited). See ``docs/differences-grf-game.md``.

    Raises:
        ImportError: gfootball is missing (the message gives the install command).
        ValueError: bad ``difficulty`` / ``game_duration`` / ``representation`` / weights.

    Every :meth:`reset` / :meth:`step` returns a *GameStep* dict of numpy arrays (n = 3 agents):
    ``obs`` float32 [n, 58], ``avail_actions`` bool [n, 19], ``reward`` float32 [] (goals our team
    scored this step), ``sparse_by_agent`` float32 [n] (each agent's *score* event),
    ``shaped_by_agent`` float32 [n] (the reference's per-agent reward), ``events`` int16 [n, 8]
    (:data:`EVENT_NAMES` order), ``terminated`` bool [], ``truncated`` bool [] (the reference's
    ``bad_transition``: ended at ``steps_left == 0`` without winning), ``critic_obs`` float32
    [n, 52] (identical rows), ``checkpoint_reward`` float32 [n] (gfootball's per-player reward
    minus its score reward).

    Attributes: ``num_agents`` 3, ``num_actions`` 19, ``obs_dim`` 58, ``critic_dim`` 52,
    ``event_names``, ``horizon`` (= game_duration), ``max_episode_steps`` (game_duration + 1:
    gfootball's first observation has ``steps_left = game_duration + 1``), ``player_ids`` (the
    ``active`` indices at the last reset).
    """

    num_agents = 3
    num_actions = NUM_ACTIONS
    event_names = EVENT_NAMES

    def __init__(
        self,
        seed: int = 0,
        difficulty: float = DEFAULT_DIFFICULTY,
        game_duration: int = DEFAULT_GAME_DURATION,
        representation: str = "raw",
        reward_weights: Mapping[str, float] | None = None,
        event_mapping: str = "dynamic",
    ):
        if representation not in REPRESENTATIONS:
            raise ValueError(f"representation must be one of {list(REPRESENTATIONS)}, got {representation!r}")
        if event_mapping not in EVENT_MAPPINGS:
            raise ValueError(f"event_mapping must be one of {list(EVENT_MAPPINGS)}, got {event_mapping!r}")
        self.event_mapping = event_mapping
        self._w_events, self._w_checkpoint = weight_vector(
            REFERENCE_REWARD if reward_weights is None else reward_weights
        )
        football_env = _import_gfootball()
        self.seed = int(seed) % (2**31 - 1)
        self.difficulty = float(difficulty)
        self.horizon = int(game_duration)
        # gfootball's first observation shows steps_left = game_duration + 1: an episode that
        # runs to the cap lasts game_duration + 1 steps.
        self.max_episode_steps = self.horizon + 1
        self.level = register_scenario(difficulty, game_duration)
        with warnings.catch_warnings():  # old gym's notice that its wrappers use the old step API
            warnings.simplefilter("ignore", DeprecationWarning)
            self._env = football_env.create_environment(
                env_name=self.level,
                representation=representation,
                rewards="scoring,checkpoints",
                number_of_left_players_agent_controls=self.num_agents,
                number_of_right_players_agent_controls=0,
                other_config_options={"action_set": "default", "game_engine_random_seed": self.seed},
            )
        core_cfg = self._env.unwrapped._env._env.config
        self.num_left = len(list(core_cfg.left_team))
        self.num_right = len(list(core_cfg.right_team))
        self.obs_dim = obs_dim(self.num_left, self.num_right)
        self.critic_dim = state_dim(self.num_left, self.num_right, self.num_agents)
        self._tracker: EventTracker | None = None
        self._prev: list[dict] | None = None
        self._done = True
        self.player_ids: tuple[int, ...] = ()

    # ------------------------------------------------------------------------------------------
    def _encode(self, dicts: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        obs = np.stack([encode_observation(d, self.num_left, self.num_right) for d in dicts])
        avail = np.stack([available_actions(d) for d in dicts])
        state = encode_state(dicts, self.num_left)
        critic = np.broadcast_to(state, (self.num_agents, state.shape[0])).copy()
        return obs, avail, critic

    def _game_step(self, dicts, events, checkpoint, reward, terminated, truncated) -> dict[str, np.ndarray]:
        obs, avail, critic = self._encode(dicts)
        events = np.asarray(events, dtype=np.int16)
        checkpoint = np.asarray(checkpoint, dtype=np.float32)
        shaped = events.astype(np.float32) @ self._w_events + np.float32(self._w_checkpoint) * checkpoint
        return {
            "obs": obs,
            "avail_actions": avail,
            "reward": np.array(reward, dtype=np.float32),
            "sparse_by_agent": events[:, EV_SCORE].astype(np.float32),
            "shaped_by_agent": shaped.astype(np.float32),
            "events": events,
            "terminated": np.array(terminated, dtype=bool),
            "truncated": np.array(truncated, dtype=bool),
            "critic_obs": critic,
            "checkpoint_reward": checkpoint,
        }

    def reset(self) -> dict[str, np.ndarray]:
        """Start a new episode; rewards and events are zero, ``terminated``/``truncated`` False."""
        self._env.reset()
        dicts = self._env.unwrapped.observation()
        ids = tuple(int(d["active"]) for d in dicts)
        if self._tracker is None or ids != self.player_ids:
            self._tracker = EventTracker(ids)
            self.player_ids = ids
        self._tracker.reset()
        self._prev = dicts
        self._done = False
        n = self.num_agents
        return self._game_step(dicts, np.zeros((n, len(EVENT_NAMES))), np.zeros(n), 0.0, False, False)

    def step(self, actions) -> dict[str, np.ndarray]:
        """Advance one step.

        Args:
            actions: int [3], one action in 0..18 per agent slot.

        Raises:
            ValueError: wrong shape or an action outside 0..18.
            RuntimeError: called before :meth:`reset` or after the episode ended.
        """
        if self._done:
            raise RuntimeError(
                "FootballGame.step called before reset() or after the episode ended; call reset()"
            )
        acts = np.asarray(actions).reshape(-1)
        if acts.shape[0] != self.num_agents or not np.issubdtype(acts.dtype, np.integer):
            raise ValueError(f"actions must be {self.num_agents} integers, got {np.asarray(actions)!r}")
        if acts.min() < 0 or acts.max() >= NUM_ACTIONS:
            raise ValueError(
                f"actions must lie in 0..{NUM_ACTIONS - 1} (default action set), got {acts.tolist()}"
            )
        _, reward, done, info = self._env.step([int(a) for a in acts])
        dicts = self._env.unwrapped.observation()
        prev, nxt = self._prev[0], dicts[0]
        if self.event_mapping == "dynamic":
            prev_ids = [int(d["active"]) for d in self._prev]
            next_ids = [int(d["active"]) for d in dicts]
            events = self._tracker.observe(acts, prev, nxt, prev_ids, next_ids)
        else:
            events = self._tracker.observe(acts, prev, nxt)
        checkpoint = np.asarray(reward, dtype=np.float32).reshape(-1) - np.float32(info["score_reward"])
        goals = max(0, int(nxt["score"][0]) - int(prev["score"][0]))
        truncated = (
            bool(done) and int(nxt["steps_left"]) == 0 and not int(nxt["score"][0]) > int(nxt["score"][1])
        )
        terminated = bool(done) and not truncated
        self._prev = dicts
        self._done = bool(done)
        return self._game_step(dicts, events, checkpoint, float(goals), terminated, truncated)

    # ------------------------------------------------------------------------------------------
    @property
    def episode_events(self) -> np.ndarray:
        """int64 [3, 8]: this episode's event totals so far."""
        if self._tracker is None:
            return np.zeros((self.num_agents, len(EVENT_NAMES)), dtype=np.int64)
        return self._tracker.totals.copy()

    def raw_observation(self) -> list[dict[str, Any]]:
        """gfootball's raw observation dicts of the 3 controlled players (a deep copy)."""
        return self._env.unwrapped.observation()

    def get_state(self) -> bytes:
        """Snapshot of the engine, the checkpoint wrapper and the event tracker (call after reset)."""
        if self._prev is None:
            raise RuntimeError("FootballGame.get_state needs a reset() first")
        return pickle.dumps(
            {
                "engine": self._env.get_state(),
                "tracker": self._tracker.get_state(),
                "player_ids": self.player_ids,
                "done": self._done,
            }
        )

    def set_state(self, state: bytes) -> None:
        """Restore a :meth:`get_state` snapshot taken from a game with the same settings."""
        snap = pickle.loads(state)
        if self._prev is None:
            self.reset()
        self._env.set_state(snap["engine"])
        self.player_ids = tuple(snap["player_ids"])
        self._tracker = EventTracker(self.player_ids)
        self._tracker.set_state(snap["tracker"])
        self._done = bool(snap["done"])
        self._prev = self._env.unwrapped.observation()
        # gfootball's core counts the episode's steps outside the saved state, and on the step it
        # counts as the first one it writes an 'episode_done' dump through its trace, which it has
        # just deleted if that step ended the episode: a game restored one step before its end
        # raised AttributeError there. Give the core the restored episode's own step count.
        core = self._env.unwrapped._env
        core._step_count = self.max_episode_steps - int(self._prev[0]["steps_left"])

    def close(self) -> None:
        """Shut the simulator down."""
        self._env.close()
