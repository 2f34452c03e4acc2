"""Hidden-utility Self-Play (HSP; Yu et al., ICLR 2023), as ZSC-Eval trains it.

Method. Humans often play with hidden preferences (they like a task, avoid a path), which
self-play partners never show. HSP models such partners as *biased* agents: policies trained for a
hidden utility, a weighted sum of game events (the behavior-preferring candidates that the
evaluation pipeline already trains, ZSC-Eval Alg. 1). From the candidates HSP keeps a diverse set of
K: with each candidate's behavior features (the event counts of its co-trained partner, normalized
per column by the column's maximum + 1e-3), it starts from one random candidate and repeatedly adds

    argmax_{i not in S} sum_{j in S} || f_i - f_j ||_1                      (greedy max-L1)

(ZSC-Eval ``scripts/prep/gen_hsp_S2_ymls.py``; docs/reference-protocol.md "HSP"). Candidates that the
benchmark selected as *evaluation partners* are excluded first (the ego must never train with the
partners it is tested with), as are candidates whose own return is at most 0.1. Without a bench's
candidates (trained alone, or in a bench that scores on a shipped set) HSP trains its own: their
weight vectors avoid every installed evaluation partner's of the layout and their seeds start at
:data:`~zsceval.evaluation.exclusion.OWN_CANDIDATE_SEED`, a stream no bench uses, so none is a
re-trained copy of an evaluation partner; every training job also refuses an evaluation partner's
checkpoint outright (:func:`~zsceval.evaluation.exclusion.training_guard`). Beside a shipped set,
``algo.pool=validation`` trains no candidate: the biased agents are drawn from the set's
``validation`` split (:func:`validation_pool`), every candidate of the set's run that its BR-Div
selection kept but did not select, which is the pool ZSC-Eval's HSP draws from (its trained biased
agents less the evaluation partners). Stage 2 trains a
recurrent ego against the K biased agents' final policies together with (S - K) / 3 MEP stage-1
members at init / mid / final (S = ``population.size``, K = S / 2 by default), uniformly over the
(partner, seat) arms, like FCP.

Football (three players; ZSC-Eval ``scripts/grf/shell/train_hsp_stage_2.sh`` runs
``train_adaptive.py``, i.e. ``grf_runner.py: train_mep`` stage 2 without prioritized sampling): the
biased candidates are the evaluation pipeline's Football candidates (GRF event grid), the features
are the reference's six GRF events (``gen_hsp_S2_ymls.py``: actual_pass, shot, catch, assist,
possession, score; :data:`FOOTBALL_FEATURES`) of the BR, and stage 2 seats the ego with the
reference's GRF combinations of the pool, an unordered combination uniformly then a random seat
order (:class:`~zsceval.algorithms.base.stage2.PopulationEgo`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from zsceval.algorithms.base.stage1 import member_name, stage1_size
from zsceval.algorithms.base.stage2 import PopulationEgo, PopulationEgoOptions, check_players, sliding_window
from zsceval.envs.scenarios import env_flags, num_players, resolve_scenario
from zsceval.registry import register
from zsceval.rl.algorithm import JobContext
from zsceval.rl.checkpoint import load_agent
from zsceval.rl.config import ConfigError, population_size
from zsceval.rl.policy import Policy
from zsceval.rl.population.checkpoints import load_population
from zsceval.rl.population.pool import PolicyPool

POOLS = ("candidates", "validation")
"""Values of ``algo.pool``: where HSP's biased agents come from (:class:`HSPOptions`)."""

FOOTBALL_FEATURES = ("actual_pass", "shot", "catch", "assist", "possession", "score")
"""The GRF events of HSP's selection (``gen_hsp_S2_ymls.py``); the candidates' features also hold
``pass`` and ``slide``, which it leaves out."""


def selection_features(result: dict[str, Any], env_name: str) -> list[float]:
    """A candidate's behavior features for HSP's greedy selection, from its ``candidate.evaluate``
    result: all of them, except on Football the :data:`FOOTBALL_FEATURES` columns (by name).

    Raises:
        ConfigError: a Football result without those feature names.
    """
    if env_name != "football":
        return list(result["features"])
    names = list(result.get("feature_names", []))
    missing = [f for f in FOOTBALL_FEATURES if f not in names]
    if missing:
        raise ConfigError(f"Football candidate features lack {missing} (has {names})")
    return [result["features"][names.index(f)] for f in FOOTBALL_FEATURES]


