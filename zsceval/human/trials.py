"""The 2019 human-human Overcooked trials of Carroll et al. as replayable trials of our layouts.

Carroll et al. (2019, "On the Utility of Learning about Humans for Human-AI Coordination") had
pairs of Mechanical Turk workers play the five original layouts; the cleaned recordings ship in
the PyPI sdist ``overcooked-ai==1.1.0`` as ``overcooked_ai_py/data/human_data/
clean_{train,test}_trials.pickle`` (pandas DataFrames, one row per game tick). Install them with
``pip install --no-deps overcooked-ai==1.1.0``; this module never imports ``overcooked_ai_py`` (its
dependencies are not installed), it only locates the package folder and reads the pickles.

A *trial* is one game of one pair: the rows sharing ``(workerid_num, run, round_num)`` (each such
group holds one layout; ids do not repeat across the train and test splits; human_aware_rl's
``(workerid_num, layout_name)`` gives the same 39 train and 37 test groups), ordered by
``cur_gameloop`` (0, 1, 2, ... without gaps in both splits). Row t holds ``state`` (before the
tick), ``joint_action`` and ``next_state`` (after it); ``next_state`` of row t is ``state`` of row
t+1 in every trial (:func:`chain_breaks` counts the exceptions: there are none).

Conversion of the legacy 2019 state dict (players with position/orientation/optional
held_object, ``objects`` keyed ``"x,y"``, a soup as ``state: [ingredient, count, elapsed]``,
``order_list``, ``pot_explosion``) to the state dict of ``OvercookedEnv.import_state``:

* positions and orientations become tuples, ``objects`` a list (in the dict's order);
* a soup becomes overcooked-ai's soup dict with ``count`` onions and ``cooking_tick``
  ``-1`` if ``elapsed == 0`` (idle, fewer than three onions) else ``min(elapsed, COOK_TIME)``:
  the 2019 game starts cooking when the third onion goes in (``elapsed`` is 1 in that tick's
  ``next_state``, as our classic dynamics give ``cooking_tick`` 1), the soup is ready from
  ``elapsed == 20`` (every recorded soup pickup has ``elapsed >= 20``), and the 2019 counter keeps
  running after that (up to 239) while ours stops at the cook time;
* ``all_orders`` is the layout's one order (three onions), ``bonus_orders`` is empty,
  ``timestep`` is the row's index in the trial (``order_list`` is always ``['onion']`` and
  ``pot_explosion`` always False in the data).

Rewards are the recorded ``reward_norm`` column: 20 per delivered soup, as our classic layouts
pay (one test tick has two deliveries, 40). The ``reward`` column is the 2019 game's own score, 5
per soup; ``reward_norm`` is exactly 4 times it in every row, and it is the column
human_aware_rl's loader reads.
Actions are overcooked-ai actions (``"INTERACT"`` spelled in capitals in the data) mapped with
:func:`zsceval.interop.trajectory.action_from_overcooked_ai`.
"""

from __future__ import annotations

import ast
import importlib.util
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from zsceval.envs.overcooked import load_layout
from zsceval.interop.trajectory import action_from_overcooked_ai

__all__ = [
    "COOK_TIME",
    "DATA_ENV_VAR",
    "HUMAN_LAYOUTS",
    "INSTALL_HINT",
    "REWARD_COLUMN",
    "SPLITS",
    "HumanDataMissing",
    "Trial",
    "chain_breaks",
    "check_layout",
    "convert_state",
    "find_data_dir",
    "load_trials",
    "read_split",
]

HUMAN_LAYOUTS: dict[str, str] = {
    "cramped_room": "cramped_room",
    "asymmetric_advantages": "asymmetric_advantages",
    "coordination_ring": "coordination_ring",
    "random0": "forced_coordination",
    "random3": "counter_circuit",
}
"""The trials' layout name -> our layout name (ZSC-Eval's aliases random0 and random3)."""

SPLITS = ("train", "test")
DATA_ENV_VAR = "ZSCEVAL_HUMAN_DATA"
INSTALL_HINT = "pip install --no-deps overcooked-ai==1.1.0"
COOK_TIME = 20
"""Cook time of the 2019 game's onion soup, in ticks (equal to our classic layouts')."""
REWARD_COLUMN = "reward_norm"
"""The recorded reward column we read: 20 per delivered soup (``reward`` is 5 per soup)."""
TRIAL_KEY = ("workerid_num", "run", "round_num")
"""Columns whose values identify one trial (one game of one pair)."""

