"""Interdependence of evaluated episodes: an ego with a partner, both seats, counted per episode.

Records the episodes (:func:`zsceval.interop.trajectory.record_trajectories`) and counts the
constructive, looping and irrelevant interdependencies of each ("Who is Helping Whom?",
:mod:`zsceval.interdependence`) by role: what the ego triggered (it was the giver) and accepted (it was the
receiver), and the same for the partner. ``zsceval eval --interdependence`` prints
:func:`interdependence_summary`; the bench's human-proxy jobs store these columns in ``human_proxy.parquet``
and ``zsceval report`` shows them per algorithm.
"""

from __future__ import annotations

import pandas as pd
import torch

from zsceval.interdependence import CATEGORIES, interdependence_of_trajectory
from zsceval.interop.trajectory import record_trajectories

__all__ = ["COUNT_COLUMNS", "format_interdependence", "interdependence_summary", "play_with_interdependence"]

ROLES = ("ego", "partner")
COUNT_COLUMNS = (
    *CATEGORIES,
    *(f"{role}_{what}_{c}" for role in ROLES for what in ("triggered", "accepted") for c in CATEGORIES),
    *(f"{role}_trigger_actions" for role in ROLES),
)
"""Interdependence columns of a per-episode row (``non_constructive`` = looping + irrelevant)."""


def play_with_interdependence(
    env,
    agent,
    partner,
    episodes: int,
    *,
    generator: torch.Generator | None = None,
    labels: dict | None = None,
) -> pd.DataFrame:
    """Play ``agent`` with ``partner`` in every seating of a 2-player ``env`` and count interdependencies.

    Args:
        env: an :class:`~zsceval.envs.overcooked.OvercookedEnv` (reset here), no seat shuffling.
        agent: the ego agent (agent protocol).
        partner: the partner agent, in the other seat.
        episodes: episodes per seating.
        generator: action-sampling generator on the env's device (shared by the seatings, in order).
        labels: constant columns to add (e.g. ``{"algorithm": "sp", "ego_seed": 0}``).

    Returns:
        One row per (seat, episode): ``layout, seat`` (the ego's), ``episode, sparse_return`` and
        :data:`COUNT_COLUMNS` (counts in the episode), plus ``labels``.

    Raises:
        ValueError: an env with other than 2 players (the metric is defined for pairs).
    """
    if env.num_agents != 2:
        raise ValueError(f"interdependence is defined for 2 players; the env has {env.num_agents}")
    rows = []
    for seat in range(2):
        seats = [partner, partner]
        seats[seat] = agent
        names = ["partner", "partner"]
        names[seat] = "ego"
        trajs = record_trajectories(env, seats, episodes, labels=names, generator=generator)
        for e, traj in enumerate(trajs):
            counts = interdependence_of_trajectory(traj)
            row = {"layout": env.layout.name, "seat": seat, "episode": e, "sparse_return": float(traj.score)}
            row.update({c: counts.count(c) for c in CATEGORIES})
            for k, role in ((seat, "ego"), (1 - seat, "partner")):
                for c in CATEGORIES:
                    row[f"{role}_triggered_{c}"] = counts.triggered[k][c]
                    row[f"{role}_accepted_{c}"] = counts.accepted[k][c]
                row[f"{role}_trigger_actions"] = counts.trigger_actions[k]
            row.update(labels or {})
            rows.append(row)
    return pd.DataFrame(rows)


def interdependence_summary(
    frame: pd.DataFrame, by: tuple[str, ...] = ("layout", "algorithm")
) -> pd.DataFrame:
    """Mean interdependence counts per episode, grouped by ``by`` (columns present in ``frame``).

    Returns:
        ``by`` columns, ``episodes``, and the means of ``constructive, looping, irrelevant,
        ego_triggered_constructive, partner_triggered_constructive, ego_trigger_actions,
        partner_trigger_actions``.
    """
    keys = [k for k in by if k in frame.columns]
    cols = ["constructive", "looping", "irrelevant", "ego_triggered_constructive",
            "partner_triggered_constructive", "ego_trigger_actions", "partner_trigger_actions"]  # fmt: skip
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise ValueError(f"no interdependence columns in the table (missing {missing})")
    grouped = frame.groupby(keys, sort=True) if keys else frame.groupby(lambda _: 0)
    out = grouped[cols].mean()
    out.insert(0, "episodes", grouped.size())
    return out.reset_index(drop=not keys)


def format_interdependence(summary: pd.DataFrame, partner: str = "human proxy") -> str:
    """A text table of :func:`interdependence_summary` (per layout and algorithm)."""
    lines = [
        f"Interdependence with the {partner} (Biswas et al., 'Who is Helping Whom?'), mean per episode: "
        "constructive (triggered by the ego / by the partner), looping, irrelevant; trigger actions of the "
        "ego / the partner"
    ]
    for lay, g in summary.groupby("layout", sort=True):
        lines.append(f"\n{lay}")
        width = max(len("algorithm"), *(len(str(a)) for a in g["algorithm"]))
        head = f"  {'algorithm':<{width}}  {'constructive (ego/partner)':>28}  looping  irrelevant  triggers"
        lines.append(head)
        for r in g.itertuples():
            by = f"{r.ego_triggered_constructive:4.1f}/{r.partner_triggered_constructive:4.1f}"
            cons = f"{r.constructive:5.1f} ({by})"
            trig = f"{r.ego_trigger_actions:.1f}/{r.partner_trigger_actions:.1f}"
            row = f"  {r.algorithm:<{width}}  {cons:>28}  {r.looping:7.1f}  {r.irrelevant:10.1f}  {trig:>8}"
            lines.append(row)
    return "\n".join(lines)
