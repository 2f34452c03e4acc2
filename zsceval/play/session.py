"""Games between a person and a saved agent: loading the agent, stepping one game, saving it.

A person plays one seat of an Overcooked game; the saved agent plays every other seat. The page
(:mod:`zsceval.play.server`) advances the game by one step per tick, sending the latest key the
person pressed since the previous tick (:data:`KEY_ACTIONS`; no key = STAY). The agent acts with
its recurrent state carried from step to step, as in evaluation (:class:`~zsceval.rl.runner.
EpisodeRunner` with a :func:`~zsceval.rl.seating.fixed_seating`, actions sampled, not arg-max).

Every game is saved as a ``zsceval-trajectory`` file (:mod:`zsceval.interop.trajectory`), one
episode per file, written atomically: when it reaches its horizon (``meta.complete = true``) and
when it is abandoned part-way (the tab was closed, no tick came for ``idle_timeout`` seconds, or
the server stopped: ``meta.complete = false``, ``meta.end`` says which).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from zsceval.envs.overcooked.constants import Action
from zsceval.interop.trajectory import Trajectory, json_form, save_trajectories
from zsceval.rl.agent import ActOutput

__all__ = [
    "DEFAULT_FPS",
    "KEY_ACTIONS",
    "Game",
    "Games",
    "Opponent",
    "PlayError",
    "key_action",
    "load_opponent",
]

DEFAULT_FPS = 400 / 60
"""Ticks per second: the human study of ZSC-Eval (App. C.4.1) played 400 steps in about one minute."""

KEY_ACTIONS: dict[str | None, int] = {
    "ArrowUp": int(Action.NORTH),
    "ArrowDown": int(Action.SOUTH),
    "ArrowRight": int(Action.EAST),
    "ArrowLeft": int(Action.WEST),
    " ": int(Action.INTERACT),
    None: int(Action.STAY),
}
"""The person's action for each key (``KeyboardEvent.key`` names; ``" "`` is the space bar and
``None`` a tick without a key press). North is up on the screen (y grows downwards)."""


class PlayError(ValueError):
    """Bad input for a game (unknown agent, agent/layout mismatch, bad seat or horizon, unknown
    key, unknown or finished game); the message says what is wrong and what to do."""

    status = 400


def key_action(key: str | None) -> int:
    """The action of a key (:data:`KEY_ACTIONS`).

    Raises:
        PlayError: not one of the keys.
    """
    if key not in KEY_ACTIONS:
        names = ", ".join("Space" if k == " " else k for k in KEY_ACTIONS if k is not None)
        raise PlayError(f"unknown key {key!r}; the keys are {names} (none: stay)")
    return KEY_ACTIONS[key]


# ---------------------------------------------------------------------------- the agent
@dataclass
class Opponent:
    """A saved agent ready to play on a layout.

    Attributes:
        agent: the loaded agent (any registered agent class, in eval mode).
        path: what ``--agent`` named (``RUN_OR_CHECKPOINT[#name]``).
        checkpoint: the checkpoint directory it was loaded from.
        agent_class: its registered class name (``ppo``, ``mixture``, ...).
        env_cfg: the env config of one game (the agent's training env on ``layout``, one game,
            standard starts, no seat shuffling), an :class:`~zsceval.rl.config.EnvConfig`.
        device: torch device of agent and env.
    """

    agent: Any
    path: str
    checkpoint: str
    agent_class: str
    env_cfg: Any
    device: torch.device

    @property
    def trained_horizon(self) -> int:
        """The horizon the agent was trained with (its observations may count down to it)."""
        return int(self.env_cfg.horizon)


def load_opponent(path: str | Path, layout: str, device: str = "cpu") -> Opponent:
    """Load a saved agent and check it can play ``layout``.

    The env repeats the agent's saved env config (as ``zsceval eval`` does,
    :func:`zsceval.evaluation.cross_play.cross_play_setup`) with one game on ``layout``.

    Args:
        path: run directory (its latest checkpoint), checkpoint directory or ``meta.json``;
            ``PATH#name`` picks a saved agent other than the ego.
        layout: layout name.
        device: torch device.

    Raises:
        PlayError: nothing loadable at ``path`` (the message names the path and what was looked
            for), a corrupt checkpoint, an unknown agent name or class, an unknown layout, or an
            agent trained on another observation spec (each differing field named).
    """
    from zsceval.rl.agent import UnknownAgentClassError
    from zsceval.rl.checkpoint import CheckpointError, check_compatible, find_checkpoint, load_agent
    from zsceval.rl.config import ConfigError, EnvConfig
    from zsceval.rl.envs import make_env
    from zsceval.rl.trainer import resolve_device

    text = str(path)
    base = text.rsplit("#", 1)[0] if "#" in text else text
    if not Path(base).exists():
        raise PlayError(
            f"no saved agent at {base}: --agent takes a run directory (its latest "
            f"checkpoints/step_*/meta.json), a checkpoint directory (holding meta.json) or a meta.json "
            f"file, optionally followed by #name to pick an agent"
        )
    try:
        dev = resolve_device(device)
        ckpt = find_checkpoint(base)
        agent, meta = load_agent(text, device=dev)
    except (CheckpointError, UnknownAgentClassError, ConfigError) as exc:
        raise PlayError(f"cannot load --agent {text}: {exc}") from None
    saved = meta.get("config", {}).get("env", {})
    known = {f.name for f in dataclasses.fields(EnvConfig)}
    base_cfg = EnvConfig(**{k: v for k, v in saved.items() if k in known})
    if "horizon" not in saved and meta.get("env_spec", {}).get("horizon"):
        base_cfg = dataclasses.replace(base_cfg, horizon=int(meta["env_spec"]["horizon"]))
    env_cfg = dataclasses.replace(
        base_cfg, layout=layout, num_envs=1, randomize_seats=False, random_start_prob=0.0
    )
    try:
        env = make_env(env_cfg, device=dev, seed=0, evaluation=True)
    except ConfigError as exc:
        raise PlayError(str(exc)) from None
    if not callable(getattr(env, "export_state", None)):
        raise PlayError(f"env '{env_cfg.name}' cannot export states; play needs an Overcooked env")
    try:
        check_compatible(meta, env.spec_dict(), f"agent {text}")
    except CheckpointError as exc:
        raise PlayError(f"{exc}\n(pass the --layout the agent was trained on)") from None
    return Opponent(
        agent=agent,
        path=text,
        checkpoint=str(ckpt),
        agent_class=str(getattr(type(agent), "agent_class", type(agent).__name__)),
        env_cfg=env_cfg,
        device=dev,
    )


class _Person:
    """The person as an agent of the runner: acts ``self.action`` in every row it drives."""

    def __init__(self) -> None:
        self.action = int(Action.STAY)

    def initial_state(self, rows: int, device) -> torch.Tensor:
        return torch.zeros(rows, 0, device=device)

    def act(self, obs, avail, state, starts, generator=None, deterministic=False) -> ActOutput:
        rows = obs.shape[0]
        actions = torch.full((rows,), self.action, dtype=torch.int64, device=obs.device)
        return ActOutput(actions, torch.zeros(rows, device=obs.device), state)


def _now() -> str:
    return _dt.datetime.now().astimezone().isoformat(timespec="seconds")


# ---------------------------------------------------------------------------- one game
@dataclass
class Game:
    """One game: the person in ``seat``, the opponent's agent in every other seat.

    Attributes:
        id: the game's id (also its file name stem).
        horizon: steps the game lasts.
        states: the T+1 overcooked-ai states so far (JSON form).
        joint_actions: the T joint actions so far (seat order).
        rewards: the T team sparse rewards so far.
        keys: the key sent at each step (None: no key).
        end: None while it runs; then ``"horizon"``, ``"closed"``, ``"idle"`` or ``"shutdown"``.
        saved: the file it was saved to, once saved.
        last_seen: ``time.monotonic()`` of the last request about it.
    """

    id: str
    opponent: Opponent
    seat: int
    horizon: int
    seed: int
    fps: float
    states: list = field(default_factory=list)
    joint_actions: list = field(default_factory=list)
    rewards: list = field(default_factory=list)
    keys: list = field(default_factory=list)
    end: str | None = None
    saved: str | None = None
    started: str = field(default_factory=_now)
    last_seen: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        from zsceval.rl.envs import make_env
        from zsceval.rl.runner import EpisodeRunner
        from zsceval.rl.seating import fixed_seating

        opp = self.opponent
        self.env = make_env(opp.env_cfg, device=opp.device, seed=self.seed, evaluation=True)
        self.person = _Person()
        seats: list = [opp.agent] * self.env.num_agents
        seats[self.seat] = self.person
        actors, arm = fixed_seating(seats)
        gen = torch.Generator(opp.device).manual_seed(self.seed)
        self.runner = EpisodeRunner(self.env, actors, [arm], generator=gen)
        self.runner.reset()
        self.states = [json_form(self.env.export_state(0))]

    @property
    def t(self) -> int:
        """Steps played."""
        return len(self.joint_actions)

    @property
    def score(self) -> float:
        """Team sparse return so far."""
        return float(sum(self.rewards))

    @property
    def done(self) -> bool:
        """Whether the game has ended (horizon reached or abandoned)."""
        return self.end is not None

    @torch.no_grad()
    def step(self, key: str | None) -> None:
        """Play one step: the person acts ``key``'s action, the agent acts on its observation.

        Raises:
            PlayError: an unknown key, or the game has ended.
        """
        action = key_action(key)
        if self.done:
            raise PlayError(f"game {self.id} has ended ({self.end}); start a new game")
        self.person.action = action
        slot_actions = self.runner.act()
        joint = [int(a) for a in slot_actions.tolist()]
        before = self.states[-1]
        s, _, done = self.runner.env_step(slot_actions)
        if bool(done[0]):  # the env reset the game in this step: rebuild the state it reached
            from zsceval.envs.overcooked import OvercookedEnv

            scratch = OvercookedEnv(self.env.layout, num_envs=1, horizon=2**31 - 1)
            scratch.reset()
            scratch.import_state(0, before)
            scratch.step(torch.tensor([joint], dtype=torch.int64), observe=False)
            state = json_form(scratch.export_state(0))
        else:
            state = json_form(self.env.export_state(0))
        self.runner.finish_step(s, done, None)
        self.joint_actions.append(joint)
        self.rewards.append(float(s.reward[0]))
        self.states.append(state)
        self.keys.append(key)
        if self.t >= self.horizon:
            self.end = "horizon"

    def trajectory(self) -> Trajectory:
        """The game so far as a trajectory (seat labels ``person`` / ``agent``)."""
        labels = ["agent"] * self.env.num_agents
        labels[self.seat] = "person"
        opp = self.opponent
        meta = {
            "grid": self.env.layout.grid_text,
            "dynamics": self.env.layout.dynamics,
            "game": self.id,
            "complete": self.end == "horizon",
            "end": self.end,
            "person_seat": self.seat,
            "person_actions": [joint[self.seat] for joint in self.joint_actions],
            "keys": list(self.keys),
            "agent": opp.path,
            "agent_checkpoint": opp.checkpoint,
            "agent_class": opp.agent_class,
            "trained_horizon": opp.trained_horizon,
            "fps": self.fps,
            "seed": self.seed,
            "started": self.started,
            "ended": _now(),
        }
        return Trajectory(
            layout=self.env.layout.name,
            horizon=self.horizon,
            agents=labels,
            states=list(self.states),
            joint_actions=[list(j) for j in self.joint_actions],
            rewards=list(self.rewards),
            score=self.score,
            meta=meta,
        )


# ---------------------------------------------------------------------------- all games
class Games:
    """The games of one server: start, step, abandon, save (thread-safe: one lock).

    Args:
        opponent: the agent every game is played against.
        out_dir: folder of the saved games (created).
        seat: the person's seat.
        horizon: steps per game (default: the agent's training horizon; at most that).
        fps: ticks per second (recorded; the page keeps the pace).
        seed: seed of the first game's action sampling (game k uses ``seed + k``).
        idle_timeout: seconds without a request after which an open game counts as abandoned
            (saved as incomplete, ``end = "idle"``) at the next sweep.

    Raises:
        PlayError: a seat outside ``0..n-1`` or a horizon outside ``1..trained horizon``.
    """

    def __init__(
        self,
        opponent: Opponent,
        out_dir: str | Path,
        seat: int = 0,
        horizon: int | None = None,
        fps: float = DEFAULT_FPS,
        seed: int = 0,
        idle_timeout: float = 30.0,
    ) -> None:
        from zsceval.envs.overcooked import load_layout

        n = load_layout(opponent.env_cfg.layout).num_players
        if not 0 <= seat < n:
            raise PlayError(f"--seat {seat} is not a seat of layout '{opponent.env_cfg.layout}' (0..{n - 1})")
        trained = opponent.trained_horizon
        horizon = trained if horizon is None else int(horizon)
        if not 1 <= horizon <= trained:
            raise PlayError(
                f"--horizon {horizon} must be between 1 and {trained}, the horizon the agent was "
                f"trained with (its observations count down to it)"
            )
        if fps <= 0:
            raise PlayError(f"--fps must be > 0, got {fps}")
        self.opponent, self.seat, self.horizon, self.fps = opponent, seat, horizon, float(fps)
        self.out_dir = Path(out_dir)
        self.seed, self.idle_timeout = seed, float(idle_timeout)
        self.lock = threading.RLock()
        self.open: dict[str, Game] = {}
        self.ended: dict[str, Game] = {}
        self.started = 0

    # -- lifecycle ----------------------------------------------------------------------------------
    def new_game(self) -> Game:
        """Start a game (abandoned games are swept and saved first)."""
        with self.lock:
            self.sweep()
            stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
            gid = f"game-{stamp}-{uuid.uuid4().hex[:8]}"
            game = Game(gid, self.opponent, self.seat, self.horizon, self.seed + self.started, self.fps)
            self.started += 1
            self.open[gid] = game
            return game

    def get(self, gid: str) -> Game:
        """An open or ended game.

        Raises:
            PlayError: unknown id (status 404).
        """
        with self.lock:
            game = self.open.get(gid) or self.ended.get(gid)
            if game is None:
                err = PlayError(f"unknown game {gid!r}; start a new game")
                err.status = 404
                raise err
            return game

    def step(self, gid: str, key: str | None) -> Game:
        """Play one step of game ``gid``; a game that reaches its horizon is saved.

        Raises:
            PlayError: unknown game (404), an ended game (409: the message says where it was
                saved), an unknown key (400).
            OSError: the finished game could not be written.
        """
        with self.lock:
            self.sweep()
            game = self.get(gid)
            if game.done:
                where = f" and was saved to {game.saved}" if game.saved else ""
                err = PlayError(f"game {gid} has ended ({game.end}){where}; start a new game")
                err.status = 409
                raise err
            game.last_seen = time.monotonic()
            game.step(key)
            if game.done:
                self._finish(game)
            return game

    def abandon(self, gid: str, reason: str = "closed") -> Game | None:
        """End an open game part-way and save it as incomplete (nothing for an ended or unknown
        game, or a game with no step: there is nothing to save)."""
        with self.lock:
            game = self.open.get(gid)
            if game is None:
                return None
            game.end = game.end or reason  # a finished game whose save failed keeps its end
            self._finish(game)
            return game

    def sweep(self, now: float | None = None) -> list[Game]:
        """Abandon (``"idle"``) the open games without a request for ``idle_timeout`` seconds."""
        now = time.monotonic() if now is None else now
        with self.lock:
            stale = [g for g in self.open.values() if now - g.last_seen > self.idle_timeout]
            return [self.abandon(g.id, "idle") for g in stale]

    def close_all(self, reason: str = "shutdown") -> list[Game]:
        """Save every open game as incomplete (server shutdown)."""
        with self.lock:
            return [self.abandon(gid, reason) for gid in list(self.open)]

    def _finish(self, game: Game) -> None:
        """Save an ended game (not one without a step) and move it to :attr:`ended`; if the file
        cannot be written the game stays open, so that the next sweep or shutdown retries."""
        if game.t > 0:
            path = self.out_dir / f"{game.id}.json"
            save_trajectories(path, game.trajectory())
            game.saved = str(path)
        self.open.pop(game.id, None)
        self.ended[game.id] = game

    # -- what the page shows ------------------------------------------------------------------------
    def frame(self, game: Game, tile: int = 48) -> dict:
        """JSON of a game's current picture and counters (what the page shows after each tick).

        Returns:
            ``{"game", "t", "horizon", "score", "time_left" (seconds at fps), "done", "end",
            "saved" (path or None), "joint_action" (the last one, seat order, or None),
            "image" (PNG data URL of the state, :func:`zsceval.render.draw_state`)}``.
        """
        import base64
        import io

        from zsceval.render import draw_state

        with self.lock:
            image = draw_state(
                game.states[-1], game.env.layout, score=game.score, timestep=game.t, horizon=game.horizon,
                tile=tile,
            )  # fmt: skip
            buf = io.BytesIO()
            image.save(buf, format="PNG")
            return {
                "game": game.id,
                "t": game.t,
                "horizon": game.horizon,
                "score": game.score,
                "time_left": round((game.horizon - game.t) / self.fps, 1),
                "done": game.done,
                "end": game.end,
                "saved": game.saved,
                "joint_action": game.joint_actions[-1] if game.joint_actions else None,
                "image": "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii"),
            }
