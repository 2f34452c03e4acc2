"""Pictures of saved or external agents playing: one seating's episode as frames, and one GIF per seating.

A seating puts the agent in seat ``k`` and the partner in every other seat. :func:`play_seating`
loads both (a checkpoint, or an external ``module:attr``, :mod:`zsceval.rl.external`) and
records one episode of a seating (:func:`zsceval.render.record_episode`); :func:`seating_gifs`
writes one GIF per seating (``zsceval eval --gif``); ``zsceval render --agent`` draws the seating
with the agent in seat 0.
"""

from __future__ import annotations

from pathlib import Path

from zsceval.envs.overcooked.layout import Layout, load_layout
from zsceval.render.episode import Frame, record_episode, write_episode_gif

__all__ = ["play_seating", "seating_gifs"]


def play_seating(
    agent_path: str,
    partner_path: str,
    layout: Layout,
    *,
    agent_seat: int = 0,
    max_steps: int | None = None,
    seed: int = 0,
    device: str = "cpu",
) -> tuple[list[Frame], int]:
    """Load two agents and record one episode with the agent in seat ``agent_seat``.

    The env is a one-game :class:`~zsceval.envs.overcooked.OvercookedEnv` on ``layout`` with the
    horizon the checkpoints were trained with (their ``env_spec``; the partner's when both give
    one; the layout's for two external agents), seeded ``seed``; actions are sampled with a
    generator seeded ``seed``.

    Args:
        agent_path: run dir, checkpoint dir or meta.json of the agent, or an external agent
            ``module:attr`` (:func:`zsceval.rl.external.load_external`).
        partner_path: same for the partner (it may be the agent's).
        layout: the layout to play.
        agent_seat: the agent's seat; the partner sits in all the others.
        max_steps: stop after this many steps (default: the whole episode).
        seed: seed of the env and of action sampling.
        device: torch device.

    Returns:
        ``(frames, horizon)``: ``min(max_steps, horizon) + 1`` frames (:func:`record_episode`) and
        the env's horizon.

    Raises:
        CheckpointError: a missing or corrupt checkpoint, or one trained on another observation
            spec (the message names ``agent PATH`` or ``partner PATH``).
        ValueError: ``agent_seat`` is not a seat of the layout.
        ExternalAgentError: an external agent that does not import, or breaks the protocol.
        ConfigError: an unknown device.
    """
    import torch

    from zsceval.envs.overcooked import OvercookedEnv
    from zsceval.rl.checkpoint import check_compatible, load_agent
    from zsceval.rl.external import is_external, load_external
    from zsceval.rl.trainer import resolve_device

    dev = resolve_device(device)
    env = OvercookedEnv(layout, num_envs=1, device=dev, seed=seed)
    if not 0 <= agent_seat < env.num_agents:
        raise ValueError(f"agent_seat {agent_seat} is not a seat of {layout.name} (0..{env.num_agents - 1})")
    agents = []
    for path, what in ((agent_path, "agent"), (partner_path, "partner")):
        if is_external(path):  # no saved spec: its act is checked as it plays
            agents.append(load_external(path))
            continue
        a, meta = load_agent(path, device=dev)
        horizon = meta.get("env_spec", {}).get("horizon")
        if horizon:
            env = OvercookedEnv(layout, num_envs=1, device=dev, seed=seed, horizon=horizon)
        check_compatible(meta, env.spec_dict(), f"{what} {path}")
        agents.append(a)
    seats = [agents[1]] * env.num_agents
    seats[agent_seat] = agents[0]
    gen = torch.Generator(dev).manual_seed(seed)
    return record_episode(env, seats, gen, max_steps=max_steps), env.horizon


def seating_gifs(
    agent_path: str, partner_path: str, layout: str, out_dir: str | Path, device: str = "cpu", seed: int = 0
) -> list[str]:
    """One GIF per seating (agent in seat k, partner elsewhere) of one episode each, written as
    ``<out_dir>/<layout>_agent_seat<k>.gif`` at 8 frames per second with 32-pixel cells; the
    GIFs of ``zsceval eval --gif``.

    Args:
        agent_path: run dir, checkpoint dir or meta.json of the agent, or an external ``module:attr``.
        partner_path: same for the partner.
        layout: layout name or alias.
        out_dir: folder of the GIFs (created).
        device: torch device.
        seed: seed of every seating's episode (:func:`play_seating`).

    Returns:
        The paths written, in seat order.

    Raises:
        CheckpointError: as :func:`play_seating`.
        ValueError: an unknown layout.
        OSError: a GIF cannot be written.
    """
    lay = load_layout(layout)
    paths = []
    for seat in range(lay.num_players):
        frames, horizon = play_seating(
            agent_path, partner_path, lay, agent_seat=seat, seed=seed, device=device
        )
        path = Path(out_dir) / f"{lay.name}_agent_seat{seat}.gif"
        write_episode_gif(frames, lay, path, 8, 32, horizon)
        paths.append(str(path))
    return paths
