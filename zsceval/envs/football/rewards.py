"""Per-agent GRF reward from event weights, as ZSC-Eval's Rewarder computes it.

Source: docs/reference-protocol.md "Football" ("Rewards"); ZSC-Eval ``zsceval/envs/grf/reward_process.py:
Rewarder.calc_reward``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .events import EVENT_NAMES

REFERENCE_REWARD: dict[str, float] = {"score": 5.0, "checkpoints": 1.0}
"""The reference's default ``reward_config``, the same for every agent."""

REWARD_KEYS: tuple[str, ...] = (*EVENT_NAMES, "checkpoints")
"""Valid keys of a weights dict: the eight event names plus ``"checkpoints"``."""


def check_weights(weights: Mapping[str, float]) -> None:
    """Raise ValueError unless ``weights`` is a non-empty dict over :data:`REWARD_KEYS`."""
    if len(weights) == 0:
        raise ValueError(f"reward weights are empty; give at least one of {list(REWARD_KEYS)}")
    unknown = sorted(set(weights) - set(REWARD_KEYS))
    if unknown:
        raise ValueError(f"unknown reward weight keys {unknown}; valid keys are {list(REWARD_KEYS)}")


def agent_reward(weights: Mapping[str, float], events_row: np.ndarray, checkpoint: float) -> float:
    """One agent's reward for one step.

    ``sum_e weights[e] * events_row[e] + weights.get("checkpoints", 0) * checkpoint``.

    Args:
        weights: event name or ``"checkpoints"`` -> weight, e.g. :data:`REFERENCE_REWARD` or an
            HSP biased agent's ``w0`` (pass/shot/catch in {-5, 0, 1}, score in {1, 5}).
        events_row: int16 [8], this agent's events this step in ``EVENT_NAMES`` order.
        checkpoint: gfootball's per-player reward minus its score reward (the checkpoint
            wrapper's 0.1-per-band component), unitless.

    Returns:
        float reward.

    Raises:
        ValueError: empty weights, an unknown key (the message lists the valid ones), or an
            ``events_row`` not of length 8.
    """
    check_weights(weights)
    row = np.asarray(events_row).reshape(-1)
    if row.shape[0] != len(EVENT_NAMES):
        raise ValueError(f"events_row has {row.shape[0]} entries, expected {len(EVENT_NAMES)} {EVENT_NAMES}")
    total = 0.0
    for key, w in weights.items():
        if key == "checkpoints":
            total += float(w) * float(checkpoint)
        else:
            total += float(w) * float(row[EVENT_NAMES.index(key)])
    return total


def weight_vector(weights: Mapping[str, float]) -> tuple[np.ndarray, float]:
    """Vectorized ``weights``: (float32 [8] event weights in ``EVENT_NAMES`` order, checkpoint weight).

    ``events @ w + c * checkpoint`` equals :func:`agent_reward` row by row.
    """
    check_weights(weights)
    w = np.array([float(weights.get(name, 0.0)) for name in EVENT_NAMES], dtype=np.float32)
    return w, float(weights.get("checkpoints", 0.0))
