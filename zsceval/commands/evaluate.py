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


def cross_play_setup(
    agent_path: str, partner_path: str, layout: str, episodes: int, device: str = "cpu", seed: int = 0
):
    """Load two saved agents and build the evaluation env and sampling generator of ``zsceval eval``.

    The env repeats the agent's saved env config (name, horizon, agents) on ``layout`` with
    ``min(episodes, 1024)`` games, standard starts and no seat shuffling; the action-sampling
    generator is seeded ``seed + 1``. :func:`cross_play` and trajectory recording
    (:func:`zsceval.interop.trajectory.record_cross_play`) share it, so recorded episodes are the
    evaluated ones.

    Returns:
        ``(agent, partner, env, generator, env_cfg)``.

    Raises:
        CheckpointError: missing/corrupt checkpoint, or trained on another layout/obs spec.
        ConfigError: unknown layout or device.
    """
    dev = resolve_device(device)
    agent, agent_meta = load_policy(agent_path, device=dev)
    partner, partner_meta = load_policy(partner_path, device=dev)
    saved_env = agent_meta.get("config", {}).get("env", {})
    known = {f.name for f in dataclasses.fields(EnvConfig)}
    env_cfg = dataclasses.replace(
        EnvConfig(**{k: v for k, v in saved_env.items() if k in known}),
        layout=layout,
        num_envs=min(episodes, 1024),
        randomize_seats=False,
        random_start_prob=0.0,
    )
    env = make_env(env_cfg, device=dev, seed=seed, evaluation=True)
    spec = env.spec_dict()
    check_compatible(agent_meta, spec, f"agent {agent_path}")
    check_compatible(partner_meta, spec, f"partner {partner_path}")
    return agent, partner, env, torch.Generator(dev).manual_seed(seed + 1), env_cfg


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
    agent, partner, env, gen, env_cfg = cross_play_setup(
        agent_path, partner_path, layout, episodes, device, seed
    )
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


def partner_set_play(
    agent_path: str, manifest: str, layout: str, episodes: int, device: str, seed: int
) -> dict:
    """Play ``agent`` with every partner of a partner-set manifest in every seat; BR-Prox per partner.

    BR-Prox per (partner, seat) = min(1, R(agent, partner) / R(BR, partner)), 1 when the BR return
    is <= 0 (ZSC-Eval Sec. 4.3); the BR returns come from the set's ``br_returns.parquet`` (per
    seat) or, without it, the manifest's per-partner BR return.

    Raises:
        ManifestError: another layout, missing or altered files (checked before any game is played).
        CheckpointError: the agent cannot be loaded or was trained on another observation spec.
    """
    from pathlib import Path

    import pandas as pd

    from zsceval.envs.overcooked import OvercookedEnv
    from zsceval.evaluation.manifest import load_manifest
    from zsceval.evaluation.matches import evaluate_agent
    from zsceval.evaluation.metrics import br_prox, iqm
    from zsceval.evaluation.pipeline import load_partner_set

    dev = resolve_device(device)
    partners = load_partner_set(manifest, layout, dev)
    agent, meta = load_policy(agent_path, device=dev)
    check_compatible(meta, OvercookedEnv(layout, num_envs=1).spec_dict(), f"agent {agent_path}")
    gen = torch.Generator(dev).manual_seed(seed)
    frame = evaluate_agent(layout, agent, partners, episodes=episodes, generator=gen, device=dev)
    units = frame.groupby(["partner", "partner_level", "seat"], as_index=False)["sparse_return"].mean()
    br_file = Path(manifest).parent / "br_returns.parquet"
    if br_file.is_file():
        br = pd.read_parquet(br_file).groupby(["partner", "seat"], as_index=False)["br_return"].mean()
        units = units.merge(br, on=["partner", "seat"])
    else:
        stored = {p.id: p.br.br_return for p in load_manifest(manifest, verify=False).partners}
        units["br_return"] = units["partner"].map(stored)
    units["br_prox"] = br_prox(units["sparse_return"].to_numpy(), units["br_return"].to_numpy())
    return {
        "layout": layout,
        "agent": agent_path,
        "partner_set": str(manifest),
        "episodes_per_seat": episodes,
        "br_prox_iqm": float(iqm(units["br_prox"].to_numpy())),
        "units": units.to_dict(orient="records"),
    }


def _interdependence(agent_path, partner_path, layout, episodes, device, seed) -> dict:
    """Interdependence counts of fresh episodes of the pair (same env and seed as ``cross_play``)."""
    from zsceval.evaluation.interdependence import interdependence_summary, play_with_interdependence

    agent, partner, env, gen, _ = cross_play_setup(agent_path, partner_path, layout, episodes, device, seed)
    frame = play_with_interdependence(env, agent, partner, episodes, generator=gen)
    per_seat = interdependence_summary(frame, by=("seat",))
    return {
        "episodes_per_seating": episodes,
        "seatings": per_seat.to_dict(orient="records"),
        "pooled": interdependence_summary(frame, by=()).to_dict(orient="records")[0],
    }


