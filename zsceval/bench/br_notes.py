"""Notes on a bench's BR reference returns: units whose BR-Prox says little about the ego.

BR-Prox divides an ego's return with a partner by R(BR, partner), the return of the partner's
approximate best response (ZSC-Eval Sec. 4.3). Two things make that denominator wrong, and the
report names the units each one touches:

* :func:`nonpositive_br_notes`: the BR never scores (return <= 0), so the unit follows the
  ``nonpositive_br`` rule (ZSC-Eval's: BR-Prox 1 for every ego);
* :func:`weak_br_notes`: for a ``mid`` partner the BR is trained from scratch against it (stage 4 of
  :mod:`zsceval.generation.pipeline`), while the candidate's own co-trained BR at the same checkpoint
  is a second agent whose return with the partner is also a lower bound on the best response's;
  where it is clearly larger, the fresh BR is not the best response and the unit's BR-Prox is too
  high (docs/results.md, "the set and SP's score" on Blocked Corridor, measures this).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from zsceval.evaluation.partner_set import (
    COTRAINED_BR_TABLE,
    WEAK_BR_MARGIN,
    WEAK_BR_RATIO,
    weak_br_units,
)

__all__ = ["folder_notes", "nonpositive_br_notes", "set_folder_notes", "weak_br_notes"]


def _partner_list(units: pd.DataFrame, limit: int = 6) -> str:
    """The units' partners, sorted and comma-separated, the first ``limit`` and "..." if more."""
    names = sorted(units["partner"].astype(str).unique())
    return ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")


def nonpositive_br_notes(br_returns: pd.DataFrame, *, nonpositive_br: str = "one") -> list[str]:
    """One line per layout whose BR reference return is <= 0 for some (partner, seat).

    BR-Prox divides by that return, so those units follow the ``nonpositive_br`` rule
    (:func:`zsceval.stats.metrics.br_prox`): with ZSC-Eval's ``"one"`` every ego scores 1 on them, which
    lifts every algorithm alike and hides differences; the line says how many there are and which.

    Args:
        br_returns: BR returns per episode (``layout, partner[, seat], br_return``; the schema of
            :mod:`zsceval.stats.metrics`); units are averaged over episodes as BR-Prox averages them.
        nonpositive_br: the rule the report applies (``"one"`` or ``"nan"``).

    Returns:
        The lines; none when every BR return is positive.
    """
    keys = ["layout", "partner", "seat"] if "seat" in br_returns.columns else ["layout", "partner"]
    means = br_returns.groupby(keys, sort=True)["br_return"].mean().reset_index()
    effect = (
        "score BR-Prox 1 for every ego (ZSC-Eval's rule; --nonpositive-br nan leaves them out)"
        if nonpositive_br == "one"
        else "are left out of every aggregate (--nonpositive-br nan)"
    )
    lines = []
    for layout, frame in means.groupby("layout", sort=True):
        bad = frame[frame["br_return"] <= 0]
        if not len(bad):
            continue
        shown = _partner_list(bad)
        unit = "(partner, seat) units" if "seat" in keys else "partners"
        lines.append(
            f"on {layout}, the BR return is <= 0 for {len(bad)} of {len(frame)} {unit} ({shown}): "
            f"those units {effect}"
        )
    return lines


def weak_br_notes(br_returns: pd.DataFrame, cotrained: pd.DataFrame) -> list[str]:
    """One line per layout with :func:`~zsceval.evaluation.partner_set.weak_br_units`: how many of its
    mid (partner, seat) units and which partners, with the fresh and co-trained returns of the worst one.

    Args:
        br_returns, cotrained: as :func:`~zsceval.evaluation.partner_set.weak_br_units`.

    Returns:
        The lines; none where every fresh mid BR does as well.
    """
    units = weak_br_units(br_returns, cotrained)
    checked = cotrained.groupby("layout")[["partner", "seat"]].apply(lambda f: len(f.drop_duplicates()))
    lines = []
    for layout, frame in units.groupby("layout", sort=True):
        gap = frame["cotrained_br_return"] - frame["br_return"]
        worst = frame.loc[gap.idxmax()]
        shown = _partner_list(frame)
        lines.append(
            f"on {layout}, the candidate's co-trained BR returns more than the fresh mid BR "
            f"({WEAK_BR_RATIO:g} x + {WEAK_BR_MARGIN:g}) on {len(frame)} of {int(checked[layout])} mid "
            f"(partner, seat) units ({shown}; largest: {worst['partner']} seat {int(worst['seat'])}, "
            f"{worst['br_return']:.1f} against {worst['cotrained_br_return']:.1f}): the fresh BR is not "
            "the best response there, so those units' BR-Prox is overstated for every ego"
        )
    return lines


def folder_notes(folder: str | Path, br_returns: pd.DataFrame, *, nonpositive_br: str = "one") -> list[str]:
    """The notes on a folder's BR returns: :func:`nonpositive_br_notes` and, where the folder (a bench
    or a partner set) holds :data:`~zsceval.evaluation.partner_set.COTRAINED_BR_TABLE`,
    :func:`weak_br_notes`.

    Args:
        folder: the bench or partner-set folder.
        br_returns: its BR returns (``layout, partner[, seat], br_return``).
        nonpositive_br: the rule the report applies (``"one"`` or ``"nan"``).

    Returns:
        The lines, one per layout and kind; none when no unit is affected.
    """
    lines = nonpositive_br_notes(br_returns, nonpositive_br=nonpositive_br)
    cotrained = Path(folder) / COTRAINED_BR_TABLE
    if cotrained.is_file():
        lines += weak_br_notes(br_returns, pd.read_parquet(cotrained))
    return lines


def set_folder_notes(set_dir: str | Path) -> list[str]:
    """:func:`folder_notes` of a partner-set folder made by ``partners.manifest``.

    Raises:
        FileNotFoundError: the folder has no ``br_returns.parquet``.
    """
    return folder_notes(set_dir, pd.read_parquet(Path(set_dir) / "br_returns.parquet"))
