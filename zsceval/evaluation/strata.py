"""Partner strata (after Hypothetical Minds, Sec. 5): skilled, semi-skilled and
unhelpful partners, reported separately.

* **skilled**: a partner set's final checkpoints (ZSC-Eval's *expert* partners);
* **semi-skilled**: its mid checkpoints (ZSC-Eval's *moderate* partners);
* **unhelpful**: :class:`StayAgent`, a partner that never moves (Hypothetical Minds' unhelpful partner; the
  env's no-op every step, :func:`stay_action`), and :class:`UniformRandomAgent`, one that takes a
  uniformly random available action every step.

Skilled and semi-skilled partners are scored with BR-Prox (they have best responses); the
unhelpful ones have none, so an agent is scored by its mean sparse return with them (what it
achieves alone, or despite a random teammate). :func:`unhelpful_play` plays a saved agent with both
in every seating (``zsceval eval --strata``). In a bench, the job kind ``ego.unhelpful``
(:func:`ego_unhelpful`) plays each ego with both, in the seatings
:func:`~zsceval.evaluation.matches.evaluate_agent` uses for the partner set, and writes
:data:`UNHELPFUL_TABLE`; the bench concatenates these into ``unhelpful.parquet`` and
``zsceval report`` summarizes it with :func:`unhelpful_summary`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

from zsceval.execution.jobs import job_kind
from zsceval.rl.agent import ActOutput, register_agent, sample_actions
from zsceval.stats.metrics import bootstrap_ci

__all__ = [
    "UNHELPFUL",
    "UNHELPFUL_LEVEL",
    "UNHELPFUL_TABLE",
    "StayAgent",
    "UniformRandomAgent",
    "ego_unhelpful",
    "stay_action",
    "unhelpful_play",
    "unhelpful_results",
    "unhelpful_summary",
]

STAY_ACTION = 4
"""Overcooked's STAY (``zsceval.envs.overcooked.constants.Action.STAY``): :class:`StayAgent`'s action
when its spec names none."""


def stay_action(env_name: str) -> int:
    """The action that leaves a player where it is in the registered env ``env_name``: Overcooked's
    STAY (``Action.STAY``, 4), Football's idle (``zsceval.envs.football.features.NO_OP``, 0).

    Raises:
        ValueError: an env whose no-op is not known here (the known ones named).
    """
    if env_name == "overcooked":
        from zsceval.envs.overcooked.constants import Action

        return int(Action.STAY)
    if env_name == "football":
        from zsceval.envs.football.features import NO_OP

        return int(NO_OP)
    raise ValueError(f"no stay action known for env {env_name!r} (known: overcooked, football)")


class _ScriptedPartner(nn.Module):
    """A stateless scripted partner of the agent protocol.

    Args:
        spec: ``{"num_actions": A, "stay_action": a}``: the env's action count (Overcooked has 6,
            Football 19) and, for :class:`StayAgent`, its no-op (:func:`stay_action`; default
            :data:`STAY_ACTION`).
    """

    def __init__(self, spec: dict | None = None) -> None:
        super().__init__()
        self.spec = dict(spec or {"num_actions": 6})

    def initial_state(self, rows: int, device: torch.device | str) -> torch.Tensor:
        """No state: ``float32 [rows, 0]``."""
        return torch.zeros(rows, 0, device=device)


@register_agent("unhelpful-stay")
class StayAgent(_ScriptedPartner):
    """A partner that never moves: the env's no-op in every step (Hypothetical Minds' unhelpful partner)."""

    def act(self, obs, avail, state, starts, generator=None, deterministic=False) -> ActOutput:
        """``int64 [N]`` the spec's ``stay_action`` (Overcooked's STAY by default) for every row;
        log-probability 0."""
        n = obs.shape[0]
        stay = int(self.spec.get("stay_action", STAY_ACTION))
        actions = torch.full((n,), stay, dtype=torch.int64, device=obs.device)
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
        ValueError: an env whose no-op :func:`stay_action` does not know.
    """
    import dataclasses

    from zsceval.evaluation.cross_play import MAX_GAMES
    from zsceval.evaluation.external import load_ego
    from zsceval.rl.checkpoint import check_compatible
    from zsceval.rl.config import EnvConfig
    from zsceval.rl.envs import make_env
    from zsceval.rl.play import mean_ci, play
    from zsceval.rl.trainer import resolve_device

    dev = resolve_device(device)
    agent, meta = load_ego(agent_path, dev)  # a saved agent, or an external module:attr
    saved_env = ((meta or {}).get("config") or {}).get("env", {})
    known = {f.name for f in dataclasses.fields(EnvConfig)}
    env_cfg = dataclasses.replace(
        EnvConfig(**{k: v for k, v in saved_env.items() if k in known}),
        layout=layout, num_envs=min(episodes, MAX_GAMES), randomize_seats=False, random_start_prob=0.0,
    )  # fmt: skip
    out = {}
    for name, cls in UNHELPFUL.items():
        env = make_env(env_cfg, device=dev, seed=seed, evaluation=True)
        if meta is not None:
            check_compatible(meta, env.spec_dict(), f"agent {agent_path}")
        gen = torch.Generator(dev).manual_seed(seed + 1)
        partner = cls({"num_actions": env.num_actions, "stay_action": stay_action(env_cfg.name)})
        returns = []
        for seat in range(env.num_agents):
            seats = [partner] * env.num_agents
            seats[seat] = agent
            returns.append(play(env, seats, episodes, gen).sparse)
        sparse = torch.cat(returns)
        mean, lo, hi = mean_ci(sparse, low_bound=0.0 if env_cfg.name == "overcooked" else None)
        out[name] = {"sparse_return_mean": mean, "sparse_return_ci95": [lo, hi],
                     "episodes": int(sparse.numel())}  # fmt: skip
        if hasattr(env, "close"):
            env.close()
    return out


