"""Value decomposition (VDN; Sunehag et al., 2018) self-play, trained as JaxMARL's PQN-VDN.

Method. One Q-network ``Q(o_i, a_i)`` is shared by every seat; the team value is the sum
``Q_tot = sum_i Q(o_i, a_i)``, trained by regression on Q(lambda) targets of the team reward (sparse
plus annealed shaping of both seats) with epsilon-greedy exploration and no replay buffer or
target network (PQN; the ``pqn`` core, :mod:`zsceval.rl.pqn`). Greedy acting after training.

The TBS paper trains its partner pools with this algorithm (TBS Sec. 4.1, Table 4; its settings are
the ``paper`` preset: 64 games x 16 steps, 4 epochs x 16 minibatches, lr 7.5e-5 decaying linearly,
lambda 0.5, epsilon 1 -> 0.2 over the first 20 % of updates, shaping annealed over 4e6 steps,
5e6 steps, JaxMARL's CNN with LayerNorm). ``quick`` trains an MLP with larger batches on 2 CPU cores.
"""

from __future__ import annotations

from typing import Any

from zsceval.registry import register
from zsceval.rl.algorithm import Algorithm
from zsceval.rl.config import TrainConfig
from zsceval.rl.pqn import pqn_preset

__all__ = ["VDN"]


@register("vdn", "VDN self-play: one shared Q-network, PQN-VDN (JaxMARL; TBS's pool trainer).")
class VDN(Algorithm):
    """VDN self-play: one shared Q-network, PQN-VDN (JaxMARL; TBS's pool trainer)."""

    core = "pqn"

    @classmethod
    def preset_config(cls, preset: str, cfg: TrainConfig) -> dict[str, Any]:
        """:func:`zsceval.rl.pqn.pqn_preset`."""
        return pqn_preset(preset, cfg)
