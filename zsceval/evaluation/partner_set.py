"""One saved agent against a partner set, the evaluations of ``zsceval eval --partner-set``.

:func:`partner_set_play` plays the agent with every partner of a BR-Prox manifest in every seat and
scores BR-Prox per (partner, seat) (ZSC-Eval Sec. 4.3), with the IQM and its 95% bootstrap CI over
all partners and per level (moderate, expert); :func:`evaluate_partner_set` is the one-call API that
also takes a shipped set's name (``zsceval:counter_circuit``, :mod:`zsceval.evaluation.shipped_sets`);
:func:`human_proxy_partner` resolves a
``--partner-set`` value that names a behavior-cloned human model (``human-proxy``, a human-proxy
folder or its ``human-proxy.json``) into a partner checkpoint that
:func:`zsceval.evaluation.cross_play.cross_play` plays.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BR_PROX_DEFINITION",
    "COTRAINED_BR_TABLE",
    "WEAK_BR_MARGIN",
    "WEAK_BR_RATIO",
    "best_known_br_returns",
    "evaluate_partner_set",
    "human_proxy_partner",
    "nonpositive_br_units",
    "partner_set_play",
    "set_br_returns",
    "weak_br_summary",
    "weak_br_units",
]

COTRAINED_BR_TABLE = "cotrained_br_returns.parquet"
"""A set folder's table of its mid partners with their candidates' co-trained BRs at the same
checkpoint (2 players; written by ``partners.manifest``, :mod:`zsceval.generation.pipeline`): one row
per (partner, seat, episode), ``layout, partner, seat, episode, cotrained_br_return``."""

WEAK_BR_RATIO = 1.1
"""A co-trained BR beats the fresh one where its mean return exceeds ``WEAK_BR_RATIO`` x the fresh
BR's + ``WEAK_BR_MARGIN`` (sparse return points, 20 per soup; per (partner, seat))."""
WEAK_BR_MARGIN = 1.0

BR_PROX_DEFINITION = (
    "BR-Prox = min(1, R(agent, partner) / R(BR, partner)) per (partner, seat), 1 where the partner's "
    "best response scores R(BR, partner) <= 0; 1 means the agent does as well with the partner as its "
    "best response (ZSC-Eval Sec. 4.3)"
)
"""The one-line definition that scores print beside the number."""


CI_REPS = 2000
"""Bootstrap replicates of the BR-Prox IQM's confidence intervals."""


def evaluate_partner_set(
    agent: str,
    partner_set: str,
    *,
    layout: str | None = None,
    episodes: int = 20,
    device: str = "cpu",
    seed: int = 0,
    reps: int = CI_REPS,
) -> dict:
    """Score one saved agent against a partner set in one call: BR-Prox IQM with 95% CIs.

    Args:
        agent: run dir, checkpoint dir or meta.json of the agent (``PATH#policy`` picks a policy).
        partner_set: a shipped set's name (``zsceval:counter_circuit``, ``...@1/validation``) or a
            partner-set ``manifest.json``.
        layout: the layout to evaluate on; a shipped set's own when None (a manifest path needs it).
        episodes: episodes per (partner, seat).
        device: torch device.
        seed: seed of action sampling and of the bootstrap.
        reps: bootstrap replicates.

    Returns:
        :func:`partner_set_play`'s dict, plus ``shipped_set`` (the set's full name, or None).

    Raises:
        UnknownPartnerSetError: an unknown set name (the valid names listed).
        ManifestError: the set fails verification (engine, layout, a file named), before any game.
        ValueError: a manifest path without ``layout``.
        CheckpointError: the agent cannot be loaded or was trained on another observation spec.
    """
    from zsceval.evaluation.shipped_sets import resolve_partner_set

    manifest, layout, entry = resolve_partner_set(partner_set, layout)
    out = partner_set_play(agent, str(manifest), layout, episodes, device, seed, reps=reps)
    out["shipped_set"] = entry.full_name if entry is not None else None
    return out