def greedy_max_l1(features: np.ndarray, k: int, rng: np.random.Generator) -> list[int]:
    """HSP's greedy selection of ``k`` diverse candidates by maximum summed L1 distance.

    Args:
        features: ``float [C, F]`` raw behavior features of C candidates; each column is divided by
            its maximum + 1e-3 first.
        k: how many to select (``k <= C``).
        rng: draws the first candidate uniformly.

    Returns:
        the selected row indices, in the order they were added.

    Raises:
        ValueError: ``k`` larger than C or below 1.
    """
    f = np.asarray(features, dtype=np.float64)
    if not 1 <= k <= len(f):
        raise ValueError(f"cannot select {k} of {len(f)} candidates")
    f = f / (f.max(axis=0) + 1e-3)
    chosen = [int(rng.integers(len(f)))]
    dist = np.abs(f[:, None, :] - f[None, :, :]).sum(-1)  # [C, C] L1 distances
    while len(chosen) < k:
        score = dist[:, chosen].sum(1)
        score[chosen] = -np.inf
        chosen.append(int(np.argmax(score)))  # ties: the lowest index
    return chosen


def validation_split(set_name: str, layout: str) -> tuple[Any, Any]:
    """The test and validation splits (index entries) of the shipped set ``set_name`` names, the
    validation split installed on this machine.

    Args:
        set_name: ``LABEL:NAME[@VERSION][/SPLIT]``; without ``@VERSION`` the version the name
            designates (:func:`~zsceval.evaluation.shipped_sets.resolve_set`), whatever the split.
        layout: the layout HSP trains on; it must be the set's.

    Returns:
        ``(test, validation)``: :class:`~zsceval.evaluation.shipped_sets.ShippedSet` of one name
        and version.

    Raises:
        ConfigError: an unknown set (the installed ones listed), one without a validation split, one
            of another layout, or a validation split that is not downloaded (the ``zsceval partners
            fetch`` command named).
    """
    from zsceval.evaluation.manifest import ManifestError
    from zsceval.evaluation.shipped_sets import parse_set_name, resolve_set

    try:
        label, name, version, _ = parse_set_name(set_name)
        test = resolve_set(f"{label}:{name}" + ("" if version is None else f"@{version}"))
    except ManifestError as exc:
        raise ConfigError(f"algo.pool_set={set_name}: {exc}") from None
    val_name = f"{test.label}:{test.name}@{test.version}/validation"
    try:
        val = resolve_set(val_name)
    except ManifestError:
        raise ConfigError(
            f"partner set {test.full_name} has no validation split ({val_name}) for algo.pool=validation "
            "to draw from; `zsceval partners list` shows the sets, or use algo.pool=candidates"
        ) from None
    if test.layout != resolve_scenario(layout):
        raise ConfigError(f"algo.pool_set={set_name} is a set of {test.layout}, not of {layout}")
    if not val.installed:
        raise ConfigError(
            f"HSP's biased pool {val.full_name} is not on this machine (the package installs only the "
            f"test splits): `zsceval partners fetch {val.full_name}` downloads it"
        )
    return test, val


