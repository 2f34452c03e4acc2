"""Overcooked layouts: the plain-text ``.layout`` format, its parser, and the layout registry.

File format (one file per layout in ``layouts/``, documented in ``layouts/README.md``)::

    # comment lines start with '#'
    name: counter_circuit            # required; the paper name
    title: Counter Circuit           # optional display name
    aliases: random3                 # optional, comma-separated (ZSC-Eval names)
    dynamics: classic                # classic (auto-cook at 3 onions) | multi_recipe (explicit cook)
    horizon: 400                     # episode length in env steps
    cook_time: 20                    # optional; overrides every order's time (docs/overcooked-rules.md §5.3)
    delivery_reward: 20              # optional; overrides every order's value
    default_cook_time: 20            # optional; cook time of soups that are not orders
    non_order_value: -10             # optional; reward for delivering a soup that is not an order
    order: onion onion tomato value=20 time=20    # repeatable: the orders (allowed recipes)
    grid:                            # last key; every following line is a grid row, verbatim
    XXXPPXXX
    ...

Grid characters (docs/overcooked-rules.md §1.1): ``X`` counter, ``O`` onion dispenser, ``T`` tomato
dispenser, ``D`` dish dispenser, ``P`` pot, ``S`` serving window, space floor, ``1``-``9`` a player's
start cell (digit k is player k-1; the cell is floor).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

__all__ = [
    "Layout",
    "Recipe",
    "parse_layout",
    "load_layout",
    "list_layouts",
    "resolve_layout_name",
    "INGREDIENTS",
]

INGREDIENTS = ("onion", "tomato")
TERRAIN_CHARS = "XOTPDS "
PLAYER_CHARS = "123456789"
DYNAMICS = ("classic", "multi_recipe")
MAX_INGREDIENTS = 3

# Defaults of docs/overcooked-rules.md §5.3 (value and time resolution) and ZSC-Eval's delivery rule.
DEFAULT_VALUE = 20
DEFAULT_TIME = 20
ZSC_NON_ORDER_VALUE = -10


@dataclass(frozen=True)
class Recipe:
    """A soup recipe: a multiset of ingredients with its delivery value and cook time.

    Attributes:
        onions: number of onions (0-3).
        tomatoes: number of tomatoes (0-3); ``onions + tomatoes`` is 1-3.
        value: sparse reward for delivering it, in reward units (20 for the classic onion soup).
        time: cook time in env steps (ticks) from the cook start to ready.
    """

    onions: int
    tomatoes: int
    value: int = DEFAULT_VALUE
    time: int = DEFAULT_TIME

    @property
    def ingredients(self) -> tuple[str, ...]:
        """Sorted ingredient names, as in overcooked-ai's ``Recipe.ingredients``."""
        return tuple(sorted(("onion",) * self.onions + ("tomato",) * self.tomatoes))

    @property
    def code(self) -> int:
        """overcooked-ai's recipe integer code, used to sort order lists (docs/overcooked-rules.md §5.1)."""
        base = self.onions + 4 * self.tomatoes
        return base if (self.onions == 0 or self.tomatoes == 0) else 17 * base


