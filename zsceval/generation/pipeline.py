"""The ZSC-Eval partner pipeline as jobs (ZSC-Eval Alg. 1): candidates, features, selection, mid BRs,
partner-set manifest.

Every function here is a registered job kind (:mod:`zsceval.execution.jobs`): it reads its inputs
from finished jobs' output folders and writes its own folder; training jobs resume from their
last resumable checkpoint when re-run after a kill.

Stages for one layout:

1. ``train`` (:func:`zsceval.training.jobs.train_job`) with algorithm ``biased`` for each sampled
   weight vector w: a *candidate* (pi_w and its co-trained best response), with a trail of
   checkpoints.
2. ``candidate.evaluate``: play (pi_w, BR) in both seatings; the behavior features are the BR's
   mean event counts per episode (classic layouts: the first 13 events plus the sparse return;
   multi-recipe: all 29 events; docs/reference-protocol.md "Pipeline" item 5); record the final return and the
   ``mid`` checkpoint (training sparse return closest to half of the final, final = mean of the
   last 5 logged values; item 3).
3. ``partners.select``: drop candidates whose final return <= ``min_return`` (10 in ZSC-Eval),
   select K by BR-Div with a k-DPP (exact enumeration when small) on the raw features, which
   :func:`~zsceval.generation.selection.select_partners` normalizes once.
4. ``train`` with algorithm ``br`` against each selected ``mid`` checkpoint.
5. ``partners.manifest``: export the 2K partners (K finals, K mids) and their BRs into a
   self-contained folder, measure each BR's return with its partner in both seats, write the
   manifest (checksums) and ``br_returns.parquet``; and, as a check of the mid BRs (2 players),
   ``cotrained_br_returns.parquet``: each mid partner with its candidate's co-trained BR at the same
   checkpoint.

Step 6, an ego agent against the partner set (``ego.evaluate``), is evaluation:
:mod:`zsceval.evaluation.ego_evaluation`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from zsceval.envs.overcooked import load_layout
from zsceval.envs.scenarios import is_football, num_players, resolve_scenario
from zsceval.evaluation.combinations import br_key, seat_combinations
from zsceval.evaluation.manifest import (
    BRReference,
    CombinationBR,
    PartnerEntry,
    PartnerSetManifest,
    SelectionRecord,
    make_file_ref,
    write_manifest,
)
from zsceval.evaluation.matches import (
    PartnerSpec,
    combination_label,
    evaluate_br_references,
    evaluate_combination_brs,
    play_games,
)
from zsceval.evaluation.partner_set import COTRAINED_BR_TABLE
from zsceval.execution import job_ids
from zsceval.execution.jobs import JobInputError, job_kind
from zsceval.rl.checkpoint import CheckpointError, list_checkpoints, load_policy

from .export import candidate_record, export_agent
from .selection import select_partners

__all__ = ["feature_names", "mid_checkpoint"]

CLASSIC_FEATURE_EVENTS = 13  # put_onion_on_X .. STAY; MOVEMENT and IDLE_* are dropped


def _result(job_dir: Path) -> dict:
    """The result a finished job stored in its ``DONE.json``."""
    return json.loads((Path(job_dir) / "DONE.json").read_text())["result"]


def feature_names(event_names: tuple[str, ...], multi_recipe: bool) -> list[str]:
    """Behavior-feature columns: classic = first 13 events + ``sparse_reward``; multi-recipe = 29
    events; Football (``multi_recipe=True``) = its 8 events."""
    if multi_recipe:
        return list(event_names)
    return list(event_names[:CLASSIC_FEATURE_EVENTS]) + ["sparse_reward"]


def mid_checkpoint(run_dir: Path) -> tuple[Path, float, float]:
    """The ``mid`` checkpoint of a run: training sparse return closest to half of the final.

    final = mean of the last 5 logged training sparse returns (ZSC-Eval); each checkpoint's return
    is the last logged value at or before its step.

    Returns:
        ``(checkpoint dir, its training return, final return)``.

    Raises:
        CheckpointError: no checkpoints or no logged returns.
    """
    metrics = pd.read_csv(run_dir / "metrics.csv")
    if "sparse_return" not in metrics:
        raise CheckpointError(f"{run_dir}: no finished episode was logged; train the candidate longer")
    metrics = metrics.dropna(subset=["sparse_return"])
    ckpts = list_checkpoints(run_dir)
    if metrics.empty or not ckpts:
        raise CheckpointError(f"{run_dir}: need logged returns and checkpoints to pick a mid checkpoint")
    final = float(metrics["sparse_return"].tail(5).mean())
    best, best_gap, best_ret = ckpts[0], float("inf"), 0.0
    for ckpt in ckpts:
        step = int(ckpt.name.split("_")[1])
        logged = metrics[metrics["env_steps"] <= step]["sparse_return"]
        ret = float(logged.iloc[-1]) if len(logged) else 0.0
        if abs(ret - final / 2) < best_gap:
            best, best_gap, best_ret = ckpt, abs(ret - final / 2), ret
    return best, best_ret, final


# -- 2. candidate features ----------------------------------------------------------------------------
@job_kind("candidate.evaluate")
def candidate_evaluate(params: dict, out: Path, needs: dict) -> dict:
    """Features and mid checkpoint of a candidate (params: ``layout, episodes, seed, device``)."""
    (train_dir,) = needs.values()
    run = Path(train_dir) / "run"
    device = params.get("device", "cpu")
    biased, _ = load_policy(run, "biased", device)
    br, _ = load_policy(run, "br", device)
    E, n = int(params["episodes"]), num_players(params["layout"])
    # Games sE..(s+1)E-1: biased in seat s, its BR in every other seat (two players: [0, 1] then [1, 0]).
    biased_seat = torch.arange(n).repeat_interleave(E)
    assignment = torch.ones(n * E, n, dtype=torch.int64)
    assignment[torch.arange(n * E), biased_seat] = 0
    gen = torch.Generator(device=device).manual_seed(int(params.get("seed", 0)))
    res = play_games(params["layout"], [biased, br], assignment, generator=gen, device=device)
    br_rows = (assignment == 1).unsqueeze(-1).float()  # [G, n, 1]: the BR's seats
    br_events = ((res.events * br_rows).sum(1) / br_rows.sum(1)).mean(0).numpy()
    # every event for multi-recipe layouts and Football; classic layouts drop MOVEMENT and IDLE_*
    multi = is_football(params["layout"]) or load_layout(params["layout"]).dynamics == "multi_recipe"
    names = feature_names(res.event_names, multi)
    sparse = float(res.sparse.mean())
    features = list(map(float, br_events[: len(names) - (0 if multi else 1)]))
    if not multi:
        features.append(sparse)
    mid, mid_ret, train_final = mid_checkpoint(run)
    return {
        "feature_names": names,
        "features": features,
        "final_return": sparse,
        "train_final_return": train_final,
        "final_checkpoint": str(list_checkpoints(run)[-1].relative_to(train_dir)),
        "mid_checkpoint": str(mid.relative_to(train_dir)),
        "mid_train_return": mid_ret,
        "weights": params.get("weights"),
    }


# -- 3. selection ---------------------------------------------------------------------------------------
@job_kind("partners.select")
def partners_select(params: dict, out: Path, needs: dict) -> dict:
    """Select K candidates by BR-Div (params: ``k, seed, num_samples, min_return``).

    Raises:
        ValueError: fewer usable candidates than K (before any sampling).
    """
    # needs: {".../candidates/<cid>/evaluate": path}
    results = {job_ids.parse(job_id).candidate: _result(path) for job_id, path in needs.items()}
    kept = {cid: r for cid, r in results.items() if r["final_return"] > params.get("min_return", 10.0)}
    k = int(params["k"])
    if len(kept) < k:
        raise JobInputError(
            f"only {len(kept)} of {len(results)} candidates have a final return > "
            f"{params.get('min_return', 10.0)}; cannot select K={k}. Train candidates longer "
            "(`partners generate --steps`, suite key partners.candidate_steps), train more candidates "
            "(--candidates, partners.candidates), lower K (-k, partners.k), or lower the threshold "
            "(`partners select --min-return`, suite key partners.min_return)"
        )
    ids = sorted(kept)
    features = np.array([kept[c]["features"] for c in ids], dtype=float)
    rng = np.random.default_rng(int(params.get("seed", 0)))
    # raw features: select_partners normalizes them once (column max + 1e-3), as the reference selection
    # script does
    sel = select_partners(features, k, rng=rng, num_samples=int(params.get("num_samples", 1_000_000)))
    chosen = [ids[i] for i in sel.indices]
    frame = pd.DataFrame(features, columns=next(iter(kept.values()))["feature_names"])
    frame.insert(0, "candidate_id", ids)
    frame["selected"] = frame["candidate_id"].isin(chosen)
    frame.to_parquet(out / "features.parquet")
    return {
        "candidate_ids": ids,
        "selected_ids": chosen,
        "dropped": sorted(set(results) - set(kept)),
        "method": sel.method,
        "determinant": float(sel.determinant),
        "num_samples": int(sel.num_samples),
    }


# -- 5. manifest ----------------------------------------------------------------------------------------
def _cotrained_mid_brs(
    params: dict, needs: dict, selected: list[str], partners: list[PartnerSpec], device: str
) -> pd.DataFrame:
    """Each ``mid`` partner with its candidate's co-trained BR at the same checkpoint (2 players).

    The fresh mid BR (stage 4) is the set's BR-Prox reference; the co-trained BR is a second agent
    whose return with the same partner is also a lower bound on the best response's, so where it is
    larger the fresh BR's return understates R(BR, partner) and the unit's BR-Prox is overstated
    (ZSC-Eval Sec. 4.3; :func:`zsceval.bench.br_notes.weak_br_notes` names such units). Played like
    :func:`evaluate_br_references` with its own generator (seed + 1), so ``br_returns.parquet`` is
    the same with or without this table.

    Returns:
        One row per (mid partner, seat, episode): ``layout, partner, seat, episode,
        cotrained_br_return`` (``seat``: the co-trained BR's; sparse return, 20 per soup).
    """
    layout = params["layout"]
    mids = []
    for cid in selected:
        train_id, eval_id = params["candidates"][cid]
        mid = Path(needs[train_id]) / _result(needs[eval_id])["mid_checkpoint"]
        partner = next(p for p in partners if p.id == f"{cid}_mid")
        mids.append(PartnerSpec(partner.id, partner.level, partner.policy, load_policy(mid, "br", device)[0]))
    gen = torch.Generator(device=device).manual_seed(int(params.get("seed", 0)) + 1)
    episodes = int(params["episodes"])
    frame = evaluate_br_references(layout, mids, episodes=episodes, generator=gen, device=device)
    return frame.rename(columns={"br_return": "cotrained_br_return"})


@job_kind("partners.manifest")
def partners_manifest(params: dict, out: Path, needs: dict) -> dict:
    """Export partners and BRs, measure BR returns, write ``manifest.json`` + ``br_returns.parquet``.

    params: ``layout, seed, episodes, device, select`` (id of the select job), ``candidates``
    ({candidate id: [train-job id, evaluate-job id]}), ``mid_brs`` ({candidate id: train-job id}),
    and for n > 2 players ``combination_brs`` ({"id_a+id_b": train-job id}: the BRs of partner
    pairs). Then ``br_returns.parquet`` holds one row per (combination, episode) of the partners with
    the BR of the combination's set of partners (:func:`evaluate_combination_brs`).
    """
    layout, device = params["layout"], params.get("device", "cpu")
    n = num_players(layout)
    select = _result(needs[params["select"]])
    entries, specs, records = [], [], {}
    first = None
    for cid in select["selected_ids"]:
        train_id, eval_id = params["candidates"][cid]
        ev, train_dir = _result(needs[eval_id]), Path(needs[train_id])
        first = first or ev
        br_dir = Path(needs[params["mid_brs"][cid]]) / "run"
        for level, ckpt, br_ckpt, br_name in (
            ("final", train_dir / ev["final_checkpoint"], train_dir / ev["final_checkpoint"], "br"),
            ("mid", train_dir / ev["mid_checkpoint"], list_checkpoints(br_dir)[-1], "br"),
        ):
            pid = f"{cid}_{level}"
            p_meta = export_agent(out / "policies" / pid, ckpt, "biased", device)
            b_meta = export_agent(out / "brs" / pid, br_ckpt, br_name, device)
            specs.append((pid, level, p_meta, b_meta, ev["features"]))
            records[pid] = candidate_record(layout, ev, p_meta)
    partners = [
        PartnerSpec(
            pid,
            "expert" if level == "final" else "moderate",
            load_policy(p_meta, "biased", device)[0],
            load_policy(b_meta, "br", device)[0],
        )
        for pid, level, p_meta, b_meta, _ in specs
    ]
    gen = torch.Generator(device=device).manual_seed(int(params.get("seed", 0)))
    ids = [s[0] for s in specs]
    combination_brs, set_returns = [], {}
    if n > 2:  # Football: every combination of partners, with the BR of its set of partners
        sets = {}
        for key, job_id in params.get("combination_brs", {}).items():
            members = tuple(key.split("+"))
            b_meta = export_agent(
                out / "combination_brs" / key, list_checkpoints(Path(needs[job_id]) / "run")[-1], "br", device
            )
            sets[tuple(sorted(ids.index(m) for m in members))] = (members, b_meta)
        brs = {k: load_policy(b_meta, "br", device)[0] for k, (_, b_meta) in sets.items()}
        br_frame = evaluate_combination_brs(
            layout, partners, brs, episodes=int(params["episodes"]), generator=gen, device=device
        )
        combos = seat_combinations(len(partners), n)
        label_key = {combination_label(c, partners): br_key(c) for c in combos}
        by_key = br_frame.assign(key=br_frame["partner"].map(label_key)).groupby("key")["br_return"].mean()
        set_returns = {k: float(v) for k, v in by_key.items()}
        for k, (members, b_meta) in sorted(sets.items()):
            combination_brs.append(
                CombinationBR(tuple(sorted(members)), make_file_ref(b_meta, out), set_returns.get(k, 0.0))
            )
    else:
        br_frame = evaluate_br_references(
            layout, partners, episodes=int(params["episodes"]), generator=gen, device=device
        )
        cotrained = _cotrained_mid_brs(params, needs, select["selected_ids"], partners, device)
        cotrained.to_parquet(out / COTRAINED_BR_TABLE)
    br_frame.to_parquet(out / "br_returns.parquet")
    br_mean = br_frame.groupby("partner")["br_return"].mean()
    for i, (pid, level, p_meta, b_meta, features) in enumerate(specs):
        own = set_returns.get((i,), 0.0) if n > 2 else float(br_mean[pid])
        entries.append(
            PartnerEntry(
                id=pid,
                level=level,
                checkpoint=make_file_ref(p_meta, out),
                br=BRReference(make_file_ref(b_meta, out), own),
                features=tuple(features),
                candidate_id=pid.rsplit("_", 1)[0],
                candidate=records[pid],
            )
        )
    manifest = PartnerSetManifest(
        layout=resolve_scenario(layout),
        seed=int(params.get("seed", 0)),
        feature_names=tuple(first["feature_names"]),
        selection=SelectionRecord(
            method=select["method"],
            criterion="BR-Div",
            determinant=select["determinant"],
            k=len(select["selected_ids"]),
            num_samples=select["num_samples"],
            candidate_ids=tuple(select["candidate_ids"]),
            selected_ids=tuple(select["selected_ids"]),
        ),
        partners=tuple(entries),
        combination_brs=tuple(combination_brs),
        tables=(make_file_ref(out / "br_returns.parquet", out),),
    )
    write_manifest(manifest, out / "manifest.json")
    return {"manifest": "manifest.json", "partners": [e.id for e in entries], "br_returns": dict(br_mean)}