def set_br_returns(manifest: str | Path, layout: str) -> pd.DataFrame:
    """The BR reference returns of a partner set, in the report's ``br_returns`` schema.

    Args:
        manifest: the partner set's ``manifest.json``.
        layout: the layout the set is for (stored canonical, as the results' ``layout`` column).

    Returns:
        ``pandas.DataFrame`` with ``layout, partner, seat, br_return`` (float, sparse return of the
        partner's BR, per seat) from the set's ``br_returns.parquet``; without that file, one row per
        partner (no ``seat``) with the manifest's stored BR return.

    Raises:
        ManifestError: the manifest cannot be read (without ``br_returns.parquet``), or that file is
            corrupt, truncated or lacks its columns (named).
    """
    import pandas as pd

    from zsceval.envs.scenarios import resolve_scenario
    from zsceval.evaluation.manifest import ManifestError, load_manifest

    br_file = Path(manifest).parent / "br_returns.parquet"
    if br_file.is_file():
        try:
            table = pd.read_parquet(br_file)
        except Exception as exc:  # pyarrow's errors (a truncated or corrupt file) share no base class
            raise ManifestError(
                f"cannot read {br_file}: corrupt or truncated ({type(exc).__name__})"
            ) from None
        if not {"partner", "br_return"} <= set(table.columns):
            raise ManifestError(
                f"{br_file} lacks the columns partner and br_return (has {list(table.columns)})"
            )
    else:
        stored = {p.id: p.br.br_return for p in load_manifest(manifest, verify=False).partners}
        table = pd.DataFrame({"partner": list(stored), "br_return": list(stored.values())})
    return table.assign(layout=resolve_scenario(layout))


