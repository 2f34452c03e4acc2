"""draw_state puts the right colors at the right pixels; episode_gif writes every frame."""

import pytest
from PIL import Image

from zsceval.render import (
    COLORS,
    SEAT_COLORS,
    cell_center,
    draw_state,
    episode_gif,
    header_height,
    held_item_center,
)

TILE = 48


def soup(pos, names, tick, cook_time=20):
    return {"name": "soup", "position": pos, "_ingredients": [{"name": n, "position": pos} for n in names],
            "cooking_tick": tick, "cook_time": cook_time, "is_ready": tick >= cook_time > 0}  # fmt: skip


# cramped_room:  XXPXX / O  2O / X1  X / XDXSX
STATE = {
    "players": [
        {"position": (1, 2), "orientation": (1, 0), "held_object": {"name": "onion", "position": (1, 2)}},
        {"position": (3, 1), "orientation": (0, -1), "held_object": None},
    ],
    "objects": [soup((2, 0), ["onion", "onion"], 5), {"name": "dish", "position": (0, 2)}],
    "timestep": 37,
}


def px(img, xy):
    return img.getpixel((int(xy[0]), int(xy[1])))


def test_image_size_and_header():
    img = draw_state(STATE, "cramped_room", score=20, tile=TILE)
    assert img.size == (5 * TILE, header_height(TILE) + 4 * TILE)
    assert px(img, (1, 1)) == COLORS["header"]
    small = draw_state(STATE, "counter_circuit_mr", tile=16)
    assert small.size == (8 * 16, header_height(16) + 5 * 16)


def test_chefs_held_item_and_terrain_colors():
    img = draw_state(STATE, "cramped_room", score=20, tile=TILE)
    # chef 1 at (1, 2): its seat color left of center (the onion it holds is on the east side)
    cx, cy = cell_center(1, 2, TILE)
    assert px(img, (cx - TILE * 0.2, cy)) == SEAT_COLORS[0]
    # the onion is held on the east side, not the west
    assert px(img, held_item_center(1, 2, (1, 0), TILE)) == COLORS["onion"]
    assert px(img, held_item_center(1, 2, (-1, 0), TILE)) != COLORS["onion"]
    # chef 2 at (3, 1) in the second seat color; its white nose points north
    cx, cy = cell_center(3, 1, TILE)
    assert px(img, (cx - TILE * 0.2, cy + TILE * 0.1)) == SEAT_COLORS[1]
    assert px(img, (cx, cy - TILE * 0.40)) == COLORS["text"]
    assert px(img, (cx, cy + TILE * 0.40)) != COLORS["text"]
    # terrain: floor, counter corner, serving window, dish on the counter at (0, 2)
    fx, fy = cell_center(2, 2, TILE)
    assert px(img, (fx, fy)) == COLORS["floor"]
    assert px(img, (4 * TILE + 3, header_height(TILE) + 3 * TILE + 3)) == COLORS["counter"]
    sx, sy = cell_center(3, 3, TILE)
    assert px(img, (sx - TILE * 0.4, sy - TILE * 0.4)) == COLORS["serving"]
    assert px(img, cell_center(0, 2, TILE)) == COLORS["dish"]


def test_pot_contents_and_cooking_bar():
    img = draw_state(STATE, "cramped_room", tile=TILE)
    cx, cy = cell_center(2, 0, TILE)
    pot_y = cy - TILE * 0.09
    # two onion dots side by side in the pot, none in the middle
    assert px(img, (cx - TILE * 0.105, pot_y)) == COLORS["onion"]
    assert px(img, (cx + TILE * 0.105, pot_y)) == COLORS["onion"]
    assert px(img, (cx, pot_y)) != COLORS["onion"]
    # cooking 5/20: the bar is orange at its left end, dark to the right
    bar_y = header_height(TILE) + TILE - 4
    assert px(img, (2 * TILE + TILE * 0.12, bar_y)) == COLORS["cooking"]
    assert px(img, (2 * TILE + TILE * 0.85, bar_y)) == COLORS["bar_bg"]
    # ready: full green bar
    ready = dict(STATE, objects=[soup((2, 0), ["onion"] * 3, 20)])
    img = draw_state(ready, "cramped_room", tile=TILE)
    assert px(img, (2 * TILE + TILE * 0.85, bar_y)) == COLORS["ready"]
    # idle pot: no bar
    idle = dict(STATE, objects=[soup((2, 0), ["onion"], -1, -1)])
    img = draw_state(idle, "cramped_room", tile=TILE)
    assert px(img, (2 * TILE + TILE * 0.12, bar_y)) == COLORS["pot_tile"]


def test_multi_recipe_tomatoes():
    # counter_circuit_mr has tomato dispensers; a held soup of onion + tomato shows both dots
    from zsceval.envs.overcooked import OvercookedEnv

    env = OvercookedEnv("counter_circuit_mr", num_envs=1)
    env.reset()
    state = env.export_state(0)
    (x, y), ori = state["players"][0]["position"], state["players"][0]["orientation"]
    state["players"][0]["held_object"] = {"name": "tomato", "position": (x, y)}
    img = draw_state(state, "counter_circuit_mr", tile=TILE)
    assert px(img, held_item_center(x, y, ori, TILE)) == COLORS["tomato"]
    tx, ty = env.layout.cells("T")[0]
    crate = [
        px(img, (tx * TILE + i, header_height(TILE) + ty * TILE + j))
        for i in range(TILE)
        for j in range(TILE)
    ]
    assert COLORS["tomato"] in crate and COLORS["dispenser"] in crate


def test_bad_state_raises_value_error():
    bad = dict(STATE, players=[{"position": (9, 9), "orientation": (0, 1), "held_object": None}])
    with pytest.raises(ValueError, match="outside layout"):
        draw_state(bad, "cramped_room")
    with pytest.raises(ValueError, match="unknown layout"):
        draw_state(STATE, "no_such_layout")


def test_gif_has_every_frame(tmp_path):
    frames = [draw_state(dict(STATE, timestep=t), "cramped_room", score=t, tile=16) for t in range(7)]
    path = episode_gif(frames, tmp_path / "ep.gif", fps=5)
    gif = Image.open(path)
    assert gif.n_frames == 7 and gif.size == frames[0].size
    gif.seek(3)
    # colors survive the palette exactly
    assert px(gif.convert("RGB"), cell_center(2, 2, 16)) == COLORS["floor"]
    assert not list(tmp_path.glob(".*tmp"))
    with pytest.raises(ValueError):
        episode_gif([], tmp_path / "none.gif")
