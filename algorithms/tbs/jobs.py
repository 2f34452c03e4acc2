"""The TBS jobs after the training runs: cross-play clustering, the ToM models with the composite
agents, and the TBS evaluation protocol (TBS paper, Sec. 3.2-3.3 and Sec. 4).

* ``tbs.cluster``: cross-play of every (agent 1 of pair a, agent 2 of pair b) of the training pool,
  greedy, ``episodes`` each; Eq. 5 similarity (+1e-4); self-tuning spectral clustering (Eq. 6) or a
  fixed k; writes ``xp.json``, ``clustering.json`` and the figures ``similarity.png``, ``costs.png``.
* ``tbs.ego``: trains the k cluster ToM models (each on episodes of BR_i with cluster-i partners, both
  seats, Eq. 10) and the global ToM model (episodes of every BR_j with every cluster's partners,
  Eq. 11), then saves one checkpoint in
  ``run/`` holding the TBS agent (the ego, ``tbs``) and the baselines' agents: the single best
  response (``br``), the hypothesis-scoring agent over the same ToM models and BRs (``hypothesis``,
  Hypothetical Minds, :mod:`~.hypothesis`), Random Selection, CEM and CBPR for each ego seat (``random_0``,
  ``cem_1``, ...).
* ``tbs.evaluate``: every agent with every held-out pair in both seats (``episodes`` each), the
  held-out pair's own partner as the Oracle; the scaled reward (return / the held-out pair's
  self-play return) with bootstrap 95% CIs; ``results.parquet``, ``summary.json``, ``tbs.png``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch

from zsceval.algorithms.tbs.results import plot_tbs, scaled_rewards, summarize
from zsceval.execution.jobs import JobInputError, job_kind
from zsceval.io import atomic_write_text

if TYPE_CHECKING:
    from zsceval.algorithms.tbs.tom import ToMModel

__all__ = [
    "FIXED_K_ASSIGN",
    "TOM_GLOBAL",
    "ToMTraining",
    "check_cluster_options",
    "heldout_assignment",
    "cross_play_returns",
    "global_tom_plan",
    "read_clusters",
    "unlearned_tom_models",
]

TOM_GLOBAL = ("mixed", "matched")
"""The global ToM model's episodes (``tom_global``): Eq. 11's every cluster with every BR, or the
cluster models' matched episodes pooled."""


def _env(
    layout: str, games: int, device: Any, seed: int = 0, view_radius: int = 0, horizon: int | None = None
):
    """The evaluation env of a TBS job (the partial variant when ``view_radius`` > 0; ``horizon``
    None: the layout's, 400 for every shipped one, which the chain's training jobs also play unless
    ``env.horizon`` is set)."""
    from zsceval.envs.overcooked import OvercookedEnv

    return OvercookedEnv(layout, num_envs=games, device=device, seed=seed, view_radius=view_radius,
                         horizon=horizon)  # fmt: skip


def _horizon(params: dict) -> int | None:
    """A job's ``horizon`` param (absent: None, the layout's)."""
    return int(params["horizon"]) if params.get("horizon") is not None else None


def _run(needs: dict, job_id: str) -> Path:
    return Path(needs[job_id]) / "run"


def _pool(run: Path, device: Any):
    from zsceval.algorithms.tbs.pool import load_pool_agents

    return load_pool_agents(run, device)


@torch.no_grad()
def cross_play_returns(
    layout: str,
    firsts: list,
    seconds: list,
    episodes: int,
    seed: int,
    device: Any = "cpu",
    view_radius: int = 0,
    horizon: int | None = None,
):
    """Mean sparse return ``J[a, b]`` of agent 1 of pair a (seat 0) with agent 2 of pair b (seat 1).

    Args:
        layout: layout name.
        firsts, seconds: N agent-1 and N agent-2 agents (greedy Q-networks).
        episodes: episodes per pairing.
        seed: generator seed.
        view_radius: the partial variant's view radius (0: fully observable).
        horizon: episode length in env steps (None: the layout's).

    Returns:
        ``float64 [N, N]``.
    """
    from zsceval.evaluation.matches import play_games

    N = len(firsts)
    a = torch.arange(N).repeat_interleave(N * episodes)
    b = torch.arange(N).repeat_interleave(episodes).repeat(N)
    assignment = torch.stack([a, N + b], 1)
    gen = torch.Generator(device=device).manual_seed(seed)
    env = _env(layout, assignment.shape[0], device, seed, view_radius, horizon)
    res = play_games(env, [*firsts, *seconds], assignment, generator=gen, device=device, deterministic=True)
    return res.sparse.double().view(N, N, episodes).mean(-1).numpy()


