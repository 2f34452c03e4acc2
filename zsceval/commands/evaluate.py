"""``zsceval eval``: cross-play two saved agents in every seat and report returns and events."""

from __future__ import annotations

import json

import click

from zsceval.commands._common import COUNT, check_writable
from zsceval.commands._common import plural as _n
from zsceval.rl.config import ConfigError


@click.command(name="evaluate")
@click.option(
    "--agent",
    required=True,
    help="Run dir, checkpoint dir or meta.json of the ego agent; or MODULE:ATTR, an agent of your own "
    "(an object with act(obs, avail_actions), or a callable that returns one; docs/external-agents.md).",
)
@click.option(
    "--partner", default=None, help="Run dir, checkpoint dir, meta.json or MODULE:ATTR of the partner."
)
@click.option(
    "--partner-set",
    default=None,
    help="A shipped set's name (zsceval:counter_circuit, zsceval:counter_circuit@1/validation; "
    "`zsceval partners list`) or a partner-set manifest.json: play every partner, report BR-Prox IQM with "
    "95% CIs; or 'human-proxy' (the layout's H_proxy, behavior cloning on the 2019 trials' test split, "
    "shipped in the package) or a "
    "human-proxy folder: report the human-proxy score (return with the human model in both seats).",
)
@click.option(
    "--layout", default=None, help="Layout both agents were trained on. [required; default: a named set's]"
)
@click.option("--episodes", type=COUNT, default=20, show_default=True, help="Episodes per seating.")
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
    help="With --partner (or a human-proxy set): also count each episode's interdependencies (Biswas et al., "
    "'Who is Helping Whom?': constructive, looping, irrelevant; who triggered, who accepted), "
    "docs/interdependence.md.",
)
@click.option(
    "--strata",
    is_flag=True,
    default=False,
    help="Report the partner strata (after Hypothetical Minds): skilled (the set's final, ZSC-Eval's expert "
    "partners) and semi-skilled (mid, moderate) by BR-Prox, and unhelpful partners (one that only stays, "
    "one that acts uniformly at random) by the agent's return with them. With --partner-set, or alone "
    "(unhelpful only).",
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
    strata=False,
) -> None:
    """Cross-play two saved agents in both seats: mean sparse return (95% CI) and event counts;
    or play one agent against a whole evaluation-partner set and report BR-Prox; or against the
    layout's behavior-cloned human model (`zsceval partners human-proxy`) and report its return.

    \b
    Examples:
      zsceval eval --agent runs/sp_counter_circuit_s0 --partner runs/sp_counter_circuit_s1 \\
                   --layout counter_circuit --episodes 50
      zsceval eval --agent runs/sp_counter_circuit_s0 --layout counter_circuit \\
                   --partner-set BENCH_DIR/counter_circuit/partners/set/manifest.json
      zsceval eval --agent runs/sp_counter_circuit_s0 --partner-set zsceval:counter_circuit
      zsceval eval --agent runs/sp_counter_circuit_s0 --layout counter_circuit --partner-set human-proxy
      zsceval eval --agent runs/sp_counter_circuit_s0 --partner-set zsceval:counter_circuit --strata
    """
    from zsceval.evaluation.manifest import ManifestError  # torch: imported here, not for --help
    from zsceval.evaluation.requests import EvalRequest, EvalRequestError, evaluate_request
    from zsceval.rl.checkpoint import CheckpointError

    req = EvalRequest(agent, partner, partner_set, layout, episodes, device, seed, save_trajectories, gif_dir,
                      interdependence, strata)  # fmt: skip
    try:
        out = evaluate_request(req, check_writable)
    except EvalRequestError as exc:
        raise click.UsageError(str(exc)) from None
    except (CheckpointError, ConfigError, ManifestError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    mode = out.pop("mode")
    if as_json:
        click.echo(json.dumps(out, indent=2, default=float))
    elif mode == "unhelpful":
        click.echo(f"layout {out['layout']}: {_n(episodes, 'episode')} per seating")
        _echo_unhelpful(out["unhelpful"])
    elif mode == "partner_set":
        _echo_partner_set(out, episodes)
    else:
        _echo_cross_play(out, episodes)


def _echo_partner_set(out: dict, episodes: int) -> None:
    """Each (partner, seat) unit's BR-Prox, the IQM per level with CIs, and the strata if played."""
    where = f"partner set {out['shipped_set']}, " if out.get("shipped_set") else ""
    click.echo(f"layout {out['layout']}: {where}{_n(episodes, 'episode')} per (partner, seat)")
    for u in out["units"]:
        click.echo(
            f"  {u['partner']:<14} {u['partner_level']:<9} seat {u['seat']}: "
            f"return {u['sparse_return']:6.1f}  BR {u['br_return']:6.1f}  BR-Prox {u['br_prox']:.3f}"
        )
    click.echo(f"  {out['definition']}")
    click.echo(f"  BR-Prox IQM over {len(out['units'])} (partner, seat) units: {out['br_prox_iqm']:.3f}")
    for level, r in out["summary"].items():
        click.echo(
            f"  BR-Prox IQM {level:<8} {r['iqm']:.3f} (95% CI {r['ci_low']:.3f}..{r['ci_high']:.3f}) "
            f"over {_n(r['num_partners'], 'partner')}, {_n(r['num_units'], 'unit')}"
        )
    _echo_nonpositive_br(out.get("nonpositive_br") or {}, len(out["units"]))
    _echo_weak_br(out.get("weak_br") or {})
    few = min(
        (r["num_candidates"] for r in out["summary"].values() if not r.get("informative", True)), default=0
    )
    if few:
        click.echo(
            f"  (the set has {_n(few, 'candidate')} per level: too few for these intervals to inform; "
            "compare on a larger set, e.g. zsceval:counter_circuit@2)"
        )
    _echo_baselines(out.get("baselines") or {}, out["br_prox_iqm"])
    if "unhelpful" not in out:
        return
    click.echo("  strata:")
    for stratum, level in (("skilled", "expert"), ("semi-skilled", "moderate")):
        r = out["summary"].get(level)
        if r is None:
            click.echo(f"    {stratum:<13} ({level}): no such partners in this set")
            continue
        click.echo(
            f"    {stratum:<13} ({level}): BR-Prox IQM {r['iqm']:.3f} "
            f"(95% CI {r['ci_low']:.3f}..{r['ci_high']:.3f})"
        )
    _echo_unhelpful(out["unhelpful"], indent="    ")


def _echo_nonpositive_br(free: dict, num_units: int) -> None:
    """Say how many units score 1 for any agent (their BR return is <= 0) and the IQM without them."""
    if not free.get("units"):
        return
    without = free["br_prox_iqm_without"]
    click.echo(
        f"  {free['units']} of {num_units} units have a BR return <= 0 and score BR-Prox 1 for any agent "
        f"(partners {', '.join(free['partners'])}); without them the IQM is "
        + (f"{without:.3f}" if without is not None else "undefined (no other unit)")
    )


def _echo_weak_br(weak: dict) -> None:
    """Say how many mid units have a fresh BR that the candidate's co-trained BR beats, and the IQM
    with the larger return as the denominator."""
    if not weak.get("units"):
        return
    click.echo(
        f"  {weak['units']} of {weak['checked']} mid units have a fresh BR that the candidate's co-trained "
        f"BR beats (partners {', '.join(weak['partners'])}): their BR-Prox is overstated; with the larger "
        f"return as the denominator the IQM is {weak['br_prox_iqm_best_known']:.3f}"
    )


def _echo_baselines(baselines: dict, agent_iqm: float) -> None:
    """The published baselines' IQMs on the same set, the agent's among them."""
    if not baselines.get("iqm"):
        return
    click.echo(f"  on this set ({baselines['egos']}):")
    names = {"trajedi": "TrajeDi", "this agent": "> this agent"}
    rows = sorted([*baselines["iqm"].items(), ("this agent", agent_iqm)], key=lambda kv: -kv[1])
    for name, value in rows:
        click.echo(f"    {names.get(name, name.upper()):<14} {value:.3f}")


def _echo_cross_play(out: dict, episodes: int) -> None:
    """Each seating's return with its CI and mean events, the pooled return, and what was asked beside."""
    if "gifs" in out:
        click.echo(f"wrote {', '.join(out['gifs'])}")
    click.echo(f"layout {out['layout']}: {_n(episodes, 'episode')} per seating")
    if "human_proxy" in out:
        split = out["human_proxy"].get("trained_on", "test")
        click.echo(
            f"  partner: the behavior-cloned human model H_proxy, fitted on the 2019 trials' {split} "
            "split (human-proxy score = pooled return)"
        )
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
        if "yle_metrics" in s:
            click.echo(f"    {_yle_line(s['yle_metrics'])}")
    p = out["pooled"]
    lo, hi = p["sparse_return_ci95"]
    click.echo(
        f"  pooled: sparse return {p['sparse_return_mean']:.1f} (95% CI {lo:.1f}..{hi:.1f}) "
        f"over {_n(p['episodes'], 'episode')}"
    )
    if "yle_metrics" in p:
        click.echo(f"  pooled {_yle_line(p['yle_metrics'])}")
    if "interdependence" in out:
        click.echo("  interdependence (Biswas et al., 'Who is Helping Whom?'), mean per episode:")
        for s in out["interdependence"]["seatings"]:
            click.echo(
                f"    agent in seat {s['seat']}: constructive {s['constructive']:.1f} (triggered by the "
                f"agent {s['ego_triggered_constructive']:.1f}, by the partner "
                f"{s['partner_triggered_constructive']:.1f}), looping {s['looping']:.1f}, "
                f"irrelevant {s['irrelevant']:.1f}"
            )


def _yle_line(metrics: dict) -> str:
    """``YLE metrics: R -4.0 (95% CI -4.2..-3.8), SR 0.0% (...), NC ..., SEE ...%, S ...`` (YLE Sec. 5;
    S is the game score, what the paper's Table 1 reports as R)."""
    parts = []
    for name, unit, digits in (("R", "", 2), ("SR", "%", 1), ("NC", "", 2), ("SEE", "%", 1), ("S", "", 2)):
        m = metrics[name]
        lo, hi = m["ci95"]
        parts.append(f"{name} {m['mean']:.{digits}f}{unit} (95% CI {lo:.{digits}f}..{hi:.{digits}f})")
    return "YLE metrics: " + ", ".join(parts)


def _echo_unhelpful(unhelpful: dict, indent: str = "  ") -> None:
    """The unhelpful stratum: the agent's mean return with each unhelpful partner (no BR: no BR-Prox)."""
    for name, r in unhelpful.items():
        lo, hi = r["sparse_return_ci95"]
        what = "a partner that only stays" if name == "stay" else "a uniformly random partner"
        click.echo(
            f"{indent}unhelpful ({name}): sparse return {r['sparse_return_mean']:.1f} "
            f"(95% CI {lo:.1f}..{hi:.1f}) with {what}, over {_n(r['episodes'], 'episode')}"
        )
