"""A training budget's check that later stages can read its logged returns."""

from __future__ import annotations

from zsceval.rl.config import ConfigError, TrainConfig

__all__ = ["check_episode_budget"]


def check_episode_budget(cfg: TrainConfig, key: str, steps: int, games: int, reader: str) -> None:
    """Refuse up front a training budget in which no game ends an episode, when a later stage reads
    the run's logged returns (they are logged when episodes end).

    Args:
        cfg: the run's resolved config (``env.horizon``).
        key: the budget's name for the message, e.g. ``population.stage1_steps``.
        steps: env steps of the budget (per member for a stage-1 population).
        games: games those steps are spread over (per member).
        reader: what needs the returns, e.g. ``stage 2 (init / mid / final checkpoints)``.

    Raises:
        ConfigError: ``steps < games * env.horizon``, naming the key, the value and the minimum.
    """
    need = games * cfg.env.horizon
    if steps < need:
        raise ConfigError(
            f"{key}={steps:,} ends no episode: its {games} games of env.horizon={cfg.env.horizon} steps "
            f"need at least {need:,} env steps before any training return is logged, and {reader} reads "
            f"those returns. Raise {key} to >= {need:,} (or lower env.num_envs)"
        )
