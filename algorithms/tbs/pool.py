"""The frozen TBS pools: load a ``tbs-pool`` run's pairs and let them act greedily.

A pool pair ``i`` is two Q-networks, ``pNN_1`` (agent 1, trained in seat 0) and ``pNN_2`` (agent 2,
seat 1); frozen value-based agents act greedily (arg-max of the masked Q-values).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

__all__ = ["GreedyPool", "agent_names", "load_pool_agents"]


def agent_names(pair: int) -> tuple[str, str]:
    """Learner names of pair ``pair``'s agent 1 (seat 0) and agent 2 (seat 1)."""
    return f"p{pair:02d}_1", f"p{pair:02d}_2"


def load_pool_agents(run: str | Path, device: Any = "cpu") -> tuple[list[Any], list[Any]]:
    """The agent-1 and agent-2 Q-networks of every pair of a ``tbs-pool`` run (greedy, frozen).

    Returns:
        ``(firsts, seconds)``: lists of N :class:`~zsceval.rl.qpolicy.QPolicy`.

    Raises:
        zsceval.rl.checkpoint.CheckpointError: not a loadable run.
    """
    from zsceval.rl.checkpoint import find_checkpoint, load_agent

    ckpt = find_checkpoint(run)
    names = list(json.loads((ckpt / "meta.json").read_text())["agents"])
    N = len(names) // 2
    firsts = [load_agent(ckpt, agent_names(i)[0], device)[0].eval() for i in range(N)]
    seconds = [load_agent(ckpt, agent_names(i)[1], device)[0].eval() for i in range(N)]
    return firsts, seconds


class GreedyPool(torch.nn.Module):
    """A :class:`~zsceval.rl.population.pool.PolicyPool` of Q-networks that always acts greedily
    (``deterministic=True``: arg-max of the masked Q-values), as frozen value-based partners do."""

    def __init__(self, pool: Any) -> None:
        super().__init__()
        self.pool = pool

    def initial_state(self, rows: int, device: Any) -> torch.Tensor:
        """Zero state (feed-forward members)."""
        return self.pool.initial_state(rows, device)

    def act(self, obs, avail, state, starts, generator=None, deterministic=False, member=None):
        """Greedy actions of each row's member."""
        return self.pool.act(obs, avail, state, starts, member, generator, True)
