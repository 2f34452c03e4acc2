"""Behavior-preferring reward space: the event-weight grids that generate evaluation partner candidates.

ZSC-Eval (Sec. 4.1, Alg. 1 line 2, App. C Table 7) trains each candidate partner ``pi_w`` on a
behavior-preferring reward ``r_w(s, a) = w_sparse * r(s, a) + sum_j w_j * phi_j(s, a)``. The weight
vector ``w`` is drawn from a per-layout grid: one set of values per event (docs/overcooked-rules.md
§3.1 and §5.5), then the weight of the team sparse reward. Grids are data, stored in
``zsceval/generation/grids/*.yaml``; this module loads them, enumerates every weight vector in
``itertools.product`` order, keeps those with at most ``C_MAX = 3`` non-zero weights among the positions
that vary (the paper's ``sum_i 1(w_i != 0) <= C_max``), and picks or samples candidates.

Weight vectors are ``float32[E + 1]`` arrays: ``E`` event weights in the event order of the grid file,
then ``sparse_reward``. ``RewardSpace.event_names`` names every position (``sparse_reward`` last).

Example:
    >>> space = load_reward_space("random3")   # alias of counter_circuit
    >>> space.candidates().shape
    (52, 18)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import yaml

GRID_DIR = Path(__file__).with_name("grids")
"""Folder of the grid files shipped with the package (one YAML file per event set)."""

GRID_FILES: tuple[str, ...] = ("classic.yaml", "multi_recipe.yaml", "football.yaml")
"""Grid files loaded by :func:`load_reward_space`, in lookup order."""

C_MAX = 3
"""Maximum number of non-zero weights among the varying positions (ZSC-Eval Sec. 4.1, App. C)."""

B_MAX = 20.0
"""Bound on every |w_j| (ZSC-Eval Sec. 4.1, App. C); checked when a grid is loaded."""

SPARSE_REWARD = "sparse_reward"
"""Name of the last position of every weight vector: the weight on the team sparse reward."""

GRID_FORMAT_VERSION = 1


class GridFileError(ValueError):
    """A grid file is missing, is not valid YAML, or does not follow the grid schema."""


@dataclass(frozen=True)
class RewardSpace:
    """The behavior-preferring weight grid of one layout.

    Attributes:
        layout: canonical layout name (ZSC-Eval / overcooked-ai name, e.g. ``"counter_circuit"``).
        paper_name: the layout's name in the ZSC-Eval paper (e.g. ``"Counter Circuit"``).
        aliases: other names of the layout (ZSC-Eval reference names, e.g. ``("random3",)``).
        event_set: ``"classic"`` (17 events), ``"multi_recipe"`` (29 events) or ``"football"`` (8).
        event_names: name of every position of a weight vector, length ``E + 1``, ``sparse_reward`` last
            (Football: its ``E`` = 8 events, no ``sparse_reward`` position; the ``score`` event plays
            that role).
        values: per position, the set of values it takes, in the grid file's order (length ``E + 1``).
        source: path of the grid file this space was read from.
    """

    layout: str
    paper_name: str
    aliases: tuple[str, ...]
    event_set: str
    event_names: tuple[str, ...]
    values: tuple[tuple[float, ...], ...]
    source: str

    @property
    def num_weights(self) -> int:
        """Length of a weight vector, ``E + 1``."""
        return len(self.event_names)

    @property
    def varying_positions(self) -> tuple[int, ...]:
        """Indices of the positions that take more than one value (those counted by ``C_MAX``)."""
        return tuple(i for i, vals in enumerate(self.values) if len(vals) > 1)

    @property
    def grid_size(self) -> int:
        """Number of weight vectors in the full grid, before the ``C_MAX`` filter."""
        return math.prod(len(vals) for vals in self.values)

    def vectors(self) -> np.ndarray:
        """Every weight vector of the grid, unfiltered.

        Returns:
            float32[grid_size, E + 1], rows in ``itertools.product`` order over ``values``.
        """
        return enumerate_weights(self.values)

    def candidates(self, c_max: int = C_MAX) -> np.ndarray:
        """Weight vectors that pass the ``C_MAX`` constraint, in ``itertools.product`` order.

        Args:
            c_max: most non-zero weights allowed among :attr:`varying_positions`.

        Returns:
            float32[num_candidates, E + 1].
        """
        return filter_by_c_max(self.vectors(), self.varying_positions, c_max)

    def as_dict(self, vector: np.ndarray) -> dict[str, float]:
        """Name the entries of one weight vector.

        Args:
            vector: float[E + 1], a weight vector of this space.

        Returns:
            ``{event_name: weight}`` in position order.

        Raises:
            ValueError: if ``vector`` is not 1-D of length ``E + 1``.
        """
        vector = np.asarray(vector)
        if vector.shape != (self.num_weights,):
            raise ValueError(f"expected a weight vector of shape ({self.num_weights},), got {vector.shape}")
        return {name: float(w) for name, w in zip(self.event_names, vector)}

    def weight_string(self, vector: np.ndarray) -> str:
        """Format one weight vector as the reference's comma-separated ``--w0`` string."""
        return ",".join(f"{w:g}" for w in self.as_dict(vector).values())