@dataclass(frozen=True)
class Layout:
    """A parsed, validated Overcooked layout.

    Attributes:
        name: canonical (paper) name, e.g. ``counter_circuit``.
        title: display name.
        aliases: other accepted names (ZSC-Eval names such as ``random3``).
        dynamics: ``classic`` (ZSC-Eval OLD: cooking starts by itself at 3 onions) or
            ``multi_recipe`` (ZSC-Eval NEW: tomatoes, explicit cooking, orders).
        horizon: episode length in env steps.
        terrain: the grid rows with player digits replaced by floor (``' '``); ``terrain[y][x]``.
        start_positions: ``(x, y)`` start cell per player index.
        orders: the allowed recipes, sorted by recipe code.
        default_cook_time: cook time of recipes that are not orders.
        non_order_value: sparse reward for delivering a soup that is not an order.
        source: file the layout was read from (``None`` if built from a string).
    """

    name: str
    title: str
    aliases: tuple[str, ...]
    dynamics: str
    horizon: int
    terrain: tuple[str, ...]
    start_positions: tuple[tuple[int, int], ...]
    orders: tuple[Recipe, ...]
    default_cook_time: int = DEFAULT_TIME
    non_order_value: int = 0
    source: str | None = field(default=None, compare=False)

    @property
    def width(self) -> int:
        """W, the number of grid columns."""
        return len(self.terrain[0])

    @property
    def height(self) -> int:
        """H, the number of grid rows."""
        return len(self.terrain)

    @property
    def num_players(self) -> int:
        """Number of players (start cells)."""
        return len(self.start_positions)

    @property
    def grid_text(self) -> str:
        """The grid with player digits restored, one row per line."""
        rows = [list(r) for r in self.terrain]
        for i, (x, y) in enumerate(self.start_positions):
            rows[y][x] = str(i + 1)
        return "\n".join("".join(r) for r in rows)

    def cells(self, char: str) -> list[tuple[int, int]]:
        """All ``(x, y)`` cells whose terrain is ``char``, in row-major order."""
        return [(x, y) for y, row in enumerate(self.terrain) for x, c in enumerate(row) if c == char]

    def recipe(self, onions: int, tomatoes: int) -> tuple[int, int, bool]:
        """``(delivery value, cook time, is_order)`` of the soup with these ingredient counts.

        Follows docs/overcooked-rules.md §5.3 and ZSC-Eval's delivery rule (§5.2, item 6):
        a soup that is not an order pays ``non_order_value`` and cooks ``default_cook_time``.
        """
        for r in self.orders:
            if r.onions == onions and r.tomatoes == tomatoes:
                return r.value, r.time, True
        return self.non_order_value, self.default_cook_time, False


class _Reader:
    """Keeps the file name for ``file:line:col`` error messages."""

    def __init__(self, source: str):
        self.source = source

    def error(self, line: int, col: int, message: str) -> ValueError:
        return ValueError(f"{self.source}:{line}:{col}: {message}")


_INT_KEYS = ("horizon", "cook_time", "delivery_reward", "default_cook_time", "non_order_value")
_KNOWN_KEYS = ("name", "title", "aliases", "dynamics", "order", "grid", *_INT_KEYS)


