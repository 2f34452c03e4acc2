"""The modes of ``zsceval eval`` as one library call: cross-play with one partner (its trajectories,
GIFs and interdependence counts on request), an evaluation-partner set (BR-Prox, ZSC-Eval
Sec. 4.3), the layout's human proxy, and the unhelpful partners of the strata.

:func:`evaluate_request` checks which flags go together before any game is played and returns one
JSON-able record whose ``mode`` says which it played; the command prints it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["EvalRequest", "EvalRequestError", "evaluate_request"]


class EvalRequestError(ValueError):
    """Flags that do not work together (the message names them)."""


@dataclass(frozen=True)
class EvalRequest:
    """The flags of ``zsceval eval`` (see its ``--help``)."""

    agent: str
    partner: str | None = None
    partner_set: str | None = None
    layout: str | None = None
    episodes: int = 20
    device: str = "cpu"
    seed: int = 0
    save_trajectories: str | None = None
    gif_dir: str | None = None
    interdependence: bool = False
    strata: bool = False


def _check_flags(req: EvalRequest) -> None:
    if req.strata and req.partner is not None:
        raise EvalRequestError("--strata works with --partner-set (or alone), not with --partner")
    strata_alone = req.strata and req.partner is None and req.partner_set is None
    if (req.partner is None) == (req.partner_set is None) and not strata_alone:
        raise EvalRequestError("give exactly one of --partner and --partner-set")


def evaluate_request(req: EvalRequest, check_writable=lambda folder, flag: None) -> dict[str, Any]:
    """Play what ``req`` asks and return the record ``zsceval eval --json`` prints.

    Args:
        req: the flags.
        check_writable: called as ``(folder, flag)`` for each output folder before any game.

    Returns:
        ``{"mode": "unhelpful" | "partner_set" | "cross_play", ...}``: the unhelpful partners'
        returns; or :func:`~zsceval.evaluation.partner_set.partner_set_play`'s record with
        ``shipped_set`` (and ``unhelpful`` with ``strata``); or
        :func:`~zsceval.evaluation.cross_play.cross_play`'s record with ``human_proxy``,
        ``interdependence``, ``trajectory_files`` or ``gifs`` as asked.

    Raises:
        EvalRequestError: flags that do not work together, or a missing ``--layout``.
        ValueError: ``--save-trajectories`` cannot be written; an unknown layout or human proxy.
        ManifestError: a partner set that is unknown, altered or for another layout.
        CheckpointError, ConfigError, ValueError: an agent or a layout that cannot be played.
    """
    _check_flags(req)
    partner, partner_set, layout, shipped, human = req.partner, req.partner_set, req.layout, None, None
    if partner_set is not None:
        from zsceval.evaluation.shipped_sets import is_set_name, resolve_partner_set

        if is_set_name(partner_set):  # a shipped set: resolved and verified before any game
            manifest, layout, shipped = resolve_partner_set(partner_set, layout)
            partner_set = str(manifest)
    if layout is None:
        raise EvalRequestError("Missing option '--layout' (only a named --partner-set implies it)")
    if partner_set is not None:
        from zsceval.evaluation.partner_set import human_proxy_partner

        proxy = human_proxy_partner(partner_set, layout)
        if proxy is not None:  # play the human model as the partner
            (partner, human), partner_set = proxy, None
    _check_outputs(req, partner, partner_set, human, check_writable)
    unhelpful = None
    if req.strata:
        from zsceval.evaluation.strata import unhelpful_play

        unhelpful = unhelpful_play(req.agent, layout, req.episodes, req.device, req.seed)
        if partner_set is None:
            return {"mode": "unhelpful", "layout": layout, "agent": req.agent, "unhelpful": unhelpful}
    if partner_set is not None:
        from zsceval.evaluation.partner_set import partner_set_play

        out = partner_set_play(req.agent, partner_set, layout, req.episodes, req.device, req.seed)
        out["shipped_set"] = shipped.full_name if shipped is not None else None
        out["baselines"] = dict(shipped.baselines) if shipped is not None else {}
        if unhelpful is not None:
            out["unhelpful"] = unhelpful
        return {"mode": "partner_set", **out}
    return {"mode": "cross_play", **_cross_play(req, partner, layout, human)}


def _check_outputs(req: EvalRequest, partner, partner_set, human, check_writable) -> None:
    """The flags that need one partner, and the output folders, before any game."""
    if req.save_trajectories is not None and partner_set is not None:
        raise EvalRequestError("--save-trajectories works with --partner, not with --partner-set")
    if req.interdependence and partner is None:
        raise EvalRequestError("--interdependence works with --partner or --partner-set human-proxy")
    if req.gif_dir is not None and partner is None:
        raise EvalRequestError("--gif works with --partner (not --partner-set)")
    if req.strata and human is not None:
        raise EvalRequestError("--strata works with a set of trained partners, not the human model")
    if req.gif_dir is not None:
        check_writable(req.gif_dir, "--gif")
    if req.save_trajectories is not None:
        check_writable(req.save_trajectories, "--save-trajectories")


def _cross_play(req: EvalRequest, partner: str, layout: str, human: dict | None) -> dict[str, Any]:
    """Cross-play with one partner, and what was asked beside it."""
    from zsceval.evaluation.cross_play import cross_play, cross_play_interdependence, record_cross_play

    args = (req.agent, partner, layout, req.episodes, req.device, req.seed)
    out = cross_play(*args)
    if req.save_trajectories is not None:
        try:
            out["trajectory_files"] = record_cross_play(req.save_trajectories, *args)
        except (OSError, ValueError) as exc:
            raise ValueError(f"--save-trajectories {req.save_trajectories}: {exc}") from None
    if human is not None:
        out["human_proxy"] = human
    if req.interdependence:
        out["interdependence"] = cross_play_interdependence(*args)
    if req.gif_dir is not None:
        from zsceval.render.seating import seating_gifs

        out["gifs"] = seating_gifs(req.agent, partner, layout, req.gif_dir, req.device, req.seed)
    return out
