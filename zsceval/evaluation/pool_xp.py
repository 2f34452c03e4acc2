"""Cross-play matrices of a set of two-player agents, every ordered pair in one batched call.

Where a population method misses its target, this module shows the cause with measurements:
how its stage-1 pool plays with itself (self-play returns and the cross-play matrix of its
members) and how its ego plays with the pool it trained with. :func:`pairwise_returns` measures
the matrix for any agents (pool members, an ego, scripted partners) and :func:`pool_summary` reduces
it to one row per pool member. ``benchmarks/learning/population_xp.py`` runs both on a bench folder.
(:func:`zsceval.evaluation.yokai_xp.cross_play_matrix` is the Yōkai one: saved runs played pair by
pair through ``zsceval eval``'s cross-play, for the YLE metrics.)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from zsceval.evaluation.matches import play_games

__all__ = ["MAX_GAMES_PER_CALL", "group_cross_play", "pairwise_returns", "pool_summary"]

MAX_GAMES_PER_CALL = 4096
"""Most games one :func:`~zsceval.evaluation.matches.play_games` call runs (pairs are split
across calls beyond it)."""


def pairwise_returns(
    agents: Sequence,
    names: Sequence[str],
    layout: str,
    *,
    episodes: int = 16,
    seed: int = 0,
    device: str | torch.device = "cpu",
    deterministic: bool = False,
) -> pd.DataFrame:
    """Mean team sparse return of every ordered pair of ``agents`` on a two-player layout.

    Cell ``[i, j]`` is agent ``i`` in seat 0 with agent ``j`` in seat 1, averaged over ``episodes``
    episodes (one per game; all pairs play in the same batched env, the diagonal is self-play).
    Evaluation is stochastic, as ZSC-Eval's, unless ``deterministic``.

    Args:
        agents: N agents of the agent protocol (a :class:`~zsceval.rl.policy.Policy`, a scripted
            partner), on ``device``.
        names: N unique labels (the frame's index and columns).
        layout: a two-player layout name.
        episodes: episodes per ordered pair (>= 1).
        seed: seed of the action-sampling generator.
        device: torch device of the env and the agents.
        deterministic: arg-max actions.

    Returns:
        ``float64 [N, N]`` frame (sparse return per episode, 20 per soup), rows the seat-0 agent.

    Raises:
        ValueError: no agents, names miscounted or repeated, ``episodes < 1``, or a layout that is
            not for two players.
    """
    n = len(agents)
    if n == 0:
        raise ValueError("no agents to cross-play")
    if len(names) != n or len(set(names)) != n:
        raise ValueError(f"need {n} unique names, got {list(names)}")
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    idx = torch.arange(n)
    pairs = torch.cartesian_prod(idx, idx).repeat_interleave(episodes, dim=0)  # [n * n * E, 2]
    gen = torch.Generator(device).manual_seed(seed)
    returns = []
    for start in range(0, len(pairs), MAX_GAMES_PER_CALL):
        chunk = pairs[start : start + MAX_GAMES_PER_CALL].to(device)
        result = play_games(
            layout, list(agents), chunk, generator=gen, device=device, deterministic=deterministic
        )
        returns.append(result.sparse.double())
    means = torch.cat(returns).view(n, n, episodes).mean(-1)
    return pd.DataFrame(means.numpy(), index=list(names), columns=list(names))


def _both_seats(matrix: pd.DataFrame, members: Sequence[str], ego: str | None) -> pd.DataFrame:
    """``(M + M^T) / 2``: each pair's return averaged over its two seatings.

    Raises:
        KeyError: a member or the ego is not in the matrix (the names it has listed).
    """
    missing = [m for m in [*members, *([ego] if ego else [])] if m not in matrix.index]
    if missing:
        raise KeyError(f"not in the matrix: {missing} (it has {list(matrix.index)})")
    return (matrix + matrix.T) / 2


def pool_summary(matrix: pd.DataFrame, members: Sequence[str], ego: str | None = None) -> pd.DataFrame:
    """One row per pool member of a :func:`pairwise_returns` matrix ``M``.

    Columns: ``member``; ``level`` (the text after ``@`` in its name, e.g. ``init``, ``mid``,
    ``final``, else ``""``); ``self_play`` (``M[i, i]``); ``cross_play`` (the mean over the other
    members ``j`` of ``(M[i, j] + M[j, i]) / 2``: both seats; NaN for a pool of one); and, with
    ``ego``, ``with_ego`` (``(M[ego, i] + M[i, ego]) / 2``). Returns are sparse returns per episode.

    Raises:
        KeyError: a member or the ego is not in the matrix.
    """
    sym = _both_seats(matrix, members, ego)
    rows = []
    for m in members:
        others = [o for o in members if o != m]
        row = {
            "member": m,
            "level": m.rsplit("@", 1)[1] if "@" in m else "",
            "self_play": float(matrix.loc[m, m]),
            "cross_play": float(sym.loc[m, others].mean()) if others else float("nan"),
        }
        if ego is not None:
            row["with_ego"] = float(sym.loc[ego, m])
        rows.append(row)
    return pd.DataFrame(rows)


def group_cross_play(
    matrix: pd.DataFrame, members: Sequence[str], ego: str | None = None
) -> dict[str, float]:
    """How compatible a group of members is (e.g. a pool's ``final`` checkpoints): do they share
    one convention (cross-play near self-play) or hold several (cross-play far below)?

    Args:
        matrix: a :func:`pairwise_returns` matrix ``M`` (sparse return per episode).
        members: the group's names.
        ego: the ego's name, or None.

    Returns:
        ``members`` (count); ``self_play`` (mean of ``M[i, i]``); ``cross_play`` and
        ``cross_play_min`` (mean and minimum over the pairs ``i != j`` of ``(M[i, j] + M[j, i]) / 2``;
        NaN for one member); with ``ego``: ``with_ego`` (mean over i of ``(M[ego, i] + M[i, ego]) / 2``)
        and ``ego_self_play``.

    Raises:
        KeyError: a member or the ego is not in the matrix.
        ValueError: no members.
    """
    if not members:
        raise ValueError("no members")
    members = list(members)
    sym = _both_seats(matrix, members, ego)
    off = sym.loc[members, members].to_numpy()[~np.eye(len(members), dtype=bool)]
    out = {
        "members": len(members),
        "self_play": float(np.diag(matrix.loc[members, members].to_numpy()).mean()),
        "cross_play": float(off.mean()) if off.size else float("nan"),
        "cross_play_min": float(off.min()) if off.size else float("nan"),
    }
    if ego is not None:
        out["with_ego"] = float(sym.loc[ego, members].mean())
        out["ego_self_play"] = float(matrix.loc[ego, ego])
    return out