def enumerate_weights(values: tuple[tuple[float, ...], ...]) -> np.ndarray:
    """Enumerate a grid in ``itertools.product`` order (ZSC-Eval ``train_bias_agent.py``).

    Args:
        values: per position, the values it takes.

    Returns:
        float32[prod(len(v) for v in values), len(values)].
    """
    rows = list(itertools.product(*values))
    return np.asarray(rows, dtype=np.float32).reshape(len(rows), len(values))


def filter_by_c_max(
    vectors: np.ndarray, varying_positions: tuple[int, ...], c_max: int = C_MAX
) -> np.ndarray:
    """Keep the weight vectors with at most ``c_max`` non-zero weights among ``varying_positions``.

    Fixed positions (one value in the grid) never count; the sparse weight counts when it varies.
    Source: ZSC-Eval Sec. 4.1 (``C_max``) and the reference's candidate filter.

    Args:
        vectors: float[N, E + 1] weight vectors.
        varying_positions: indices of the positions that vary in the grid.
        c_max: most non-zero varying weights allowed (>= 0).

    Returns:
        float32[M, E + 1], the kept rows in their original order.

    Raises:
        ValueError: if ``vectors`` is not 2-D or ``c_max`` is negative.
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2:
        raise ValueError(f"vectors must be 2-D [N, E + 1], got shape {vectors.shape}")
    if c_max < 0:
        raise ValueError(f"c_max must be >= 0, got {c_max}")
    nonzero = np.count_nonzero(vectors[:, list(varying_positions)], axis=1)
    return vectors[nonzero <= c_max]


def pick_weights(candidates: np.ndarray, seed: int, offset: int = 0) -> np.ndarray:
    """The reference's deterministic pick: candidate number ``(seed + offset) % len(candidates)``.

    With more seeds than candidates, vectors repeat with different seeds (as in the reference).

    Args:
        candidates: float[N, E + 1], e.g. :meth:`RewardSpace.candidates`.
        seed: run seed.
        offset: the reference's ``w0_offset``.

    Returns:
        float32[E + 1].

    Raises:
        ValueError: if ``candidates`` is not 2-D or is empty.
    """
    candidates = np.asarray(candidates, dtype=np.float32)
    if candidates.ndim != 2 or len(candidates) == 0:
        raise ValueError(f"candidates must be a non-empty 2-D array, got shape {candidates.shape}")
    return candidates[(seed + offset) % len(candidates)].copy()


def sample_weights(space: RewardSpace, n: int, rng: np.random.Generator, *, c_max: int = C_MAX) -> np.ndarray:
    """Draw ``n`` candidate weight vectors at random.

    Without replacement while ``n <= num_candidates``. When ``n`` exceeds the number of candidates,
    the first ``num_candidates`` draws are a permutation of all candidates (each used once) and the
    remaining ``n - num_candidates`` are drawn uniformly *with* replacement.

    Args:
        space: the layout's reward space.
        n: number of vectors (>= 0).
        rng: source of randomness; same generator state -> same draws.
        c_max: the ``C_MAX`` constraint applied before sampling.

    Returns:
        float32[n, E + 1].

    Raises:
        ValueError: if ``n`` is negative or no candidate passes the constraint.
    """
    candidates = space.candidates(c_max)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if len(candidates) == 0:
        raise ValueError(f"no weight vector of {space.layout} passes c_max={c_max}")
    return draw_rows(candidates, n, rng)


def draw_rows(candidates: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` rows of ``candidates``: a random permutation of all of them first (each used once),
    then, past ``len(candidates)``, uniform draws with replacement (:func:`sample_weights`' rule).

    Args:
        candidates: ``float [M, E + 1]``, M >= 1.
        n: rows to draw (>= 0).
        rng: source of randomness.

    Returns:
        ``candidates[index]``, ``[n, E + 1]``.
    """
    m = len(candidates)
    index = rng.permutation(m)[: min(n, m)]
    if n > m:
        index = np.concatenate([index, rng.integers(0, m, size=n - m)])
    return candidates[index]