_ONION_SOUP = ("onion", "onion", "onion")


class HumanDataMissing(FileNotFoundError):
    """The trial pickles are not found (the message names the install command)."""


@dataclass(frozen=True)
class Trial:
    """One recorded human-human game.

    Attributes:
        layout: our layout name (``HUMAN_LAYOUTS[source_layout]``).
        source_layout: the trials' layout name (``random0``, ``random3``, ...).
        split: ``"train"`` or ``"test"``.
        trial_id: ``f"{workerid_num}-{run}-{round_num}"``, e.g. ``"2-run-1-3"``; unique over both
            splits.
        states: T+1 state dicts importable by ``OvercookedEnv.import_state``; ``states[t]["timestep"]
            == t``; ``states[t + 1]`` is the recorded state after ``actions[t]``. Read-only: equal
            states share their nested players and objects.
        actions: ``int64 [T, 2]``, our action indices (0 N, 1 S, 2 E, 3 W, 4 STAY, 5 INTERACT) in
            seat (player) order.
        rewards: ``float32 [T]``, the recorded team sparse reward of each transition (column
            ``reward_norm``: 20 per delivered soup, our layouts' value).
    """

    layout: str
    source_layout: str
    split: str
    trial_id: str
    states: list[dict]
    actions: torch.Tensor
    rewards: torch.Tensor

    def __len__(self) -> int:
        """T, the number of transitions."""
        return len(self.actions)


# ---------------------------------------------------------------------------- files
def find_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """The folder holding ``clean_{train,test}_trials.pickle``.

    Looked up in order: ``data_dir``; the ``ZSCEVAL_HUMAN_DATA`` environment variable; the
    installed ``overcooked_ai_py`` package's ``data/human_data`` (found with
    ``importlib.util.find_spec``, not imported). A given folder may also be an ``overcooked_ai_py``
    package folder (``data/human_data`` under it is used).

    Raises:
        HumanDataMissing: none of these holds the pickles; the message names the install command.
    """
    given = data_dir if data_dir is not None else os.environ.get(DATA_ENV_VAR) or None
    if given is not None:
        root = Path(given).expanduser()
        for cand in (root, root / "data" / "human_data"):
            if all((cand / f"clean_{s}_trials.pickle").is_file() for s in SPLITS):
                return cand
        source = "data_dir" if data_dir is not None else DATA_ENV_VAR
        raise HumanDataMissing(
            f"{source}={str(root)!r} holds no clean_train_trials.pickle/clean_test_trials.pickle; "
            f"point it at overcooked_ai_py/data/human_data, or install the data: {INSTALL_HINT}"
        )
    spec = importlib.util.find_spec("overcooked_ai_py")
    for loc in (spec.submodule_search_locations or []) if spec else []:
        cand = Path(loc) / "data" / "human_data"
        if all((cand / f"clean_{s}_trials.pickle").is_file() for s in SPLITS):
            return cand
    raise HumanDataMissing(
        "the 2019 human-human trials are not installed; install them with "
        f"`{INSTALL_HINT}` (or set {DATA_ENV_VAR} to a folder holding clean_train_trials.pickle)"
    )


def read_split(split: str = "train", data_dir: str | os.PathLike | None = None):
    """The raw DataFrame of one split (one row per tick, the columns of the pickle).

    Raises:
        ValueError: unknown split.
        HumanDataMissing: see :func:`find_data_dir`.
    """
    import pandas as pd

    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; valid: {', '.join(SPLITS)}")
    return pd.read_pickle(find_data_dir(data_dir) / f"clean_{split}_trials.pickle")


# ---------------------------------------------------------------------------- layouts
def _source_name(layout: str) -> str:
    """Their layout name for ``layout`` given in either naming."""
    if layout in HUMAN_LAYOUTS:
        return layout
    for theirs, ours in HUMAN_LAYOUTS.items():
        if layout == ours:
            return theirs
    valid = sorted({*HUMAN_LAYOUTS, *HUMAN_LAYOUTS.values()})
    raise ValueError(f"no human trials for layout {layout!r}; valid: {', '.join(valid)}")


