"""Play a saved agent in the browser: ``zsceval play --agent RUN --layout L``.

* :mod:`zsceval.play.session`: loading the agent (:func:`load_opponent`), one game
  (:class:`Game`: the person's key per step, the agent's recurrent state carried), all games of
  a server (:class:`Games`: saved as ``zsceval-trajectory`` files, complete or not);
* :mod:`zsceval.play.server`: the Flask app (:func:`create_app`) and its runner
  (:class:`PlayServer`);
* :mod:`zsceval.play.page`: the page the person plays on.

Needs Flask (``pip install flask``).
"""

from zsceval.play.session import DEFAULT_FPS, KEY_ACTIONS, Game, Games, Opponent, PlayError, load_opponent

__all__ = [
    "DEFAULT_FPS",
    "KEY_ACTIONS",
    "Game",
    "Games",
    "Opponent",
    "PlayError",
    "PlayServer",
    "create_app",
    "load_opponent",
]


def __getattr__(name: str):
    # The server needs Flask; import it only when asked for.
    if name in ("PlayServer", "create_app"):
        from zsceval.play import server

        return getattr(server, name)
    raise AttributeError(f"module 'zsceval.play' has no attribute {name!r}")