UNHELPFUL_TABLE = "unhelpful.parquet"
"""File name of the unhelpful-partner games of one ego (job ``ego.unhelpful``) and of a bench's
concatenation of them (next to ``results.parquet``)."""

UNHELPFUL_LEVEL = "unhelpful"
"""The ``partner_level`` of the rows of :data:`UNHELPFUL_TABLE`."""

UNHELPFUL_SEED_OFFSET = 36
"""Unhelpful partner ``i`` (in :data:`UNHELPFUL` order) samples with a generator seeded
``seed + UNHELPFUL_SEED_OFFSET + i``: streams apart from ``ego.evaluate``'s (``seed``) and
``ego.human_proxy``'s (``seed + 17``)."""


def _num_actions(layout: str, device) -> int:
    """The scenario's action count (a one-game env is built and closed)."""
    from zsceval.envs.scenarios import make_scenario_env

    env = make_scenario_env(layout, 1, device=device)
    try:
        return int(env.num_actions)
    finally:
        if hasattr(env, "close"):
            env.close()


def unhelpful_results(
    layout: str,
    agent,
    *,
    episodes: int,
    seed: int = 0,
    device: str | torch.device = "cpu",
    labels: dict | None = None,
) -> pd.DataFrame:
    """Play ``agent`` with each unhelpful partner in the seatings of the partner-set evaluation.

    Each partner of :data:`UNHELPFUL` is a one-partner set for
    :func:`~zsceval.evaluation.matches.evaluate_agent`: in a two-player layout the agent in each
    seat and the partner in the other; in games of n > 2 players (Football) every seat combination
    of the agent and copies of the partner. Partner ``i`` samples with its own generator
    (:data:`UNHELPFUL_SEED_OFFSET`), so adding or removing one partner leaves the other's games
    unchanged.

    Args:
        layout: layout or Football scenario name (:mod:`zsceval.envs.scenarios`).
        agent: the ego (any agent of the agent protocol), on ``device``.
        episodes: episodes per (partner, seating).
        seed: base seed of the action sampling.
        device: env and agent device.
        labels: constant columns to add (e.g. ``{"algorithm": "sp", "ego_seed": 0}``).

    Returns:
        One row per (partner, seating, episode): the columns of ``evaluate_agent`` (``layout,
        partner, partner_level, seat, episode, sparse_return``, the ego's ``ev_<name>`` event
        counts, ``labels``) with ``partner`` = ``"unhelpful-stay"`` or ``"unhelpful-random"`` (the
        registered agent names), ``partner_level`` = :data:`UNHELPFUL_LEVEL`, ``seat`` = the ego's
        (first) seat, and ``seating`` (str): who sits where, seat by seat joined by ``|`` (e.g.
        ``"ego|unhelpful-stay"``). ``sparse_return``: float, team sparse return (Overcooked: 20 per
        delivered soup).

    Raises:
        ValueError: unknown layout (valid ones listed), or a scenario whose no-op :func:`stay_action`
            does not know.
    """
    from zsceval.envs.scenarios import scenario_env
    from zsceval.evaluation.matches import PartnerSpec, evaluate_agent

    spec = {"num_actions": _num_actions(layout, device), "stay_action": stay_action(scenario_env(layout))}
    frames = []
    for i, cls in enumerate(UNHELPFUL.values()):
        name = cls.agent_class  # the registered name, e.g. unhelpful-stay
        partner = cls(spec).to(device)
        gen = torch.Generator(device=device).manual_seed(int(seed) + UNHELPFUL_SEED_OFFSET + i)
        frame = evaluate_agent(layout, agent, [PartnerSpec(name, UNHELPFUL_LEVEL, partner)],
                               episodes=episodes, generator=gen, device=device, labels=labels)  # fmt: skip
        if "|" not in str(frame["partner"].iloc[0]):  # two players: the seating from the ego's seat
            frame["seating"] = ["ego|" + name if s == 0 else name + "|ego" for s in frame["seat"]]
        else:  # n > 2: evaluate_agent's partner column is the seat combination
            frame["seating"] = frame["partner"].astype(str)
        frame["partner"], frame["partner_level"] = name, UNHELPFUL_LEVEL
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