def check_layout(source_layout: str, grid_rows: list[str]) -> str:
    """Our layout name for a trial's layout, after checking that the grids' terrain agrees.

    Args:
        source_layout: the trials' ``layout_name`` (e.g. ``"random3"``).
        grid_rows: the trial's grid, one string per row (the parsed ``layout`` column); the
            player digits ``1``, ``2`` count as floor.

    Returns:
        ``HUMAN_LAYOUTS[source_layout]``.

    Raises:
        ValueError: unknown ``source_layout`` (the message lists the valid names), or a grid whose
            size or terrain differs from our layout's (the message lists the differing cells).
    """
    if source_layout not in HUMAN_LAYOUTS:
        raise ValueError(
            f"unknown human-trial layout {source_layout!r}; valid: {', '.join(sorted(HUMAN_LAYOUTS))}"
        )
    ours = HUMAN_LAYOUTS[source_layout]
    terrain = load_layout(ours).terrain
    theirs = [row.replace("1", " ").replace("2", " ") for row in grid_rows]
    if len(theirs) != len(terrain) or any(len(a) != len(b) for a, b in zip(theirs, terrain, strict=False)):
        raise ValueError(
            f"trial layout {source_layout!r} has a {len(theirs)}-row grid {theirs} that differs in size "
            f"from our {ours!r} ({len(terrain)} rows {list(terrain)})"
        )
    diff = [
        f"(x={x}, y={y}): {a!r} vs ours {b!r}"
        for y, (ra, rb) in enumerate(zip(theirs, terrain, strict=True))
        for x, (a, b) in enumerate(zip(ra, rb, strict=True))
        if a != b
    ]
    if diff:
        raise ValueError(
            f"trial layout {source_layout!r} differs from our {ours!r} in {len(diff)} cell(s): "
            + "; ".join(diff[:10])
        )
    return ours


# ---------------------------------------------------------------------------- states
def _soup(count: int, elapsed: int, pos: tuple[int, int]) -> dict:
    """overcooked-ai's soup dict (as ``OvercookedEnv.export_state`` writes it) of a 2019 onion soup."""
    tick = -1 if elapsed == 0 else min(int(elapsed), COOK_TIME)
    idle, ready = tick < 0, tick >= COOK_TIME
    return {
        "name": "soup",
        "position": pos,
        "_ingredients": [{"name": "onion", "position": pos} for _ in range(int(count))],
        "cooking_tick": tick,
        "is_cooking": not idle and not ready,
        "is_ready": ready,
        "is_idle": idle,
        "cook_time": -1 if idle else COOK_TIME,
        "_cooking_tick": tick,
    }


def _object(d: dict, pos: tuple[int, int]) -> dict:
    if d["name"] == "soup":
        ingredient, count, elapsed = d["state"]
        if ingredient != "onion":
            raise ValueError(f"a 2019 soup of {ingredient!r}; the five layouts have onions only")
        return _soup(count, elapsed, pos)
    if d["name"] not in ("onion", "dish"):
        raise ValueError(f"unknown 2019 object {d!r}")
    return {"name": d["name"], "position": pos}


def convert_state(legacy: dict | str, timestep: int = 0) -> dict:
    """A legacy 2019 state dict (or its string repr) as an ``import_state`` dict.

    Args:
        legacy: ``{"players": [{"position", "orientation", "held_object"?}], "objects":
            {"x,y": {...}}, "order_list", "pot_explosion"}`` or its ``repr`` (parsed with
            ``ast.literal_eval``).
        timestep: the ``timestep`` of the result.

    Returns:
        ``{"players", "objects" (list), "bonus_orders": [], "all_orders": [three onions],
        "timestep"}``; objects in the legacy dict's order. See the module docstring for soups.

    Raises:
        ValueError: an object the 2019 onion layouts cannot hold, or a malformed string.
    """
    if isinstance(legacy, str):
        legacy = ast.literal_eval(legacy)
    players = []
    for p in legacy["players"]:
        pos = tuple(p["position"])
        held = p.get("held_object")
        players.append(
            {
                "position": pos,
                "orientation": tuple(p["orientation"]),
                "held_object": None if held is None else _object(held, pos),
            }
        )
    objects = [_object(o, tuple(o["position"])) for o in legacy["objects"].values()]
    return {
        "players": players,
        "objects": objects,
        "bonus_orders": [],
        "all_orders": [{"ingredients": _ONION_SOUP}],
        "timestep": int(timestep),
    }