def validation_pool(set_name: str, layout: str, env_name: str, min_return: float) -> list[dict[str, Any]]:
    """HSP's usable biased agents from a shipped set's ``validation`` split.

    The split (:func:`zsceval.generation.set_export.build_validation_set`) holds every candidate of
    the set's run that the BR-Div selection kept but did not select, at its ``final`` checkpoint,
    with the ``candidate.evaluate`` features of its candidate (``PartnerEntry.features``, the same
    event counts of its co-trained partner that HSP selects on from a bench's candidates). The own
    return of the ``> min_return`` filter (ZSC-Eval ``gen_hsp_S2_ymls.py``: the candidate's
    evaluation sparse return) is the ``sparse_reward`` feature where the set has one (classic
    layouts: ``candidate.evaluate``'s ``final_return`` itself), else the entry's stored BR return
    (the same pair, the candidate with the partner it was trained with, played again in every seat).

    Args:
        set_name: the shipped set (:func:`validation_split`).
        layout: the layout HSP trains on.
        env_name: ``config.env.name`` (:func:`selection_features`).
        min_return: candidates whose own return is at most this are dropped.

    Returns:
        per usable partner, in manifest order, ``{"id", "source", "checkpoint", "features",
        "final_return"}`` (``source``: the split's full name; ``checkpoint``: its ``meta.json``).

    Raises:
        ConfigError: as :func:`validation_split`; a split that fails verification (checksums,
            engine) or shares a candidate with its test split.
    """
    from zsceval.evaluation.manifest import ManifestError, load_manifest
    from zsceval.evaluation.shipped_sets import verify_set

    test, val = validation_split(set_name, layout)
    test_file = test.manifest if test.installed else test.manifest_copy
    if test_file is None:
        raise ConfigError(f"{test.full_name} is not installed; HSP cannot check its pool against it")
    try:
        manifest = verify_set(val, layout)
        test_ids = {p.candidate_id for p in load_manifest(test_file, verify=False).partners}
    except ManifestError as exc:
        raise ConfigError(f"algo.pool=validation: {exc}") from None
    shared = sorted({p.candidate_id for p in manifest.partners} & test_ids)
    if shared:  # disjoint by construction (build_validation_set): a broken set
        raise ConfigError(
            f"{val.full_name} shares candidates {shared} with {test.full_name}; it cannot be HSP's pool"
        )
    names = list(manifest.feature_names)
    usable = []
    for p in manifest.partners:
        own = p.features[names.index("sparse_reward")] if "sparse_reward" in names else p.br.br_return
        if own <= min_return:
            continue
        features = selection_features({"features": list(p.features), "feature_names": names}, env_name)
        usable.append({"id": p.id, "source": val.full_name, "checkpoint": str(manifest.resolve(p.checkpoint)),
                       "features": features, "final_return": float(own)})  # fmt: skip
    return usable


STANDALONE_WEIGHT_SAMPLING = "random"
"""Weight sampling of the biased candidates HSP's chain trains when no bench gives them: the
``overcooked-quick`` suite's partner budget (its other keys are :class:`PartnerBudget`'s defaults),
drawn from the grid without the evaluation partners' weight vectors and with seeds of their own
(:mod:`zsceval.evaluation.exclusion`), not the quick bench's candidates themselves."""

STANDALONE_BUDGET = {
    "overcooked": {"candidates": 8, "candidate_steps": 1_500_000, "feature_episodes": 10},
    "football": {"candidates": 6, "candidate_steps": 40_000, "feature_episodes": 4},
}
"""The quick suites' candidate budgets (``overcooked-quick``, ``football-quick``): what HSP's chain
trains alone, unless ``algo.candidates`` / ``algo.candidate_steps`` / ``algo.feature_episodes``."""


