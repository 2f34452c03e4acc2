"""Draw one Overcooked state (overcooked-ai's state dict) as a PIL image.

Picture layout (sizes in pixels, ``tile`` = side of one grid cell, default 48):

* the image is ``W * tile`` wide and ``header + H * tile`` high, ``header = header_height(tile)``
  (``max(16, tile // 2)``); cell ``(x, y)`` covers ``[x * tile, (x + 1) * tile)`` by
  ``[header + y * tile, header + (y + 1) * tile)``;
* the header (dark strip on top) shows the score and the time ``t / horizon`` at the right and the
  layout name at the left where it fits;
* terrain: floor light beige, counter ``X`` brown, dispensers ``O``/``T``/``D`` a dark crate holding a
  pile of three of what they give (onions, tomatoes, dishes), pot ``P`` a gray tile with a black pot ring,
  serving window ``S`` green with a white arrow;
* items: onion a yellow disc, tomato a red disc, dish a white plate with a gray rim, soup a white
  plate with an orange-brown filling and one small dot per ingredient (yellow onion, red tomato);
  an item on a counter is drawn at the cell's center;
* pot contents: one dot per ingredient inside the pot ring; under it a progress bar
  ``0.17 * tile`` high (orange while cooking, filled ``cooking_tick / cook_time``) which turns
  green with a white check mark on the pot when the soup is ready; an idle pot shows no bar;
* chefs: a disc in the seat's color (:data:`SEAT_COLORS`: seat 0 blue, seat 1 purple, ...) with the
  seat number, a white triangle "nose" on the edge it faces, and the held item drawn half outside
  the disc on the facing side (as if carried in front).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from PIL import Image, ImageDraw, ImageFont

from zsceval.envs.overcooked.layout import Layout, load_layout

__all__ = [
    "COLORS",
    "SEAT_COLORS",
    "draw_state",
    "header_height",
    "held_item_center",
    "cell_center",
]

RGB = tuple[int, int, int]

COLORS: dict[str, RGB] = {
    "floor": (236, 226, 204),
    "counter": (160, 116, 72),
    "dispenser": (92, 72, 56),
    "pot_tile": (150, 150, 150),
    "pot": (40, 40, 40),
    "serving": (96, 190, 110),
    "grid": (120, 100, 80),
    "onion": (240, 196, 40),
    "tomato": (220, 40, 40),
    "dish": (250, 250, 250),
    "dish_rim": (140, 140, 140),
    "soup": (200, 110, 40),
    "bar_bg": (60, 60, 60),
    "cooking": (255, 140, 0),
    "ready": (30, 200, 60),
    "header": (40, 40, 48),
    "text": (255, 255, 255),
}
"""Colors of terrain, items and marks (RGB)."""

SEAT_COLORS: tuple[RGB, ...] = (
    (30, 90, 230),
    (170, 40, 190),
    (0, 150, 150),
    (110, 110, 110),
)
"""Chef disc color per seat (seat k uses ``SEAT_COLORS[k % len(SEAT_COLORS)]``)."""

_TERRAIN = {" ": "floor", "X": "counter", "O": "dispenser", "T": "dispenser", "D": "dispenser"}
_DISPENSES = {"O": "onion", "T": "tomato", "D": "dish"}
# overcooked-ai orientations (dx, dy): north (0, -1), south (0, 1), east (1, 0), west (-1, 0)
_DIRS = ((0, -1), (0, 1), (1, 0), (-1, 0))


def header_height(tile: int) -> int:
    """Height in pixels of the header strip above the grid for cells of ``tile`` pixels."""
    return max(16, tile // 2)


def cell_center(x: int, y: int, tile: int) -> tuple[float, float]:
    """Pixel center of grid cell ``(x, y)`` (header included)."""
    return x * tile + tile / 2, header_height(tile) + y * tile + tile / 2


def held_item_center(x: int, y: int, orientation: Sequence[int], tile: int) -> tuple[float, float]:
    """Pixel center of the item held by a chef at cell ``(x, y)`` facing ``orientation`` (dx, dy):
    ``0.34 * tile`` from the cell center toward the facing side."""
    cx, cy = cell_center(x, y, tile)
    dx, dy = orientation
    return cx + 0.34 * tile * dx, cy + 0.34 * tile * dy


@cache
def _font(size: int) -> ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1: one bitmap size
        return ImageFont.load_default()


def _disc(d: ImageDraw.ImageDraw, cx: float, cy: float, r: float, fill: RGB, outline=None, width=1):
    d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=fill, outline=outline, width=width)


def _soup_info(obj: dict) -> tuple[list[str], int, int, bool]:
    """``(ingredient names, cooking_tick, cook_time, ready)`` of a soup dict (new or legacy format)."""
    if "state" in obj:  # legacy ZSC-Eval OLD soup: [type, num_items, elapsed]
        name, num, elapsed = obj["state"]
        names = [name] * int(num)
        tick, time = (int(elapsed) if elapsed else -1), int(obj.get("cook_time", 20))
    else:
        raw = obj.get("_ingredients", obj.get("ingredients", []))
        names = [i["name"] if isinstance(i, dict) else str(i) for i in raw]
        tick = int(obj.get("cooking_tick", obj.get("_cooking_tick", -1)))
        time = int(obj.get("cook_time", -1))
    ready = bool(obj.get("is_ready", tick >= 0 and time > 0 and tick >= time))
    return names, tick, time, ready


def _ingredient_dots(d, names: list[str], cx: float, cy: float, spread: float, r: float) -> None:
    k = len(names)
    for j, name in enumerate(sorted(names)):
        ox = (j - (k - 1) / 2) * spread
        _disc(d, cx + ox, cy, r, COLORS.get(name, (0, 0, 0)), outline=(0, 0, 0))


def _item(d: ImageDraw.ImageDraw, obj: dict, cx: float, cy: float, size: float) -> None:
    """Icon of an item (onion, tomato, dish, soup) centered at ``(cx, cy)``, about ``size`` wide."""
    r = size / 2
    name = obj.get("name")
    if name in ("onion", "tomato"):
        _disc(d, cx, cy, r * 0.8, COLORS[name], outline=(0, 0, 0), width=max(1, int(size) // 16))
    elif name == "dish":
        _disc(d, cx, cy, r, COLORS["dish"], outline=COLORS["dish_rim"], width=max(1, int(size) // 8))
    elif name == "soup":
        _disc(d, cx, cy, r, COLORS["dish"], outline=COLORS["dish_rim"], width=max(1, int(size) // 10))
        _disc(d, cx, cy, r * 0.65, COLORS["soup"])
        names, *_ = _soup_info(obj)
        _ingredient_dots(d, names, cx, cy, r * 0.42, max(1.5, r * 0.2))
    else:
        d.text((cx, cy), "?", fill=(0, 0, 0), font=_font(int(size)), anchor="mm")


def _terrain(d: ImageDraw.ImageDraw, ch: str, x: int, y: int, tile: int) -> None:
    x0, y0 = x * tile, header_height(tile) + y * tile
    box = [x0, y0, x0 + tile - 1, y0 + tile - 1]
    cx, cy = cell_center(x, y, tile)
    if ch == "P":
        d.rectangle(box, fill=COLORS["pot_tile"], outline=COLORS["grid"])
        _disc(d, cx, cy - tile * 0.09, tile * 0.34, COLORS["pot"])
    elif ch == "S":
        d.rectangle(box, fill=COLORS["serving"], outline=COLORS["grid"])
        a = tile * 0.22
        d.polygon([(cx - a, cy - a), (cx + a, cy), (cx - a, cy + a)], fill=COLORS["text"])
    else:
        d.rectangle(box, fill=COLORS[_TERRAIN.get(ch, "counter")], outline=COLORS["grid"])
        if ch in _DISPENSES:  # a crate with a pile of three of what it gives
            m = tile * 0.1
            d.rectangle(
                [x0 + m, y0 + m, x0 + tile - 1 - m, y0 + tile - 1 - m],
                outline=COLORS["counter"],
                width=max(1, tile // 16),
            )
            item = {"name": _DISPENSES[ch], "_ingredients": []}
            for ox, oy in ((-0.14, 0.1), (0.14, 0.1), (0.0, -0.12)):
                _item(d, item, cx + ox * tile, cy + oy * tile, tile * 0.36)


def _pot(d: ImageDraw.ImageDraw, soup: dict, x: int, y: int, tile: int) -> None:
    names, tick, time, ready = _soup_info(soup)
    cx, cy = cell_center(x, y, tile)
    cy -= tile * 0.09
    _ingredient_dots(d, names, cx, cy, tile * 0.21, tile * 0.1)
    if tick < 0 and not ready:
        return
    x0, y1 = x * tile + tile * 0.08, header_height(tile) + (y + 1) * tile - 2
    bar_h = max(4, tile * 0.17)
    x1 = x * tile + tile * 0.92
    d.rectangle([x0, y1 - bar_h, x1, y1], fill=COLORS["bar_bg"])
    frac = 1.0 if ready or time <= 0 else min(1.0, max(0.0, tick / time))
    color = COLORS["ready"] if ready else COLORS["cooking"]
    d.rectangle([x0, y1 - bar_h, x0 + (x1 - x0) * frac, y1], fill=color)
    if ready:  # a white check mark on a green disc in the pot's top-right corner
        r = tile * 0.17
        mx, my = x * tile + tile - r - 1, header_height(tile) + y * tile + r + 1
        _disc(d, mx, my, r, COLORS["ready"], outline=COLORS["text"])
        w = max(2, int(tile / 16))
        d.line(
            [(mx - r * 0.5, my), (mx - r * 0.1, my + r * 0.45), (mx + r * 0.55, my - r * 0.45)],
            fill=COLORS["text"],
            width=w,
        )


def _chef(d: ImageDraw.ImageDraw, player: dict, seat: int, tile: int) -> None:
    x, y = (int(v) for v in player["position"])
    ori = tuple(int(v) for v in player.get("orientation", (0, 1)))
    cx, cy = cell_center(x, y, tile)
    r = tile * 0.34
    color = SEAT_COLORS[seat % len(SEAT_COLORS)]
    _disc(d, cx, cy, r, color, outline=(0, 0, 0), width=max(1, tile // 24))
    d.text((cx, cy), str(seat), fill=COLORS["text"], font=_font(max(8, int(tile * 0.36))), anchor="mm")
    dx, dy = ori
    px, py = -dy, dx  # perpendicular
    tip = (cx + dx * (r + tile * 0.13), cy + dy * (r + tile * 0.13))
    base = [(cx + dx * r * 0.7 + px * r * 0.45, cy + dy * r * 0.7 + py * r * 0.45),
            (cx + dx * r * 0.7 - px * r * 0.45, cy + dy * r * 0.7 - py * r * 0.45)]  # fmt: skip
    d.polygon([tip, *base], fill=COLORS["text"], outline=(0, 0, 0))
    held = player.get("held_object")
    if held:
        hx, hy = held_item_center(x, y, ori, tile)
        _item(d, held, hx, hy, tile * 0.38)


def _header(d: ImageDraw.ImageDraw, layout: Layout, width: int, tile: int, score, timestep, horizon) -> None:
    h = header_height(tile)
    d.rectangle([0, 0, width - 1, h - 1], fill=COLORS["header"])
    font = _font(max(9, int(h * 0.7)))
    parts = []
    if score is not None:
        parts.append(f"score {score:g}")
    if timestep is not None:
        parts.append(f"t {timestep}/{horizon}")
    right = "  ".join(parts)
    d.text((width - 3, h / 2), right, fill=COLORS["text"], font=font, anchor="rm")
    room = width - 12 - d.textlength(right, font=font)
    if d.textlength(layout.name, font=font) <= room:  # the layout name only where it fits
        d.text((3, h / 2), layout.name, fill=(200, 200, 210), font=font, anchor="lm")


def draw_state(
    state: dict,
    layout: str | Layout,
    *,
    score: float | None = None,
    timestep: int | None = None,
    horizon: int | None = None,
    tile: int = 48,
) -> Image.Image:
    """Draw an overcooked-ai state dict (``OvercookedState.to_dict()``, e.g. from
    :meth:`zsceval.envs.overcooked.OvercookedEnv.export_state`) on ``layout``'s grid.

    Glyphs and colors are listed in the module docstring and :data:`COLORS` / :data:`SEAT_COLORS`.

    Args:
        state: the state dict: ``players`` (``position`` (x, y), ``orientation`` (dx, dy),
            ``held_object``), ``objects`` (``name``, ``position``; soups ``_ingredients``,
            ``cooking_tick``, ``cook_time``; the legacy ``state`` soup format is read too) and
            optionally ``timestep``.
        layout: layout name/alias/path or a :class:`Layout`.
        score: team score shown in the header (omitted when None).
        timestep: time shown in the header as ``t timestep/horizon`` (default: the dict's
            ``timestep``; None and no ``timestep`` key: omitted).
        horizon: episode length shown after the time (default: the layout's).
        tile: side of one grid cell in pixels (>= 12).

    Returns:
        An RGB image ``W * tile`` wide and ``header_height(tile) + H * tile`` high.

    Raises:
        ValueError: unknown layout, ``tile < 12``, or a player or object outside the grid.
    """
    layout = load_layout(layout)
    tile = int(tile)
    if tile < 12:
        raise ValueError(f"tile must be >= 12 pixels, got {tile}")
    W, H = layout.width, layout.height
    if timestep is None and "timestep" in state:
        timestep = int(state["timestep"])
    horizon = layout.horizon if horizon is None else horizon
    img = Image.new("RGB", (W * tile, header_height(tile) + H * tile), COLORS["floor"])
    d = ImageDraw.Draw(img)
    _header(d, layout, W * tile, tile, score, timestep, horizon)
    for y, row in enumerate(layout.terrain):
        for x, ch in enumerate(row):
            _terrain(d, ch, x, y, tile)

    def where(pos, what: str) -> tuple[int, int]:
        try:
            x, y = (int(v) for v in pos)
        except (TypeError, ValueError):
            raise ValueError(f"{what}: position must be (x, y), got {pos!r}") from None
        if not (0 <= x < W and 0 <= y < H):
            raise ValueError(f"{what}: position {(x, y)} is outside layout {layout.name!r} ({W}x{H})")
        return x, y

    for j, obj in enumerate(state.get("objects", [])):
        x, y = where(obj.get("position"), f"object {j}")
        if layout.terrain[y][x] == "P" and obj.get("name") == "soup":
            _pot(d, obj, x, y, tile)
        else:
            cx, cy = cell_center(x, y, tile)
            _item(d, obj, cx, cy, tile * 0.5)
    for seat, player in enumerate(state.get("players", [])):
        where(player.get("position"), f"player {seat}")
        _chef(d, player, seat, tile)
    return img
