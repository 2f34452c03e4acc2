"""Build the batched environment a config asks for, through the env registry (``zsceval.envs``)."""

from __future__ import annotations

import torch

from zsceval.rl.config import ConfigError, EnvConfig

__all__ = ["env_spec", "make_env"]

# EnvConfig fields passed to an env that takes an option of the same name. ``layout`` is silently
# ignored by envs without layouts (documented on the field); ``num_agents`` is checked against the
# env built (an Overcooked layout fixes its player count); the others must keep their defaults
# when the env does not take them.
PASSED = (
    "layout", "horizon", "randomize_seats", "random_start_prob", "num_agents", "view_radius", "num_workers"
)  # fmt: skip
SILENTLY_IGNORED = ("layout", "num_agents")


def make_env(
    cfg: EnvConfig,
    num_envs: int | None = None,
    device: str | torch.device = "cpu",
    seed: int = 0,
    evaluation: bool = False,
):
    """Construct the batched env of ``cfg`` (``zsceval.envs.base.BatchedEnv``).

    ``cfg.name`` is looked up in the env registry (``zsceval.envs.registry``); the config fields in
    :data:`PASSED` become the env's options of the same names when it takes them, and
    ``cfg.options`` gives the env's other options by name.

    Args:
        cfg: env section of the run config.
        num_envs: override ``cfg.num_envs`` (e.g. for evaluation).
        device: torch device of the env state.
        seed: seed of the env generator.
        evaluation: build the env for evaluation: standard starts only (``random_start_prob``
            is a training aid).

    Raises:
        ConfigError: unknown env name or layout (valid names listed, closest one suggested), a
            non-default config field the env does not use, an ``env.options`` key the env does not
            take (its options listed), ``env.num_agents`` different from the
            env's (e.g. the layout's player count), or a value the env rejects.
    """
    from zsceval.envs.registry import env_options, make

    B = cfg.num_envs if num_envs is None else num_envs
    try:
        accepted = env_options(cfg.name)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    values = {key: getattr(cfg, key) for key in PASSED}
    if evaluation:
        values["random_start_prob"] = 0.0
    defaults = EnvConfig()
    unused = [
        key
        for key in PASSED
        if key not in accepted and key not in SILENTLY_IGNORED and values[key] != getattr(defaults, key)
    ]
    if unused:
        raise ConfigError(
            f"env '{cfg.name}' does not use {', '.join(f'env.{k}' for k in unused)}; "
            f"leave it at its default (it takes: {', '.join(sorted(accepted)) or 'no options'})"
        )
    options = {key: value for key, value in values.items() if key in accepted}
    for key, value in cfg.options.items():
        if key in PASSED:
            raise ConfigError(f"env.options.{key}: set it as env.{key}")
        if key in ("num_envs", "device", "seed"):
            raise ConfigError(f"env.options.{key} is set by the run, not by an option")
        if key not in accepted:
            raise ConfigError(
                f"env '{cfg.name}' has no option '{key}' (env.options.{key}); "
                f"its options: {', '.join(sorted(accepted)) or 'none'}"
            )
        options[key] = value
    try:
        env = make(cfg.name, num_envs=B, device=device, seed=seed, **options)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if env.num_agents != cfg.num_agents:
        where = f"layout '{cfg.layout}'" if "layout" in accepted else f"env '{cfg.name}'"
        raise ConfigError(
            f"env.num_agents={cfg.num_agents} but {where} has {env.num_agents} agents; "
            f"set env.num_agents={env.num_agents}"
        )
    return env


def env_spec(env) -> dict:
    """The env's observation spec for checkpoint metadata (``env.spec_dict()``)."""
    return env.spec_dict()