@dataclasses.dataclass(frozen=True)
class HSPOptions(PopulationEgoOptions):
    """``algo.*`` options of the HSP ego (``population`` / ``window``: the MEP stage-1 part)."""

    k: int = 0
    """Biased agents in the population; 0: ``population.size / 2`` (ZSC-Eval: 6 of 12)."""
    candidate_runs: tuple[str, ...] = ()
    """Run folders of the biased candidates (filled in by the job chain)."""
    candidate_results: tuple[str, ...] = ()
    """Folders of their ``candidate.evaluate`` jobs, in the same order (features, final checkpoint)."""
    evaluation_partners: tuple[str, ...] = ()
    """Folder of the ``partners.select`` job whose selected candidates are excluded (in ``bench``)."""
    min_return: float = 0.1
    """Candidates whose own (biased, partner) return is at most this are dropped (ZSC-Eval 0.1; on
    Football the return is the goal rate)."""
    selection_seed: int = 0
    """Seed of the greedy selection's first draw (ZSC-Eval ``np.random.seed(0)``)."""
    candidates: int = 0
    """Trained alone (``zsceval train --algo hsp``, no benchmark): biased candidates the chain
    trains; 0: the env's quick suite's (:data:`STANDALONE_BUDGET`: 8 Overcooked, 6 Football)."""
    candidate_steps: int = 0
    """Trained alone: env steps of each candidate; 0: the quick suite's (1.5e6 / 4e4)."""
    feature_episodes: int = 0
    """Trained alone: episodes per seating of each candidate's features; 0: the quick suite's
    (10 / 4)."""
    pool: str = "candidates"
    """Where the biased agents come from: ``candidates`` (the bench's candidates less its
    evaluation partners, or, beside a shipped set or trained alone, candidates this chain trains)
    or ``validation`` (the ``validation`` split of the shipped set the layout is scored on,
    :func:`validation_pool`: no candidate is trained)."""
    pool_set: str = ""
    """With ``pool=validation``: the shipped set (``LABEL:NAME@VERSION``) whose validation split is
    the pool. ``zsceval bench`` fills in the set it scores the layout on (``layout_partner_sets``);
    ``zsceval train`` alone needs it given."""

    def __post_init__(self) -> None:
        if self.pool not in POOLS:
            raise ConfigError(f"algo.pool={self.pool!r}: valid values are {', '.join(POOLS)}")


