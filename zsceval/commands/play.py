"""``zsceval play``: play Overcooked in the browser with a saved agent as the partner."""

from __future__ import annotations

import logging
import signal

import click

from zsceval.commands._common import check_writable


@click.command(name="play")
@click.option("--agent", required=True, metavar="RUN_OR_CHECKPOINT[#name]",
              help="Run dir, checkpoint dir or meta.json of the agent to play with; #name picks a saved "
                   "agent other than the ego.")  # fmt: skip
@click.option("--layout", required=True, help="Layout to play (the agent must have been trained on it).")
@click.option("--seat", type=click.IntRange(min=0), default=0, show_default=True,
              help="Your seat (0: chef 1, blue; 1: chef 2, purple); the agent plays the others.")  # fmt: skip
@click.option("--fps", type=click.FloatRange(min=0, min_open=True), default=400 / 60, show_default="6.67",
              help="Steps per second (ZSC-Eval's human study: 400 steps in about a minute).")  # fmt: skip
@click.option("--horizon", type=click.IntRange(min=1), default=None,
              help="Steps per game (default and maximum: the agent's training horizon).")  # fmt: skip
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="TCP port.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--out", default="play-games", show_default=True, type=click.Path(file_okay=False),
              help="Folder of the saved games (one trajectory file per game).")  # fmt: skip
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the agent's action sampling (game k uses seed + k).")  # fmt: skip
@click.option("--idle-timeout", type=click.FloatRange(min=1), default=30.0, show_default=True,
              help="Seconds without a step after which an open game is saved as incomplete.")  # fmt: skip
@click.option("--device", default="cpu", show_default=True, help="Torch device of the agent.")
def play(agent, layout, seat, fps, horizon, port, host, out, seed, idle_timeout, device) -> None:
    """Play Overcooked in the browser with a saved agent (PPO, recurrent or composite).

    Starts a local web server; open the address it prints, press Enter and play with the arrow
    keys and space. Every game is saved to --out as a zsceval-trajectory file (both seats'
    actions, the states and the score; meta.complete is false for a game left part-way: tab
    closed, idle, or server stopped). Stop the server with Ctrl-C.

    \b
    Examples:
      zsceval play --agent runs/sp_s0 --layout cramped_room
      zsceval play --agent runs/fcp#ego --layout counter_circuit --seat 1 --fps 5 --port 8080
    """
    try:
        from zsceval.play.server import PlayServer, create_app
        from zsceval.play.session import PlayError, load_opponent
    except ModuleNotFoundError as exc:
        if exc.name not in ("flask", "werkzeug"):
            raise
        raise click.ClickException("zsceval play needs Flask: pip install flask") from None
    try:
        opponent = load_opponent(agent, layout, device)
        app = create_app(opponent, layout, seat, fps, out, horizon=horizon, seed=seed,
                         idle_timeout=idle_timeout)  # fmt: skip
        check_writable(out)
        server = PlayServer(app, host, port)
    except PlayError as exc:
        raise click.ClickException(str(exc)) from None
    games = app.extensions["zsceval_play"]

    def interrupt(signum, frame):  # a plain `kill` stops like Ctrl-C: open games are saved
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no log line per step
    click.echo(
        f"Playing {layout} with {agent} (you are seat {seat}, {games.horizon} steps at {fps:.3g}/s).\n"
        f"Open {server.url} in a browser. Games are saved to {out}/. Ctrl-C stops."
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        saved = [g.saved for g in games.ended.values() if g.saved]
        click.echo(f"\nstopped; {len(saved)} game(s) saved to {out}/")
