"""Per-game Yōkai records (``games.parquet``) and what ``zsceval report`` prints for them.

A folder that holds ``games.parquet``, one row per self-play game of a trained agent's checkpoint or
of a scripted baseline (written by ``benchmarks/learning/yokai_games.py``; docs/yokai.md), gets the
YLE paper's metrics (Sec. 5, Table 1) per agent, setting and checkpoint: the success rate SR (%), the
colours clustered at the end NC, those clustered by play dNC (NC minus the deal's), the game score S
(Eq. 1's score of a won game, 0 otherwise) and the sparse return R (Eq. 3). Each interval resamples
the training seeds, then the games within each drawn seed
(:func:`zsceval.stats.metrics.runs_bootstrap_ci`): a checkpoint's games share its training run, so
the seed is the level that varies first. :class:`YokaiGamesSection` is the report section
(entry-point group ``zsceval.report_sections``, name ``yokai-games``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from zsceval.plugins import ReportOptions, ReportSection
from zsceval.stats.episode_metrics import yle_episode_values
from zsceval.stats.metrics import runs_bootstrap_ci

__all__ = [
    "GAMES_FILE",
    "GAME_METRICS",
    "YokaiGamesSection",
    "format_games_table",
    "games_table",
    "merge_games",
    "plot_games",
    "read_games",
]

GAMES_FILE = "games.parquet"
"""The per-game table's file name inside a results folder."""

REQUIRED_COLUMNS = ("agent", "setting", "seed", "won", "score", "nc", "dnc")
"""Columns every ``games.parquet`` has; ``env_steps`` (0 for a baseline) and ``ret`` are optional."""

GAME_METRICS = ("SR", "NC", "dNC", "S", "R")
"""The table's metrics, in order (module docstring); R only where the table has ``ret``."""

_DIGITS = {"SR": 1, "NC": 2, "dNC": 2, "S": 2, "R": 2}


def read_games(path: str | Path) -> pd.DataFrame:
    """Read and check a per-game table.

    Returns:
        the table with ``env_steps`` added (0) where it is missing.

    Raises:
        ValueError: a required column is missing (the file and the columns are named), or the table
            has no rows.
    """
    path = Path(path)
    games = pd.read_parquet(path)
    missing = [c for c in REQUIRED_COLUMNS if c not in games.columns]
    if missing:
        raise ValueError(
            f"{path}: missing column(s) {', '.join(missing)} (needs {', '.join(REQUIRED_COLUMNS)})"
        )
    if games.empty:
        raise ValueError(f"{path}: no games")
    if "env_steps" not in games.columns:
        games = games.assign(env_steps=0)
    return games


GAME_KEY = ("agent", "setting", "seed", "env_steps", "game")
"""The columns that name one game: the same key in two tables is the same game."""