@job_kind("ego.unhelpful")
def ego_unhelpful(params: dict, out: Path, needs: dict) -> dict:
    """An ego vs the unhelpful partners (params: ``layout, algorithm, ego_seed, episodes, seed,
    device, ego`` (train-job id) or ``agent`` (an external ``module:attr``,
    :mod:`zsceval.rl.external`)); writes :data:`UNHELPFUL_TABLE` (:func:`unhelpful_results`).

    The ego's scored checkpoint is the one ``ego.evaluate`` scores
    (:func:`~zsceval.evaluation.ego_checkpoint.scored_ego_checkpoint`), recorded in the result
    (None for an external agent)."""
    from zsceval.evaluation.ego_checkpoint import load_scored_ego

    device = params.get("device", "cpu")
    ego, scored = load_scored_ego(params, needs, device)
    labels = {"algorithm": params["algorithm"], "ego_seed": int(params["ego_seed"])}
    frame = unhelpful_results(params["layout"], ego, episodes=int(params["episodes"]),
                              seed=int(params.get("seed", 0)), device=device, labels=labels)  # fmt: skip
    frame.to_parquet(out / UNHELPFUL_TABLE)
    means = frame.groupby("partner")["sparse_return"].mean()
    return {"rows": len(frame), "mean_sparse_return": {k: float(v) for k, v in means.items()},
            "scored_checkpoint": scored}  # fmt: skip


SUMMARY_COLUMNS = ("layout", "algorithm", "partner", "seeds", "seatings", "episodes", "mean", "low", "high")


def unhelpful_summary(
    frame: pd.DataFrame, *, seed: int = 0, reps: int = 2000, level: float = 0.95
) -> pd.DataFrame:
    """Mean sparse return with each unhelpful partner per (layout, algorithm), with a bootstrap CI.

    The units are (ego seed, seating) means over episodes, arranged ``float64[seeds, seatings]``;
    the estimate is their mean (NaN units, a seating a seed did not play, ignored) and the CI the
    stratified bootstrap of :func:`~zsceval.stats.metrics.bootstrap_ci` with ``np.nanmean``
    (seeds and seatings resampled, as :func:`~zsceval.evaluation.human_proxy.human_proxy_summary`
    does with seats). Group ``i`` of the groups sorted by (layout, algorithm, partner) resamples
    with ``np.random.default_rng([seed, 36]).spawn(num_groups)[i]``.

    Args:
        frame: rows of :func:`unhelpful_results` with ``algorithm`` and ``ego_seed`` columns
            (``seating`` optional: ``seat`` stands in for it).
        seed: seed of the bootstrap.
        reps: bootstrap replicates.
        level: CI coverage.

    Returns:
        Columns :data:`SUMMARY_COLUMNS`: ``layout, algorithm, partner`` (str), ``seeds, seatings,
        episodes`` (int counts), ``mean, low, high`` (float, team sparse return per episode);
        sorted by layout, algorithm, partner.

    Raises:
        ValueError: missing columns.
    """
    need = {"layout", "algorithm", "ego_seed", "partner", "seat", "sparse_return"}
    if not need <= set(frame.columns):
        raise ValueError(f"unhelpful table needs columns {sorted(need)}, has {sorted(frame.columns)}")
    unit = "seating" if "seating" in frame.columns else "seat"
    groups = list(frame.groupby(["layout", "algorithm", "partner"], sort=True))
    rngs = np.random.default_rng([seed, 36]).spawn(len(groups)) if groups else []
    rows = []
    for ((lay, algo, partner), g), rng in zip(groups, rngs):
        units = g.groupby(["ego_seed", unit])["sparse_return"].mean().unstack(unit)
        ci = bootstrap_ci(units.to_numpy(dtype=np.float64), np.nanmean, reps=reps, level=level, rng=rng)
        rows.append(
            {"layout": lay, "algorithm": algo, "partner": partner, "seeds": len(units),
             "seatings": units.shape[1], "episodes": len(g), "mean": ci.estimate, "low": ci.low,
             "high": ci.high}
        )  # fmt: skip
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
