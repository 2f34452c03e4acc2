"""Cross-play of two saved agents, the evaluation of ``zsceval eval --agent A --partner P``.

:func:`cross_play_setup` loads both checkpoints and builds the evaluation env and the action-sampling
generator; :func:`cross_play` plays every seating with them (the agent in seat k, the partner in the
others) and summarizes returns and events; :func:`cross_play_interdependence` counts Biswas et al.'s
interdependencies of fresh episodes of the same pair; :func:`record_cross_play` records the same
episodes as trajectory files, and GIFs (:func:`zsceval.render.seating.seating_gifs`) build on the
same setup.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch

from zsceval.evaluation.episode_infos import EPISODE_INFO_KEYS, InfoRecorder
from zsceval.evaluation.external import load_ego
from zsceval.rl.checkpoint import check_compatible
from zsceval.rl.config import EnvConfig
from zsceval.rl.envs import make_env
from zsceval.rl.play import PlayResult, mean_ci, play, summarize
from zsceval.rl.trainer import resolve_device

__all__ = ["cross_play", "cross_play_interdependence", "cross_play_setup", "record_cross_play"]

MAX_GAMES = 1024
"""Most games the evaluation env runs at once (``num_envs = min(episodes, MAX_GAMES)``)."""


def cross_play_setup(
    agent_path: str, partner_path: str, layout: str, episodes: int, device: str = "cpu", seed: int = 0
):
    """Load two saved agents and build the evaluation env and sampling generator of ``zsceval eval``.

    The env repeats the agent's saved env config (name, horizon, agents) on ``layout`` with
    ``min(episodes, 1024)`` games, standard starts and no seat shuffling; the action-sampling
    generator is seeded ``seed + 1``. :func:`cross_play` and trajectory recording
    (:func:`record_cross_play`) share it, so recorded episodes are the
    evaluated ones.

    Args:
        agent_path: run dir, checkpoint dir or meta.json (``PATH#policy`` picks a policy).
        partner_path: same for the partner.
        layout: layout name; both checkpoints must have been trained on its observation spec.
        episodes: episodes per seating (sets the number of games).
        device: torch device.
        seed: seed of the env; the sampling generator gets ``seed + 1``.

    Returns:
        ``(agent, partner, env, generator, env_cfg)``: the two policies, the batched env
        (``num_envs = min(episodes, 1024)``), a ``torch.Generator`` on the device and the
        :class:`~zsceval.rl.config.EnvConfig` the env was built from.

    Raises:
        CheckpointError: missing/corrupt checkpoint, or trained on another layout/obs spec.
        ConfigError: unknown layout or device.
    """
    dev = resolve_device(device)
    agent, agent_meta = load_ego(agent_path, dev)  # a saved agent, or an external module:attr
    partner, partner_meta = load_ego(partner_path, dev)
    saved_env = ((agent_meta or partner_meta or {}).get("config") or {}).get("env", {})
    known = {f.name for f in dataclasses.fields(EnvConfig)}
    env_cfg = dataclasses.replace(
        EnvConfig(**{k: v for k, v in saved_env.items() if k in known}),
        layout=layout,
        num_envs=min(episodes, MAX_GAMES),
        randomize_seats=False,
        random_start_prob=0.0,
    )
    env = make_env(env_cfg, device=dev, seed=seed, evaluation=True)
    spec = env.spec_dict()
    for meta, what in ((agent_meta, f"agent {agent_path}"), (partner_meta, f"partner {partner_path}")):
        if meta is not None:  # an external agent has no saved spec: its act is checked as it plays
            check_compatible(meta, spec, what)
    return agent, partner, env, torch.Generator(dev).manual_seed(seed + 1), env_cfg


def cross_play(
    agent_path: str, partner_path: str, layout: str, episodes: int, device: str = "cpu", seed: int = 0
) -> dict:
    """Play ``agent`` with ``partner`` in every seating for ``episodes`` episodes each.

    Args:
        agent_path: run dir, checkpoint dir or meta.json (``PATH#policy`` picks a policy).
        partner_path: same for the partner.
        layout: layout name; both checkpoints must have been trained on its observation spec.
        episodes: episodes per seating.
        device: torch device.
        seed: seed of env and action sampling.

    Returns:
        JSON-able dict: ``layout, agent, partner, episodes_per_seating, env`` (the env config),
        ``seatings`` (one summary per seat k of the agent: ``agent_seat``, mean sparse return with
        its 95% CI, shaped returns and mean events per seat, :func:`zsceval.rl.play.summarize`) and
        ``pooled`` (``episodes``, ``sparse_return_mean``, ``sparse_return_ci95`` over all seatings).
        For an env whose ``Step.infos`` give ``win``, ``ended_early``, ``clustered`` and ``score``
        (Yōkai), every seating and ``pooled`` also hold ``yle_metrics``: the YLE paper's R, SR (%),
        NC, SEE (%) and the game score S as ``{name: {"mean", "ci95": [low, high]}}`` with 95%
        bootstrap intervals over episodes (:func:`zsceval.stats.episode_metrics.yle_metrics`,
        seeded by ``seed``).

    Raises:
        CheckpointError: missing/corrupt checkpoint, or trained on another layout/obs spec.
        ConfigError: unknown layout.
    """
    agent, partner, env, gen, env_cfg = cross_play_setup(
        agent_path, partner_path, layout, episodes, device, seed
    )
    seatings, results, infos = [], [], []
    n = env.num_agents
    bound = 0.0 if env_cfg.name == "overcooked" else None  # Overcooked's sparse return is never negative
    for agent_seat in range(n):
        seats = [partner] * n
        seats[agent_seat] = agent
        recorder = InfoRecorder(env)
        result = play(recorder, seats, episodes, gen)
        results.append(result)
        infos.append(recorder.episodes(episodes))
        seatings.append({"agent_seat": agent_seat, **summarize(result, low_bound=bound)})
        if _has_yle_infos(infos[-1]):
            seatings[-1]["yle_metrics"] = _yle_metrics(result.sparse, infos[-1], seed)
    pooled = PlayResult(
        torch.cat([r.sparse for r in results]),
        torch.cat([r.shaped for r in results]),
        torch.cat([r.events for r in results]),
        results[0].event_names,
    )
    mean, lo, hi = mean_ci(pooled.sparse, low_bound=bound)
    pooled_summary = {
        "episodes": int(pooled.sparse.numel()),
        "sparse_return_mean": mean,
        "sparse_return_ci95": [lo, hi],
    }
    if all(_has_yle_infos(i) for i in infos):
        joined = {k: torch.cat([i[k] for i in infos]) for k in EPISODE_INFO_KEYS}
        pooled_summary["yle_metrics"] = _yle_metrics(pooled.sparse, joined, seed)
    return {
        "layout": env.layout.name,
        "agent": agent_path,
        "partner": partner_path,
        "episodes_per_seating": episodes,
        "env": dataclasses.asdict(env_cfg),
        "seatings": seatings,
        "pooled": pooled_summary,
    }


def _has_yle_infos(infos: dict[str, torch.Tensor] | None) -> bool:
    return infos is not None and all(k in infos for k in EPISODE_INFO_KEYS)


def _yle_metrics(returns: torch.Tensor, infos: dict[str, torch.Tensor], seed: int) -> dict:
    """The YLE paper's R, SR, NC, SEE and the game score S with 95% bootstrap CIs (JSON-able; numpy
    rng seeded ``seed``)."""
    import numpy as np

    from zsceval.stats.episode_metrics import metrics_dict, yle_metrics

    m = yle_metrics(
        returns.double().cpu().numpy(),
        infos["win"].numpy(),
        infos["ended_early"].numpy(),
        infos["clustered"].numpy(),
        infos["score"].numpy(),
        rng=np.random.default_rng(seed),
    )
    return metrics_dict(m)


def cross_play_interdependence(
    agent_path: str, partner_path: str, layout: str, episodes: int, device: str = "cpu", seed: int = 0
) -> dict:
    """Interdependence counts of fresh episodes of the pair (same env and seed as :func:`cross_play`).

    Args:
        agent_path: run dir, checkpoint dir or meta.json of the agent.
        partner_path: same for the partner.
        layout: layout name (2 players: the metric is defined for pairs).
        episodes: episodes per seating.
        device: torch device.
        seed: seed of env and action sampling.

    Returns:
        JSON-able dict: ``episodes_per_seating``, ``seatings`` (per seat of the agent, the mean counts
        per episode of :func:`zsceval.evaluation.interdependence.interdependence_summary`) and
        ``pooled`` (the same over both seatings).

    Raises:
        CheckpointError: missing/corrupt checkpoint, or trained on another layout/obs spec.
        ConfigError: unknown layout.
        ValueError: a layout with other than 2 players.
    """
    from zsceval.evaluation.interdependence import interdependence_summary, play_with_interdependence

    agent, partner, env, gen, _ = cross_play_setup(agent_path, partner_path, layout, episodes, device, seed)
    frame = play_with_interdependence(env, agent, partner, episodes, generator=gen)
    per_seat = interdependence_summary(frame, by=("seat",))
    return {
        "episodes_per_seating": episodes,
        "seatings": per_seat.to_dict(orient="records"),
        "pooled": interdependence_summary(frame, by=()).to_dict(orient="records")[0],
    }


def record_cross_play(
    out_dir: str | Path,
    agent_path: str,
    partner_path: str,
    layout: str,
    episodes: int,
    device: str = "cpu",
    seed: int = 0,
) -> list[str]:
    """Record the episodes of ``zsceval eval --agent A --partner P``: one file per seating.

    Builds the env and the sampling generator with :func:`cross_play_setup`, as :func:`cross_play`
    does (the generator is shared by the seatings
    in seat order), so the recorded episodes are the evaluated ones. Seating k puts the agent in
    seat k and the partner in the other seats; it is written to ``out_dir/agent_seat_<k>.json``
    with seat labels ``"agent"`` / ``"partner"`` and ``meta`` ``{agent, partner, agent_seat, seed, ...}``.

    Returns:
        The paths written, in seating order.

    Raises:
        CheckpointError: as ``cross_play`` (missing, corrupt or incompatible checkpoint).
        ConfigError: unknown layout.
        OSError: ``out_dir`` cannot be written.
    """
    from zsceval.interop.trajectory import record_trajectories, save_trajectories

    agent, partner, env, gen, _ = cross_play_setup(agent_path, partner_path, layout, episodes, device, seed)
    paths = []
    for agent_seat in range(env.num_agents):
        seats = [partner] * env.num_agents
        seats[agent_seat] = agent
        labels = ["partner"] * env.num_agents
        labels[agent_seat] = "agent"
        meta = {"agent": agent_path, "partner": partner_path, "agent_seat": agent_seat, "seed": seed}
        trajs = record_trajectories(env, seats, episodes, labels=labels, generator=gen, meta=meta)
        paths.append(str(save_trajectories(Path(out_dir) / f"agent_seat_{agent_seat}.json", trajs)))
    return paths
