"""Per-layout rules of the ``paper`` preset that its YAML file cannot express.

:func:`~zsceval.rl.config.resolve_config` applies them after the algorithm's additions to the
preset (:meth:`~zsceval.rl.algorithm.Algorithm.preset_config`); a config file, overrides and flags
still win. A leaf module: it imports no other config module.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LATE_EXPLORATION_LAYOUTS", "late_exploration"]


LATE_EXPLORATION_LAYOUTS = {"blocked_corridor": 0.8}
"""``paper`` preset layouts whose middle entropy milestone every ZSC-Eval script moves, as a share of
the last: small_corridor's 8e6 of 1e7 (SP, BRs, biased agents, E3T, stage 1), 4e7 of 5e7 (stage 2,
COLE) (``scripts/overcooked/shell/train_*.sh``, docs/reference-protocol.md "Training settings")."""


def late_exploration(preset: str, cfg: Any) -> dict[str, Any]:
    """The ``ppo`` keys that move a three-milestone entropy schedule's middle milestone on a layout of
    :data:`LATE_EXPLORATION_LAYOUTS` under the ``paper`` preset; ``{}`` elsewhere.

    Args:
        preset: the preset name.
        cfg: the :class:`~zsceval.rl.config.TrainConfig` with the preset and the algorithm's additions
            (its milestones, env steps).
    """
    if preset != "paper" or cfg.env.name != "overcooked" or len(cfg.ppo.entropy_milestones) != 3:
        return {}
    from zsceval.envs.overcooked import load_layout

    try:
        share = LATE_EXPLORATION_LAYOUTS.get(load_layout(cfg.env.layout).name)
    except (ValueError, OSError):
        return {}
    if share is None:
        return {}
    first, _, last = cfg.ppo.entropy_milestones
    return {"entropy_milestones": [first, round(first + share * (last - first)), last]}