FIXED_K_ASSIGN = ("rotation", "kmeans")
"""How ``fixed_k`` assigns pairs to clusters (``fixed_k_assign``; the first is the default): the
arg-max of STSC's rotation at that k (one code path with the automatic method), or k-means on the
unit-normalized top-k eigenvector rows (Ng, Jordan & Weiss 2002). The paper's fixed-k ablation says
"vanilla spectral clustering" without details; both are (``docs/differences.md``, "TBS clustering")."""


def check_cluster_options(
    k_rule: str, fixed_k: int, fixed_k_assign: str, pool_size: int | None = None
) -> None:
    """Validate the clustering options of ``tbs.cluster`` (``algo.k_rule``, ``algo.fixed_k``,
    ``algo.fixed_k_assign``).

    Args:
        k_rule: one of :data:`zsceval.algorithms.tbs.stsc.K_RULES`.
        fixed_k: 0 (choose k) or a number of clusters in ``1 .. pool_size``.
        fixed_k_assign: one of :data:`FIXED_K_ASSIGN`.
        pool_size: pairs in the training pool (None: not checked against ``fixed_k``).

    Raises:
        ValueError: an unknown rule or assignment (the message names the option and lists the valid
            values), or ``fixed_k`` out of range.
    """
    from zsceval.algorithms.tbs.stsc import K_RULES

    if k_rule not in K_RULES:
        raise ValueError(f"k_rule must be one of {', '.join(K_RULES)}, got {k_rule!r}")
    if fixed_k_assign not in FIXED_K_ASSIGN:
        raise ValueError(f"fixed_k_assign must be one of {', '.join(FIXED_K_ASSIGN)}, got {fixed_k_assign!r}")
    if fixed_k < 0 or (pool_size is not None and fixed_k > pool_size):
        top = "" if pool_size is None else f" .. {pool_size} (the pool's pairs)"
        raise ValueError(f"fixed_k must be 0 (STSC chooses k) or a number of clusters 1{top}, got {fixed_k}")


@job_kind("tbs.cluster")
def cluster_job(params: dict, out: Path, needs: dict) -> dict:
    """Cross-play matrix, similarity and clustering of the training pool.

    Params: ``layout, pool`` (train-job id), ``episodes, seed, device``, optionally ``view_radius``
    (the partial variant), ``horizon`` (the chain's ``env.horizon`` where set), ``k_rule``
    (:data:`zsceval.algorithms.tbs.stsc.K_RULES`, default ``"paper"``: the arg-min of Eq. 6's cost),
    ``fixed_k`` (0: choose k; else vanilla spectral clustering with that k) and ``fixed_k_assign``
    (:data:`FIXED_K_ASSIGN`, default ``"rotation"``).
    A pool of fewer than 3 pairs is one cluster unless ``fixed_k`` is given.

    Writes ``xp.json`` (``J``, ``similarity``), ``clustering.json`` (``labels, k, costs`` and the
    options used: ``fixed_k`` (None: chosen) and ``k_rule`` or ``fixed_k_assign``), ``similarity.png``
    and ``costs.png``.

    Raises:
        JobInputError: an invalid ``k_rule``, ``fixed_k`` or ``fixed_k_assign``
            (:func:`check_cluster_options`).
    """
    from zsceval.algorithms.tbs.figures import plot_costs, plot_similarity
    from zsceval.algorithms.tbs.similarity import clustering_affinity, cross_play_similarity
    from zsceval.algorithms.tbs.stsc import K_RULES, self_tuning_spectral_clustering

    device = params.get("device", "cpu")
    k_rule = str(params.get("k_rule", K_RULES[0]))
    fixed = int(params.get("fixed_k", 0) or 0)
    assign = str(params.get("fixed_k_assign", FIXED_K_ASSIGN[0]))
    firsts, seconds = _pool(_run(needs, params["pool"]), device)
    try:
        check_cluster_options(k_rule, fixed, assign, len(firsts))
    except ValueError as exc:
        raise JobInputError(str(exc)) from None
    radius = int(params.get("view_radius", 0))
    J = cross_play_returns(
        params["layout"],
        firsts,
        seconds,
        int(params["episodes"]),
        int(params["seed"]),
        device,
        radius,
        _horizon(params),
    )
    S = cross_play_similarity(J)
    if len(firsts) < 3 and not fixed:
        labels, k, costs = [0] * len(firsts), 1, {}
    else:
        c = self_tuning_spectral_clustering(
            clustering_affinity(J),
            fixed_k=fixed or None,
            assign=assign,
            k_rule=k_rule,
            seed=int(params["seed"]),
        )
        labels, k, costs = (
            [int(x) for x in c.labels],
            int(c.k),
            {int(a): float(b) for a, b in c.costs.items()},
        )
    atomic_write_text(out / "xp.json", json.dumps({"J": J.tolist(), "similarity": S.tolist()}, indent=1))
    result = {"labels": labels, "k": k, "costs": {str(a): b for a, b in costs.items()},
              "fixed_k": fixed or None, "k_rule": None if fixed else k_rule,
              "fixed_k_assign": assign if fixed else None}  # fmt: skip
    atomic_write_text(out / "clustering.json", json.dumps(result, indent=2))
    title = f"{params['layout']}: cross-play similarity (Eq. 5), k = {k}"
    plot_similarity(S, np.asarray(labels), out / "similarity.png", title=title)
    if costs:
        plot_costs(costs, out / "costs.png", chosen=k)
    return {"k": k, "labels": labels, "self_play": np.diag(J).tolist()}