def parse_layout(text: str, source: str = "<string>") -> Layout:
    """Parse and validate the text of a ``.layout`` file.

    Args:
        text: the file contents (format in the module docstring).
        source: file name used in error messages.

    Returns:
        The validated :class:`Layout`.

    Raises:
        ValueError: ``"<source>:<line>:<col>: <what is wrong>"`` for any malformed input: unknown
            key, bad number, non-rectangular grid, unknown character, open border, duplicate or
            missing player digits, missing pot/serving window/dish dispenser/ingredient dispenser.
            Lines and columns are 1-based.
    """
    rd = _Reader(source)
    meta: dict[str, tuple[str, int]] = {}
    orders: list[tuple[str, int]] = []
    grid: list[tuple[str, int]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        raw, lineno = lines[i], i + 1
        i += 1
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if ":" not in stripped:
            raise rd.error(lineno, 1, f"expected 'key: value', got {stripped!r}")
        key, _, value = stripped.partition(":")
        key = key.strip()
        value = value.split("#", 1)[0].strip()
        if key not in _KNOWN_KEYS:
            close = difflib.get_close_matches(key, _KNOWN_KEYS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise rd.error(lineno, 1, f"unknown key {key!r}{hint}; valid keys: {', '.join(_KNOWN_KEYS)}")
        if key == "grid":
            grid = [(line.rstrip("\r"), i + 1 + k) for k, line in enumerate(lines[i:])]
            while grid and not grid[-1][0].strip():
                grid.pop()
            break
        if key == "order":
            orders.append((value, lineno))
        else:
            if key in meta:
                raise rd.error(lineno, 1, f"duplicate key {key!r}")
            meta[key] = (value, lineno)

    if "name" not in meta or not meta["name"][0]:
        raise rd.error(1, 1, "missing 'name:'")
    if not grid:
        raise rd.error(len(lines), 1, "missing 'grid:' section (it must be the last key)")

    ints: dict[str, int] = {}
    for key in _INT_KEYS:
        if key in meta:
            value, lineno = meta[key]
            try:
                ints[key] = int(value)
            except ValueError:
                raise rd.error(lineno, 1, f"{key} must be an integer, got {value!r}") from None
    dynamics = meta.get("dynamics", ("classic", 0))
    if dynamics[0] not in DYNAMICS:
        raise rd.error(dynamics[1], 1, f"dynamics must be one of {', '.join(DYNAMICS)}, got {dynamics[0]!r}")
    if ints.get("horizon", 400) <= 0:
        raise rd.error(meta["horizon"][1], 1, "horizon must be positive")

    terrain, starts = _parse_grid(grid, rd)
    if dynamics[0] == "classic":
        for row, lineno in grid:
            if "T" in row:
                raise rd.error(lineno, row.index("T") + 1, "tomato dispensers need 'dynamics: multi_recipe'")
    recipes = _parse_orders(orders, ints, rd)
    if dynamics[0] == "classic" and any(
        r.onions + r.tomatoes != MAX_INGREDIENTS or r.tomatoes for r in recipes
    ):
        raise rd.error(orders[0][1] if orders else 1, 1, "classic dynamics only allow the 3-onion order")
    aliases = tuple(a.strip() for a in meta.get("aliases", ("", 0))[0].split(",") if a.strip())
    return Layout(
        name=meta["name"][0],
        title=meta.get("title", (meta["name"][0], 0))[0],
        aliases=aliases,
        dynamics=dynamics[0],
        horizon=ints.get("horizon", 400),
        terrain=terrain,
        start_positions=starts,
        orders=recipes,
        default_cook_time=ints.get("default_cook_time", DEFAULT_TIME),
        non_order_value=ints.get(
            "non_order_value", ZSC_NON_ORDER_VALUE if dynamics[0] == "multi_recipe" else 0
        ),
        source=None if source == "<string>" else source,
    )


def _parse_orders(orders: list[tuple[str, int]], ints: dict[str, int], rd: _Reader) -> tuple[Recipe, ...]:
    if not orders:
        orders = [("onion onion onion", 0)]
    recipes: dict[tuple[int, int], Recipe] = {}
    for text, lineno in orders:
        words = text.split()
        names = [w for w in words if "=" not in w]
        opts = dict(w.split("=", 1) for w in words if "=" in w)
        bad = [n for n in names if n not in INGREDIENTS] + [k for k in opts if k not in ("value", "time")]
        if bad or not 1 <= len(names) <= MAX_INGREDIENTS:
            raise rd.error(
                lineno, 1, f"order must list 1-3 of {INGREDIENTS} then optional value=N time=N, got {text!r}"
            )
        try:
            value = int(opts.get("value", DEFAULT_VALUE))
            time = int(opts.get("time", DEFAULT_TIME))
        except ValueError:
            raise rd.error(lineno, 1, f"order value/time must be integers: {text!r}") from None
        # Section 5.3: the layout's delivery_reward / cook_time, if given, win over per-recipe values.
        value = ints.get("delivery_reward", value)
        time = ints.get("cook_time", time)
        if time <= 0:
            raise rd.error(lineno, 1, "order time must be positive")
        key = (names.count("onion"), names.count("tomato"))
        if key in recipes:
            raise rd.error(lineno, 1, f"duplicate order {text!r}")
        recipes[key] = Recipe(key[0], key[1], value, time)
    return tuple(sorted(recipes.values(), key=lambda r: r.code))


def _parse_grid(
    grid: list[tuple[str, int]], rd: _Reader
) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...]]:
    width = len(grid[0][0])
    players: dict[int, tuple[int, int]] = {}
    rows: list[str] = []
    counts = dict.fromkeys(TERRAIN_CHARS, 0)
    for y, (row, lineno) in enumerate(grid):
        if len(row) != width:
            raise rd.error(
                lineno,
                min(len(row), width) + 1,
                f"grid is not rectangular: row has {len(row)} columns, expected {width}",
            )
        out = []
        for x, c in enumerate(row):
            if c in PLAYER_CHARS:
                k = int(c) - 1
                if k in players:
                    raise rd.error(lineno, x + 1, f"player digit {c!r} appears twice")
                players[k] = (x, y)
                c = " "
            elif c not in TERRAIN_CHARS:
                raise rd.error(
                    lineno, x + 1, f"unknown grid character {c!r}; valid: 'XOTPDS', space, digits 1-9"
                )
            border = y == 0 or y == len(grid) - 1 or x == 0 or x == width - 1
            if border and c == " ":
                raise rd.error(lineno, x + 1, "open border: border cells must be one of X O T P D S")
            counts[c] += 1
            out.append(c)
        rows.append("".join(out))
    first_line = grid[0][1]
    if not players:
        raise rd.error(first_line, 1, "no player start cell: digit '1' must appear exactly once")
    missing = [k + 1 for k in range(max(players) + 1) if k not in players]
    if missing:
        raise rd.error(first_line, 1, f"player digits must be 1..n without gaps; missing {missing}")
    for chars, what in (("P", "pot 'P'"), ("S", "serving window 'S'"), ("D", "dish dispenser 'D'")):
        if not counts[chars]:
            raise rd.error(first_line, 1, f"layout needs at least one {what}")
    if not counts["O"] and not counts["T"]:
        raise rd.error(first_line, 1, "layout needs at least one onion 'O' or tomato 'T' dispenser")
    return tuple(rows), tuple(players[k] for k in range(len(players)))


