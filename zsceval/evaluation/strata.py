"""Partner strata (issue 36, after Hypothetical Minds, paper 003 Sec. 5): skilled, semi-skilled and
unhelpful partners, reported separately.

* **skilled**: a partner set's final checkpoints (ZSC-Eval's *expert* partners);
* **semi-skilled**: its mid checkpoints (ZSC-Eval's *moderate* partners);
* **unhelpful**: :class:`StayAgent`, a partner that never moves (paper 003's unhelpful partner), and
  :class:`UniformRandomAgent`, one that takes a uniformly random available action every step.

Skilled and semi-skilled partners are scored with BR-Prox (they have best responses); the
unhelpful ones have none, so an agent is scored by its mean sparse return with them (what it
achieves alone, or despite a random teammate). :func:`unhelpful_play` plays an agent with both in
every seating; ``zsceval eval --strata`` prints the three strata.
"""

from __future__ import annotations

import torch
from torch import nn

from zsceval.rl.agent import ActOutput, register_agent, sample_actions

__all__ = ["UNHELPFUL", "StayAgent", "UniformRandomAgent", "unhelpful_play"]

STAY_ACTION = 4
"""Overcooked's STAY (``zsceval.envs.overcooked.constants.Action.STAY``)."""


class _ScriptedPartner(nn.Module):
    """A stateless scripted partner of the agent protocol.

    Args:
        spec: ``{"num_actions": A}`` (the env's action count; Overcooked has 6).
    """

    def __init__(self, spec: dict | None = None) -> None:
        super().__init__()
        self.spec = dict(spec or {"num_actions": 6})

    def initial_state(self, rows: int, device: torch.device | str) -> torch.Tensor:
        """No state: ``float32 [rows, 0]``."""
        return torch.zeros(rows, 0, device=device)


@register_agent("unhelpful-stay")
class StayAgent(_ScriptedPartner):
    """A partner that never moves: STAY in every step (paper 003's unhelpful partner)."""

    def act(self, obs, avail, state, starts, generator=None, deterministic=False) -> ActOutput:
        """``int64 [N]`` STAY for every row; log-probability 0."""
        n = obs.shape[0]
        actions = torch.full((n,), STAY_ACTION, dtype=torch.int64, device=obs.device)
        return ActOutput(actions, torch.zeros(n, device=obs.device), state)


@register_agent("unhelpful-random")
class UniformRandomAgent(_ScriptedPartner):
    """A partner that acts uniformly at random over its available actions every step."""

    def act(self, obs, avail, state, starts, generator=None, deterministic=False) -> ActOutput:
        """Uniform over ``avail`` (all actions where None), sampled with the shared Gumbel-max
        sampler; ``deterministic`` is ignored (a random partner stays random)."""
        n = obs.shape[0]
        logits = torch.zeros(n, int(self.spec["num_actions"]), device=obs.device)
        actions, logp = sample_actions(logits, avail, generator, deterministic=False)
        return ActOutput(actions, logp, state)


UNHELPFUL = {"stay": StayAgent, "random": UniformRandomAgent}
"""The unhelpful partners by the name ``zsceval eval`` reports them under."""


def unhelpful_play(agent_path: str, layout: str, episodes: int, device: str = "cpu", seed: int = 0) -> dict:
    """Play a saved agent with each unhelpful partner in every seating.

    Args:
        agent_path: run dir, checkpoint dir or meta.json of the agent (``PATH#policy`` picks one).
        layout: layout name; the agent must have been trained on its observation spec.
        episodes: episodes per seating.
        device: torch device.
        seed: seed of the env; action sampling uses ``seed + 1`` (as ``zsceval eval --partner``).

    Returns:
        ``{name: {"sparse_return_mean", "sparse_return_ci95", "episodes"}}`` for ``stay`` and
        ``random``, pooled over the seatings (the agent in each seat, the partner in the others).

    Raises:
        CheckpointError: the agent cannot be loaded or was trained on another observation spec.
        ConfigError: unknown layout or device.
    """
    import dataclasses

    from zsceval.evaluation.cross_play import MAX_GAMES
    from zsceval.rl.checkpoint import check_compatible, load_policy
    from zsceval.rl.config import EnvConfig
    from zsceval.rl.envs import make_env
    from zsceval.rl.play import mean_ci, play
    from zsceval.rl.trainer import resolve_device

    dev = resolve_device(device)
    agent, meta = load_policy(agent_path, device=dev)
    saved_env = meta.get("config", {}).get("env", {})
    known = {f.name for f in dataclasses.fields(EnvConfig)}
    env_cfg = dataclasses.replace(
        EnvConfig(**{k: v for k, v in saved_env.items() if k in known}),
        layout=layout, num_envs=min(episodes, MAX_GAMES), randomize_seats=False, random_start_prob=0.0,
    )  # fmt: skip
    out = {}
    for name, cls in UNHELPFUL.items():
        env = make_env(env_cfg, device=dev, seed=seed, evaluation=True)
        check_compatible(meta, env.spec_dict(), f"agent {agent_path}")
        gen = torch.Generator(dev).manual_seed(seed + 1)
        partner = cls({"num_actions": env.num_actions})
        returns = []
        for seat in range(env.num_agents):
            seats = [partner] * env.num_agents
            seats[seat] = agent
            returns.append(play(env, seats, episodes, gen).sparse)
        sparse = torch.cat(returns)
        mean, lo, hi = mean_ci(sparse)
        out[name] = {"sparse_return_mean": mean, "sparse_return_ci95": [lo, hi],
                     "episodes": int(sparse.numel())}  # fmt: skip
        if hasattr(env, "close"):
            env.close()
    return out