@click.command(name="evaluate")
@click.option("--agent", required=True, help="Run dir, checkpoint dir or meta.json of the ego agent.")
@click.option("--partner", default=None, help="Run dir, checkpoint dir or meta.json of the partner.")
@click.option(
    "--partner-set",
    default=None,
    help="A partner-set manifest.json: play every partner, report BR-Prox; or 'human-proxy' (the "
    "layout's BC human model in eval_partners/<layout>/human-proxy) or a human-proxy folder: report the "
    "human-proxy score (return with the human model in both seats).",
)
@click.option("--layout", required=True, help="Layout both agents were trained on.")
@click.option(
    "--episodes", type=click.IntRange(min=1), default=20, show_default=True, help="Episodes per seating."
)
@click.option("--device", default="cpu", show_default=True, help="Torch device.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of env and action sampling.")
@click.option(
    "--json/--no-json", "as_json", default=False, show_default=True, help="Print JSON instead of text."
)
@click.option(
    "--save-trajectories",
    type=click.Path(file_okay=False),
    default=None,
    help="With --partner: write the episodes to DIR/agent_seat_<k>.json (docs/interop.md).",
)
@click.option("--gif", "gif_dir", default=None, help="Also write a GIF of one episode per seating into DIR.")
@click.option(
    "--interdependence",
    is_flag=True,
    default=False,
    help="With --partner (or a human-proxy set): also count each episode's interdependencies (paper 002: "
    "constructive, looping, irrelevant; who triggered, who accepted), docs/interdependence.md.",
)
def evaluate(
    agent,
    partner,
    partner_set,
    layout,
    episodes,
    device,
    seed,
    as_json,
    save_trajectories,
    gif_dir=None,
    interdependence=False,
) -> None:
    """Cross-play two saved agents in both seats: mean sparse return (95% CI) and event counts;
    or play one agent against a whole evaluation-partner set and report BR-Prox; or against the
    layout's behavior-cloned human model (`zsceval partners human-proxy`) and report its return.

    \b
    Examples:
      zsceval eval --agent runs/sp_counter_circuit_s0 --partner runs/sp_counter_circuit_s1 \\
                   --layout counter_circuit --episodes 50
      zsceval eval --agent runs/sp_counter_circuit_s0 --layout counter_circuit \\
                   --partner-set eval_partners/counter_circuit/counter_circuit/partners/set/manifest.json
      zsceval eval --agent runs/sp_counter_circuit_s0 --layout counter_circuit --partner-set human-proxy
    """
    if (partner is None) == (partner_set is None):
        raise click.UsageError("give exactly one of --partner and --partner-set")
    human = None
    if partner_set is not None:
        from zsceval.human.partners import (
            HumanProxyError,
            is_human_proxy,
            load_human_proxy,
            resolve_proxy_dir,
        )

        if is_human_proxy(partner_set):
            folder = resolve_proxy_dir(partner_set, layout)
            try:
                _, record = load_human_proxy(folder, layout)
            except (HumanProxyError, ValueError) as exc:
                raise click.ClickException(str(exc)) from None
            human = record
            partner, partner_set = f"{folder / record['checkpoint']}#human_proxy", None
    if save_trajectories is not None and partner_set is not None:
        raise click.UsageError("--save-trajectories works with --partner, not with --partner-set")
    if interdependence and partner is None:
        raise click.UsageError("--interdependence works with --partner or --partner-set human-proxy")
    if gif_dir is not None and partner is None:
        raise click.UsageError("--gif works with --partner (not --partner-set)")
    if partner_set is not None:
        from zsceval.evaluation.manifest import ManifestError

        try:
            out = partner_set_play(agent, partner_set, layout, episodes, device, seed)
        except (CheckpointError, ConfigError, ManifestError) as exc:
            raise click.ClickException(str(exc)) from None
        if as_json:
            click.echo(json.dumps(out, indent=2, default=float))
            return
        click.echo(f"layout {out['layout']}: {episodes} episodes per (partner, seat)")
        for u in out["units"]:
            click.echo(
                f"  {u['partner']:<14} {u['partner_level']:<9} seat {u['seat']}: "
                f"return {u['sparse_return']:6.1f}  BR {u['br_return']:6.1f}  BR-Prox {u['br_prox']:.3f}"
            )
        click.echo(f"  BR-Prox IQM over {len(out['units'])} (partner, seat) units: {out['br_prox_iqm']:.3f}")
        return
    try:
        out = cross_play(agent, partner, layout, episodes, device, seed)
        if save_trajectories is not None:
            from zsceval.interop.trajectory import record_cross_play

            try:
                out["trajectory_files"] = record_cross_play(
                    save_trajectories, agent, partner, layout, episodes, device, seed
                )
            except (OSError, ValueError) as exc:
                raise click.ClickException(f"--save-trajectories {save_trajectories}: {exc}") from None
    except (CheckpointError, ConfigError) as exc:
        raise click.ClickException(str(exc)) from None
    if human is not None:
        out["human_proxy"] = {"layout": human["layout"], "test_accuracy": human["metrics"].get("test")}
    if interdependence:
        out["interdependence"] = _interdependence(agent, partner, layout, episodes, device, seed)
    if gif_dir is not None:
        from zsceval.commands.render import seating_gifs

        out["gifs"] = seating_gifs(agent, partner, layout, gif_dir, device, seed)
        if not as_json:
            click.echo(f"wrote {', '.join(out['gifs'])}")
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    click.echo(f"layout {out['layout']}: {episodes} episodes per seating")
    if human is not None:
        click.echo("  partner: the behavior-cloned human model (human-proxy score = pooled return)")
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
    if interdependence:
        click.echo("  interdependence (paper 002), mean per episode:")
        for s in out["interdependence"]["seatings"]:
            click.echo(
                f"    agent in seat {s['seat']}: constructive {s['constructive']:.1f} (triggered by the "
                f"agent {s['ego_triggered_constructive']:.1f}, by the partner "
                f"{s['partner_triggered_constructive']:.1f}), looping {s['looping']:.1f}, "
                f"irrelevant {s['irrelevant']:.1f}"
            )
