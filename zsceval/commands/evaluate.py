"""``zsceval eval``: cross-play two saved agents in every seat and report returns and events."""

from __future__ import annotations

import dataclasses
import json

import click
import torch

from zsceval.rl.checkpoint import CheckpointError, check_compatible, load_policy
from zsceval.rl.config import ConfigError, EnvConfig
from zsceval.rl.envs import make_env
from zsceval.rl.play import PlayResult, mean_ci, play, summarize
from zsceval.rl.trainer import resolve_device


def cross_play(
    agent_path: str, partner_path: str, layout: str, episodes: int, device: str = "cpu", seed: int = 0
) -> dict:
    """Play ``agent`` with ``partner`` in both seatings for ``episodes`` episodes each.

    Args:
        agent_path: run dir, checkpoint dir or meta.json (``PATH#policy`` picks a policy).
        partner_path: same for the partner.
        layout: layout name; both checkpoints must have been trained on its observation spec.
        episodes: episodes per seating.
        device: torch device.
        seed: seed of env and action sampling.

    Returns:
        JSON-able dict: per seating summaries (seat of the agent, mean sparse return, 95% CI,
        events per seat) and the pooled mean with its CI.

    Raises:
        CheckpointError: missing/corrupt checkpoint, or trained on another layout/obs spec.
        ConfigError: unknown layout.
    """
    dev = resolve_device(device)
    agent, agent_meta = load_policy(agent_path, device=dev)
    partner, partner_meta = load_policy(partner_path, device=dev)
    saved_env = agent_meta.get("config", {}).get("env", {})
    env_cfg = EnvConfig(
        name=saved_env.get("name", "overcooked"),
        layout=layout,
        num_envs=min(episodes, 1024),
        horizon=int(saved_env.get("horizon", 400)),
    )
    env = make_env(env_cfg, device=dev, seed=seed)
    spec = env.spec_dict()
    check_compatible(agent_meta, spec, f"agent {agent_path}")
    check_compatible(partner_meta, spec, f"partner {partner_path}")
    gen = torch.Generator(dev).manual_seed(seed + 1)
    seatings, results = [], []
    n = env.num_agents
    for agent_seat in range(n):
        seats = [partner] * n
        seats[agent_seat] = agent
        result = play(env, seats, episodes, gen)
        results.append(result)
        seatings.append({"agent_seat": agent_seat, **summarize(result)})
    pooled = PlayResult(
        torch.cat([r.sparse for r in results]),
        torch.cat([r.shaped for r in results]),
        torch.cat([r.events for r in results]),
        results[0].event_names,
    )
    mean, lo, hi = mean_ci(pooled.sparse)
    return {
        "layout": env.layout.name,
        "agent": agent_path,
        "partner": partner_path,
        "episodes_per_seating": episodes,
        "env": dataclasses.asdict(env_cfg),
        "seatings": seatings,
        "pooled": {
            "episodes": int(pooled.sparse.numel()),
            "sparse_return_mean": mean,
            "sparse_return_ci95": [lo, hi],
        },
    }


@click.command(name="evaluate")
@click.option("--agent", required=True, help="Run dir, checkpoint dir or meta.json of the ego agent.")
@click.option("--partner", required=True, help="Run dir, checkpoint dir or meta.json of the partner.")
@click.option("--layout", required=True, help="Layout both agents were trained on.")
@click.option(
    "--episodes", type=click.IntRange(min=1), default=20, show_default=True, help="Episodes per seating."
)
@click.option("--device", default="cpu", show_default=True, help="Torch device.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of env and action sampling.")
@click.option(
    "--json/--no-json", "as_json", default=False, show_default=True, help="Print JSON instead of text."
)
def evaluate(agent, partner, layout, episodes, device, seed, as_json) -> None:
    """Cross-play two saved agents in both seats: mean sparse return (95% CI) and event counts.

    \b
    Example:
      zsceval eval --agent runs/sp_counter_circuit_s0 --partner runs/sp_counter_circuit_s1 \\
                   --layout counter_circuit --episodes 50
    """
    try:
        out = cross_play(agent, partner, layout, episodes, device, seed)
    except (CheckpointError, ConfigError) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    click.echo(f"layout {out['layout']}: {episodes} episodes per seating")
    for s in out["seatings"]:
        lo, hi = s["sparse_return_ci95"]
        click.echo(
            f"  agent in seat {s['agent_seat']}: sparse return {s['sparse_return_mean']:.1f} "
            f"(95% CI {lo:.1f}..{hi:.1f})"
        )
        for seat, events in enumerate(s["events_mean_by_seat"]):
            who = "agent" if seat == s["agent_seat"] else "partner"
            nonzero = ", ".join(f"{k} {v:.1f}" for k, v in events.items() if v)
            click.echo(f"    seat {seat} ({who}) mean events: {nonzero or 'none'}")
    p = out["pooled"]
    lo, hi = p["sparse_return_ci95"]
    click.echo(
        f"  pooled: sparse return {p['sparse_return_mean']:.1f} (95% CI {lo:.1f}..{hi:.1f}) "
        f"over {p['episodes']} episodes"
    )