def load_reward_space(layout: str) -> RewardSpace:
    """Load the behavior-preferring weight grid of a layout.

    Args:
        layout: canonical name (``"counter_circuit"``) or alias (``"random3"``).

    Returns:
        The layout's :class:`RewardSpace`.

    Raises:
        ValueError: unknown layout; the message lists the valid names.
        GridFileError: a grid file is malformed; the message names the file.
    """
    table = _layout_table()
    if layout not in table:
        names = sorted({space.layout for space in table.values()})
        aliases = sorted(set(table) - set(names))
        raise ValueError(
            f"no reward grid for layout {layout!r}; valid names: {', '.join(names)}; "
            f"aliases: {', '.join(aliases)}"
        )
    return table[layout]


def layout_names() -> list[str]:
    """Canonical names of every layout that has a grid, sorted."""
    return sorted({space.layout for space in _layout_table().values()})


def canonical_layout_name(name: str) -> str:
    """Map a layout alias to its canonical name; unknown names are returned unchanged."""
    table = _layout_table()
    return table[name].layout if name in table else name


def read_grid_file(path: str | Path) -> list[RewardSpace]:
    """Parse one grid file into one :class:`RewardSpace` per layout it lists.

    Schema: ``format_version`` (1), ``event_set``, ``events`` (position names, ``sparse_reward`` last
    unless the optional top-level ``sparse_reward: false`` says the vectors have no such position),
    ``grids``: a list of ``{layouts: [{name, aliases, paper_name}], weights: {event: [values]}}`` where
    ``weights`` lists every name of ``events`` in the same order.

    Args:
        path: the YAML file.

    Returns:
        One space per layout entry, in file order.

    Raises:
        GridFileError: the file is unreadable, not YAML, or breaks the schema (the message names it).
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise GridFileError(f"cannot read reward grid file {path}: {exc}") from exc
    try:
        return list(_parse_grid_data(data, path))
    except (KeyError, TypeError, ValueError) as exc:
        raise GridFileError(f"malformed reward grid file {path}: {exc}") from exc


def _parse_grid_data(data: object, path: Path) -> Iterator[RewardSpace]:
    if not isinstance(data, dict):
        raise ValueError("top level must be a mapping")
    if data.get("format_version") != GRID_FORMAT_VERSION:
        raise ValueError(f"format_version must be {GRID_FORMAT_VERSION}, got {data.get('format_version')!r}")
    events = tuple(str(e) for e in data["events"])
    if not events:
        raise ValueError("`events` is empty")
    has_sparse = data.get("sparse_reward", True)
    if not isinstance(has_sparse, bool):
        raise ValueError(f"`sparse_reward` must be true or false, got {has_sparse!r}")
    if has_sparse and events[-1] != SPARSE_REWARD:
        raise ValueError(f"`events` must end with {SPARSE_REWARD!r} (or set `sparse_reward: false`)")
    for number, grid in enumerate(data["grids"]):
        weights = grid["weights"]
        if tuple(weights) != events:
            raise ValueError(f"grid #{number}: `weights` keys must be exactly `events` in order")
        values = tuple(tuple(float(v) for v in weights[e]) for e in events)
        for event, vals in zip(events, values):
            if not vals or len(set(vals)) != len(vals):
                raise ValueError(f"grid #{number}: {event} needs distinct values, got {list(vals)}")
            if max(abs(v) for v in vals) > B_MAX:
                raise ValueError(f"grid #{number}: {event} has |w| > B_max = {B_MAX:g}")
        for entry in grid["layouts"]:
            yield RewardSpace(
                layout=str(entry["name"]),
                paper_name=str(entry["paper_name"]),
                aliases=tuple(str(a) for a in entry.get("aliases", [])),
                event_set=str(data["event_set"]),
                event_names=events,
                values=values,
                source=str(path),
            )


@cache
def _layout_table() -> dict[str, RewardSpace]:
    """Name or alias -> space, over every shipped grid file (read once)."""
    table: dict[str, RewardSpace] = {}
    for file_name in GRID_FILES:
        for space in read_grid_file(GRID_DIR / file_name):
            for name in (space.layout, *space.aliases):
                if name in table:
                    raise GridFileError(f"layout name {name!r} appears twice (in {space.source})")
                table[name] = space
    return table
