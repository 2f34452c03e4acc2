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

__all__ = ["VDN", "value_preset"]


def value_preset(preset: str, cfg: TrainConfig, *, shaping_horizon: float | None = None) -> dict[str, Any]:
    """Config of the value-based algorithms (VDN pool, DQN best responses) for a preset.

    ``paper``: TBS Table 4 / JaxMARL ``pqn_vdn_cnn_overcooked.yaml`` (64 games, 16 steps, 4 x 16
    minibatches, lr 7.5e-5, CNN 32-32-32 + 2 x Dense 512, LayerNorm, 5e6 steps, shaping horizon 4e6).
    ``quick``: MLP 2 x 128 with LayerNorm, 128 games x 16 steps, 2 x 4 minibatches, lr 1e-3,
    shaping annealed over the whole run (2 CPU cores).
    """
    if preset == "paper":
        return {
            "run": {"total_steps": 5_000_000},
            "env": {"num_envs": 64},
            "model": {
                "kind": "cnn", "cnn_channels": [32, 32, 32], "hidden_size": 512, "mlp_layers": 1,
                "layer_norm": True, "recurrent": False, "critic_obs": "own",
            },
            "pqn": {"rollout_length": 16, "epochs": 4, "num_minibatches": 16, "lr": 7.5e-5},
            "shaping": {"horizon": shaping_horizon or 4_000_000},
        }  # fmt: skip
    return {
        "env": {"num_envs": 128},
        "model": {"kind": "mlp", "hidden_size": 128, "mlp_layers": 2, "layer_norm": True, "recurrent": False},
        "pqn": {"rollout_length": 16, "epochs": 2, "num_minibatches": 4, "lr": 1e-3},
        "shaping": {"horizon": shaping_horizon or cfg.run.total_steps},
    }


@register("vdn", "VDN self-play: one shared Q-network, PQN-VDN (JaxMARL; TBS's pool trainer).")
class VDN(Algorithm):
    """VDN self-play: one shared Q-network, PQN-VDN (JaxMARL; TBS's pool trainer)."""

    core = "pqn"

    @classmethod
    def preset_config(cls, preset: str, cfg: TrainConfig) -> dict[str, Any]:
        """:func:`value_preset`."""
        return value_preset(preset, cfg)
