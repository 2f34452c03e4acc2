"""``zsceval render``: draw a state as a PNG, or an episode (played or from a trajectory) as a GIF."""

from __future__ import annotations

import json
from pathlib import Path

import click

from zsceval.commands._common import COUNT, check_writable


def _layout(name: str):
    from zsceval.envs.overcooked.layout import load_layout

    try:
        return load_layout(name)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--layout") from None


def _check_state(state, layout, what: str) -> None:
    from zsceval.render import check_state

    try:
        check_state(state, layout, what)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None


@click.command(name="render")
@click.option(
    "--agent",
    default=None,
    help="Run dir, checkpoint dir or meta.json of the agent in seat 0, or an external MODULE:ATTR "
    "(docs/external-agents.md).",
)
@click.option("--partner", default=None, help="Same for seat 1 (default: the agent itself).")
@click.option(
    "--state",
    "state_file",
    default=None,
    type=click.Path(dir_okay=False),
    help="Draw one overcooked-ai state dict (JSON file).",
)
@click.option(
    "--trajectory", default=None, type=click.Path(dir_okay=False), help="Draw a zsceval-trajectory JSON file."
)
@click.option(
    "--episode",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Episode of --trajectory to draw.",
)
@click.option("--layout", default=None, help="Layout name (required with --agent and --state).")
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False),
    help="Output file: .gif for episodes, .png for --state.",
)
@click.option(
    "--png-at",
    type=click.IntRange(min=0),
    default=None,
    help="Also write a PNG of step T as <out stem>_t<T>.png.",
)
@click.option(
    "--fps",
    type=click.FloatRange(min=0, min_open=True),
    default=8,
    show_default=True,
    help="GIF frames per second.",
)
@click.option(
    "--steps",
    type=COUNT,
    default=None,
    help="Play/draw at most this many steps (default: the whole episode).",
)
@click.option(
    "--tile", type=click.IntRange(min=12), default=48, show_default=True, help="Grid cell size in pixels."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of action sampling.")
@click.option("--device", default="cpu", show_default=True, help="Torch device.")
def render(
    agent, partner, state_file, trajectory, episode, layout, out, png_at, fps, steps, tile, seed, device
) -> None:
    """Draw Overcooked pictures: one state as a PNG, one episode as an animated GIF.

    Chefs are discs in their seat's color (1 blue, 2 purple) with a white nose on the side they
    face and the held item in front; pots show one dot per ingredient and a cooking bar (orange,
    green with a check mark when ready); the header shows score and time.

    \b
    Examples:
      zsceval render --agent runs/sp_a --partner runs/sp_b --layout cramped_room --out ep.gif --png-at 50
      zsceval render --state state.json --layout cramped_room --out state.png
      zsceval render --trajectory ep.json --out ep.gif
    """
    from zsceval.render import play_seating, read_trajectory, write_episode_gif, write_state_png
    from zsceval.rl.checkpoint import CheckpointError
    from zsceval.rl.config import ConfigError
    from zsceval.rl.external import ExternalAgentError

    sources = [x for x in (agent, state_file, trajectory) if x is not None]
    if len(sources) != 1:
        raise click.UsageError("give exactly one of --agent, --state and --trajectory")
    out = Path(out)
    want = ".png" if state_file is not None else ".gif"  # a state is a picture, an episode an animation
    if out.suffix.lower() != want:
        what = (
            "a state is drawn as a PNG" if want == ".png" else "an episode is a GIF (--png-at T adds a PNG)"
        )
        raise click.BadParameter(f"{out} must end in {want}: {what}", param_hint="--out")
    check_writable(out.parent if str(out.parent) else ".", "--out")  # before any episode is played
    if state_file is not None:
        if layout is None:
            raise click.UsageError("--state needs --layout")
        lay = _layout(layout)
        try:
            state = json.loads(Path(state_file).read_text())
        except FileNotFoundError:
            raise click.BadParameter(f"file {state_file} does not exist", param_hint="--state") from None
        except (OSError, json.JSONDecodeError) as exc:
            raise click.BadParameter(f"cannot read {state_file}: {exc}", param_hint="--state") from None
        _check_state(state, lay, f"state {state_file}")
        write_state_png(state, lay, out, tile=tile)
        click.echo(f"wrote {out}")
        return
    if trajectory is not None:
        try:
            name, horizon, frames = read_trajectory(trajectory, episode)
        except FileNotFoundError:
            raise click.BadParameter(f"file {trajectory} does not exist", param_hint="--trajectory") from None
        except (OSError, ValueError) as exc:
            raise click.BadParameter(str(exc), param_hint="--trajectory") from None
        if layout is not None and _layout(layout).name != _layout(name).name:
            raise click.ClickException(f"trajectory {trajectory} is on layout {name!r}, not {layout!r}")
        lay = _layout(name)
        if not frames:
            raise click.ClickException(f"trajectory {trajectory} has no states")
        _check_state(frames[0].state, lay, f"trajectory {trajectory} state 0")
        frames = frames[: steps + 1] if steps else frames
    else:
        if layout is None:
            raise click.UsageError("--agent needs --layout")
        lay = _layout(layout)
        try:
            frames, horizon = play_seating(
                agent, partner or agent, lay, max_steps=steps, seed=seed, device=device
            )
        except (CheckpointError, ConfigError, ExternalAgentError) as exc:
            raise click.ClickException(str(exc)) from None
    if png_at is not None and png_at >= len(frames):
        raise click.BadParameter(f"the episode has steps 0..{len(frames) - 1}", param_hint="--png-at")
    write_episode_gif(frames, lay, out, fps, tile, horizon or None)
    click.echo(f"wrote {out} ({len(frames)} frames, final score {frames[-1].score:g})")
    if png_at is not None:
        f = frames[png_at]
        png = out.with_name(f"{out.stem}_t{png_at}.png")
        write_state_png(f.state, lay, png, score=f.score, timestep=f.t, horizon=horizon or None, tile=tile)
        click.echo(f"wrote {png}")
