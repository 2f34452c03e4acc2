"""Layout files: the shipped set, names and aliases, and the validity checks (docs/overcooked-rules.md
§1.1)."""

import pytest
from click.testing import CliRunner

from zsceval.cli import main
from zsceval.envs.overcooked import list_layouts, load_layout, parse_layout

PAPER_NAMES = {
    "cramped_room": None,
    "forced_coordination": "random0",
    "coordination_ring": "random1",
    "counter_circuit": "random3",
    "asymmetric_advantages": "unident_s",
    "bothway_coordination": "random0_medium",
    "blocked_corridor": "small_corridor",
    "large_room": None,
    "asymmetric_coordination": None,
    "forced_coordination_mr": "random0_m",
    "coordination_ring_mr": "random1_m",
    "counter_circuit_mr": "random3_m",
    "asymmetric_advantages_mr": "unident_s_m",
}


def test_every_paper_layout_ships_with_its_alias():
    names = {lay.name for lay in list_layouts()}
    assert set(PAPER_NAMES) <= names
    for name, alias in PAPER_NAMES.items():
        if alias:
            assert load_layout(alias) is load_layout(name)


def test_grids_match_the_spec():
    # Spot checks against docs/overcooked-rules.md §1.3-1.5 and 7.
    cc = load_layout("random3")
    assert cc.terrain[4] == "XXXOOXXX" and cc.start_positions == ((3, 3), (3, 1))
    assert cc.cells("P") == [(3, 0), (4, 0)]
    fc = load_layout("forced_coordination")
    assert fc.start_positions == ((3, 1), (1, 2))
    lr = load_layout("large_room")
    assert (lr.width, lr.height) == (7, 7) and lr.cells("P") == [(3, 0)]
    mr = load_layout("random3_m")
    assert mr.cells("T") == [(5, 4), (6, 4)] and mr.dynamics == "multi_recipe"
    assert [(r.ingredients, r.value, r.time) for r in mr.orders] == [
        (("onion", "onion"), 10, 10),
        (("onion", "onion", "onion"), 20, 20),
        (("onion", "tomato"), 10, 10),
        (("onion", "onion", "tomato"), 20, 20),
        (("onion", "tomato", "tomato"), 20, 20),
    ]
    assert mr.recipe(0, 3) == (-10, 20, False)  # TTT: not an order, ZSC-Eval pays -10


def test_asymmetric_coordination_design():
    """Paper App. B: a larger Asymmetric Advantages; right player near plates, left near serving."""
    ac, aa = load_layout("asymmetric_coordination"), load_layout("asymmetric_advantages")
    assert ac.width * ac.height > aa.width * aa.height
    right, left = ac.start_positions  # player 0 (digit 1) right, player 1 left, as in AA
    assert right[0] > ac.width // 2 > left[0]
    dish_right = min(abs(x - right[0]) + abs(y - right[1]) for x, y in ac.cells("D") if x > ac.width // 2)
    dish_left = min(abs(x - left[0]) + abs(y - left[1]) for x, y in ac.cells("D") if x < ac.width // 2)
    serve_right = min(abs(x - right[0]) + abs(y - right[1]) for x, y in ac.cells("S") if x > ac.width // 2)
    serve_left = min(abs(x - left[0]) + abs(y - left[1]) for x, y in ac.cells("S") if x < ac.width // 2)
    assert dish_right < dish_left and serve_left < serve_right


GOOD = """name: tiny
grid:
XXPXX
O1 2D
XXSXX
"""


def test_parse_minimal_layout_defaults():
    lay = parse_layout(GOOD)
    assert lay.dynamics == "classic" and lay.horizon == 400
    assert [(r.onions, r.tomatoes, r.value, r.time) for r in lay.orders] == [(3, 0, 20, 20)]
    assert lay.start_positions == ((1, 1), (3, 1))


@pytest.mark.parametrize(
    "text, where, message",
    [
        (GOOD.replace("O1 2D", "O1 2DX"), "tiny.layout:4:6", "not rectangular"),
        (GOOD.replace("O1 2D", "O1 2Q"), "tiny.layout:4:5", "unknown grid character 'Q'"),
        (GOOD.replace("O1 2D", "O1 3D"), "tiny.layout:3:1", "missing [2]"),
        (GOOD.replace("O1 2D", "O1 1D"), "tiny.layout:4:4", "appears twice"),
        (GOOD.replace("O1 2D", " 1 2D"), "tiny.layout:4:1", "open border"),
        (GOOD.replace("XXPXX", "XXXXX"), "tiny.layout:3:1", "pot"),
        (GOOD.replace("XXSXX", "XXXXX"), "tiny.layout:3:1", "serving window"),
        (GOOD.replace("2D", "2X"), "tiny.layout:3:1", "dish dispenser"),
        (GOOD.replace("O1", "X1"), "tiny.layout:3:1", "onion 'O' or tomato 'T'"),
        (GOOD.replace("O1", "T1"), "tiny.layout:4:1", "multi_recipe"),
        ("name: tiny\nhorizn: 3\n" + GOOD[11:], "tiny.layout:2:1", "did you mean 'horizon'"),
        ("name: tiny\nhorizon: x\n" + GOOD[11:], "tiny.layout:2:1", "integer"),
        ("name: tiny\n", "tiny.layout:2:1", "missing 'grid:'"),
    ],
)
def test_malformed_layouts_name_file_line_and_column(text, where, message):
    with pytest.raises(ValueError) as err:
        parse_layout(text, source="tiny.layout")
    assert str(err.value).startswith(where + ":"), str(err.value)
    assert message in str(err.value)


def test_unknown_layout_lists_valid_names():
    with pytest.raises(ValueError) as err:
        load_layout("counter_circut")
    msg = str(err.value)
    assert "Did you mean 'counter_circuit'" in msg
    for name, alias in PAPER_NAMES.items():
        assert name in msg and (alias is None or alias in msg)


def test_layout_file_path(tmp_path):
    path = tmp_path / "tiny.layout"
    path.write_text(GOOD)
    assert load_layout(str(path)).name == "tiny"
    path.write_text(GOOD.replace("O1 2D", "O1 2Q"))
    with pytest.raises(ValueError, match=rf"{path}:4:5"):
        load_layout(str(path))


def test_cli_layouts_list_and_show():
    runner = CliRunner()
    listing = runner.invoke(main, ["layouts"])
    assert listing.exit_code == 0
    assert "counter_circuit" in listing.output and "random3" in listing.output
    shown = runner.invoke(main, ["layouts", "show", "random3"])
    assert shown.exit_code == 0
    assert "XXXOOXXX" in shown.output and "Counter Circuit" in shown.output
    bad = runner.invoke(main, ["layouts", "show", "nope"])
    assert bad.exit_code != 0 and "Valid layouts" in bad.output
