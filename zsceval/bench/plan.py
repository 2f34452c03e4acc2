"""A suite as phases of jobs (ZSC-Eval Alg. 1 as resumable jobs): per layout the candidates, their
features and the BR-Div selection, each algorithm's jobs (stage-1 populations and egos), then,
once the selection is known, the mid-checkpoint BRs, the partner-set manifest and the evaluation of
every ego (against the set, the human proxy and the unhelpful partners). Job ids are
:mod:`zsceval.execution.job_ids`'.

Partner strata (ZSC-Eval's expert and moderate partners, and the unhelpful partners of
:mod:`zsceval.evaluation.strata`): with ``evaluation.strata`` (default true) every ego also plays
the two unhelpful partners (one that only stays, one that acts uniformly at random) in the seatings
it plays the set in, one ``ego.unhelpful`` job per ego. A game with an unhelpful partner costs what
a game with a set partner costs, so the two partners add 2 / (2K) to the evaluation's games and
nothing to training, which dominates a bench.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from pathlib import Path

from zsceval import registry
from zsceval.bench.algo_options import algo_items, describe_options, plugin_conflicts, takes_option
from zsceval.bench.suite import Suite, SuiteError
from zsceval.envs.scenarios import num_players, resolve_scenario
from zsceval.execution import Job
from zsceval.execution import job_ids as ids
from zsceval.generation.candidates import candidate_jobs
from zsceval.rl.algorithm import JobContext

__all__ = [
    "LayoutPlan",
    "build_phases",
    "ego_jobs",
    "human_data_installed",
    "late_phases",
    "scope_algo_options",
]


@dataclass
class LayoutPlan:
    """One layout's jobs of the first phases, which the late phases (:func:`late_phases`) and the
    result tables (:func:`zsceval.bench.run.collect_tables`) read."""

    egos: list[Job]
    """The ego training jobs, one per (algorithm, seed)."""
    candidates: list[str] = field(default_factory=list)
    """Candidate names (``c000``, ...); none beside a shipped set."""
    select: Job | None = None
    """The BR-Div selection job; None beside a shipped set."""
    shipped: str | None = None
    """The shipped partner set the layout is evaluated on (``layout_partner_sets``), or None."""
    human_proxy: Job | None = None
    """The job that trains the layout's human proxy, when the suite scores with one."""


def _phases_for_layout(suite: Suite, layout: str) -> tuple[list[list[Job]], LayoutPlan]:
    """Static phases 1-3 (candidates, features, selection) and the ego training jobs; an ego job
    that reads candidates or the selection (HSP) joins the selection phase."""
    lay = resolve_scenario(layout)
    pb = suite.budget(lay)
    common = {
        "layout": lay,
        "preset": suite.preset,
        "device": suite.device,
        "overrides": list(suite.overrides),
    }
    proxy = human_proxy_job(suite, lay)
    if suite.partner_set(lay):  # a shipped set: no candidates; HSP generates its own (partners None)
        egos, stages = ego_jobs(suite, lay, common, None, partner_set=suite.partner_set(lay))
        plan = LayoutPlan(egos, shipped=suite.partner_set(lay), human_proxy=proxy)
        return [stages + egos + ([proxy] if proxy else []), [], []], plan
    trains, evals, select = candidate_jobs(lay, pb, suite.seed, common)
    partners = {"train": [t.id for t in trains], "evaluate": [e.id for e in evals], "select": select.id}
    egos, stages = ego_jobs(suite, lay, common, partners)
    late_ids = {select.id, *partners["evaluate"]}
    early = [j for j in stages + egos if not (set(j.needs) & late_ids)]
    after_selection = [j for j in stages + egos if set(j.needs) & late_ids]
    plan = LayoutPlan(egos, [ids.parse(t.id).candidate for t in trains], select, human_proxy=proxy)
    if proxy is not None:
        early.append(proxy)
    return [trains + early, evals, [select, *after_selection]], plan


def human_proxy_job(suite: Suite, layout: str) -> Job | None:
    """The job that trains ``layout``'s human proxy, when the suite asks for human-proxy scores, the
    layout has 2019 human data and the data is installed (None otherwise; :func:`run_bench` says
    why when the data is missing)."""
    from zsceval.evaluation.human_proxy import HUMAN_LAYOUTS

    if not suite.human_proxy or layout not in HUMAN_LAYOUTS or not human_data_installed():
        return None
    jid = ids.human_proxy(layout)
    return Job(jid, "partners.human_proxy", {"layout": layout, "seed": suite.seed}, out=jid)


