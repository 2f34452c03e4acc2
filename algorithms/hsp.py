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
checkpoint outright (:func:`~zsceval.evaluation.exclusion.training_guard`). Stage 2 trains a
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
from zsceval.envs.scenarios import env_flags, num_players
from zsceval.registry import register
from zsceval.rl.algorithm import JobContext
from zsceval.rl.checkpoint import load_agent
from zsceval.rl.config import ConfigError, population_size
from zsceval.rl.policy import Policy
from zsceval.rl.population.checkpoints import load_population
from zsceval.rl.population.pool import PolicyPool

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
        """The K biased candidates HSP trains with: greedy max-L1 over the usable candidates.

        Returns:
            per selected candidate ``{"id", "run", "final_checkpoint", "features", "final_return"}``.

        Raises:
            ConfigError: no candidates given, or fewer usable ones than K.
        """
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
            kept = {k: result[k] for k in ("final_checkpoint", "final_return")}
            usable.append({"id": cid, "run": run, "features": features, **kept})
        k = self.biased_count(population_size(self.config), o.k)
        if len(usable) < k:
            raise ConfigError(
                f"HSP needs {k} biased candidates but only {len(usable)} are usable (not an evaluation "
                f"partner, return > algo.min_return = {o.min_return}); train more or longer candidates, "
                f"lower algo.k or lower algo.min_return"
            )
        picked = greedy_max_l1(
            np.array([u["features"] for u in usable]), k, np.random.default_rng(o.selection_seed)
        )
        return [usable[i] for i in picked]

    def build_partners(self, make_policy: Callable[[], Policy]) -> dict[str, Any]:
        """``pool``: the K biased agents' final policies, then the MEP members' checkpoints."""
        if not self.options.population:
            raise ConfigError(
                "hsp needs algo.population=[MEP_STAGE1_RUN]; `zsceval train --algo hsp` builds it"
            )
        policies, names = [], []
        self.biased = self.select_biased()
        for b in self.biased:
            ckpt = Path(b["run"]).parent / b["final_checkpoint"]
            agent, _ = load_agent(ckpt, "biased", self.device)
            policies.append(agent)
            names.append(f"biased/{b['id']}")
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
        return {"pool": PolicyPool.from_policies(policies, names)}

    @classmethod
    def jobs(cls, ctx: JobContext) -> list:
        """MEP's shared stage-1 population, the biased candidates (the bench's, or this chain's own
        with the quick suite's partner budget when trained alone), and the ego."""
        from zsceval.evaluation.exclusion import OWN_CANDIDATE_SEED, evaluation_partners, excluded_weights
        from zsceval.execution import job_ids
        from zsceval.generation.candidates import PartnerBudget, candidate_jobs
        from zsceval.rl.config import check_episode_budget, resolve_config

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