def read_clusters(folder: str | Path) -> list[list[int]]:
    """The training pool's clusters as written by the ``tbs.cluster`` job: pair indices per
    cluster, clusters in label order (``folder/clustering.json``, key ``labels``).

    Raises:
        JobInputError: the file is missing or malformed (the message names it).
    """
    path = Path(folder) / "clustering.json"
    try:
        labels = [int(c) for c in json.loads(path.read_text())["labels"]]
        k = max(labels) + 1
    except (OSError, KeyError, TypeError, ValueError) as exc:  # JSONDecodeError is a ValueError
        raise JobInputError(f"cannot read the pool's clustering from {path}: {exc}") from None
    return [[i for i, c in enumerate(labels) if c == j] for j in range(k)]


@job_kind("tbs.brs")
def best_responses_job(params: dict, out: Path, needs: dict) -> dict:
    """The ``tbs-br`` run (:func:`zsceval.training.jobs.train_job`) with ``steps_per_br x
    (k + 1)`` env steps: the k cluster best responses and the single one each get the per-BR
    budget, k read from the clustering job (``params["algo_job_dirs"]["clustering"]``), which is
    known only once that job has run (params: ``train``'s, plus ``steps_per_br``)."""
    from zsceval.training.jobs import train_job

    k = len(read_clusters(needs[params["algo_job_dirs"]["clustering"]]))
    return train_job({**params, "steps": int(params["steps_per_br"]) * (k + 1)}, out, needs)