def human_data_installed() -> bool:
    """Whether the 2019 human trials can be found (:func:`zsceval.human.trials.find_data_dir`)."""
    from zsceval.human.trials import HumanDataMissing, find_data_dir

    try:
        find_data_dir()
    except HumanDataMissing:
        return False
    return True


def ego_jobs(
    suite: Suite, layout: str, common: dict, partners: dict | None = None, *, partner_set: str | None = None
) -> tuple[list[Job], list[Job]]:
    """Each implemented algorithm's jobs for every ego seed (:meth:`Algorithm.jobs`); ``partners``
    (ids of the candidate ``train`` / ``evaluate`` jobs and of ``select``) and ``partner_set`` (the
    shipped set the layout is scored on) are passed on to the plug-ins (:attr:`JobContext.partners`,
    :attr:`JobContext.partner_set`).

    Returns:
        ``(ego jobs, other stage jobs)``; identical stage jobs declared by several algorithms
        (same id and parameters) appear once.

    Raises:
        SuiteError: a plug-in declared no job with its ego id, or two different jobs with one id.
    """
    implemented = set(registry.names())
    egos: list[Job] = []
    stages: dict[str, Job] = {}
    for algo in suite.algorithms:
        if algo not in implemented:
            continue
        cls = registry.get(algo)
        for s in range(suite.ego_seeds):
            seed, steps = suite.seed + 1000 + s, suite.ego_budget(algo)
            common_a = suite.algo_common(algo, common)
            ctx = JobContext(
                algo, layout, seed, steps, ids.ego(layout, algo, s), common_a, partners, partner_set
            )
            extra = dict(suite.algo_overrides).get(algo, ())
            jobs = scope_algo_options(algo, cls.jobs(ctx), list(common.get("overrides", [])), extra)
            ego = [j for j in jobs if j.id == ctx.ego_id]
            if len(ego) != 1:
                raise SuiteError(f"algorithm '{algo}' must declare exactly one job with id {ctx.ego_id!r}")
            egos.append(_with_checkpoint_trail(ego[0]))
            for j in jobs:
                if j.id == ctx.ego_id:
                    continue
                if j.id in stages and stages[j.id] != j:
                    raise SuiteError(
                        f"two different jobs share the id {j.id!r} (algorithm '{algo}'): a stage job that "
                        "several algorithms declare (e.g. MEP's stage 1, which HSP trains with) takes the "
                        "suite's `overrides`, not one algorithm's `algo_overrides`"
                    )
                stages[j.id] = j
    return egos, list(stages.values())


def scope_algo_options(
    algo: str, jobs: list[Job], base: list[str], extra: tuple[str, ...] | list[str]
) -> list[Job]:
    """Keep each of ``algo``'s ``algo.KEY=...`` overrides (from the suite's ``algo_overrides``) only
    in the training jobs whose algorithm has the option ``KEY``.

    A plug-in declares its jobs with the suite's overrides followed by ``extra`` (``base + extra``);
    the ``algo:`` section of a run is its own algorithm's options, so HSP's ``algo.min_return``
    belongs to its ego and not to the MEP stage-1 population it shares with MEP (which would refuse
    the key, and would differ from MEP's job of the same id). Other overrides (``population.size``,
    ``ppo.lr``) stay in every job. A job whose overrides a plug-in set itself is left alone.

    Raises:
        SuiteError: an ``algo.KEY`` override that no training job of ``algo`` takes (the options of
            each job's algorithm named), or whose value the plug-in replaces with its own
            (:func:`~zsceval.bench.algo_options.plugin_conflicts`).
    """
    scoped = algo_items(extra)  # {item: (KEY, value)}
    if not scoped:
        return jobs
    declared, used, names = [*base, *extra], set(), {}
    out = []
    for job in jobs:
        if job.kind != "train" or list(job.params.get("overrides", [])) != declared:
            out.append(job)
            continue
        keep = [o for o in extra if o not in scoped or takes_option(job, scoped[o][0], names)]
        taken = plugin_conflicts(job, dict(scoped[o] for o in keep if o in scoped))
        if taken:
            raise SuiteError(f"algo_overrides.{algo}: {algo} sets these options itself: {'; '.join(taken)}")
        used.update(o for o in keep if o in scoped)
        out.append(dataclasses.replace(job, params={**job.params, "overrides": [*base, *keep]}))
    unused = [o for o in scoped if o not in used]
    if unused:
        raise SuiteError(
            f"algo_overrides.{algo}: {', '.join(unused)}: no training job of {algo} has this option "
            f"(the options of its jobs' algorithms: {describe_options(jobs)})"
        )
    return out


