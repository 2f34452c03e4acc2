"""One saved agent against a partner set, the evaluations of ``zsceval eval --partner-set``.

:func:`partner_set_play` plays the agent with every partner of a BR-Prox manifest in every seat and
scores BR-Prox per (partner, seat) (ZSC-Eval Sec. 4.3); :func:`human_proxy_partner` resolves a
``--partner-set`` value that names a behavior-cloned human model (``human-proxy``, a human-proxy
folder or its ``human-proxy.json``) into a partner checkpoint that
:func:`zsceval.evaluation.cross_play.cross_play` plays.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["human_proxy_partner", "partner_set_play"]


def partner_set_play(
    agent_path: str, manifest: str, layout: str, episodes: int, device: str, seed: int
) -> dict:
    """Play ``agent`` with every partner of a partner-set manifest in every seat; BR-Prox per partner.

    BR-Prox per (partner, seat) = min(1, R(agent, partner) / R(BR, partner)), 1 when the BR return
    is <= 0 (ZSC-Eval Sec. 4.3); the BR returns come from the set's ``br_returns.parquet`` (per
    seat) or, without it, the manifest's per-partner BR return.

    Args:
        agent_path: run dir, checkpoint dir or meta.json of the agent (``PATH#policy`` picks a policy).
        manifest: the partner set's ``manifest.json``.
        layout: layout name; the set and the agent must be for it.
        episodes: episodes per (partner, seat).
        device: torch device.
        seed: seed of action sampling.

    Returns:
        JSON-able dict: ``layout, agent, partner_set, episodes_per_seat``, ``br_prox_iqm`` (IQM over
        the units) and ``units``: one record per (partner, seat) with ``partner, partner_level, seat,
        sparse_return`` (mean over the episodes), ``br_return`` and ``br_prox``.

    Raises:
        ManifestError: another layout, missing or altered files (checked before any game is played).
        CheckpointError: the agent cannot be loaded or was trained on another observation spec.
    """
    import pandas as pd
    import torch

    from zsceval.envs.overcooked import OvercookedEnv
    from zsceval.evaluation.manifest import load_manifest
    from zsceval.evaluation.matches import evaluate_agent
    from zsceval.evaluation.pipeline import load_partner_set
    from zsceval.rl.checkpoint import check_compatible, load_policy
    from zsceval.rl.trainer import resolve_device
    from zsceval.stats.metrics import br_prox, iqm

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


def human_proxy_partner(partner_set: str, layout: str) -> tuple[str, dict] | None:
    """The partner checkpoint of a ``--partner-set`` value that names a human proxy, else None.

    Args:
        partner_set: ``"human-proxy"`` (the layout's model in ``eval_partners/<layout>/human-proxy``),
            a human-proxy folder or its ``human-proxy.json``; anything else (a BR-Prox manifest)
            returns None.
        layout: the layout the proxy must have been trained on.

    Returns:
        ``(partner_path, info)``: ``"<folder>/<checkpoint>#human_proxy"`` (a path ``cross_play``
        loads) and ``{"layout", "test_accuracy"}`` of the proxy's record (``test_accuracy``: its
        metrics on the test split, None when absent); None for a value that is not a human proxy.

    Raises:
        HumanProxyError: no such folder (names ``zsceval partners human-proxy``), a malformed record,
            another layout, or a checkpoint that fails verification.
        ValueError: an unknown layout.
    """
    from zsceval.human.partners import is_human_proxy, load_human_proxy, resolve_proxy_dir

    if not is_human_proxy(partner_set):
        return None
    folder = resolve_proxy_dir(partner_set, layout)
    _, record = load_human_proxy(folder, layout)
    info = {"layout": record["layout"], "test_accuracy": (record.get("metrics") or {}).get("test")}
    return f"{folder / record['checkpoint']}#human_proxy", info
