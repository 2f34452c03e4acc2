"""The ZSC-Eval pipeline as jobs (ZSC-Eval Alg. 1): candidates, features, selection, mid BRs,
partner-set manifest, ego evaluation.

Every function here is a registered job kind (:mod:`zsceval.execution.jobs`): it reads its inputs
from finished jobs' output folders and writes its own folder; training jobs resume from their
last resumable checkpoint when re-run after a kill.

Stages for one layout:

1. ``train`` with algorithm ``biased`` for each sampled weight vector w: a *candidate* (pi_w and
   its co-trained best response), with a trail of checkpoints.
2. ``candidate.evaluate``: play (pi_w, BR) in both seatings; the behavior features are the BR's
   mean event counts per episode (classic layouts: the first 13 events plus the sparse return;
   multi-recipe: all 29 events; docs/reference-protocol.md "Pipeline" item 5); record the final return and the
   ``mid`` checkpoint (training sparse return closest to half of the final, final = mean of the
   last 5 logged values; item 3).
3. ``partners.select``: drop candidates whose final return <= ``min_return`` (10 in ZSC-Eval),
   select K by BR-Div with a k-DPP (exact enumeration when small) on the raw features, which
   :func:`~zsceval.evaluation.selection.select_partners` normalizes once.
4. ``train`` with algorithm ``br`` against each selected ``mid`` checkpoint.
5. ``partners.manifest``: export the 2K partners (K finals, K mids) and their BRs into a
   self-contained folder, measure each BR's return with its partner in both seats, write the
   manifest (checksums) and ``br_returns.parquet``.
6. ``ego.evaluate``: an ego agent against the partner set, every seat, E episodes:
   ``results.parquet`` rows in the schema of :mod:`zsceval.stats.metrics`. The ego's scored
   checkpoint is ZSC-Eval's (:mod:`zsceval.evaluation.ego_checkpoint`: after the training curve's
   maximum, the point nearest its 80th percentile), recorded in the job's result.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from zsceval.envs.overcooked import load_layout
from zsceval.envs.scenarios import env_flags, is_football, num_players, resolve_scenario
from zsceval.execution import job_ids
from zsceval.execution.jobs import JobInputError, job_kind
from zsceval.rl.checkpoint import (
    CheckpointError,
    RefusedCheckpointError,
    list_checkpoints,
    load_policy,
)

from .combinations import br_key, seat_combinations
from .ego_checkpoint import scored_ego_checkpoint
from .exclusion import training_guard
from .export import candidate_record, export_agent
from .manifest import (
    BRReference,
    CombinationBR,
    PartnerEntry,
    PartnerSetManifest,
    SelectionRecord,
    load_manifest,
    make_file_ref,
    write_manifest,
)
from .matches import (
    PartnerSpec,
    combination_label,
    evaluate_agent,
    evaluate_br_references,
    evaluate_combination_brs,
    play_games,
)
from .selection import select_partners

__all__ = ["feature_names", "mid_checkpoint", "load_partner_set"]

JOB_PROGRESS_ENV = "ZSCEVAL_JOB_PROGRESS"
"""When "1", training jobs show their own progress bar (env steps inside the job)."""

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


# -- 1/4. training ------------------------------------------------------------------------------------
def train_config(params: dict, needs: dict):
    """The resolved :class:`~zsceval.rl.config.TrainConfig` of a ``train`` job (:func:`train_job`'s
    params; ``needs``: the finished input jobs' folders by id, empty for a job without inputs)."""
    from zsceval.rl.config import config_from_dict, resolve_config

    options = dict(params.get("algo_options", {}))
    for option, ids in params.get("algo_inputs", {}).items():
        runs = [str(Path(needs[j]) / "run") for j in ([ids] if isinstance(ids, str) else ids)]
        options[option] = runs[0] if isinstance(ids, str) else runs
    for option, ids in params.get("algo_job_dirs", {}).items():
        dirs = [str(needs[j]) for j in ([ids] if isinstance(ids, str) else ids)]
        options[option] = dirs[0] if isinstance(ids, str) else dirs
    if params.get("partner_train"):
        mid = _result(needs[params["partner_eval"]])["mid_checkpoint"]
        options["partner"] = str(Path(needs[params["partner_train"]]) / mid)
        options["partner_policy"] = "biased"
    if params.get("partner_refs"):  # a BR of a set of partners (n > 2 players)
        options["partners"] = [
            f"{Path(needs[train_id]) / _result(needs[eval_id])[level + '_checkpoint']}#biased"
            for train_id, eval_id, level in params["partner_refs"]
        ]
    flags = {
        "run.algo": params["algo"],
        **env_flags(params["layout"]),
        "run.seed": params.get("seed", 0),
        "run.total_steps": params.get("steps"),
        "run.device": params.get("device"),
        "run.checkpoint_every": params.get("checkpoint_every"),
        "run.keep_checkpoints": params.get("keep_checkpoints"),
    }
    cfg = resolve_config(preset=params.get("preset", "quick"), overrides=params.get("overrides", []), **flags)
    if options:
        cfg = config_from_dict({"algo": options}, cfg)
    return cfg


@job_kind("train")
def train_job(params: dict, out: Path, needs: dict) -> dict:
    """Train ``params['algo']`` on ``params['layout']`` into ``out/run`` (resumes a killed run).

    params: ``algo, layout, seed, steps, preset, device, checkpoint_every, keep_checkpoints,
    overrides`` (list of ``key=value``), ``algo_options`` (dict of ``algo.*``), ``algo_inputs``
    (``{algo option: job id or [job ids]}``: the option gets those jobs' run folders),
    ``algo_job_dirs`` (the same with the jobs' own folders), and for a BR of a
    candidate's ``mid`` checkpoint ``partner_train`` / ``partner_eval``: ids of that candidate's train and
    ``candidate.evaluate`` jobs; for a BR of a set of partners (n > 2 players) ``partner_refs``: a
    list of ``[train-job id, evaluate-job id, "final" | "mid"]``.

    Every job but those BRs runs inside :func:`~zsceval.evaluation.exclusion.training_guard`: a
    checkpoint that holds an evaluation partner of the layout is refused (``JobInputError`` naming
    the checkpoint and the partner).
    """
    from zsceval.rl.config import ConfigError
    from zsceval.rl.trainer import NonFiniteError, Trainer

    cfg = train_config(params, needs)
    run = out / "run"
    resume = (run / "config.yaml").exists() and any(
        json.loads((c / "meta.json").read_text()).get("resumable") for c in list_checkpoints(run)
    )
    if (run / "config.yaml").exists() and not resume:
        import shutil

        shutil.rmtree(run)  # killed before its first resumable checkpoint: start over
    progress = os.environ.get(JOB_PROGRESS_ENV) == "1"  # set by `zsceval bench` with the local executor
    # The partner pipeline's own BRs train with the partner they define; every other job refuses the
    # layout's evaluation partners (a copy of one included).
    own_br = params.get("partner_train") or params.get("partner_refs")
    with contextlib.nullcontext() if own_br else training_guard(params["layout"]):
        try:
            trainer = Trainer(cfg, run, resume=resume, progress=progress)
        except (
            ConfigError,
            RefusedCheckpointError,
        ) as exc:  # inputs that cannot work (too few HSP candidates)
            raise JobInputError(f"{params.get('algo')} on {params.get('layout')}: {exc}") from None
        try:
            summary = trainer.train()
        except NonFiniteError as exc:  # a rerun diverges the same way: change the setting first
            raise JobInputError(f"{params.get('algo')} on {params.get('layout')}: {exc}") from None
        finally:
            trainer.close()
    return {"run": "run", "self_play_return": summary.get("self_play", {}).get("sparse_return_mean")}


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


def load_partner_set(manifest_path: str | Path, layout: str, device: str = "cpu") -> list[PartnerSpec]:
    """Partners (with their BRs, where the set holds them) of a verified manifest.

    Raises:
        ManifestError: another layout, missing or altered files (before any compute).
    """
    manifest = load_manifest(manifest_path, layout=layout, verify=True)
    out = []
    for p in manifest.partners:
        policy, _ = load_policy(manifest.resolve(p.checkpoint), "biased", device)
        ref = p.br.checkpoint  # None in an acting-only copy (scores read the stored BR returns)
        br = None if ref is None else load_policy(manifest.resolve(ref), "br", device)[0]
        out.append(PartnerSpec(p.id, "expert" if p.level == "final" else "moderate", policy, br))
    return out


# -- 6. ego evaluation ----------------------------------------------------------------------------------
@job_kind("ego.evaluate")
def ego_evaluate(params: dict, out: Path, needs: dict) -> dict:
    """An ego agent vs the partner set (params: ``layout, algorithm, ego_seed, episodes, seed, device,
    ego`` (train-job id) or ``agent`` (an external ``module:attr``, :mod:`zsceval.rl.external`),
    ``partners`` (manifest-job id)); writes ``results.parquet``.

    The ego's scored checkpoint follows ZSC-Eval
    (:func:`~zsceval.evaluation.ego_checkpoint.scored_ego_checkpoint`), not simply its last one; the
    result's ``scored_checkpoint`` records which (step, training return, rule, fallback); None for an
    external agent."""
    device = params.get("device", "cpu")
    if params.get("agent"):
        from zsceval.rl.external import load_external

        ego, scored = load_external(params["agent"]), None
    else:
        ego_dir = Path(needs[params["ego"]])
        ckpt, scored = scored_ego_checkpoint(ego_dir, params.get("algorithm"))
        ego, _ = load_policy(ckpt, None, device)
    partners = load_partner_set(Path(needs[params["partners"]]) / "manifest.json", params["layout"], device)
    gen = torch.Generator(device=device).manual_seed(int(params.get("seed", 0)))
    labels = {"algorithm": params["algorithm"], "ego_seed": int(params["ego_seed"])}
    frame = evaluate_agent(
        params["layout"],
        ego,
        partners,
        episodes=int(params["episodes"]),
        generator=gen,
        device=device,
        labels=labels,
    )
    frame.to_parquet(out / "results.parquet")
    return {
        "rows": len(frame),
        "mean_sparse_return": float(frame["sparse_return"].mean()),
        "scored_checkpoint": scored,
    }
