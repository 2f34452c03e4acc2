"""Pictures of Overcooked games: a state as a PNG, an episode as an animated GIF.

* :func:`draw_state` draws an overcooked-ai state dict (glyphs in :mod:`zsceval.render.draw`);
* :func:`record_episode` plays one game with saved agents and exports the state every step;
* :func:`episode_gif` writes frames as an animated GIF (atomically); :func:`write_episode_gif` draws
  an episode's frames and writes them, :func:`write_state_png` draws one state and writes a PNG;
* :func:`read_trajectory` reads a ``zsceval-trajectory`` JSON file into frames, :func:`check_state`
  refuses a state that does not fit its layout;
* :mod:`zsceval.render.seating`: :func:`~zsceval.render.seating.play_seating` loads two saved agents
  and records one seating's episode, :func:`~zsceval.render.seating.seating_gifs` writes one GIF per
  seating (``zsceval eval --gif``).
"""

from zsceval.render.draw import COLORS, SEAT_COLORS, cell_center, draw_state, header_height, held_item_center
from zsceval.render.episode import (
    Frame,
    check_state,
    episode_gif,
    read_trajectory,
    record_episode,
    write_episode_gif,
    write_state_png,
)
from zsceval.render.seating import play_seating, seating_gifs

__all__ = [
    "COLORS",
    "SEAT_COLORS",
    "Frame",
    "cell_center",
    "check_state",
    "draw_state",
    "episode_gif",
    "header_height",
    "held_item_center",
    "play_seating",
    "read_trajectory",
    "record_episode",
    "seating_gifs",
    "write_episode_gif",
    "write_state_png",
]
