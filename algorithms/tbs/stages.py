"""TBS: Theory-of-Mind-based Best-response Selection (Ni et al., AAMAS 2026).

Method (TBS Sec. 3). (1) *Partner pool*: N agent pairs trained with VDN, every agent with its own
random reward shaping (App. D.2), so that the pairs settle on different strategies; a second pool
from other seeds is held out for evaluation. (2) *Strategy clusters*: the pairs are cross-played
seat by seat, the cross-play returns give the similarity of Eq. 5, and self-tuning spectral
clustering (Eq. 6) splits the pool into k clusters. (3) *Best responses*: one DQN best response per
cluster, trained with partners drawn uniformly from its cluster (Eq. 7), and one single best
response to the whole pool (the BR baseline). (4) *Theory of mind*: k cluster ToM models and one
global model predict, from the ego's observation history, the partner's next interaction concept
(Eq. 4 / 10). (5) *Selection* at test time: the best response of the cluster whose ToM predictions
are closest in summed KL divergence to the global model's acts (Eq. 8).

The plug-ins here are the training stages; the rest are jobs (:mod:`zsceval.algorithms.tbs.jobs`):

* ``tbs-pool``: the N pairs of one pool, trained population-batched in one run (the ``pqn`` core;
  each game plays one pair, agent 1 in seat 0 and agent 2 in seat 1; VDN over the pair).
* ``tbs-br``: the k cluster best responses and the single best response, trained together in one
  run against the frozen training pool (both seats); the run trains ``--steps`` env steps per
  best response, ``(k + 1) x --steps`` in all (the ``tbs.brs`` job reads k from the clustering).
* ``tbs``: the whole chain (``zsceval train --algo tbs``): pools, cross-play clustering, best
  responses, ToM models and the composite TBS agent, then the TBS evaluation protocol against the
  held-out pool with the paper's baselines (single BR, Random Selection, Oracle, CEM, CBPR).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

from zsceval.algorithms.tbs.pool import GreedyPool, agent_names, load_pool_agents
from zsceval.algorithms.tbs.shaping import event_matrix, pool_coefficients
from zsceval.envs.base import Step
from zsceval.registry import register
from zsceval.rl.algorithm import Algorithm, JobContext
from zsceval.rl.config import ConfigError, TrainConfig, apply_overrides
from zsceval.rl.pqn import pqn_preset
from zsceval.rl.seating import Arm, Seating

__all__ = ["TBS", "TBSBestResponses", "TBSPool"]

QUICK = {"pool_size": 6, "pool_steps": 2_000_000, "br_steps": 3_000_000, "games": 128, "shaping": 1.0}
PAPER = {"pool_size": 10, "pool_steps": 5_000_000, "br_steps": 40_000_000, "games": 64, "shaping": 0.8}
"""Per preset: pairs per pool, env steps per pair, env steps per best response (TBS Table 4:
5e6 per VDN run, 4e7 per DQN best response), games per learner (the ``pqn`` preset's ``num_envs``
of one VDN run or one DQN best response: JaxMARL's 64 in ``paper``), and the share of the run over
which the ordinary shaping is annealed (TBS Table 4: 4e6 of a VDN run's 5e6; ``quick``: the whole
run)."""


def _sizes(preset: str) -> dict[str, Any]:
    return PAPER if preset == "paper" else QUICK


def _run_steps(preset: str, cfg: TrainConfig, default: int) -> int:
    """Env steps the run will train: ``--steps`` when given, else the plug-in's ``default``.

    A plug-in's preset sits below the command line (:func:`~zsceval.rl.config.resolve_config`), so
    ``cfg.run.total_steps`` is the user's only when it differs from the preset's own value."""
    from zsceval.rl.config import layout_dynamics, load_preset

    preset_total = load_preset(preset, TrainConfig(), layout_dynamics(cfg.env)).run.total_steps
    return default if cfg.run.total_steps == preset_total else cfg.run.total_steps


# -- stage 1: a pool of VDN pairs with random reward shaping ---------------------------------------
@dataclasses.dataclass(frozen=True)
class PoolOptions:
    """``algo.*`` options of ``tbs-pool``."""

    pool_size: int = 0
    """N, pairs in the pool (0: the preset's, 6 quick / 10 paper)."""
    shaping_scale: float = 1.0
    """Multiplier of the random shaping magnitudes (App. D.2's 0.15 / 0.5)."""


@register("tbs-pool", "TBS stage 1: N VDN pairs with random reward shaping, trained population-batched.")
class TBSPool(Algorithm):
    """TBS stage 1: N VDN pairs with random reward shaping, trained population-batched.

    Game g always plays pair ``g mod N``; a pair's two agents are separate Q-networks (agent 1 in
    seat 0, agent 2 in seat 1) trained by VDN on their team reward plus each agent's own random
    shaping of the events it triggered. The coefficients come from the run's seed, so the held-out
    pool (another seed) has other reward functions.
    """

    Options = PoolOptions
    core = "pqn"

    @classmethod
    def preset_config(cls, preset: str, cfg: TrainConfig) -> dict[str, Any]:
        """The value-based preset, per pair: every pair plays as many games as one VDN run of the
        preset (``num_envs = pool_size x`` 128 quick / 64 paper), the budget is ``pool_size x`` the
        per-pair steps, and the ordinary shaping is annealed over the run (``paper``: its first
        80%, TBS's 4e6 of 5e6 per pair)."""
        sizes = _sizes(preset)
        out = pqn_preset(preset, cfg)
        size = int(cfg.algo.get("pool_size", 0)) or sizes["pool_size"]
        total = _run_steps(preset, cfg, size * sizes["pool_steps"])
        out.setdefault("run", {})["total_steps"] = size * sizes["pool_steps"]
        out.setdefault("env", {})["num_envs"] = size * sizes["games"]
        out["shaping"] = {"horizon": int(sizes["shaping"] * total)}
        return out

    @property
    def pool_size(self) -> int:
        """N."""
        return self.options.pool_size or _sizes("quick")["pool_size"]

    def build_learners(self, make_policy: Callable[[], Any]) -> dict[str, Any]:
        """2N Q-networks ``pNN_1``, ``pNN_2``; samples each agent's shaping coefficients.

        Raises:
            ConfigError: not a two-player env.
        """
        if self.num_agents != 2:
            raise ConfigError(f"tbs-pool is written for 2 players, the env has {self.num_agents}")
        N = self.pool_size
        coef = pool_coefficients(N, self.config.run.seed, scale=self.options.shaping_scale)
        self.coefficients = torch.as_tensor(coef, dtype=torch.float32, device=self.device)
        """``float32 [2N, 6]`` per learner (``pNN_1``, ``pNN_2``, ...) and paper event."""
        self._weights: torch.Tensor | None = None
        return {name: make_policy() for i in range(N) for name in agent_names(i)}

    def arms(self) -> list[Arm]:
        """One arm per pair: agent 1 in seat 0, agent 2 in seat 1."""
        return [Arm.of(*agent_names(i), partner=f"pair{i:02d}", ego_seat=0) for i in range(self.pool_size)]

    def assign(self, games: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        """Game g plays pair ``g mod N`` (equal env steps per pair)."""
        return games % self.num_arms

    def team_reward(self, step: Step, shaping_factor: float, seating: Seating) -> torch.Tensor:
        """Sparse + annealed shaping of both seats (:meth:`Algorithm.team_reward`) + each agent's
        random shaping of the events it triggered (``float32 [B]``)."""
        base = super().team_reward(step, shaping_factor, seating)
        if self._weights is None:
            from zsceval.envs.overcooked.constants import CLASSIC_EVENTS, MULTI_RECIPE_EVENTS

            E = step.events.shape[-1]
            names = CLASSIC_EVENTS if E == len(CLASSIC_EVENTS) else MULTI_RECIPE_EVENTS
            # [2N, E]: learner k's reward per engine event
            self._weights = self.coefficients @ event_matrix(names).to(self.device)
        w = self._weights.index_select(0, seating.actor.reshape(-1)).view(*seating.actor.shape, -1)  # B n E
        return base + (w * step.events.float()).sum((1, 2))

    def eval_seats(self, learners: list[str], partners: list[str]) -> list[str]:
        """The first pair in its own seats."""
        return list(agent_names(0))

    def state_dict(self) -> dict[str, Any]:
        """The shaping coefficients (also reproducible from the seed)."""
        return {"coefficients": self.coefficients}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the coefficients."""
        self.coefficients = state["coefficients"].to(self.device)
        self._weights = None


# -- stage 2: the cluster best responses and the single best response --------------------------------
@dataclasses.dataclass(frozen=True)
class BROptions:
    """``algo.*`` options of ``tbs-br``."""

    pool: str = ""
    """Run folder of the training pool (a ``tbs-pool`` run)."""
    clustering: str = ""
    """Folder of the ``tbs.cluster`` job (its ``clustering.json``)."""


@register("tbs-br", "TBS stage 2: one DQN best response per strategy cluster plus one to the whole pool.")
class TBSBestResponses(Algorithm):
    """TBS stage 2: one DQN best response per strategy cluster plus one to the whole pool.

    Learners ``br_0 .. br_{k-1}`` (Eq. 7: partners drawn uniformly from cluster i) and ``br_all``
    (the single BR baseline: partners drawn from all N pairs). Each game draws a learner uniformly
    at every episode start, then a pair of that learner's partner set and a seat: with the BR in
    seat 1 the pair's agent 1 plays seat 0, with the BR in seat 0 its agent 2 plays seat 1. The
    frozen pool agents act greedily; the BR learns from the team reward (DQN with Q(lambda)
    targets: the ``pqn`` core with one learner seat per game).
    """

    Options = BROptions
    core = "pqn"

    @classmethod
    def preset_config(cls, preset: str, cfg: TrainConfig) -> dict[str, Any]:
        """The value-based preset with 100-step rollouts in ``paper`` (TBS Table 4's DQN column),
        per best response: as many games as one DQN run of the preset (``num_envs = (k + 1) x``
        128 quick / 64 paper, k read from ``algo.clustering`` when it is there, else the budget's
        expected ``max(2, N // 3)``), shaping annealed over the run (``paper``: 3e7 of 4e7)."""
        out = pqn_preset(preset, cfg)
        out["pqn"] = {**out.get("pqn", {}), "rollout_length": 100 if preset == "paper" else 32}
        learners = _expected_clusters(_sizes(preset)["pool_size"]) + 1
        clustering = str(cfg.algo.get("clustering", ""))
        if clustering:
            try:
                learners = len(_read_clusters(clustering)) + 1
            except ConfigError:  # reported with the file's name when the learners are built
                pass
        out.setdefault("env", {})["num_envs"] = learners * _sizes(preset)["games"]
        if preset == "paper":
            out["shaping"] = {"horizon": int(0.75 * _run_steps(preset, cfg, 40_000_000 * learners))}
        return out

    def _clusters(self) -> list[list[int]]:
        return _read_clusters(self.options.clustering)

    def build_learners(self, make_policy: Callable[[], Any]) -> dict[str, Any]:
        """``br_0 .. br_{k-1}`` and ``br_all``.

        Raises:
            ConfigError: ``algo.pool`` or ``algo.clustering`` missing.
        """
        if not self.options.pool or not self.options.clustering:
            raise ConfigError("tbs-br needs algo.pool=POOL_RUN and algo.clustering=CLUSTER_JOB_DIR")
        self.clusters = self._clusters()
        names = [f"br_{j}" for j in range(len(self.clusters))] + ["br_all"]
        return {name: make_policy() for name in names}

    def build_partners(self, make_policy: Callable[[], Any]) -> dict[str, Any]:
        """``firsts`` / ``seconds``: the pool's agent-1 and agent-2 networks, greedy."""
        from zsceval.rl.population.pool import PolicyPool

        firsts, seconds = load_pool_agents(self.options.pool, self.device)
        self.pool_size = len(firsts)
        self.partner_sets = [*self.clusters, list(range(self.pool_size))]
        return {
            "firsts": GreedyPool(PolicyPool.from_policies(firsts)),
            "seconds": GreedyPool(PolicyPool.from_policies(seconds)),
        }

    def arms(self) -> list[Arm]:
        """Per learner j, pair i of its partner set and ego seat s (learner-major order)."""
        arms = []
        self._first_arm = []
        for name, members in zip(self.learners, self.partner_sets, strict=True):
            self._first_arm.append(len(arms))
            for i in members:
                arms.append(Arm.of(("firsts", i), name, partner=f"pair{i:02d}", ego_seat=1))
                arms.append(Arm.of(name, ("seconds", i), partner=f"pair{i:02d}", ego_seat=0))
        return arms

    def assign(self, games: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        """A uniform learner, then a uniform (pair of its set, seat)."""
        L = len(self.partner_sets)
        j = torch.randint(0, L, games.shape, generator=generator, device=games.device)
        sizes = torch.tensor([2 * len(m) for m in self.partner_sets], device=games.device)
        first = torch.tensor(self._first_arm, device=games.device)
        u = torch.rand(games.shape, generator=generator, device=games.device)
        offset = torch.minimum((u * sizes[j]).long(), sizes[j] - 1)
        return first[j] + offset

    def eval_seats(self, learners: list[str], partners: list[str]) -> list[str]:
        """``br_all`` in both seats (the TBS evaluation is a job of its own)."""
        return ["br_all", "br_all"]


# -- the chain --------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class TBSOptions:
    """``algo.*`` options of ``tbs`` (``--set algo.pool_size=...`` etc.)."""

    pool: str = ""
    """Filled in by the chain: the training pool's run folder."""
    pool_size: int = 0
    """N, pairs in the training pool (0: the preset's); the pool-size ablation varies it."""
    heldout_size: int = 0
    """Pairs in the held-out pool (0: as ``pool_size``)."""
    k_rule: str = "paper"
    """How STSC chooses the number of clusters from Eq. 6's costs: ``paper`` (the k of the lowest cost
    J, fewer clusters on ties; TBS Sec. 3.2) or ``normalized`` (Zelnik-Manor's MATLAB rule: the
    largest k whose ``(J / n - 1) / k`` is within 1e-3 of the best); :func:`~.stsc.select_k`."""
    fixed_k: int = 0
    """Use vanilla spectral clustering with this k instead of STSC's choice (0: STSC; TBS Sec. 4.3.4,
    "TBS (fixed)", k = 2..5); at most the pool's pairs."""
    fixed_k_assign: str = "rotation"
    """With ``fixed_k``: ``rotation`` (the arg-max of STSC's rotation at that k) or ``kmeans`` (k-means on
    the unit-normalized top-k eigenvector rows, Ng-Jordan-Weiss)."""
    granularity: str = "fine"
    """ToM concepts: ``fine`` (per tile), ``coarse`` (11 kinds), ``very_coarse`` (6), ``action``."""
    window: int = 0
    """Rolling window of Eq. 9 in steps (0: the whole episode, Eq. 8)."""
    episodes: int = 8
    """Evaluation episodes per (held-out pair, seat) and per cross-play pairing."""
    pool_steps: int = 0
    """Env steps per pool pair (0: the preset's, 2e6 quick / 5e6 paper); ``--steps`` sets the
    per-best-response budget (default 3e6 quick / 4e7 paper)."""
    tom_games: int = 32
    """Episodes of ToM training data per pool pair (a cluster of m pairs: 32 m, half with the best
    response in each seat)."""
    tom_epochs: int = 60
    """Epochs of the global ToM model over all the episodes (each cluster model makes as many
    gradient steps); the parameters of the lowest held-out loss are kept (``tom_holdout``)."""
    tom_lr: float = 3e-3
    """Adam learning rate of the ToM models."""
    tom_holdout: float = 0.25
    """Fraction of each ToM model's episodes kept out of training for early stopping (0: none)."""
    tom_prior_bias: bool = True
    """Start each ToM model's output bias at its training labels' log-odds (the constant
    predictor), so that training starts at that baseline (ours; from PyTorch's default near-zero
    bias some cluster models never left it, ``docs/differences.md``). False: the models of
    earlier chains."""
    tom_global: str = "mixed"
    """Episodes of the global ToM model: ``mixed`` (Eq. 11: the partner's cluster and the best
    response's drawn independently, so every cluster's partners meet every cluster's BR) or
    ``matched`` (each cluster's partners with its own BR only, the cluster models' episodes
    pooled; an ablation)."""
    tom_seed: int = -1
    """Seed of the ToM models' initial weights and minibatch order (-1: the chain's seed). The
    episodes they learn from, the pools, clusters and best responses stay the chain's: a chain
    that copies another's finished stages and sets only this retrains the ToM models alone."""
    tom_epsilon: float = 0.1
    """Exploration of the best response while the ToM episodes are collected (greedy agents in a
    deterministic game would repeat one episode; the partners, whose intentions are the labels,
    stay greedy)."""
    hypothesis_alpha: float = 0.3
    """The hypothesis-scoring variant (Hypothetical Minds, :mod:`~.hypothesis`): Rescorla-Wagner learning
    rate."""
    hypothesis_c: float = 1.0
    """Its intrinsic reward magnitude (+c for a right prediction, -c for a wrong one)."""
    hypothesis_v_thr: float = 0.7
    """Its validation threshold (a hypothesis with ``V >= v_thr`` is validated)."""
    hypothesis_top_k: int = 1
    """A prediction is right iff the partner's concept is among its ``top_k`` most probable (1: arg-max)."""
    hypothesis_fallback: str = "highest"
    """The hypothesis used while none is validated: ``highest`` value or ``latest_correct``."""
    hypothesis_prediction: str = "held"
    """Which prediction a partner's concept scores: ``held`` (the one made after its previous concept)
    or ``latest`` (the one of the step at which it performed it)."""
    partial: bool = False
    """The partially observable variant (TBS Sec. 4): every stage's env gets ``env.view_radius =
    view_radius`` (:class:`~zsceval.envs.overcooked.OvercookedEnv`)."""
    view_radius: int = 2
    """View radius (Chebyshev cells) of the partial variant."""


@register("tbs", "TBS: ToM-guided selection among per-cluster best responses (Ni et al., AAMAS 2026).")
class TBS(Algorithm):
    """TBS: ToM-guided selection among per-cluster best responses (Ni et al., AAMAS 2026).

    ``zsceval train --algo tbs`` runs the jobs of :meth:`jobs`; the ego is the composite ``tbs``
    agent (:class:`zsceval.algorithms.tbs.agents.TBSAgent`) saved as a checkpoint of the ``ego`` job.
    """

    Options = TBSOptions
    core = "pqn"

    @classmethod
    def preset_config(cls, preset: str, cfg: TrainConfig) -> dict[str, Any]:
        """The value-based preset."""
        return pqn_preset(preset, cfg)

    def build_learners(self, make_policy: Callable[[], Any]) -> dict[str, Any]:
        """TBS is not one training run.

        Raises:
            ConfigError: always; ``zsceval train --algo tbs`` runs its job chain instead.
        """
        raise ConfigError(
            "tbs is a chain of jobs, not one training run: run `zsceval train --algo tbs --layout L "
            "--out DIR` (without algo.pool), or `zsceval bench`"
        )

    @classmethod
    def jobs(cls, ctx: JobContext) -> list:
        """Training pool, held-out pool, cross-play clustering, best responses, ToM + the TBS agent
        (the ego), and the TBS evaluation against the held-out pool.

        Raises:
            ConfigError: ``algo.tom_global`` is not one of :data:`zsceval.algorithms.tbs.jobs.TOM_GLOBAL`;
                an invalid ``algo.k_rule``, ``algo.fixed_k`` or ``algo.fixed_k_assign``
                (:func:`zsceval.algorithms.tbs.jobs.check_cluster_options`; the valid values listed).
        """
        from zsceval.algorithms.tbs.jobs import TOM_GLOBAL, check_cluster_options
        from zsceval.execution.jobs import Job

        opts = dict(ctx.ego_options)
        tom_global = str(opts.get("tom_global", "mixed"))
        if tom_global not in TOM_GLOBAL:
            raise ConfigError(f"algo.tom_global must be one of {', '.join(TOM_GLOBAL)}, got {tom_global!r}")
        radius = int(opts.get("view_radius", 2)) if opts.get("partial") else 0
        if radius:  # every training job sees the partial view; the other jobs build their envs with it
            ctx = dataclasses.replace(
                ctx,
                common={
                    **ctx.common,
                    "overrides": [*ctx.common.get("overrides", []), f"env.view_radius={radius}"],
                },
            )
        preset = ctx.common.get("preset", "quick")
        size = int(opts.get("pool_size", 0)) or _sizes(preset)["pool_size"]
        held = int(opts.get("heldout_size", 0)) or size
        episodes = int(opts.get("episodes", 8))
        base = f"{ctx.layout}/tbs" + (f"_partial{radius}" if radius else "")
        tag = f"n{size}"
        per_pair = int(opts.get("pool_steps", 0)) or _sizes(preset)["pool_steps"]
        pool = ctx.train_job(
            f"{base}/pool_{tag}_s{ctx.seed}", algo="tbs-pool", seed=ctx.seed, steps=size * per_pair,
            algo_options={"pool_size": size},
        )  # fmt: skip
        heldout = ctx.train_job(
            f"{base}/heldout_n{held}_s{1000 + ctx.seed}", algo="tbs-pool", seed=1000 + ctx.seed,
            steps=held * per_pair, algo_options={"pool_size": held},
        )  # fmt: skip
        common = {"layout": ctx.layout, "device": ctx.common.get("device", "cpu"), "seed": ctx.seed}
        if radius:
            common["view_radius"] = radius
        horizon = apply_overrides(TrainConfig(), ctx.common.get("overrides", [])).env.horizon
        if horizon != TrainConfig().env.horizon:  # the clustering, ToM and evaluation envs play the
            common["horizon"] = horizon  # training's episode length (absent: 400, old fingerprints)
        fixed_k = int(opts.get("fixed_k", 0) or 0)
        k_rule, assign = str(opts.get("k_rule", "paper")), str(opts.get("fixed_k_assign", "rotation"))
        try:
            check_cluster_options(k_rule, fixed_k, assign, size)
        except ValueError as exc:
            raise ConfigError(f"algo.{exc}") from None
        # stage folders per clustering choice: the pools are shared, the clusters and BRs are not
        suffix = (f"_k{fixed_k}" + ("_kmeans" if assign == "kmeans" else "")) if fixed_k else (
            "" if k_rule == "paper" else f"_{k_rule}"
        )  # fmt: skip
        cid = f"{base}/cluster_{tag}_s{ctx.seed}{suffix}"
        cparams = {**common, "pool": pool.id, "episodes": episodes, "fixed_k": fixed_k}
        # k_rule is recorded (so a chain clustered before the paper's rule was the default re-clusters);
        # fixed_k_assign only when not the default, so that fixed-k chains keep their fingerprints
        if not fixed_k:
            cparams["k_rule"] = k_rule
        elif assign != "rotation":
            cparams["fixed_k_assign"] = assign
        cluster = Job(cid, "tbs.cluster", cparams, needs=(pool.id,), out=cid)
        per_br = int(ctx.steps) if ctx.steps else _sizes(preset)["br_steps"]
        brs = ctx.train_job(
            cid.replace("/cluster_", "/brs_"), algo="tbs-br", seed=ctx.seed, steps=per_br,
            algo_inputs={"pool": pool.id}, algo_job_dirs={"clustering": cluster.id},
        )  # fmt: skip
        # the run trains per_br x (k + 1) env steps, k known once the clustering job has run
        brs = dataclasses.replace(brs, kind="tbs.brs", params={**brs.params, "steps_per_br": per_br})
        ego_params = {
            **common, "pool": pool.id, "cluster": cluster.id, "brs": brs.id,
            "granularity": opts.get("granularity", "fine"), "window": int(opts.get("window", 0)),
            "tom_games": int(opts.get("tom_games", 32)), "tom_epochs": int(opts.get("tom_epochs", 60)),
            "tom_epsilon": float(opts.get("tom_epsilon", 0.1)), "tom_lr": float(opts.get("tom_lr", 3e-3)),
            "tom_holdout": float(opts.get("tom_holdout", 0.25)),
            "tom_prior_bias": bool(opts.get("tom_prior_bias", True)),
            "tom_global": tom_global,
            "algo_inputs": {"pool": pool.id},
        }  # fmt: skip
        hyp = _hypothesis_params(opts)  # only the options that differ from the defaults: old fingerprints
        ego_params.update(hyp)
        if int(opts.get("tom_seed", -1)) >= 0:  # likewise: absent unless set
            ego_params["tom_seed"] = int(opts["tom_seed"])
        ego = Job(ctx.ego_id, "tbs.ego", ego_params, needs=(pool.id, cluster.id, brs.id), out=ctx.ego_id)
        eid = f"{ctx.ego_id}/tbs_eval"
        eparams = {**common, "heldout": heldout.id, "ego": ego.id, "episodes": episodes, **hyp}
        evaluate = Job(eid, "tbs.evaluate", eparams, needs=(heldout.id, ego.id), out=eid)
        return [pool, heldout, cluster, brs, ego, evaluate]


def _read_clusters(folder: str) -> list[list[int]]:
    """:func:`zsceval.algorithms.tbs.jobs.read_clusters`, its error as a :class:`ConfigError`."""
    from zsceval.algorithms.tbs.jobs import read_clusters

    try:
        return read_clusters(folder)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _expected_clusters(size: int) -> int:
    """Clusters assumed where a ``tbs-br`` config is resolved without its clustering: ``max(2, N // 3)``."""
    return max(2, size // 3)


def _hypothesis_params(opts: dict) -> dict:
    """The ``algo.hypothesis_*`` options that differ from their defaults, as ``tbs.ego`` params.

    Raises:
        ConfigError: an unknown fallback or prediction, or an option the agent refuses.
    """
    from zsceval.algorithms.tbs.hypothesis import HypothesisAgent
    from zsceval.algorithms.tbs.jobs import HYPOTHESIS_OPTIONS, hypothesis_options

    defaults = TBSOptions()
    params = {k: opts[k] for k in HYPOTHESIS_OPTIONS if k in opts and opts[k] != getattr(defaults, k)}
    try:
        HypothesisAgent.check_options(**hypothesis_options(params))
    except ValueError as exc:
        raise ConfigError(f"algo.hypothesis_*: {exc}") from None
    return params