def _tom_episodes(
    layout: str,
    br,
    firsts,
    seconds,
    members: list[int],
    games: int,
    seed: int,
    device,
    concepts,
    view_radius=0,
    epsilon: float = 0.0,
    horizon: int | None = None,
):
    """Episodes of ``br`` with the pairs ``members`` (the ego in seat g % 2 of game g); the best
    response explores with ``epsilon`` (greedy agents in a deterministic game repeat one episode),
    the partners act greedily."""
    from zsceval.algorithms.tbs.pool import GreedyPool
    from zsceval.algorithms.tbs.tom import collect_tom_data
    from zsceval.rl.population.pool import PolicyPool

    N = len(firsts)
    pool = GreedyPool(PolicyPool.from_policies([*firsts, *seconds]))
    env = _env(layout, games, device, seed, view_radius, horizon)
    # the ego sits in seat g % 2: its partner is agent 2 (member N + i) or agent 1 (member i)
    pick = [members[g // 2 % len(members)] for g in range(games)]
    partner_members = [N + i if g % 2 == 0 else i for g, i in enumerate(pick)]
    gen = torch.Generator(device=device).manual_seed(seed)
    br.epsilon = epsilon  # the best response explores so that the episodes differ; partners stay greedy
    try:
        return collect_tom_data(env, br, pool, concepts, 1, partner_members, gen, deterministic=False)
    finally:
        br.epsilon = 0.0


def global_tom_plan(clusters: list[list[int]], games: int) -> list[list[int]]:
    """The partners of the global ToM model's episodes, per best response (Eq. 11).

    Eq. 11 draws the partner's cluster i and the best response's cluster j independently and
    uniformly, so every (i, j) block gets the same number of episodes: ``games x N / k^2`` rounded
    up to an even number (half with the best response in each seat), at least 2, about as many
    episodes in all as the cluster models' ``games x N``. Within a block the members of cluster i
    take turns, starting at member ``j x slots`` so that different best responses meet different
    members of a large cluster.

    Args:
        clusters: pool-pair indices per cluster (k lists covering the N pairs).
        games: ``tom_games``, episodes per pool pair.

    Returns:
        One list per best response j: the pool pair of each two consecutive games (seat 0, then
        seat 1), ``2 x len`` games in all, as :func:`_tom_episodes` takes them.

    Raises:
        ValueError: no clusters, an empty cluster or ``games`` < 1.
    """
    if not clusters or any(not c for c in clusters) or games < 1:
        raise ValueError(f"global_tom_plan needs non-empty clusters and games >= 1, got {clusters}, {games}")
    k, n = len(clusters), sum(len(c) for c in clusters)
    slots = max(1, -(-games * n // (2 * k * k)))  # ceil(games N / k^2 / 2) pairs of games per block
    return [[c[(j * slots + s) % len(c)] for c in clusters for s in range(slots)] for j in range(k)]


@job_kind("tbs.ego")
def ego_job(params: dict, out: Path, needs: dict) -> dict:
    """ToM models and the composite agents.

    Params: ``layout, pool, cluster, brs`` (job ids), ``granularity, window, seed, device``, and
    optionally ``view_radius`` and ``horizon`` (the chain's env, :func:`_env`), ``tom_games``
    (episodes per pool pair, 32: a cluster of m pairs gets 32 m),
    ``tom_epochs`` (60: the global model's passes over all the episodes; a cluster model of m of
    the N pairs makes about as many gradient steps, ``round(N / m)`` times the passes),
    ``tom_epsilon`` (the best response's exploration while collecting, 0.1), ``tom_hidden`` (64),
    ``tom_lr`` (Adam, 3e-3), ``tom_holdout`` (the fraction of each model's episodes kept out of
    training for early stopping, 0.25; 0: none), ``tom_prior_bias`` (start each model's head at
    its training labels' log-odds, :func:`~zsceval.algorithms.tbs.tom.train_tom`; True; False gives
    the models of chains run before it existed) and ``tom_global`` (the global model's episodes:
    ``mixed``, Eq. 11, every cluster's partners with every cluster's best response,
    :func:`global_tom_plan`; ``matched``, the cluster models' episodes pooled, each cluster's
    partners with its own best response only), ``tom_seed`` (the ToM models' initial weights and
    minibatch order; default ``seed``; the episodes they learn from are the same whatever it is) and
    the hypothesis agent's options (:func:`hypothesis_options`).

    Resumable model by model: each ToM model is written to ``tom_models/`` as it finishes, and a
    rerun of a stopped job loads those and trains the rest. Every model starts from weights that
    depend on the job's seed and the model's index only (:data:`TOM_INIT_STRIDE`), so a resumed job
    ends with the weights of an uninterrupted one.

    Raises:
        JobInputError: an unreadable clustering (:func:`read_clusters`) or an unknown ``tom_global``.
    """
    from tqdm.auto import tqdm

    from zsceval.algorithms.tbs.agents import CBPRAgent, CEMAgent, RandomSelectionAgent, TBSAgent
    from zsceval.algorithms.tbs.concepts import build_concept_set
    from zsceval.algorithms.tbs.hypothesis import HypothesisAgent
    from zsceval.rl.checkpoint import load_agent, save_checkpoint
    from zsceval.training.jobs import JOB_PROGRESS_ENV

    mode = params.get("tom_global", "mixed")
    if mode not in TOM_GLOBAL:
        raise JobInputError(f"tom_global must be one of {', '.join(TOM_GLOBAL)}, got {mode!r}")
    device = params.get("device", "cpu")
    layout, seed = params["layout"], int(params["seed"])
    training = ToMTraining.from_params(params)
    radius, horizon = int(params.get("view_radius", 0)), _horizon(params)
    firsts, seconds = _pool(_run(needs, params["pool"]), device)
    clusters = read_clusters(needs[params["cluster"]])
    k = len(clusters)
    br_run = _run(needs, params["brs"])
    brs = [load_agent(br_run, f"br_{j}", device)[0].eval() for j in range(k)]
    single = load_agent(br_run, "br_all", device)[0].eval()
    concepts = build_concept_set(layout, params.get("granularity", "fine"))
    games, eps = training.games, training.epsilon
    bar = tqdm(total=k + 1, desc=f"tbs ToM {layout}", unit="model", leave=False,
               disable=os.environ.get(JOB_PROGRESS_ENV) != "1")  # fmt: skip
    bar.set_postfix_str("collecting episodes")
    data = []
    for j, members in enumerate(clusters):  # tom_games episodes per pair: a cluster needs each partner
        n_games = games * len(members)
        data.append(_tom_episodes(layout, brs[j], firsts, seconds, members, n_games, seed + j, device,
                                  concepts, radius, eps, horizon))  # fmt: skip
    if mode == "matched":
        global_data = data
    else:  # "mixed", Eq. 11: the partner's cluster and the best response's drawn independently;
        # seeds seed + 7919 + j, apart from the cluster models' seed + j, so the episodes differ
        global_data = [
            _tom_episodes(layout, brs[j], firsts, seconds, plan, 2 * len(plan), seed + 7919 + j, device,
                          concepts, radius, eps, horizon)
            for j, plan in enumerate(global_tom_plan(clusters, games))
        ]  # fmt: skip
    curves = {}

    def fit(name: str, index: int, parts: list, passes: int) -> ToMModel:
        obs = torch.cat([d.obs for d in parts], 1)
        spec = training.spec(obs, concepts, layout)
        resumed = _load_tom(out, name, spec, device)
        if resumed is not None:  # finished by an earlier run of this job that was stopped
            model, curves[name] = resumed
            bar.update(1)
            return model.eval()
        starts = torch.cat([d.starts for d in parts], 1)
        lab = torch.cat([d.labels for d in parts], 1)
        mask = torch.cat([d.known & d.mask for d in parts], 1)
        model = training.new_model(spec, index).to(device)
        bar.set_postfix_str(f"{name}: {passes} epochs on {obs.shape[1]} episodes")
        curves[name] = training.train(model, obs, starts, lab, mask, passes)
        curves[name]["episodes"] = [int(obs.shape[1])]
        _save_tom(out, name, model, spec, curves[name])
        bar.update(1)
        return model.eval()

    passes = training.cluster_passes([d.obs.shape[1] for d in data])
    toms = [fit(f"cluster_{j}", j, [data[j]], passes[j]) for j in range(k)]
    global_tom = fit("global", k, global_data, training.epochs)
    bar.close()
    window = int(params.get("window", 0)) or None
    agents = {"tbs": TBSAgent(brs, toms, global_tom, window=window), "br": single,
              "hypothesis": HypothesisAgent(brs, toms, **hypothesis_options(params))}  # fmt: skip
    # seat s: the ego's candidates are the seat-s agents of the pool, the partner models the others'
    for s, (own, other) in enumerate(((firsts, seconds), (seconds, firsts))):
        agents[f"random_{s}"] = RandomSelectionAgent(own)
        agents[f"cem_{s}"] = CEMAgent(own, other, action_model="epsilon_greedy")
        agents[f"cbpr_{s}"] = CBPRAgent(
            brs, [[other[i] for i in c] for c in clusters], action_model="epsilon_greedy"
        )
    run = out / "run"
    meta = {"algo": "tbs", "layout": layout, "ego": "tbs", "env_spec": _env_spec(layout, radius, horizon),
            "clusters": clusters, "tom": {n: _tom_summary(c) for n, c in curves.items()}}  # fmt: skip
    save_checkpoint(run / "checkpoints", 0, agents, meta)
    atomic_write_text(run / "tom_curves.json", json.dumps(curves))
    summary = {"k": k, "clusters": clusters, "tom": meta["tom"]}
    atomic_write_text(run / "eval.json", json.dumps(summary, indent=2))
    return {"run": "run", **summary}


TOM_INIT_STRIDE = 1009
"""Model i of a ``tbs.ego`` job with ToM seed s (``tom_seed``, default the job's seed) starts from
``torch.manual_seed(s x 1009 + i)`` weights
(cluster models i < k, the global model k)."""


@dataclass(frozen=True)
class ToMTraining:
    """How a ``tbs.ego`` job trains its ToM models: its ``tom_*`` params with their defaults
    (:func:`ego_job`), the model spec, the initial weights, the passes and the training call. Shared
    with ``benchmarks/learning/tbs_tom_init.py``, which retrains a chain's model exactly."""

    seed: int
    """``tom_seed`` (default the job's ``seed``): initial weights and minibatch order."""
    games: int = 32
    epochs: int = 60
    epsilon: float = 0.1
    hidden: int = 64
    lr: float = 3e-3
    holdout: float = 0.25
    prior_bias: bool = True

    @classmethod
    def from_params(cls, params: dict) -> ToMTraining:
        """From a ``tbs.ego`` job's params (absent keys take the defaults above)."""
        return cls(seed=int(params.get("tom_seed", params["seed"])),
                   games=int(params.get("tom_games", cls.games)),
                   epochs=int(params.get("tom_epochs", cls.epochs)),
                   epsilon=float(params.get("tom_epsilon", cls.epsilon)),
                   hidden=int(params.get("tom_hidden", cls.hidden)), lr=float(params.get("tom_lr", cls.lr)),
                   holdout=float(params.get("tom_holdout", cls.holdout)),
                   prior_bias=bool(params.get("tom_prior_bias", cls.prior_bias)))  # fmt: skip

    def spec(self, obs: torch.Tensor, concepts, layout: str) -> dict:
        """The :class:`~zsceval.algorithms.tbs.tom.ToMModel` spec for episodes ``obs uint8 [T, B,
        *obs_shape]`` of ``concepts`` (a concept set) on ``layout``."""
        return {"obs_shape": list(obs.shape[2:]), "num_concepts": concepts.num_concepts,
                "hidden_size": self.hidden, "granularity": concepts.granularity,
                "layout": layout}  # fmt: skip

    def new_model(self, spec: dict, index: int) -> ToMModel:
        """Model ``index`` (cluster models ``0..k-1``, the global model ``k``) with its initial
        weights, on the CPU. They depend on the ToM seed and the index only, not on what this
        process ran before (:data:`TOM_INIT_STRIDE`), so a resumed job and an uninterrupted one
        start every model alike. Raises what :class:`ToMModel` raises for a malformed ``spec``."""
        from zsceval.algorithms.tbs.tom import ToMModel

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed * TOM_INIT_STRIDE + index)
            return ToMModel(spec)

    def cluster_passes(self, episodes: list[int]) -> list[int]:
        """Passes of each cluster model, given each one's episode count: every model gets about the
        global model's number of gradient steps; a cluster model has m / N of the episodes, so it
        makes ``round(N / m)`` times ``epochs`` (with ``epochs`` each, small clusters' models stayed
        at the loss of a constant predictor while the global one fell far below it)."""
        total = sum(episodes)
        return [self.epochs * max(1, round(total / e)) for e in episodes]

    def train(
        self,
        model: ToMModel,
        obs: torch.Tensor,
        starts: torch.Tensor,
        labels: torch.Tensor,
        mask: torch.Tensor,
        passes: int,
    ) -> dict[str, list[float]]:
        """Train ``model`` in place: :func:`~zsceval.algorithms.tbs.tom.train_tom` with these
        settings (``lr``, ``holdout``, ``prior_bias``) and a CPU minibatch generator seeded with the
        ToM seed.

        Args:
            obs: ``uint8 [T, B, *obs_shape]`` the ego's observations.
            starts: ``bool [T, B]`` episode starts.
            labels: ``float32 [T, B, M]`` next-concept labels.
            mask: ``bool [T, B]`` steps that count in the loss (known labels).
            passes: epochs over the data (:meth:`cluster_passes`, or ``epochs`` for the global model).

        Returns:
            ``train_tom``'s curves in nats per step: ``loss`` (per epoch) and ``baseline``; with a
            holdout also ``val_epoch``, ``val_loss`` and ``best_epoch``.

        Raises:
            ValueError: mismatched shapes or ``holdout`` outside [0, 1) (from ``train_tom``)."""
        from zsceval.algorithms.tbs.tom import train_tom

        gen = torch.Generator().manual_seed(self.seed)
        return train_tom(model, obs, starts, labels, passes, lr=self.lr, generator=gen, mask=mask,
                         holdout=self.holdout, prior_bias=self.prior_bias)  # fmt: skip


TOM_PARTIAL = "tom_models"
"""Sub-folder of a ``tbs.ego`` job's output with each ToM model as it finishes
(``<name>.safetensors`` + ``<name>.json``), so that a stopped job resumes at the next model."""


def _save_tom(out: Path, name: str, model, spec: dict, curve: dict) -> None:
    """Write one finished ToM model of a ``tbs.ego`` job: weights first, then the JSON (spec and
    learning curve) that marks it finished; both atomically."""
    from safetensors.torch import save_file

    from zsceval.io import atomic_path

    folder = out / TOM_PARTIAL
    weights = {key: t.detach().cpu().contiguous() for key, t in model.state_dict().items()}
    with atomic_path(folder / f"{name}.safetensors") as tmp:
        save_file(weights, str(tmp))
    atomic_write_text(folder / f"{name}.json", json.dumps({"spec": spec, "curve": curve}))


def _load_tom(out: Path, name: str, spec: dict, device):
    """``(model, curve)`` of a ToM model that an earlier run of the job finished, or None when it
    has none (or one of another spec, which is then trained again)."""
    from safetensors.torch import load_file

    from zsceval.algorithms.tbs.tom import ToMModel

    marker = out / TOM_PARTIAL / f"{name}.json"
    if not marker.is_file():
        return None
    saved = json.loads(marker.read_text())
    if saved.get("spec") != spec:
        return None
    model = ToMModel(spec)
    model.load_state_dict(load_file(str(out / TOM_PARTIAL / f"{name}.safetensors")))
    return model.to(device), saved["curve"]


HYPOTHESIS_OPTIONS = {"hypothesis_alpha": ("alpha", float), "hypothesis_c": ("c", float),
                      "hypothesis_v_thr": ("v_thr", float), "hypothesis_top_k": ("top_k", int),
                      "hypothesis_fallback": ("fallback", str),
                      "hypothesis_prediction": ("prediction", str)}  # fmt: skip
"""Params of ``tbs.ego`` -> keyword arguments of :class:`~.hypothesis.HypothesisAgent` (absent: the
agent's defaults, Hypothetical Minds' alpha 0.3, c 1, V_thr 0.7 and the arg-max prediction)."""


def hypothesis_options(params: dict) -> dict:
    """The hypothesis agent's keyword arguments from the ``tbs.ego`` params (:data:`HYPOTHESIS_OPTIONS`)."""
    return {arg: cast(params[key]) for key, (arg, cast) in HYPOTHESIS_OPTIONS.items() if key in params}


def _tom_summary(curve: dict) -> dict:
    """A ToM model's training in numbers: its episodes (held-out ones included) and epochs, the last
    training loss, the constant predictor's loss and, with early stopping, the kept epoch and its
    held-out loss (losses in nats per step), and ``learned``: whether the model's loss (held-out
    with early stopping, else the last training loss) is below 0.9 x the constant predictor's. A
    model that did not learn predicts the same concepts at every step, and Eq. 8 then compares the
    other models against a flat one (``docs/results.md``, the larger-budget TBS chain)."""
    out = {"episodes": curve["episodes"][0], "epochs": len(curve["loss"]),
           "final_loss": curve["loss"][-1] if curve["loss"] else None,
           "baseline": curve["baseline"][0]}  # fmt: skip
    if "best_epoch" in curve:
        best = curve["best_epoch"][0]
        out.update({"best_epoch": best, "heldout_loss": curve["val_loss"][curve["val_epoch"].index(best)]})
    out["learned"] = _learned(out)
    return out


def _learned(summary: dict) -> bool:
    """Whether a :func:`_tom_summary` (or an older one without ``learned``) shows a model whose kept
    loss (held-out with early stopping, else the last training loss) is below
    :data:`LEARNED_FRACTION` of the constant predictor's."""
    loss = summary.get("heldout_loss", summary.get("final_loss"))
    return loss is not None and loss < LEARNED_FRACTION * summary["baseline"]


def unlearned_tom_models(tom: dict) -> list[str]:
    """Warning lines for the ToM models of an ego job's summary (``eval.json``'s ``tom``,
    :func:`_tom_summary`) whose loss is not below :data:`LEARNED_FRACTION` of the constant
    predictor's; empty when every model learned. Judged from the stored losses, so summaries written
    before ``learned`` existed are judged alike."""
    lines = []
    for name, t in tom.items():
        if not _learned(t):
            loss = t.get("heldout_loss", t.get("final_loss"))
            shown = "none (not trained)" if loss is None else f"{loss:.3f}"
            lines.append(
                f"warning: ToM model {name} did not learn: loss {shown} against {t['baseline']:.3f} "
                "nats/step for the constant predictor; its predictions are flat and Eq. 8 compares "
                "the others with it"
            )
    return lines


LEARNED_FRACTION = 0.9
"""A ToM model has learned when its loss is below this fraction of the constant predictor's
(:func:`_tom_summary`)."""


def _env_spec(layout: str, view_radius: int = 0, horizon: int | None = None) -> dict:
    return json.loads(json.dumps(_env(layout, 1, "cpu", 0, view_radius, horizon).spec_dict()))


def heldout_assignment(pairs: int, episodes: int) -> torch.Tensor:
    """The games of the TBS protocol: ``int64 [2 x pairs x episodes, 2]`` policy indices per seat
    over the policies ``[ego in seat 0, ego in seat 1, the pairs' agent 1s, the pairs' agent 2s]``.

    Games ``[0, pairs x episodes)`` seat the ego in seat 0 with agent 2 of pair ``g // episodes``, the
    rest the ego in seat 1 with agent 1 of that pair (``tbs.evaluate``; replayed by
    ``benchmarks/learning/tbs_drop_clusters.py``).
    """
    h = torch.arange(pairs).repeat_interleave(episodes)
    seat0 = torch.stack([torch.zeros_like(h), 2 + pairs + h], 1)
    seat1 = torch.stack([2 + h, torch.ones_like(h)], 1)
    return torch.cat([seat0, seat1])


@job_kind("tbs.evaluate")
def evaluate_job(params: dict, out: Path, needs: dict) -> dict:
    """The TBS protocol against the held-out pool (params: ``layout, heldout, ego`` (job ids),
    ``episodes, seed, device``, ``view_radius`` for the partial variant and ``horizon`` where the
    chain sets ``env.horizon``).

    Every variant (TBS, BR, Hypothesis, Random, CEM, CBPR) and the Oracle play the same env: the
    chain's, with its view radius (:func:`_env`; 0 = fully observable) and episode length. An ego
    checkpoint written before the hypothesis agent existed has no ``hypothesis``: it is then built
    from the checkpoint's TBS agent (its cluster ToM models and BRs) with the options in ``params``
    (:func:`hypothesis_options`).
    """
    from zsceval.evaluation.matches import play_games
    from zsceval.rl.checkpoint import CheckpointError, load_agent

    device = params.get("device", "cpu")
    layout, E = params["layout"], int(params["episodes"])
    radius, horizon = int(params.get("view_radius", 0)), _horizon(params)
    h1, h2 = _pool(_run(needs, params["heldout"]), device)
    H = len(h1)
    run = _run(needs, params["ego"])
    get = {name: load_agent(run, name, device)[0].eval() for name in
           ("tbs", "br", "random_0", "random_1", "cem_0", "cem_1", "cbpr_0", "cbpr_1")}  # fmt: skip
    try:
        hyp = load_agent(run, "hypothesis", device)[0].eval()
    except CheckpointError as exc:  # an ego checkpoint from before the hypothesis agent
        if "has no agent 'hypothesis'" not in str(exc):
            raise
        from zsceval.algorithms.tbs.hypothesis import HypothesisAgent

        tbs = get["tbs"]
        hyp = HypothesisAgent(list(tbs.brs), list(tbs.toms), **hypothesis_options(params)).eval()
    # Hypothesis last: the variants before it draw from the generator as they did before it existed
    variants = {
        "TBS": (get["tbs"], get["tbs"]), "BR": (get["br"], get["br"]),
        "Random": (get["random_0"], get["random_1"]), "CEM": (get["cem_0"], get["cem_1"]),
        "CBPR": (get["cbpr_0"], get["cbpr_1"]), "Hypothesis": (hyp, hyp),
    }  # fmt: skip
    frames = []
    gen = torch.Generator(device=device).manual_seed(int(params["seed"]))
    h, ep = torch.arange(H).repeat_interleave(E), torch.arange(E).repeat(H)
    assignment = heldout_assignment(H, E)
    for name, (ego0, ego1) in variants.items():
        # policies: ego0, ego1, held-out agent 1s, held-out agent 2s
        pol = [ego0, ego1, *h1, *h2]
        env = _env(layout, assignment.shape[0], device, int(params["seed"]), radius, horizon)
        res = play_games(env, pol, assignment, generator=gen, device=device, deterministic=True)
        frames.append(pd.DataFrame({"agent": name, "heldout": torch.cat([h, h]).numpy(),
                                    "seat": np.repeat([0, 1], H * E), "episode": torch.cat([ep, ep]).numpy(),
                                    "sparse_return": res.sparse.numpy().astype(float)}))  # fmt: skip
    oracle = torch.stack([h, H + h], 1)
    env = _env(layout, oracle.shape[0], device, int(params["seed"]), radius, horizon)
    res = play_games(env, [*h1, *h2], oracle, generator=gen, device=device, deterministic=True)
    sp = res.sparse.numpy().astype(float)
    frames.append(pd.DataFrame({"agent": "Oracle", "heldout": np.concatenate([h.numpy()] * 2),
                                "seat": np.repeat([0, 1], H * E), "episode": np.concatenate([ep.numpy()] * 2),
                                "sparse_return": np.concatenate([sp, sp])}))  # fmt: skip
    frame = scaled_rewards(pd.concat(frames, ignore_index=True))
    frame["layout"] = layout
    tmp = out / "results.parquet.tmp"
    frame.to_parquet(tmp)
    tmp.replace(out / "results.parquet")
    table = summarize(frame, seed=int(params["seed"]))
    atomic_write_text(out / "summary.json", table.to_json(orient="records", indent=1))
    from zsceval.algorithms.tbs.report import format_tbs, scaled_pairs

    table.insert(0, "run", ".")
    table.insert(0, "layout", layout)
    table["heldout_pairs"] = H
    table["scaled_pairs"] = scaled_pairs(frame)
    report = format_tbs(table)
    summary_file = run / "eval.json"
    if summary_file.exists():
        report += "".join(
            f"{line}\n" for line in unlearned_tom_models(json.loads(summary_file.read_text())["tom"])
        )
    atomic_write_text(out / "report.txt", report)
    plot_tbs(table, out / "tbs.png", title=f"{layout}: held-out pool ({H} pairs, both seats)")
    return {"rows": len(frame), "summary": json.loads(table.to_json(orient="records"))}
