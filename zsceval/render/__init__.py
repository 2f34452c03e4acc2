"""Pictures of Overcooked games: a state as a PNG, an episode as an animated GIF.

* :func:`draw_state` draws an overcooked-ai state dict (glyphs in :mod:`zsceval.render.draw`);
* :func:`record_episode` plays one game with saved agents and exports the state every step;
* :func:`episode_gif` writes frames as an animated GIF (atomically);
* :func:`read_trajectory` reads a ``zsceval-trajectory`` JSON file into frames.
"""

from zsceval.render.draw import COLORS, SEAT_COLORS, cell_center, draw_state, header_height, held_item_center
from zsceval.render.episode import Frame, episode_gif, read_trajectory, record_episode

__all__ = [
    "COLORS",
    "SEAT_COLORS",
    "Frame",
    "cell_center",
    "draw_state",
    "episode_gif",
    "header_height",
    "held_item_center",
    "read_trajectory",
    "record_episode",
]