def _with_checkpoint_trail(job: Job) -> Job:
    """An ego training job that keeps ``EGO_CHECKPOINTS`` evenly spaced checkpoints (and the final
    one): ``ego.evaluate`` scores ZSC-Eval's checkpoint of the curve, not the last one
    (:mod:`zsceval.evaluation.ego_checkpoint`). Other kinds, and jobs that set their own, are kept."""
    from zsceval.evaluation.ego_checkpoint import EGO_CHECKPOINTS

    steps = job.params.get("steps")
    if job.kind != "train" or not steps or "checkpoint_every" in job.params:
        return job
    trail = {
        "checkpoint_every": max(1, int(steps) // EGO_CHECKPOINTS),
        "keep_checkpoints": EGO_CHECKPOINTS + 1,
    }
    return dataclasses.replace(job, params={**job.params, **trail})


def build_phases(suite: Suite) -> tuple[list[list[Job]], dict[str, LayoutPlan]]:
    """Phases 1-3 of every layout (candidates and egos, features, selection) and each layout's
    :class:`LayoutPlan` (by canonical layout name) for :func:`late_phases`."""
    phases: list[list[Job]] = [[], [], []]
    infos = {}
    for layout in suite.layouts:
        ph, plan = _phases_for_layout(suite, layout)
        for i, jobs in enumerate(ph):
            phases[i].extend(jobs)
        infos[resolve_scenario(layout)] = plan
    return phases, infos


def late_phases(suite: Suite, root: Path, infos: dict[str, LayoutPlan]) -> list[list[Job]]:
    """Phases 4-6 (mid BRs, manifest, evaluation), built once each layout's selection is done."""
    import json

    mids, manifests, evaluations = [], [], []
    for lay, info in infos.items():
        pb = suite.budget(lay)
        if info.shipped:
            manifests.append(_shipped_set_job(lay, info.shipped))
            evaluations.extend(_evaluation_jobs(suite, lay, info, manifests[-1].id))
            continue
        sel = json.loads((root / info.select.out / "DONE.json").read_text())["result"]
        sel_candidates = list(sel["selected_ids"])
        mid_jobs = {}
        for cid in sel_candidates:
            tid, eid = ids.candidate_train(lay, cid), ids.candidate_evaluate(lay, cid)
            jid = ids.mid_br(lay, cid)
            mid_jobs[cid] = Job(
                jid,
                "train",
                {
                    "layout": lay,
                    "preset": suite.preset,
                    "device": suite.device,
                    "overrides": list(suite.overrides),
                    "algo": "br",
                    "seed": suite.seed + 500,
                    "steps": pb.mid_br_steps,
                    "partner_train": tid,
                    "partner_eval": eid,
                },
                needs=(tid, eid),
                out=jid,
            )
        mids.extend(mid_jobs.values())
        set_jobs = _partner_set_br_jobs(suite, lay, sel_candidates) if num_players(lay) > 2 else {}
        mids.extend(set_jobs.values())
        man_id = ids.partner_set(lay)
        cand_map = {
            cid: [ids.candidate_train(lay, cid), ids.candidate_evaluate(lay, cid)] for cid in sel_candidates
        }
        needs = (
            [info.select.id]
            + [j for pair in cand_map.values() for j in pair]
            + [j.id for j in mid_jobs.values()]
            + [j.id for j in set_jobs.values()]
        )
        manifests.append(
            Job(
                man_id,
                "partners.manifest",
                {
                    "layout": lay,
                    "seed": suite.seed,
                    "episodes": suite.evaluation_episodes,
                    "device": suite.device,
                    "select": info.select.id,
                    "candidates": cand_map,
                    "mid_brs": {cid: j.id for cid, j in mid_jobs.items()},
                    **({"combination_brs": {key: j.id for key, j in set_jobs.items()}} if set_jobs else {}),
                },
                needs=tuple(needs),
                out=man_id,
            )
        )
        evaluations.extend(_evaluation_jobs(suite, lay, info, man_id))
    return [mids, manifests, evaluations]


def _shipped_set_job(lay: str, name: str) -> Job:
    """The job that verifies the shipped set ``name`` and copies it into ``<lay>/partners/set`` (the
    set's full name, version included, is a parameter: a newer version is a changed job)."""
    from zsceval.evaluation.shipped_sets import resolve_set

    man_id = ids.partner_set(lay)
    return Job(man_id, "partners.shipped", {"set": resolve_set(name).full_name, "layout": lay}, out=man_id)


def _evaluation_jobs(suite: Suite, lay: str, info: LayoutPlan, man_id: str) -> list[Job]:
    """Every ego of ``lay`` against the partner set of job ``man_id`` (and the human proxy, and the
    unhelpful partners with ``suite.strata``: ``ego.unhelpful`` jobs ``<lay>/unhelpful/<algo>/s<i>``),
    and every external agent of ``suite.agents`` against the set (``<lay>/evaluation/<name>/s0``),
    the human proxy (``<lay>/human-proxy/<name>/s0``) and with ``suite.strata`` the unhelpful
    partners."""
    evaluations = []
    for ego in info.egos:
        parsed = ids.parse(ego.id)
        algo, seed = parsed.algo, parsed.index
        jid = ids.ego_evaluation(lay, algo, seed)
        ego_params = {
            "layout": lay,
            "algorithm": algo,
            "ego_seed": seed,
            "episodes": suite.evaluation_episodes,
            "seed": suite.seed,
            "device": suite.device,
            "ego": ego.id,
        }
        evaluations.append(
            Job(jid, "ego.evaluate", {**ego_params, "partners": man_id}, needs=(ego.id, man_id), out=jid)
        )
        if info.human_proxy is not None:
            proxy = info.human_proxy.id
            hid = ids.ego_human_proxy(lay, algo, seed)
            params = {**ego_params, "proxy": proxy}
            evaluations.append(Job(hid, "ego.human_proxy", params, needs=(ego.id, proxy), out=hid))
        if suite.strata:
            uid = ids.ego_unhelpful(lay, algo, seed)
            params = {**ego_params, "episodes": suite.unhelpful_episodes}
            evaluations.append(Job(uid, "ego.unhelpful", params, needs=(ego.id,), out=uid))
    for name, spec in suite.agents:  # external agents: no training, scored as one ego of `name`
        jid = ids.ego_evaluation(lay, name, 0)
        params = {"layout": lay, "algorithm": name, "ego_seed": 0, "episodes": suite.evaluation_episodes,
                  "seed": suite.seed, "device": suite.device, "agent": spec}  # fmt: skip
        evaluations.append(Job(jid, "ego.evaluate", {**params, "partners": man_id}, needs=(man_id,), out=jid))
        if info.human_proxy is not None:
            proxy, hid = info.human_proxy.id, ids.ego_human_proxy(lay, name, 0)
            human = {**params, "proxy": proxy}
            evaluations.append(Job(hid, "ego.human_proxy", human, needs=(proxy,), out=hid))
        if suite.strata:
            uid = ids.ego_unhelpful(lay, name, 0)
            evaluations.append(
                Job(uid, "ego.unhelpful", {**params, "episodes": suite.unhelpful_episodes}, out=uid)
            )
    return evaluations


def _partner_set_br_jobs(suite: Suite, lay: str, sel_candidates: list[str]) -> dict[str, Job]:
    """Games of n > 2 players (Football): one BR training job per pair of distinct evaluation
    partners (``{"id_a+id_b": job}``), the BR in the seat(s) the pair leaves free; a single
    partner's reference is its own BR (docs/reference-protocol.md "Football"; ZSC-Eval
    ``scripts/prep/gen_train_br_ymls.py`` trains one BR per pair of the 6 partners)."""
    pb = suite.budget(lay)
    refs = [
        (f"{cid}_{level}", [ids.candidate_train(lay, cid), ids.candidate_evaluate(lay, cid), level])
        for cid in sel_candidates
        for level in ("final", "mid")
    ]
    jobs = {}
    for (id_a, ref_a), (id_b, ref_b) in itertools.combinations(refs, 2):
        key = "+".join(sorted([id_a, id_b]))
        jid = ids.set_br(lay, key)
        params = {
            "layout": lay,
            "preset": suite.preset,
            "device": suite.device,
            "overrides": list(suite.overrides),
            "algo": "br",
            "seed": suite.seed + 600,
            "steps": pb.mid_br_steps,
            "partner_refs": [ref_a, ref_b],
        }
        needs = tuple(dict.fromkeys([*ref_a[:2], *ref_b[:2]]))
        jobs[key] = Job(jid, "train", params, needs=needs, out=jid)
    return jobs