def partner_set_play(
    agent_path: str,
    manifest: str,
    layout: str,
    episodes: int,
    device: str,
    seed: int,
    *,
    reps: int = CI_REPS,
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
        seed: seed of action sampling and of the bootstrap.
        reps: bootstrap replicates of the confidence intervals.

    Returns:
        JSON-able dict: ``layout, agent, definition`` (:data:`BR_PROX_DEFINITION`), ``partner_set,
        episodes_per_seat``, ``br_prox_iqm`` (IQM over the units), ``summary``: per level ``all``,
        ``moderate``, ``expert`` (those the set has) the ``iqm, ci_low, ci_high`` (95% percentile
        bootstrap over partners, a partner with both its seats:
        :func:`~zsceval.stats.metrics.br_prox_summary`), ``num_partners, num_units, num_candidates``
        and ``informative`` (at least
        :data:`~zsceval.stats.metrics.MIN_INFORMATIVE_CANDIDATES` candidates; the interval resamples
        candidates, :func:`~zsceval.stats.metrics.candidate_array`); and
        ``units``: one record per (partner, seat) with ``partner, partner_level, seat,
        sparse_return`` (mean over the episodes), ``br_return`` and ``br_prox``; and
        ``nonpositive_br`` (:func:`nonpositive_br_units`): the units that score 1 for any agent;
        for a set with :data:`COTRAINED_BR_TABLE`, ``weak_br`` (:func:`weak_br_summary`): the mid
        units whose fresh BR its candidate's co-trained BR beats, and the IQM with the larger.

    Raises:
        ManifestError: another layout, missing or altered files (checked before any game is played).
        CheckpointError: the agent cannot be loaded or was trained on another observation spec.
    """
    import numpy as np
    import pandas as pd
    import torch

    from zsceval.envs.overcooked import OvercookedEnv
    from zsceval.envs.scenarios import resolve_scenario
    from zsceval.evaluation.ego_evaluation import load_partner_set
    from zsceval.evaluation.external import load_ego
    from zsceval.evaluation.matches import evaluate_agent
    from zsceval.rl.checkpoint import check_compatible
    from zsceval.rl.trainer import resolve_device
    from zsceval.stats.metrics import br_prox, br_prox_summary, iqm

    dev = resolve_device(device)
    partners = load_partner_set(manifest, layout, dev)
    agent, meta = load_ego(agent_path, dev)  # a saved agent, or an external module:attr
    if meta is not None:
        check_compatible(meta, OvercookedEnv(layout, num_envs=1).spec_dict(), f"agent {agent_path}")
    gen = torch.Generator(dev).manual_seed(seed)
    labels = {"algorithm": "agent", "ego_seed": 0}
    frame = evaluate_agent(
        layout, agent, partners, episodes=episodes, generator=gen, device=dev, labels=labels
    )
    frame["layout"] = resolve_scenario(layout)  # the BR table names the canonical layout
    units = frame.groupby(["partner", "partner_level", "seat"], as_index=False)["sparse_return"].mean()
    br_table = set_br_returns(manifest, layout)
    keys = ["partner", "seat"] if "seat" in br_table.columns else ["partner"]
    units = units.merge(br_table.groupby(keys, as_index=False)["br_return"].mean(), on=keys)
    units["br_prox"] = br_prox(units["sparse_return"].to_numpy(), units["br_return"].to_numpy())
    rows = br_prox_summary(frame, br_table, rng=np.random.default_rng(seed), reps=reps)
    summary = {
        r.partner_level: {"iqm": float(r.iqm), "ci_low": float(r.ci_low), "ci_high": float(r.ci_high),
                          "num_partners": int(r.num_partners), "num_units": int(r.num_units),
                          "num_candidates": int(r.num_candidates), "informative": bool(r.informative)}
        for r in rows.itertuples()
    }  # fmt: skip
    result = {
        "layout": layout,
        "agent": agent_path,
        "definition": BR_PROX_DEFINITION,
        "partner_set": str(manifest),
        "episodes_per_seat": episodes,
        "br_prox_iqm": float(iqm(units["br_prox"].to_numpy())),
        "summary": summary,
        "units": units.to_dict(orient="records"),
        "nonpositive_br": nonpositive_br_units(units),
    }
    cotrained = Path(manifest).parent / COTRAINED_BR_TABLE
    if cotrained.is_file():
        result["weak_br"] = weak_br_summary(units, pd.read_parquet(cotrained))
    return result


def nonpositive_br_units(units: pd.DataFrame) -> dict:
    """The (partner, seat) units whose best response scores <= 0, which BR-Prox scores 1 for any agent.

    ZSC-Eval's rule (Sec. 4.3) gives such a unit BR-Prox 1, so it raises every agent's score alike;
    on ``zsceval:blocked_corridor@2`` 12 of the 40 units are such (docs/results.md).

    Args:
        units: one row per (partner, seat) with columns ``partner`` (str), ``br_return`` (float, the
            set's BR return: sparse reward per episode) and ``br_prox`` (float in [0, 1]).

    Returns:
        ``units`` (int, how many), ``partners`` (their partner ids, sorted, each once) and
        ``br_prox_iqm_without`` (float, the IQM BR-Prox of the other units; None when every unit is
        such). Raises KeyError when a column is missing.
    """
    from zsceval.stats.metrics import iqm

    free = (units["br_return"] <= 0).to_numpy()
    rest = units["br_prox"].to_numpy()[~free]
    return {
        "units": int(free.sum()),
        "partners": sorted(set(units["partner"].to_numpy()[free].tolist())),
        "br_prox_iqm_without": float(iqm(rest)) if len(rest) else None,
    }


def _unit_keys(br_returns: pd.DataFrame, cotrained: pd.DataFrame) -> list[str]:
    """The unit keys two BR tables share: ``partner, seat``, with ``layout`` where both have it."""
    return [k for k in ("layout", "partner", "seat") if k in br_returns.columns and k in cotrained.columns]


def weak_br_units(br_returns: pd.DataFrame, cotrained: pd.DataFrame) -> pd.DataFrame:
    """The (partner, seat) units whose candidate's co-trained BR returns clearly more than the BR
    that BR-Prox divides by.

    Args:
        br_returns: the BR reference returns (``[layout,] partner, seat, br_return``; per episode or
            per unit).
        cotrained: the mid partners with their candidates' co-trained BRs per episode (``layout,
            partner, seat, cotrained_br_return``; :data:`COTRAINED_BR_TABLE` of a set made by
            ``partners.manifest``); ``seat`` is the BR's seat in both, ``layout`` is matched where
            both tables have it.

    Returns:
        One row per such unit, sorted: ``[layout,] partner, seat, br_return, cotrained_br_return``
        (episode means) where ``cotrained_br_return > WEAK_BR_RATIO * br_return + WEAK_BR_MARGIN``.

    Raises:
        KeyError: a table without those columns.
    """
    import pandas as pd

    keys = _unit_keys(br_returns, cotrained)
    fresh = br_returns.groupby(keys)["br_return"].mean()
    other = cotrained.groupby(keys)["cotrained_br_return"].mean()
    both = pd.concat([fresh, other], axis=1, join="inner").reset_index()
    weak = both["cotrained_br_return"] > WEAK_BR_RATIO * both["br_return"] + WEAK_BR_MARGIN
    return both[weak].sort_values(keys).reset_index(drop=True)


def best_known_br_returns(br_returns: pd.DataFrame, cotrained: pd.DataFrame) -> pd.DataFrame:
    """The BR reference returns with each unit's larger known return: where the candidate's co-trained
    BR returns more with a mid partner than the set's (fresh) BR, its mean replaces the unit's rows.

    Any agent's return with a partner is a lower bound on the best response's, so the larger is the
    better estimate of R(BR, partner); ZSC-Eval's protocol divides by the fresh BR's (Sec. 4.3), so
    this is a second reading, not the protocol.

    Args:
        br_returns: the BR reference returns (``[layout,] partner, seat, br_return``; per episode or
            per unit; sparse return, 20 per soup).
        cotrained: :data:`COTRAINED_BR_TABLE`'s rows (``layout, partner, seat, cotrained_br_return``);
            ``layout`` is matched where both tables have it.

    Returns:
        A copy of ``br_returns`` whose ``br_return`` (float) is, on every row of a unit where the
        co-trained BR's mean is larger, that mean. Raises KeyError when a column is missing.
    """
    keys = _unit_keys(br_returns, cotrained)
    fresh = br_returns.groupby(keys)["br_return"].transform("mean")
    other = br_returns[keys].join(cotrained.groupby(keys)["cotrained_br_return"].mean(), on=keys)
    larger = (other["cotrained_br_return"] > fresh).to_numpy()
    out = br_returns.copy()
    out.loc[larger, "br_return"] = other.loc[larger, "cotrained_br_return"].to_numpy()
    return out


def weak_br_summary(units: pd.DataFrame, cotrained: pd.DataFrame) -> dict:
    """The mid (partner, seat) units whose fresh BR the candidate's co-trained BR beats
    (:func:`weak_br_units`), and the agent's IQM BR-Prox with the larger of the two returns as the
    denominator of every mid unit (any agent's return is a lower bound on the best response's; not
    ZSC-Eval's protocol, which divides by the fresh BR's).

    Args:
        units: one row per (partner, seat): ``partner`` (str), ``seat`` (int), ``sparse_return``
            (the agent's mean), ``br_return`` (the set's, float).
        cotrained: the set's :data:`COTRAINED_BR_TABLE`.

    Returns:
        ``units`` (int, how many are beaten), ``checked`` (int, mid units with a co-trained BR),
        ``partners`` (their ids, sorted, each once), ``br_prox_iqm_best_known`` (float). Raises
        KeyError when a column is missing.
    """
    from zsceval.stats.metrics import br_prox, iqm

    weak = weak_br_units(units, cotrained)
    best = best_known_br_returns(units, cotrained)["br_return"].to_numpy(float)
    return {
        "units": len(weak),
        "checked": len(cotrained[["partner", "seat"]].drop_duplicates()),
        "partners": sorted(set(weak["partner"].astype(str))),
        "br_prox_iqm_best_known": float(iqm(br_prox(units["sparse_return"].to_numpy(float), best))),
    }


def human_proxy_partner(partner_set: str, layout: str) -> tuple[str, dict] | None:
    """The partner checkpoint of a ``--partner-set`` value that names a human proxy, else None.

    Args:
        partner_set: ``"human-proxy"`` (the layout's shipped H_proxy, fitted on the 2019 trials'
            test split), an H_proxy folder or its ``human-proxy.json``; anything else (a BR-Prox
            manifest) returns None.
        layout: the layout the proxy must have been trained on.

    Returns:
        ``(partner_path, info)``: ``"<folder>/<checkpoint>#human_proxy"`` (a path ``cross_play``
        loads) and ``{"layout", "trained_on", "held_out_accuracy"}`` of the proxy's record
        (``held_out_accuracy``: its metrics on the other split, the train split for H_proxy; None
        when absent); None for a value that is not a human proxy.

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
    info = {
        "layout": record["layout"],
        "trained_on": record["trained_on"],
        "held_out_accuracy": (record.get("metrics") or {}).get("held_out"),
    }
    return f"{folder / record['checkpoint']}#human_proxy", info