def parse_joint_action(text: str) -> list[int]:
    """Our action indices of a recorded joint action (e.g. ``"[[0, -1], 'INTERACT']"`` -> [0, 5])."""
    joint = ast.literal_eval(text)
    return [action_from_overcooked_ai(a.lower() if isinstance(a, str) else a) for a in joint]


# ---------------------------------------------------------------------------- trials
def _trial_id(key) -> str:
    worker, run, round_num = key
    return f"{int(worker)}-{run}-{int(round_num)}"


def _grouped(frame):
    """``(trial_id, rows sorted by cur_gameloop)`` per trial, in trial-id order."""
    for key, rows in frame.groupby(list(TRIAL_KEY), sort=True):
        if rows["layout_name"].nunique() != 1:
            raise ValueError(f"trial {_trial_id(key)} mixes layouts {sorted(rows['layout_name'].unique())}")
        yield _trial_id(key), rows.sort_values("cur_gameloop", kind="stable")


def chain_breaks(frame) -> int:
    """How many rows' ``next_state`` differs (as a string) from the next row's ``state`` in its trial."""
    return sum(
        int((rows["next_state"].to_numpy()[:-1] != rows["state"].to_numpy()[1:]).sum())
        for _, rows in _grouped(frame)
    )


def _build_trial(trial_id: str, rows, split: str, checked: dict, memo: dict[str, dict]) -> Trial:
    """One trial from its sorted rows; ``checked`` memoizes layout checks, ``memo`` converted
    state strings (a third of the ticks repeat an earlier state; ``ast.literal_eval`` dominates
    the load time)."""
    source = rows["layout_name"].iloc[0]
    grid = rows["layout"].iloc[0]
    if (source, grid) not in checked:
        checked[(source, grid)] = check_layout(source, list(ast.literal_eval(grid)))
    legacy = list(rows["state"]) + [rows["next_state"].iloc[-1]]
    for text in legacy:
        if text not in memo:
            memo[text] = convert_state(text)
    states = [{**memo[text], "timestep": t} for t, text in enumerate(legacy)]
    actions = torch.tensor([parse_joint_action(a) for a in rows["joint_action"]], dtype=torch.int64)
    rewards = torch.tensor(rows[REWARD_COLUMN].to_numpy(), dtype=torch.float32)
    return Trial(
        layout=checked[(source, grid)],
        source_layout=source,
        split=split,
        trial_id=trial_id,
        states=states,
        actions=actions.reshape(-1, 2),
        rewards=rewards,
    )


def load_trials(
    split: str = "train",
    layouts: Sequence[str] | None = None,
    data_dir: str | os.PathLike | None = None,
) -> list[Trial]:
    """The trials of one split, converted to our layouts, states and actions.

    Args:
        split: ``"train"`` or ``"test"``.
        layouts: keep these layouts only, in either naming (``"random3"`` or
            ``"counter_circuit"``); None keeps all five.
        data_dir: folder of the pickles (default: ``$ZSCEVAL_HUMAN_DATA``, else the installed
            ``overcooked_ai_py``; see :func:`find_data_dir`).

    Returns:
        Trials sorted by ``trial_id`` order of ``(workerid_num, run, round_num)``; states
        ``states[t + 1]`` are the recorded next states (see the module docstring).

    Raises:
        ValueError: unknown split or layout, or a trial grid that differs from our layout
            (:func:`check_layout`).
        HumanDataMissing: the data is not installed (the message names ``pip install
            --no-deps overcooked-ai==1.1.0``).
    """
    keep = None if layouts is None else {_source_name(name) for name in layouts}
    frame = read_split(split, data_dir)
    if keep is not None:
        frame = frame[frame["layout_name"].isin(keep)]
    checked: dict = {}
    memo: dict[str, dict] = {}
    return [_build_trial(tid, rows, split, checked, memo) for tid, rows in _grouped(frame)]
