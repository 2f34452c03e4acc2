"""Trajectory files: episodes of Overcooked recorded as overcooked-ai states and joint actions.

Format ``zsceval-trajectory`` version 1 (JSON). A file holds a JSON array of trajectory objects
(one per episode; :func:`load_trajectories` also accepts a single object). Each object::

    {
      "format": "zsceval-trajectory",
      "version": 1,
      "layout": "cramped_room",          # layout name (zsceval.envs.overcooked.load_layout)
      "horizon": 400,                    # episode length the episode was played with
      "agents": ["sp_s0", "sp_s1"],      # a label per seat (player index of overcooked-ai)
      "states": [...],                   # T+1 overcooked-ai OvercookedState.to_dict(), t = 0..T
      "joint_actions": [[4, 5], ...],    # T joint actions, seat order, ints in zsceval Action
                                         # order (0 N, 1 S, 2 E, 3 W, 4 STAY, 5 INTERACT)
      "rewards": [0.0, 20.0, ...],       # T team sparse rewards (reward of joint_actions[t])
      "score": 20.0,                     # sum of rewards (the episode's sparse return)
      "meta": {...}                      # free-form JSON: grid, dynamics, seed, game, ...
    }

``states[t + 1]`` is the state reached from ``states[t]`` by ``joint_actions[t]``; players in
the states and actions in a joint action are in seat order, as in overcooked-ai. Action indices
equal overcooked-ai's ``Action.INDEX_TO_ACTION`` indices (see :func:`action_to_overcooked_ai`).

Record with :func:`record_trajectories`, write with :func:`save_trajectories`, read with
:func:`load_trajectories`; :func:`replay_in_engine` rebuilds the states in our engine and
:func:`to_overcooked_ai` builds overcooked-ai objects (``AgentEvaluator``-style trajectories dict).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from zsceval.envs.overcooked.constants import DIRECTIONS, Action
from zsceval.io import atomic_write_text

__all__ = [
    "FORMAT",
    "VERSION",
    "Trajectory",
    "TrajectoryError",
    "action_from_overcooked_ai",
    "action_to_overcooked_ai",
    "json_form",
    "load_trajectories",
    "record_trajectories",
    "replay_in_engine",
    "save_trajectories",
    "to_overcooked_ai",
]

FORMAT = "zsceval-trajectory"
VERSION = 1
NUM_ACTIONS = len(Action)
# overcooked-ai's Action.INDEX_TO_ACTION: the four directions, STAY (0, 0), "interact".
_OVERCOOKED_AI_ACTIONS: tuple = (*DIRECTIONS, (0, 0), "interact")


def json_form(state: dict) -> dict:
    """``state`` as it reads back from JSON (tuples become lists): the form trajectories hold, so
    that recorded, loaded and replayed states compare equal.

    Raises:
        TypeError: ``state`` holds something that is not JSON-able.
    """
    return json.loads(json.dumps(state))


class TrajectoryError(ValueError):
    """A malformed trajectory or trajectory file (the message names the file and the problem),
    or a trajectory our engine does not reproduce."""


def action_to_overcooked_ai(action: int) -> tuple[int, int] | str:
    """overcooked-ai's action for a zsceval action index: ``(dx, dy)`` for N/S/E/W, ``(0, 0)`` for
    STAY, ``"interact"`` for INTERACT (``Action.INDEX_TO_ACTION[action]``).

    Raises:
        ValueError: ``action`` is not an int in 0..5.
    """
    if isinstance(action, bool) or not isinstance(action, int) or not 0 <= action < NUM_ACTIONS:
        raise ValueError(f"action must be an int in 0..{NUM_ACTIONS - 1}, got {action!r}")
    return _OVERCOOKED_AI_ACTIONS[action]


def action_from_overcooked_ai(action: Any) -> int:
    """zsceval action index of an overcooked-ai action (a direction tuple/list, ``(0, 0)``, or
    ``"interact"``).

    Raises:
        ValueError: not an overcooked-ai action.
    """
    key = tuple(action) if isinstance(action, (list, tuple)) else action
    try:
        return _OVERCOOKED_AI_ACTIONS.index(key)
    except ValueError:
        raise ValueError(f"not an overcooked-ai action: {action!r}") from None


@dataclass
class Trajectory:
    """One recorded episode (see the module docstring for the meaning of each field).

    Attributes:
        layout: layout name.
        horizon: episode length the episode was played with.
        agents: label per seat, length n.
        states: T+1 overcooked-ai state dicts in JSON form (lists, not tuples; :func:`json_form`).
        joint_actions: T lists of n ints in 0..5 (seat order).
        rewards: T team sparse rewards.
        score: ``sum(rewards)``.
        meta: free-form JSON-able dict.
    """

    layout: str
    horizon: int
    agents: list[str]
    states: list[dict]
    joint_actions: list[list[int]]
    rewards: list[float]
    score: float
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        """T, the number of steps."""
        return len(self.joint_actions)

    def to_dict(self) -> dict:
        """The JSON object of this trajectory (format and version first)."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "layout": self.layout,
            "horizon": self.horizon,
            "agents": list(self.agents),
            "states": self.states,
            "joint_actions": [list(a) for a in self.joint_actions],
            "rewards": list(self.rewards),
            "score": self.score,
            "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, obj: Any, where: str = "trajectory") -> Trajectory:
        """Validate and build a trajectory from its JSON object.

        Args:
            obj: the parsed JSON object.
            where: how errors name it (e.g. ``"runs/x.json: trajectory 3"``).

        Raises:
            TrajectoryError: ``where`` followed by what is wrong (format, version, a missing or
                mistyped field, inconsistent lengths, an action out of range, a wrong score).
        """

        def fail(msg: str):
            raise TrajectoryError(f"{where}: {msg}")

        if not isinstance(obj, dict):
            fail(f"expected a JSON object, got {type(obj).__name__}")
        if obj.get("format") != FORMAT:
            fail(f"'format' must be {FORMAT!r}, got {obj.get('format')!r}")
        if obj.get("version") != VERSION:
            fail(f"unsupported version {obj.get('version')!r} (this zsceval reads version {VERSION})")
        types = {
            "layout": str,
            "horizon": int,
            "agents": list,
            "states": list,
            "joint_actions": list,
            "rewards": list,
            "score": (int, float),
            "meta": dict,
        }
        for key, kind in types.items():
            if key not in obj:
                fail(f"missing field '{key}'")
            if not isinstance(obj[key], kind) or isinstance(obj[key], bool):
                fail(f"field '{key}' has type {type(obj[key]).__name__}")
        n, T = len(obj["agents"]), len(obj["joint_actions"])
        if n < 1 or not all(isinstance(a, str) for a in obj["agents"]):
            fail("'agents' must be a non-empty list of strings (a label per seat)")
        if len(obj["states"]) != T + 1:
            fail(f"{len(obj['states'])} states for {T} joint actions (need T+1 = {T + 1})")
        if len(obj["rewards"]) != T:
            fail(f"{len(obj['rewards'])} rewards for {T} joint actions")
        for t, state in enumerate(obj["states"]):
            if not isinstance(state, dict) or not isinstance(state.get("players"), list):
                fail(f"states[{t}] is not an overcooked-ai state dict (no 'players' list)")
            if len(state["players"]) != n:
                fail(f"states[{t}] has {len(state['players'])} players, 'agents' has {n}")
        for t, joint in enumerate(obj["joint_actions"]):
            ok = isinstance(joint, list) and len(joint) == n
            if not ok or not all(type(a) is int and 0 <= a < NUM_ACTIONS for a in joint):
                fail(f"joint_actions[{t}] must be {n} ints in 0..{NUM_ACTIONS - 1}, got {joint!r}")
        if not all(isinstance(r, (int, float)) and not isinstance(r, bool) for r in obj["rewards"]):
            fail("'rewards' must be numbers")
        if not math.isclose(float(obj["score"]), float(sum(obj["rewards"])), abs_tol=1e-6):
            fail(f"'score' {obj['score']} != sum of rewards {sum(obj['rewards'])}")
        return cls(
            layout=obj["layout"],
            horizon=obj["horizon"],
            agents=list(obj["agents"]),
            states=obj["states"],
            joint_actions=[list(a) for a in obj["joint_actions"]],
            rewards=[float(r) for r in obj["rewards"]],
            score=float(obj["score"]),
            meta=obj["meta"],
        )