@register("hsp", "HSP: recurrent ego vs greedily chosen biased agents + MEP members (Yu et al. 2023).")
class HSP(PopulationEgo):
    """The HSP ego: K biased agents (greedy max-L1) and MEP members, uniform arms (two players) or
    the reference's GRF combinations (three)."""

    Options = HSPOptions
    stage1_algo = "mep-stage1"

    @classmethod
    def preset_config(cls, preset: str, cfg: Any) -> dict[str, Any]:
        """The stage-2 ego's settings; ``quick``: K = 3 biased agents (its suite trains 8 candidates
        and selects 3 of them as evaluation partners, leaving 5) and 3 MEP members x 3."""
        out = super().preset_config(preset, cfg)
        if preset == "quick":
            out["algo"] = {"k": 3}
        return out

    @classmethod
    def biased_count(cls, size: int, k: int) -> int:
        """K: ``k`` or half the population, with ``size - K`` divisible by 3.

        Raises:
            ConfigError: ``size - K`` not a positive multiple of 3.
        """
        k = k or size // 2
        if k < 1 or size - k < 3 or (size - k) % 3:
            raise ConfigError(
                f"HSP needs population.size - k a positive multiple of 3, got size {size}, k {k}"
            )
        return k

    def population_window(self) -> list[str]:
        """The MEP members: the window, or the first ``(S - K) / 3``."""
        size = population_size(self.config)
        members = (size - self.biased_count(size, self.options.k)) // 3
        return [member_name(i) for i in (self.options.window or range(members))]

    def select_biased(self) -> list[dict[str, Any]]:
        """The K biased agents HSP trains with: greedy max-L1 over the usable pool
        (:attr:`HSPOptions.pool`: the candidates, or a shipped set's validation split).

        Returns:
            per selected agent ``{"id", "source", "checkpoint", "features", "final_return"}``
            (``source``: ``candidates`` or the validation split's full name).

        Raises:
            ConfigError: no candidates or set given, or fewer usable ones than K.
        """
        o = self.options
        if o.pool == "validation":
            if not o.pool_set:
                raise ConfigError(
                    "algo.pool=validation needs algo.pool_set=LABEL:NAME@VERSION (`zsceval partners list`; "
                    "a bench fills in the set it scores on)"
                )
            usable = validation_pool(o.pool_set, self.config.env.layout, self.config.env.name, o.min_return)
            where = f"in {o.pool_set}'s validation split"
        else:
            usable, where = self._candidate_pool(), "(not an evaluation partner)"
        k = self.biased_count(population_size(self.config), o.k)
        if len(usable) < k:
            raise ConfigError(
                f"HSP needs {k} biased candidates but only {len(usable)} are usable {where}, with return "
                f"> algo.min_return = {o.min_return}; train more or longer candidates, lower algo.k or "
                f"lower algo.min_return"
            )
        picked = greedy_max_l1(
            np.array([u["features"] for u in usable]), k, np.random.default_rng(o.selection_seed)
        )
        return [usable[i] for i in picked]

    def _candidate_pool(self) -> list[dict[str, Any]]:
        """The usable candidates: not an evaluation partner, own return > ``algo.min_return``."""
        o = self.options
        if not o.candidate_runs or len(o.candidate_runs) != len(o.candidate_results):
            raise ConfigError("hsp needs algo.candidate_runs and algo.candidate_results (the same number)")
        excluded: set[str] = set()
        for folder in o.evaluation_partners:
            excluded |= set(json.loads((Path(folder) / "DONE.json").read_text())["result"]["selected_ids"])
        usable = []
        for run, result_dir in zip(o.candidate_runs, o.candidate_results, strict=True):
            cid = (
                Path(result_dir).parent.name if Path(result_dir).name == "evaluate" else Path(result_dir).name
            )
            result = json.loads((Path(result_dir) / "DONE.json").read_text())["result"]
            if cid in excluded or result["final_return"] <= o.min_return:
                continue
            features = selection_features(result, self.config.env.name)
            usable.append({"id": cid, "source": "candidates", "features": features,
                           "checkpoint": str(Path(run).parent / result["final_checkpoint"]),
                           "final_return": result["final_return"]})  # fmt: skip
        return usable

    def build_partners(self, make_policy: Callable[[], Policy]) -> dict[str, Any]:
        """``pool``: the K biased agents' final policies, then the MEP members' checkpoints."""
        if not self.options.population:
            raise ConfigError(
                "hsp needs algo.population=[MEP_STAGE1_RUN]; `zsceval train --algo hsp` builds it"
            )
        policies, names = [], []
        self.biased = self.select_biased()
        for b in self.biased:
            agent, _ = load_agent(b["checkpoint"], "biased", self.device)
            policies.append(agent)
            names.append(
                f"biased/{b['id']}" if b["source"] == "candidates" else f"biased/{b['source']}/{b['id']}"
            )
        for run in self.options.population:
            p, n, _ = load_population(run, self.population_window(), device=self.device)
            policies += p
            names += n
        ego = make_policy()
        for p, name in zip(policies, names, strict=True):
            if p.spec["obs_shape"] != ego.spec["obs_shape"]:
                raise ConfigError(f"partner {name} has obs_shape {p.spec['obs_shape']}, this layout needs "
                                  f"{ego.spec['obs_shape']}")  # fmt: skip
        self.partner_names = names
        # every member acts at the MEP members' precision: a shipped set's biased agents may have
        # been trained where model.bf16=auto chose otherwise (their float32 weights are kept)
        return {"pool": PolicyPool.from_policies(policies, names, spec=policies[-1].spec)}

    @classmethod
    def jobs(cls, ctx: JobContext) -> list:
        """MEP's shared stage-1 population, the biased candidates (the bench's, or this chain's own
        with the quick suite's partner budget when trained alone or beside a shipped set; none with
        ``algo.pool=validation``, which reads the scored set's validation split), and the ego.

        Raises:
            ConfigError: ``algo.pool=validation`` where the bench generates its partners, with an
                ``algo.pool_set`` other than the set the bench scores on, or without a set
                (trained alone); a validation split that is missing (:func:`validation_split`).
        """
        from zsceval.evaluation.exclusion import OWN_CANDIDATE_SEED, evaluation_partners, excluded_weights
        from zsceval.execution import job_ids
        from zsceval.generation.candidates import PartnerBudget, candidate_jobs
        from zsceval.rl.budget_check import check_episode_budget
        from zsceval.rl.config import resolve_config

        check_players(cls.name, num_players(ctx.layout), cls.max_players)  # before any job of the chain
        common = ctx.common
        s1 = resolve_config(
            preset=common.get("preset", "quick"),
            overrides=list(common.get("overrides", [])),
            **{"run.algo": cls.stage1_algo, **env_flags(ctx.layout)},
        )
        size = population_size(s1)
        per_member = s1.env.num_envs // stage1_size(s1)
        reader = "stage 2 (each member's checkpoints)"
        check_episode_budget(s1, "population.stage1_steps", s1.population.stage1_steps, per_member, reader)
        ego_cfg = resolve_config(
            preset=common.get("preset", "quick"),
            overrides=list(common.get("overrides", [])),
            **{"run.algo": cls.name, **env_flags(ctx.layout)},
        )
        k = int(ctx.ego_options.get("k", ego_cfg.algo.get("k", 0)))
        window = sliding_window(stage1_size(s1), (size - cls.biased_count(size, k)) // 3, ctx.seed)
        s1_id = job_ids.stage1(ctx.layout, cls.stage1_algo)
        stage1 = ctx.train_job(s1_id, algo=cls.stage1_algo, seed=0, steps=s1.run.total_steps)
        jobs = [stage1]
        if str(ctx.ego_options.get("pool", ego_cfg.algo.get("pool", "candidates"))) == "validation":
            test, _ = validation_split(cls._pool_set(ctx, ego_cfg), ctx.layout)
            options = {"window": window}
            if ctx.partner_set is not None:  # the set the bench scores on, its version pinned
                options["pool_set"] = f"{test.label}:{test.name}@{test.version}"
            ego = ctx.train_job(algo_options=options, algo_inputs={"population": [s1_id]})
            return [*jobs, ego]
        if ctx.partners is not None:
            trains, evaluates, exclude = (
                ctx.partners["train"],
                ctx.partners["evaluate"],
                [ctx.partners["select"]],
            )
        else:  # its own candidates: none may share (weights, seed) with an evaluation partner
            standalone = STANDALONE_BUDGET["football" if ego_cfg.env.name == "football" else "overcooked"]
            given = {k: int(float(ctx.ego_options.get(k, 0) or 0)) for k in standalone}
            budget = PartnerBudget(
                weight_sampling=STANDALONE_WEIGHT_SAMPLING,
                **{k: given[k] or default for k, default in standalone.items()},
            )
            exclude = excluded_weights(evaluation_partners(ctx.layout))
            t, e, _ = candidate_jobs(
                ctx.layout, budget, OWN_CANDIDATE_SEED, common, exclude=exclude, group=job_ids.HSP_CANDIDATES
            )
            jobs += [*t, *e]
            trains, evaluates, exclude = [j.id for j in t], [j.id for j in e], []
        job_dirs: dict[str, Sequence[str]] = {"candidate_results": list(evaluates)}
        if exclude:
            job_dirs["evaluation_partners"] = exclude
        ego = ctx.train_job(
            algo_options={"window": window},
            algo_inputs={"population": [s1_id], "candidate_runs": list(trains)},
            algo_job_dirs=job_dirs,
        )
        return [*jobs, ego]

    @classmethod
    def _pool_set(cls, ctx: JobContext, ego_cfg: Any) -> str:
        """The set whose validation split is the pool: the one the bench scores the layout on, or
        ``algo.pool_set`` trained alone."""
        given = str(ctx.ego_options.get("pool_set", ego_cfg.algo.get("pool_set", "")) or "")
        if ctx.partners is not None:
            raise ConfigError(
                "algo.pool=validation draws HSP's biased agents from the validation split of the shipped "
                "set the layout is scored on; this bench generates its own partners (set the layout's "
                "layout_partner_sets, or use algo.pool=candidates)"
            )
        if ctx.partner_set is not None:
            if given:
                mine, scored = (validation_split(n, ctx.layout)[0] for n in (given, ctx.partner_set))
                if (mine.label, mine.name, mine.version) != (scored.label, scored.name, scored.version):
                    raise ConfigError(
                        f"algo.pool_set={given}: HSP's pool is the validation split of the set the layout "
                        f"is scored on, {scored.full_name}; leave algo.pool_set out in a bench"
                    )
            return ctx.partner_set
        if not given:
            raise ConfigError(
                "algo.pool=validation needs algo.pool_set=LABEL:NAME@VERSION, the shipped set whose "
                "validation split is the pool (`zsceval partners list`)"
            )
        return given