def merge_games(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """Add ``new``'s games to ``old``'s (per-game tables of separate commands, e.g. one training
    seed each, into one table).

    A game in both tables (the same :data:`GAME_KEY`, e.g. the scripted baselines that every command
    plays on the same deals) must be recorded identically in both (a value missing, NaN, in both
    counts as the same); it is kept once.

    Returns:
        ``old``'s rows, then ``new``'s rows that ``old`` lacks, in ``old``'s columns.

    Raises:
        ValueError: the tables' columns differ, or a game is recorded differently in the two (the
            first such game's key is named).
    """
    if set(old.columns) != set(new.columns):
        raise ValueError(f"the tables' columns differ: {sorted(old.columns)} vs {sorted(new.columns)}")
    key = list(GAME_KEY)
    new = new[old.columns]
    both = old.merge(new, on=key, how="inner", suffixes=("", "_new"))
    for col in (c for c in old.columns if c not in key):
        a, b = both[col], both[f"{col}_new"]
        differ = (a != b).to_numpy() & ~(a.isna() & b.isna()).to_numpy()
        if differ.any():
            first = both.loc[differ, key].iloc[0].to_dict()
            raise ValueError(f"game {first} is recorded with a different {col!r} in the two tables")
    seen = pd.MultiIndex.from_frame(old[key])
    added = new[~pd.MultiIndex.from_frame(new[key]).isin(seen)]
    return pd.concat([old, added], ignore_index=True)


def _metric_values(games: pd.DataFrame) -> dict[str, np.ndarray]:
    values = yle_episode_values(
        games["won"].to_numpy(), games["nc"].to_numpy(), games["score"].to_numpy(),
        returns=games["ret"].to_numpy() if "ret" in games.columns else None,
    )  # fmt: skip
    return values | {"dNC": games["dnc"].to_numpy(dtype=np.float64)}


def games_table(
    games: pd.DataFrame, *, reps: int = 2000, level: float = 0.95, rng: np.random.Generator
) -> pd.DataFrame:
    """One row per (agent, setting, env_steps): ``seeds``, ``games`` and, per metric M of
    :data:`GAME_METRICS`, ``M`` (the mean over all games), ``M_low`` and ``M_high`` (the percentile
    interval that resamples seeds, then games within each drawn seed).

    Args:
        games: a table as :func:`read_games` returns it.
        reps: bootstrap replicates; level: the interval's coverage, in (0, 1).
        rng: source of randomness (the same state gives the same table).

    Raises:
        ValueError: bad ``reps`` or ``level``.
    """
    rows = []
    for (agent, setting, steps), group in games.groupby(["agent", "setting", "env_steps"], sort=True):
        by_seed = [g for _, g in group.groupby("seed", sort=True)]
        row: dict[str, Any] = {
            "agent": agent, "setting": setting, "env_steps": int(steps),
            "seeds": len(by_seed), "games": len(group),
        }  # fmt: skip
        per_seed = [_metric_values(g) for g in by_seed]
        for metric in GAME_METRICS:
            if metric not in per_seed[0]:
                continue
            runs = [v[metric][:, None] for v in per_seed]
            ci = runs_bootstrap_ci(runs, np.mean, reps=reps, level=level, rng=rng)
            row |= {metric: ci.estimate, f"{metric}_low": ci.low, f"{metric}_high": ci.high}
        rows.append(row)
    return pd.DataFrame(rows)


def format_games_table(table: pd.DataFrame, level: float = 0.95) -> str:
    """The table as text: one line per agent, setting and checkpoint, ``mean [low, high]``."""
    metrics = [m for m in GAME_METRICS if m in table.columns]
    head = [
        "agent",
        "setting",
        "env steps",
        "seeds",
        "games",
        *(("SR (%)" if m == "SR" else m) for m in metrics),
    ]
    cells = []
    for r in table.to_dict("records"):
        cells.append(
            [str(r["agent"]), str(r["setting"]), f"{r['env_steps']:,}", str(r["seeds"]), str(r["games"])]
            + [
                f"{r[m]:.{_DIGITS[m]}f} [{r[m + '_low']:.{_DIGITS[m]}f}, {r[m + '_high']:.{_DIGITS[m]}f}]"
                for m in metrics
            ]
        )
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
    lines = [
        f"Yōkai games ({GAMES_FILE}): mean [{level:.0%} CI] per agent, setting and checkpoint; the intervals "
        "resample training seeds, then games (YLE Sec. 5: SR, NC; dNC = NC - the deal's NC; S = Eq. 1's "
        "score of a won game, else 0; R = Eq. 3's sparse return)",
        "  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip(),
    ]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return "\n".join(lines)


def plot_games(table: pd.DataFrame, path: str | Path) -> Path:
    """SR, NC, dNC and S against env steps, one line with its interval band per trained agent and
    setting, the baselines (``env_steps`` 0 only) as horizontal lines; saved as a PNG.

    Args:
        table: one row per (agent, setting, env_steps), as :func:`games_table` returns it (``M``,
            ``M_low`` and ``M_high`` for M in SR (%), NC, dNC and S).
        path: the PNG to write (120 dpi); missing parent folders are made.

    Returns:
        ``path``.

    Raises:
        OSError: the file cannot be written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.6))
    trained = table.groupby(["agent", "setting"]).filter(lambda g: (g["env_steps"] > 0).any())
    baselines = table.groupby(["agent", "setting"]).filter(lambda g: (g["env_steps"] == 0).all())
    for ax, metric in zip(axes, ("SR", "NC", "dNC", "S"), strict=True):
        for (agent, setting), g in trained.groupby(["agent", "setting"]):
            g = g.sort_values("env_steps")
            (line,) = ax.plot(g["env_steps"], g[metric], marker="o", label=f"{agent} {setting}")
            ax.fill_between(
                g["env_steps"], g[f"{metric}_low"], g[f"{metric}_high"], color=line.get_color(), alpha=0.2
            )
        for (agent, value), g in baselines.groupby(["agent", metric]):  # one line for equal settings
            ax.axhline(value, ls="--", lw=1, color="grey")
            ax.text(0.99, value, f"{agent} {', '.join(g['setting'])}", transform=ax.get_yaxis_transform(),
                    ha="right", va="bottom", fontsize=7, color="grey")  # fmt: skip
        ax.set_xlabel("env steps")
        ax.set_title("SR (%)" if metric == "SR" else metric)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


class YokaiGamesSection(ReportSection):
    """A folder with a per-game Yōkai table (``games.parquet``, from
    ``benchmarks/learning/yokai_games.py``) gets SR (%), NC, dNC, S and R per agent, setting and
    checkpoint with intervals that resample training seeds, then games (--seed, --reps, --level);
    figures/yokai_games.png holds the curves. Example: zsceval report docs/data/yokai-8ca93af."""

    def gather(self, directory: Path, options: ReportOptions) -> dict[str, Any] | None:
        """The :func:`games_table` of ``directory/games.parquet``; None without one.

        Raises:
            ValueError: a malformed table (the file is named).
        """
        path = Path(directory) / GAMES_FILE
        if not path.is_file():
            return None
        rng = np.random.default_rng(options.seed)
        table = games_table(read_games(path), reps=options.reps, level=options.level, rng=rng)
        return {"table": table, "level": options.level}

    def to_json(self, data: dict[str, Any]) -> dict[str, Any]:
        """``{"yokai_games": [one record per row]}``."""
        return {"yokai_games": data["table"].to_dict(orient="records")}

    def to_text(self, data: dict[str, Any], options: ReportOptions) -> str:
        """:func:`format_games_table`."""
        return format_games_table(data["table"], data["level"])

    def figures(self, data: dict[str, Any], folder: Path) -> list[Path]:
        """``folder/yokai_games.png`` (:func:`plot_games`)."""
        return [plot_games(data["table"], Path(folder) / "yokai_games.png")]
