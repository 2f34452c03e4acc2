"""Episodes as pictures: record one game with saved agents, read trajectory files, check their states
against a layout, write GIFs and PNGs."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import torch
from PIL import Image

from zsceval.envs.overcooked.layout import Layout
from zsceval.io import atomic_path
from zsceval.render.draw import COLORS, SEAT_COLORS, draw_state
from zsceval.rl.runner import EpisodeRunner
from zsceval.rl.seating import fixed_seating

__all__ = [
    "Frame",
    "check_state",
    "episode_gif",
    "read_trajectory",
    "record_episode",
    "write_episode_gif",
    "write_state_png",
]

TRAJECTORY_FORMAT = "zsceval-trajectory"


class Frame(NamedTuple):
    """One step of an episode: the overcooked-ai state dict, the team score so far, the time ``t``."""

    state: dict
    score: float
    t: int


@torch.no_grad()
def record_episode(
    env,
    agents_by_seat: Sequence,
    generator: torch.Generator | None = None,
    max_steps: int | None = None,
    deterministic: bool = False,
) -> list[Frame]:
    """Play one episode in game 0 of ``env`` and export the state before every step and after the last.

    Args:
        env: an :class:`~zsceval.envs.overcooked.OvercookedEnv` (it is reset; games other than 0
            are played too but not recorded; ``randomize_seats`` must be off).
        agents_by_seat: one agent per seat (the same agent may sit in several seats).
        generator: action-sampling generator on the env's device.
        max_steps: stop after this many steps (default: the env's horizon).
        deterministic: arg-max actions instead of sampling.

    Returns:
        ``min(max_steps, horizon) + 1`` frames, ``t = 0 ..``; ``score`` is the team sparse return
        accumulated before the frame's state. The env resets a game at the horizon, so the frame
        ``t = horizon`` shows the state before the last step (with the final score).

    Raises:
        ValueError: wrong number of agents, or an env with randomized seats.
    """
    n = env.num_agents
    if len(agents_by_seat) != n:
        raise ValueError(f"need {n} agents (one per seat), got {len(agents_by_seat)}")
    if getattr(env, "randomize_seats", False):
        raise ValueError("record_episode needs an env with randomize_seats=False")
    actors, arm = fixed_seating(agents_by_seat)
    runner = EpisodeRunner(env, actors, [arm], generator=generator)
    runner.reset()
    steps = int(env.horizon) if max_steps is None else min(int(max_steps), int(env.horizon))
    frames = [Frame(env.export_state(0), 0.0, 0)]
    score = 0.0
    for t in range(1, steps + 1):
        s, _, done = runner.env_step(runner.act(deterministic))
        score += float(s.reward[0])
        if bool(done[0]):  # the env auto-reset game 0: its final state is gone; stop here
            final = dict(frames[-1].state)
            final["timestep"] = t
            frames.append(Frame(final, score, t))
            break
        runner.finish_step(s, done, None)
        frames.append(Frame(env.export_state(0), score, t))
    return frames


def read_trajectory(path: str | Path, episode: int = 0) -> tuple[str, int, list[Frame]]:
    """Read one episode of a ``zsceval-trajectory`` JSON file: a JSON array of trajectory objects
    (or a single object), each with ``format``, ``version`` 1, ``layout``, ``horizon``, ``states``
    for t = 0..T, ``rewards`` per step (a number or a per-agent list), ``score``.

    Args:
        path: the file.
        episode: index of the episode in the array.

    Returns:
        ``(layout name, horizon, frames)``; frame t's score is the sum of the first t rewards.

    Raises:
        ValueError: not such a file (missing keys, another format or version, bad JSON), or no
            episode ``episode``.
        OSError: the file cannot be read.
    """
    try:
        data = json.loads(Path(path).read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    if isinstance(data, list):
        if not 0 <= episode < len(data):
            raise ValueError(f"{path}: has episodes 0..{len(data) - 1}, not {episode}")
        data = data[episode]
    if not isinstance(data, dict) or data.get("format") != TRAJECTORY_FORMAT:
        got = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"{path}: not a {TRAJECTORY_FORMAT} file (format={got!r})")
    if data.get("version") != 1:
        raise ValueError(f"{path}: unsupported trajectory version {data.get('version')!r} (supported: 1)")
    missing = [k for k in ("layout", "states") if k not in data]
    if missing:
        raise ValueError(f"{path}: trajectory is missing {missing}")
    states, rewards = data["states"], data.get("rewards") or []
    frames, score = [], 0.0
    for t, state in enumerate(states):
        if t > 0 and t - 1 < len(rewards):
            r = rewards[t - 1]
            score += float(sum(r) if isinstance(r, list | tuple) else r)
        frames.append(Frame(state, score, int(state.get("timestep", t))))
    return str(data["layout"]), int(data.get("horizon") or 0), frames


def episode_gif(frames: Sequence[Image.Image], path: str | Path, fps: float = 8) -> Path:
    """Write ``frames`` (PIL images of one size) as an animated GIF that loops, ``fps`` frames per
    second, atomically (a temp file renamed onto ``path``).

    Raises:
        ValueError: no frames, frames of different sizes, or ``fps <= 0``.
    """
    if not frames:
        raise ValueError("episode_gif needs at least one frame")
    if fps <= 0:
        raise ValueError(f"fps must be > 0, got {fps}")
    sizes = {f.size for f in frames}
    if len(sizes) != 1:
        raise ValueError(f"all frames must have one size, got {sorted(sizes)}")
    # One fixed palette (every drawing color plus grays) keeps colors exact and the file small.
    colors = [*COLORS.values(), *SEAT_COLORS, *((v, v, v) for v in range(0, 256, 17))]
    palette = Image.new("P", (1, 1))
    flat = [c for rgb in colors for c in rgb]
    palette.putpalette(flat + flat[-3:] * (256 - len(colors)))
    pal = [f.convert("RGB").quantize(palette=palette, dither=Image.Dither.NONE) for f in frames]
    path = Path(path)
    with atomic_path(path) as tmp:
        pal[0].save(
            tmp,
            format="GIF",
            save_all=True,
            append_images=pal[1:],
            duration=max(20, round(1000 / fps)),
            loop=0,
            optimize=False,
            disposal=1,
        )
    readable(path)
    return path


def write_episode_gif(
    frames: Sequence[Frame],
    layout: str | Layout,
    path: str | Path,
    fps: float = 8,
    tile: int = 48,
    horizon: int | None = None,
) -> Path:
    """Draw ``frames`` on ``layout`` (:func:`~zsceval.render.draw.draw_state`, each frame's score and
    time in the header) and write them as an animated GIF at ``path`` (:func:`episode_gif`).

    Args:
        frames: the episode's frames (:func:`record_episode`, :func:`read_trajectory`).
        layout: layout name/alias/path or a :class:`Layout`.
        path: the GIF to write (atomically; parent folders are created).
        fps: frames per second (> 0).
        tile: side of one grid cell in pixels (>= 12).
        horizon: episode length shown after the time (default: the layout's).

    Returns:
        ``path`` as a :class:`Path`.

    Raises:
        ValueError: no frames, ``fps <= 0``, or an unknown layout.
        OSError: the file cannot be written.
    """
    images = [
        draw_state(f.state, layout, score=f.score, timestep=f.t, horizon=horizon, tile=tile) for f in frames
    ]
    return episode_gif(images, path, fps)


def write_state_png(
    state: dict,
    layout: str | Layout,
    path: str | Path,
    *,
    score: float | None = None,
    timestep: int | None = None,
    horizon: int | None = None,
    tile: int = 48,
) -> Path:
    """Draw one overcooked-ai state dict (:func:`~zsceval.render.draw.draw_state`, same keyword
    arguments) and write it as a PNG at ``path``, atomically, with the usual file permissions.

    Returns:
        ``path`` as a :class:`Path`.

    Raises:
        ValueError: an unknown layout.
        OSError: the file cannot be written.
    """
    image = draw_state(state, layout, score=score, timestep=timestep, horizon=horizon, tile=tile)
    path = Path(path)
    with atomic_path(path) as tmp:
        image.save(tmp, format="PNG")
    readable(path)
    return path


def check_state(state: Any, layout: Layout, what: str = "state") -> None:
    """Refuse a state dict that does not fit ``layout`` (before drawing it).

    The state is imported into a one-game :class:`~zsceval.envs.overcooked.OvercookedEnv` on
    ``layout``, which checks the players, objects and positions against the grid.

    Args:
        state: what was read as an overcooked-ai state dict (``OvercookedState.to_dict()``).
        layout: the layout it should be on.
        what: the state's name in the messages, e.g. ``"state s.json"``.

    Raises:
        ValueError: ``"<what>: not an overcooked-ai state dict (no 'players' key)"`` or
            ``"<what> does not fit layout '<name>': <reason>"``.
    """
    from zsceval.envs.overcooked import OvercookedEnv

    if not isinstance(state, dict) or "players" not in state:
        raise ValueError(f"{what}: not an overcooked-ai state dict (no 'players' key)")
    env = OvercookedEnv(layout, num_envs=1)
    env.reset()
    try:
        env.import_state(0, state)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"{what} does not fit layout {layout.name!r}: {exc}") from None


def readable(path: Path) -> None:
    """Give ``path`` the usual permissions (``0o666`` less the umask; temp files are ``0o600``)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)