# ----------------------------------------------------------------------------------------------
# Registry of the shipped layouts (the `layouts/` data directory, installed as zsceval.layouts).


def _layout_dir() -> Path:
    return Path(str(resources.files("zsceval.layouts")))


@cache
def _shipped() -> dict[str, Layout]:
    layouts: dict[str, Layout] = {}
    for path in sorted(_layout_dir().glob("*.layout")):
        layout = parse_layout(path.read_text(), source=str(path))
        layouts[layout.name] = layout
    return layouts


@cache
def _names() -> dict[str, str]:
    names: dict[str, str] = {}
    for layout in _shipped().values():
        for n in (layout.name, *layout.aliases):
            if n in names:
                raise ValueError(f"layout name {n!r} is used by both {names[n]!r} and {layout.name!r}")
            names[n] = layout.name
    return names


def list_layouts() -> list[Layout]:
    """All shipped layouts, sorted by name."""
    return [_shipped()[n] for n in sorted(_shipped())]


def resolve_layout_name(name: str) -> str:
    """Canonical name of a layout given its name or alias.

    Raises:
        ValueError: unknown name; the message lists every valid name and alias.
    """
    names = _names()
    if name in names:
        return names[name]
    close = difflib.get_close_matches(name, list(names), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    valid = ", ".join(
        f"{lay.name} ({', '.join(lay.aliases)})" if lay.aliases else lay.name for lay in list_layouts()
    )
    raise ValueError(f"unknown layout {name!r}.{hint} Valid layouts (aliases): {valid}")


def load_layout(name_or_path: str | Path | Layout) -> Layout:
    """Load a layout by name, alias, or path to a ``.layout`` file.

    Raises:
        ValueError: unknown name (lists the valid ones) or malformed file (``file:line:col``).
    """
    if isinstance(name_or_path, Layout):
        return name_or_path
    text = str(name_or_path)
    if text.endswith(".layout") or re.search(r"[/\\]", text):
        path = Path(text)
        if not path.exists():
            raise ValueError(f"layout file {path} does not exist")
        if not path.is_file():
            raise ValueError(f"layout {path} is not a file (give a .layout file or a layout name)")
        if path.suffix != ".layout":
            raise ValueError(
                f"{path} is not a .layout file: only files named *.layout are read as layouts (format: "
                "layouts/README.md); otherwise give a layout name (`zsceval layouts` lists them)"
            )
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{path}: not a UTF-8 text layout file ({exc.reason} at byte {exc.start})"
            ) from None
        except OSError as exc:
            raise ValueError(f"cannot read layout file {path}: {exc.strerror or exc}") from None
        return parse_layout(text, source=str(path))
    return _shipped()[resolve_layout_name(text)]