# ---------------------------------------------------------------------------- files
def save_trajectories(path: str | Path, trajectories: list[Trajectory] | Trajectory) -> Path:
    """Write trajectories to ``path`` as a JSON array, atomically (write then rename).

    Args:
        path: destination file (its directory is created).
        trajectories: one trajectory or a list of them.

    Returns:
        The path written.

    Raises:
        TypeError: an item is not a :class:`Trajectory`.
        OSError: the file cannot be written.
    """
    items = [trajectories] if isinstance(trajectories, Trajectory) else list(trajectories)
    for i, traj in enumerate(items):
        if not isinstance(traj, Trajectory):
            raise TypeError(f"trajectories[{i}] is a {type(traj).__name__}, not a Trajectory")
    path = Path(path)
    atomic_write_text(path, json.dumps([t.to_dict() for t in items], separators=(",", ":")) + "\n")
    return path


def load_trajectories(path: str | Path) -> list[Trajectory]:
    """Read a trajectory file (a JSON array of trajectories, or one trajectory object).

    Raises:
        TrajectoryError: the file is missing, not JSON, or a trajectory in it is malformed; the
            message starts with the file's path (and the trajectory's index) and says what is wrong.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TrajectoryError(f"{path}: cannot read trajectory file ({exc.strerror or exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TrajectoryError(f"{path}: not valid JSON ({exc})") from None
    if isinstance(data, dict):
        return [Trajectory.from_dict(data, f"{path}")]
    if not isinstance(data, list):
        raise TrajectoryError(f"{path}: expected a JSON array of trajectories, got {type(data).__name__}")
    return [Trajectory.from_dict(obj, f"{path}: trajectory {i}") for i, obj in enumerate(data)]


# ---------------------------------------------------------------------------- engine
def _engine(layout):
    """A one-game engine of ``layout`` (name or Layout) that never truncates."""
    from zsceval.envs.overcooked import OvercookedEnv

    env = OvercookedEnv(layout, num_envs=1, horizon=2**31 - 1)
    env.reset()
    return env


def _check_grid(traj: Trajectory, layout) -> None:
    grid = traj.meta.get("grid")
    if grid is not None and grid != layout.grid_text:
        raise TrajectoryError(
            f"trajectory was recorded on another grid than layout '{traj.layout}' has here "
            f"(meta.grid differs); the layout file changed"
        )


def replay_in_engine(traj: Trajectory, *, check: bool = True) -> list[dict]:
    """Rebuild the trajectory's states in our engine: import ``states[0]``, step the joint actions.

    Args:
        traj: a trajectory (e.g. from :func:`load_trajectories`).
        check: compare every rebuilt state with the recorded one and every step's team sparse
            reward with ``rewards[t]``.

    Returns:
        The T+1 rebuilt state dicts (overcooked-ai format, :func:`json_form`).

    Raises:
        TrajectoryError: with ``check``, the first step whose state or reward differs (named), or
            a grid that differs from the layout's.
        ValueError: ``states[0]`` is inconsistent with the layout (from ``import_state``).
    """
    env = _engine(traj.layout)
    _check_grid(traj, env.layout)
    env.import_state(0, traj.states[0])
    out = [json_form(env.export_state(0))]
    if check and out[0] != traj.states[0]:
        raise TrajectoryError("state 0 does not survive import/export in the engine")
    for t, joint in enumerate(traj.joint_actions):
        step = env.step(torch.tensor([joint], dtype=torch.int64), observe=False)
        out.append(json_form(env.export_state(0)))
        if check and out[-1] != traj.states[t + 1]:
            raise TrajectoryError(
                f"step {t} (actions {joint}): the engine's state differs from states[{t + 1}]"
            )
        if check and float(step.reward[0]) != traj.rewards[t]:
            raise TrajectoryError(
                f"step {t}: the engine's reward {float(step.reward[0])} != {traj.rewards[t]}"
            )
    return out


def to_overcooked_ai(trajectories: list[Trajectory] | Trajectory) -> dict:
    """Build overcooked-ai objects: an ``AgentEvaluator``-style trajectories dict.

    As in overcooked-ai's ``run_agents``, entry t of an episode is the state *before* action t
    (``ep_states[i]`` has T states ``s_0..s_{T-1}``); the final state ``s_T`` is in
    ``ep_final_states[i]``.

    Returns:
        ``{"ep_states": [[OvercookedState] * T], "ep_actions": [[tuple of overcooked-ai actions]
        * T], "ep_rewards": [[float] * T], "ep_dones": [[bool] * T], "ep_infos": [[{}] * T],
        "ep_returns": [score], "ep_lengths": [T], "ep_final_states": [OvercookedState],
        "mdp_params": [{"layout_name", "terrain": terrain matrix}], "mdps": [OvercookedGridworld],
        "metadatas": {"agents": [[label per seat]], "meta": [meta]}}``, one entry per trajectory.
        The mdps are built with ``old_dynamics`` for classic layouts (as in the parity tests).
        overcooked-ai's ``StateVisualizer().display_rendered_trajectory(d, trajectory_idx=i)``
        renders it.

    Raises:
        ImportError: overcooked-ai is not installed (``pip install zsceval[reference]``).
        TrajectoryError: a grid that differs from the layout's.
    """
    from zsceval.envs.overcooked import load_layout
    from zsceval.envs.overcooked.reference import ReferenceGame

    items = [trajectories] if isinstance(trajectories, Trajectory) else list(trajectories)
    keys = ("ep_states", "ep_actions", "ep_rewards", "ep_dones", "ep_infos", "ep_returns", "ep_lengths")
    out: dict[str, Any] = {k: [] for k in (*keys, "ep_final_states", "mdp_params", "mdps")}
    out["metadatas"] = {"agents": [], "meta": []}
    for traj in items:
        layout = load_layout(traj.layout)
        _check_grid(traj, layout)
        game = ReferenceGame(layout)
        game._configure()
        states = [game._State.from_dict(s) for s in traj.states]
        T = len(traj)
        out["ep_states"].append(states[:T])
        out["ep_final_states"].append(states[T])
        out["ep_actions"].append(
            [tuple(action_to_overcooked_ai(a) for a in joint) for joint in traj.joint_actions]
        )
        out["ep_rewards"].append(list(traj.rewards))
        out["ep_dones"].append([t == T - 1 for t in range(T)])
        out["ep_infos"].append([{} for _ in range(T)])
        out["ep_returns"].append(traj.score)
        out["ep_lengths"].append(T)
        terrain = [list(row) for row in game.mdp.terrain_mtx]  # players' digits removed
        out["mdp_params"].append({"layout_name": layout.name, "terrain": terrain})
        out["mdps"].append(game.mdp)
        out["metadatas"]["agents"].append(list(traj.agents))
        out["metadatas"]["meta"].append(traj.meta)
    return out


# ---------------------------------------------------------------------------- recording
@torch.no_grad()
def _record_round(env, runner, games: list[int], deterministic: bool, scratch):
    """One round of :func:`record_trajectories`: every game of ``games`` plays its first episode.

    Returns:
        ``(states, actions, rewards, shaped, events, scratch)``: per game the JSON states (the
        rebuilt final state last), joint actions in seat order and team rewards; shaped returns
        float32 [B, n] and event counts float32 [B, n, E] by seat over each game's recorded episode;
        the one-game engine that rebuilds final states (created at the first finished episode).

    Raises:
        RuntimeError: a game did not finish an episode within 100 horizons.
    """
    n, B = env.num_agents, env.num_envs
    runner.reset()
    states = {i: [json_form(env.export_state(i))] for i in games}
    actions: dict[int, list] = {i: [] for i in games}
    rewards: dict[int, list] = {i: [] for i in games}
    shaped = torch.zeros(B, n)
    events = torch.zeros(B, n, len(env.event_names))
    open_games = set(games)
    for _ in range(100 * int(env.horizon)):
        seats = env.state.seats.clone() if getattr(env, "randomize_seats", False) else None
        slot_actions = runner.act(deterministic).view(B, n)
        seat_actions = (
            slot_actions if seats is None else torch.empty_like(slot_actions).scatter_(1, seats, slot_actions)
        )
        seat_actions = seat_actions.tolist()
        before = {i: states[i][-1] for i in open_games}
        s, _, done = runner.env_step(slot_actions.reshape(-1))
        by_slot = s.shaped_by_agent.float().cpu()
        ev_slot = s.events.float().cpu()
        if seats is not None:
            by_slot = torch.empty_like(by_slot).scatter_(1, seats.cpu(), by_slot)
            ev_slot = torch.empty_like(ev_slot).scatter_(
                1, seats.cpu()[..., None].expand_as(ev_slot), ev_slot
            )
        live = torch.zeros(B, 1)
        live[sorted(open_games)] = 1.0  # totals of the recorded (first) episode of each game only
        shaped += by_slot * live
        events += ev_slot * live[..., None]
        done_list = done.tolist()
        for i in sorted(open_games):
            actions[i].append(seat_actions[i])
            rewards[i].append(float(s.reward[i]))
            if done_list[i]:
                if scratch is None:
                    scratch = _engine(env.layout)
                scratch.import_state(0, before[i])
                last = scratch.step(torch.tensor([seat_actions[i]], dtype=torch.int64), observe=False)
                if float(last.reward[0]) != rewards[i][-1]:  # pragma: no cover - an engine bug
                    raise RuntimeError(f"game {i}: the rebuilt final step's reward differs from the env's")
                states[i].append(json_form(scratch.export_state(0)))
                open_games.discard(i)
            else:
                states[i].append(json_form(env.export_state(i)))
        runner.finish_step(s, done, None)
        if not open_games:
            break
    else:
        raise RuntimeError(f"not every game finished an episode within {100 * int(env.horizon)} steps")
    return states, actions, rewards, shaped, events, scratch


def record_trajectories(
    env,
    seat_agents: list,
    episodes: int,
    *,
    labels: list[str] | None = None,
    generator: torch.Generator | None = None,
    deterministic: bool = False,
    meta: dict | None = None,
) -> list[Trajectory]:
    """Play ``seat_agents`` (agent k in seat k) for ``episodes`` episodes and record them.

    Uses :class:`~zsceval.rl.runner.EpisodeRunner` (``act`` / ``env_step`` / ``finish_step``) in
    rounds of one episode per game (``ceil(episodes / B)`` rounds); each step exports every
    recorded game's state (``env.export_state``). The final state of an episode is rebuilt from
    the state before the last step in a one-game copy of the engine (the batched env auto-resets
    in that step); the engine's dynamics are deterministic, so it is the state the env reached.

    Args:
        env: an :class:`~zsceval.envs.overcooked.OvercookedEnv` (it is reset). With
            ``randomize_seats`` the actions are mapped from agent slots to seats.
        seat_agents: n agents (``zsceval.rl.agent.Agent``; the same object may fill several seats).
        episodes: E >= 1.
        labels: a label per seat (default ``agent0``, ``agent1``, ... per distinct agent).
        generator: action-sampling generator on the env device.
        deterministic: arg-max actions.
        meta: extra entries for every trajectory's ``meta``. Each trajectory's ``meta`` also holds
            ``grid``, ``dynamics``, ``episode`` (index), ``game`` (index in the batch) and
            ``shaped_return_by_seat`` (base shaped return of each seat over the episode) and
            ``events_by_seat`` (``{event name: count}`` per seat over the episode).

    Returns:
        E trajectories, in game order within each round.

    Raises:
        ValueError: wrong number of agents or labels, ``episodes < 1``, or an env without
            ``export_state``.
    """
    from zsceval.rl.runner import EpisodeRunner
    from zsceval.rl.seating import fixed_seating

    n, B = env.num_agents, env.num_envs
    if len(seat_agents) != n:
        raise ValueError(f"need {n} seat agents, got {len(seat_agents)}")
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    if not callable(getattr(env, "export_state", None)):
        raise ValueError(f"{type(env).__name__} cannot export states; trajectories need an Overcooked env")
    actors, arm = fixed_seating(seat_agents)
    labels = list(labels) if labels is not None else [name for name, _ in arm.seats]
    if len(labels) != n:
        raise ValueError(f"need {n} labels (one per seat), got {len(labels)}")
    runner = EpisodeRunner(env, actors, [arm], generator=generator)
    scratch = None
    base_meta = {"grid": env.layout.grid_text, "dynamics": env.layout.dynamics, **(meta or {})}
    out: list[Trajectory] = []
    while len(out) < episodes:
        games = list(range(min(B, episodes - len(out))))
        states, actions, rewards, shaped, events, scratch = _record_round(
            env, runner, games, deterministic, scratch
        )
        for i in games:
            out.append(
                Trajectory(
                    layout=env.layout.name,
                    horizon=int(env.horizon),
                    agents=list(labels),
                    states=states[i],
                    joint_actions=actions[i],
                    rewards=rewards[i],
                    score=float(sum(rewards[i])),
                    meta={
                        **base_meta,
                        "episode": len(out),
                        "game": i,
                        "shaped_return_by_seat": shaped[i].tolist(),
                        "events_by_seat": [
                            {e: int(events[i, k, j]) for j, e in enumerate(env.event_names)} for k in range(n)
                        ],
                    },
                )
            )
    return out
