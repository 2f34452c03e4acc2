"""The play web server: a Flask app serving the page and a small JSON API, and a runner for it.

Routes (JSON bodies; errors are ``{"error": message}`` with status 400/404/409/500):

* ``GET /``: the page (:mod:`zsceval.play.page`);
* ``GET /api/config``: ``{layout, agent, seat, horizon, fps, keys}``;
* ``POST /api/games``: start a game; returns its first frame (:meth:`Games.frame`);
* ``POST /api/games/<id>/step`` with ``{"key": "ArrowUp" | "ArrowDown" | "ArrowLeft" |
  "ArrowRight" | " " | null}``: play one step; returns the new frame (``saved`` is the file once
  the game reached its horizon);
* ``POST /api/games/<id>/quit``: the tab was closed: save the game so far as incomplete.

The page drives the pace (one step per ``1 / fps`` s); the server only plays the steps it is sent.
Open games without a request for ``idle_timeout`` seconds are saved as incomplete by a sweep on
every request and, under :class:`PlayServer`, by a background thread; :meth:`PlayServer.stop`
saves the games still open.
"""

from __future__ import annotations

import errno
import logging
import socket
import threading
from pathlib import Path

from flask import Flask, jsonify, request
from werkzeug.serving import make_server

from zsceval.play.page import render_page
from zsceval.play.session import DEFAULT_FPS, KEY_ACTIONS, Games, Opponent, PlayError, load_opponent

__all__ = ["EXTENSION", "PlayServer", "create_app"]

EXTENSION = "zsceval_play"
"""``app.extensions[EXTENSION]`` is the app's :class:`~zsceval.play.session.Games`."""

log = logging.getLogger(__name__)


def create_app(
    agent: str | Path | Opponent,
    layout: str,
    seat: int = 0,
    fps: float = DEFAULT_FPS,
    out_dir: str | Path = "play-games",
    *,
    horizon: int | None = None,
    seed: int = 0,
    device: str = "cpu",
    tile: int = 48,
    idle_timeout: float = 30.0,
) -> Flask:
    """The Flask app of ``zsceval play``.

    Args:
        agent: ``RUN_OR_CHECKPOINT[#name]`` of the saved agent, or an :class:`Opponent` already
            loaded for ``layout``.
        layout: layout name.
        seat: the person's seat (the agent plays every other seat).
        fps: steps per second the page plays at (default ``400 / 60``, ZSC-Eval's human study).
        out_dir: folder of the saved games (one ``game-*.json`` trajectory file per game).
        horizon: steps per game (default: the agent's training horizon; at most that).
        seed: seed of the agent's action sampling in the first game (game k: ``seed + k``).
        device: torch device.
        tile: grid cell size of the pictures in pixels.
        idle_timeout: seconds without a request after which an open game is saved as incomplete.

    Raises:
        PlayError: an agent that cannot be loaded or does not fit the layout, a bad seat or horizon.
    """
    opponent = agent if isinstance(agent, Opponent) else load_opponent(agent, layout, device)
    if opponent.env_cfg.layout != layout:
        raise PlayError(f"the agent was loaded for layout '{opponent.env_cfg.layout}', not '{layout}'")
    games = Games(opponent, out_dir, seat, horizon, fps, seed, idle_timeout)
    config = {
        "layout": layout,
        "agent": opponent.path,
        "seat": seat,
        "horizon": games.horizon,
        "fps": games.fps,
        "keys": [k for k in KEY_ACTIONS if k is not None],
        "out": str(games.out_dir),
    }
    app = Flask(__name__)
    app.extensions[EXTENSION] = games

    @app.errorhandler(PlayError)
    def play_error(exc: PlayError):
        return jsonify(error=str(exc)), exc.status

    @app.errorhandler(OSError)
    def write_error(exc: OSError):
        log.error("cannot save a game: %s", exc)
        return jsonify(error=f"cannot save the game: {exc.strerror or exc} ({exc.filename or ''})"), 500

    @app.get("/")
    def page():
        return render_page(config), 200, {"Content-Type": "text/html; charset=utf-8"}

    @app.get("/api/config")
    def get_config():
        return jsonify(config)

    @app.post("/api/games")
    def new_game():
        return jsonify(games.frame(games.new_game(), tile))

    @app.post("/api/games/<gid>/step")
    def step(gid: str):
        body = request.get_json(silent=True)
        if not isinstance(body, dict) or "key" not in body:
            raise PlayError('send {"key": KEY} (KEY: ArrowUp, ArrowDown, ArrowLeft, ArrowRight, " " or null)')
        return jsonify(games.frame(games.step(gid, body["key"]), tile))

    @app.post("/api/games/<gid>/quit")
    def quit_game(gid: str):
        game = games.abandon(gid, "closed")
        if game is None:
            game = games.get(gid)  # an ended game: say where it is; unknown: 404
        return jsonify(game=game.id, t=game.t, score=game.score, end=game.end, saved=game.saved)

    return app


def _check_port(host: str, port: int) -> None:
    """Bind ``host:port`` as the server will (``SO_REUSEADDR``) and release it.

    Raises:
        PlayError: the port is in use, or the address cannot be bound (the OS reason named).
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise PlayError(f"cannot listen on --host {host}: {exc.strerror or exc}") from None
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise PlayError(f"port {port} is in use; pass --port with a free port") from None
            raise PlayError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


class PlayServer:
    """Serve an app made by :func:`create_app` (werkzeug's threaded server) with a sweeper thread.

    Args:
        app: the Flask app.
        host: interface to listen on.
        port: TCP port (0: a free one, see :attr:`port`).
        sweep_every: seconds between sweeps of idle games.

    Raises:
        PlayError: the port is in use (the message says to pass --port) or cannot be opened.
    """

    def __init__(self, app: Flask, host: str = "127.0.0.1", port: int = 8000, sweep_every: float = 2.0):
        self.app, self.games = app, app.extensions[EXTENSION]
        _check_port(host, port)
        try:  # werkzeug prints its own message and exits when it cannot listen
            self.server = make_server(host, port, app, threaded=True)
        except (OSError, SystemExit) as exc:
            raise PlayError(f"cannot listen on {host}:{port} ({exc}); pass --port with a free port") from None
        self.host, self.port = host, int(self.server.server_port)
        self._stop = threading.Event()
        self._sweeper = threading.Thread(target=self._sweep, args=(sweep_every,), daemon=True)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://host:port/``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def _sweep(self, every: float) -> None:
        while not self._stop.wait(every):
            try:
                self.games.sweep()
            except OSError as exc:  # keep serving; the game stays open and is retried
                log.error("cannot save an abandoned game: %s", exc)

    def serve_forever(self) -> None:
        """Serve in this thread until :meth:`stop` (or KeyboardInterrupt); saves open games on exit."""
        self._sweeper.start()
        try:
            self.server.serve_forever()
        finally:
            self.stop()

    def start(self) -> PlayServer:
        """Serve in a background thread (tests); returns self."""
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()
        self._sweeper.start()
        return self

    def stop(self) -> list:
        """Stop serving and save every open game as incomplete (``end = "shutdown"``); returns them."""
        if not self._stop.is_set():
            self._stop.set()
            if self._thread is not None:
                self.server.shutdown()
                self._thread.join(timeout=10)
            self.server.server_close()
        return self.games.close_all("shutdown")
