"""``zsceval render``: draw a state as a PNG, or an episode (played or from a trajectory) as a GIF."""

from __future__ import annotations

import json
from pathlib import Path

import click


def _layout(name: str):
    from zsceval.envs.overcooked.layout import load_layout

    try:
        return load_layout(name)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--layout") from None


def check_state(state, layout, what: str) -> None:
    """Refuse a state dict that does not fit ``layout`` (clear :class:`click.ClickException`)."""
    from zsceval.envs.overcooked import OvercookedEnv

    if not isinstance(state, dict) or "players" not in state:
        raise click.ClickException(f"{what}: not an overcooked-ai state dict (no 'players' key)")
    env = OvercookedEnv(layout, num_envs=1)
    env.reset()
    try:
        env.import_state(0, state)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise click.ClickException(f"{what} does not fit layout {layout.name!r}: {exc}") from None


def write_episode_gif(frames, layout, out, fps: float, tile: int, horizon: int | None = None) -> None:
    """Draw ``frames`` (:class:`zsceval.render.Frame`) and write them as a GIF at ``out``."""
    from zsceval.render import draw_state, episode_gif

    images = [
        draw_state(f.state, layout, score=f.score, timestep=f.t, horizon=horizon, tile=tile) for f in frames
    ]
    episode_gif(images, out, fps)


def _save_png(image, out: Path) -> None:
    from zsceval.io import atomic_path

    with atomic_path(out) as tmp:
        image.save(tmp, format="PNG")
    from zsceval.render.episode import readable

    readable(out)


@click.command(name="render")
@click.option("--agent", default=None, help="Run dir, checkpoint dir or meta.json of the agent in seat 0.")
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
    type=click.IntRange(min=1),
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
    sources = [x for x in (agent, state_file, trajectory) if x is not None]
    if len(sources) != 1:
        raise click.UsageError("give exactly one of --agent, --state and --trajectory")
    out = Path(out)
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
        check_state(state, lay, f"state {state_file}")
        from zsceval.render import draw_state

        _save_png(draw_state(state, lay, tile=tile), out)
        click.echo(f"wrote {out}")
        return
    if trajectory is not None:
        from zsceval.render import read_trajectory

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
        check_state(frames[0].state, lay, f"trajectory {trajectory} state 0")
        frames = frames[: steps + 1] if steps else frames
    else:
        if layout is None:
            raise click.UsageError("--agent needs --layout")
        lay = _layout(layout)
        frames, horizon = _play(agent, partner or agent, lay, steps, seed, device)
    if png_at is not None and png_at >= len(frames):
        raise click.BadParameter(f"the episode has steps 0..{len(frames) - 1}", param_hint="--png-at")
    write_episode_gif(frames, lay, out, fps, tile, horizon or None)
    click.echo(f"wrote {out} ({len(frames)} frames, final score {frames[-1].score:g})")
    if png_at is not None:
        from zsceval.render import draw_state

        f = frames[png_at]
        png = out.with_name(f"{out.stem}_t{png_at}.png")
        _save_png(
            draw_state(f.state, lay, score=f.score, timestep=f.t, horizon=horizon or None, tile=tile), png
        )
        click.echo(f"wrote {png}")


def _play(agent_path, partner_path, layout, steps, seed, device, agent_seat: int = 0):
    import torch

    from zsceval.envs.overcooked import OvercookedEnv
    from zsceval.render import record_episode
    from zsceval.rl.checkpoint import CheckpointError, check_compatible, load_agent
    from zsceval.rl.trainer import resolve_device

    dev = resolve_device(device)
    env = OvercookedEnv(layout, num_envs=1, device=dev, seed=seed)
    agents = []
    for path, what in ((agent_path, "agent"), (partner_path, "partner")):
        try:
            a, meta = load_agent(path, device=dev)
            horizon = meta.get("env_spec", {}).get("horizon")
            if horizon:
                env = OvercookedEnv(layout, num_envs=1, device=dev, seed=seed, horizon=horizon)
            check_compatible(meta, env.spec_dict(), f"{what} {path}")
        except CheckpointError as exc:
            raise click.ClickException(str(exc)) from None
        agents.append(a)
    seats = [agents[1]] * env.num_agents
    seats[agent_seat] = agents[0]
    gen = torch.Generator(dev).manual_seed(seed)
    return record_episode(env, seats, gen, max_steps=steps), env.horizon


def seating_gifs(agent_path, partner_path, layout, out_dir, device: str = "cpu", seed: int = 0) -> list[str]:
    """One GIF per seating (agent in seat k, partner elsewhere) of one episode each, written as
    ``<out_dir>/<layout>_agent_seat<k>.gif``; returns the paths (for ``zsceval eval --gif``)."""
    lay = _layout(layout)
    paths = []
    for seat in range(lay.num_players):
        frames, horizon = _play(agent_path, partner_path, lay, None, seed, device, agent_seat=seat)
        path = Path(out_dir) / f"{lay.name}_agent_seat{seat}.gif"
        write_episode_gif(frames, lay, path, 8, 32, horizon)
        paths.append(str(path))
    return paths
