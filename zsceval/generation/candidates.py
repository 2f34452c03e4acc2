"""Behavior-preferring candidates of one layout as jobs: their weight vectors, their training and
feature-evaluation jobs, and the BR-Div selection job over them (ZSC-Eval Alg. 1 steps 1-3, Sec. 4.2).

The partner budget (:class:`PartnerBudget`) is a suite's ``partners`` section; a bench
(:mod:`zsceval.bench.plan`) and HSP's chain (which trains its own biased candidates when it has no
bench) both build candidates here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zsceval.envs.scenarios import resolve_scenario
from zsceval.execution import Job
from zsceval.execution import job_ids as ids
from zsceval.generation.reward_space import draw_rows, load_reward_space, pick_weights

__all__ = ["WEIGHT_SAMPLING", "PartnerBudget", "validate_budget", "candidate_weights", "candidate_jobs"]

WEIGHT_SAMPLING = ("reference", "random")
"""Valid ``partners.weight_sampling`` values (see :class:`PartnerBudget`)."""


@dataclass(frozen=True)
class PartnerBudget:
    """Partner generation and selection settings of a suite (see the module docstring)."""

    candidates: int = 8
    """Behavior-preferring candidates: weight vectors sampled from the layout's grid (C_max = 3)."""
    candidate_steps: int = 1_500_000
    """Env steps of each candidate run (pi_w with its BR; ZSC-Eval: 1e7)."""
    checkpoints: int = 10
    """Checkpoints kept per candidate, the trail the ``mid`` checkpoint is chosen from."""
    feature_episodes: int = 10
    """Episodes per seating used for behavior features (ZSC-Eval: 80 over both seatings)."""
    k: int = 3
    """Partners selected by BR-Div; the evaluation set has 2k (finals and mids)."""
    mid_br_steps: int = 1_000_000
    """Env steps of the BR trained for each selected ``mid`` checkpoint (ZSC-Eval: 1e7)."""
    dpp_samples: int = 100_000
    """k-DPP samples drawn when the subsets are too many to enumerate (ZSC-Eval: 1e6)."""
    min_return: float = 10.0
    """Candidates whose return with their BR is <= this are dropped (ZSC-Eval: 10)."""
    weight_sampling: str = "reference"
    """How candidate ``i`` gets its weight vector: ``"reference"`` (ZSC-Eval's indexing: grid point
    ``(seed + i) % num_grid_points`` of the C_max-filtered grid in ``itertools.product`` order, so with
    more candidates than grid points vectors repeat with other seeds) or ``"random"`` (a random
    permutation of the grid, then uniform draws with replacement; :func:`sample_weights`)."""


def validate_budget(pb: PartnerBudget, where: str, error: type[Exception] = ValueError) -> None:
    """Raise ``error`` (message ``where`` + key) for a budget that cannot run."""
    if pb.k < 1 or pb.k > pb.candidates:
        raise error(f"{where}k={pb.k} must be between 1 and the number of candidates ({pb.candidates})")
    for key in ("candidate_steps", "checkpoints", "feature_episodes", "mid_br_steps", "dpp_samples"):
        if getattr(pb, key) < 1:
            raise error(f"{where}{key}={getattr(pb, key)} must be >= 1")
    if pb.weight_sampling not in WEIGHT_SAMPLING:
        raise error(f"{where}weight_sampling={pb.weight_sampling!r}; valid: {', '.join(WEIGHT_SAMPLING)}")


def candidate_weights(
    layout: str, budget: PartnerBudget, seed: int, exclude: np.ndarray | None = None
) -> np.ndarray:
    """The weight vectors of a layout's ``budget.candidates`` candidates, candidate ``i`` in row ``i``.

    ``"reference"``: candidate ``i`` (training seed ``seed + i``) gets grid point ``(seed + i) % n`` of
    the ``n`` C_max-filtered grid points (:func:`pick_weights`, ZSC-Eval's ``(seed + offset) % len``
    with offset 0). ``"random"``: :func:`sample_weights` with ``np.random.default_rng(seed)``.

    Args:
        layout: layout name or alias.
        budget: the partner budget (``candidates``, ``weight_sampling``).
        seed: the first candidate's training seed.
        exclude: ``float [N, E + 1]`` weight vectors to leave out of the grid first (the evaluation
            partners' when an algorithm trains candidates for itself; :mod:`.exclusion`).

    Returns:
        float32[budget.candidates, E + 1].

    Raises:
        ValueError: an unknown ``budget.weight_sampling`` (lists the valid ones), or ``exclude``
            leaves no grid point.
    """
    space = load_reward_space(resolve_scenario(layout))
    grid = space.candidates()
    if exclude is not None and len(exclude):
        keep = ~(np.abs(grid[:, None, :] - np.asarray(exclude, dtype=np.float32)[None]) < 1e-6).all(-1).any(1)
        grid = grid[keep]
        if not len(grid):
            raise ValueError(f"{layout}: every weight vector of the grid is excluded")
    if budget.weight_sampling == "reference":
        return np.stack([pick_weights(grid, seed + i) for i in range(budget.candidates)])
    if budget.weight_sampling == "random":
        return draw_rows(grid, budget.candidates, np.random.default_rng(seed))
    raise ValueError(f"weight_sampling must be one of {WEIGHT_SAMPLING}, got {budget.weight_sampling!r}")


def candidate_jobs(
    layout: str,
    pb: PartnerBudget,
    seed: int,
    common: dict,
    *,
    exclude: np.ndarray | None = None,
    group: str = ids.CANDIDATES,
) -> tuple[list[Job], list[Job], Job]:
    """The behavior-preferring candidates of one layout as jobs (ZSC-Eval Alg. 1 steps 1-3).

    Args:
        layout: canonical layout name.
        pb: the layout's partner budget.
        seed: the suite seed (candidate ``i`` trains with seed ``seed + i``).
        common: ``layout, preset, device, overrides`` of every training job.
        exclude: weight vectors no candidate may have (:func:`candidate_weights`).
        group: the job ids' folder, ``<layout>/<group>/c000/train``.

    Returns:
        ``(train jobs, candidate.evaluate jobs, partners.select job)``; candidate ``i`` is ``c{i:03d}``.
    """
    weights = candidate_weights(layout, pb, seed, exclude)
    trains, evals = [], []
    for i, w in enumerate(weights):
        cid = ids.candidate_name(i)
        tid, eid = ids.candidate_train(layout, cid, group), ids.candidate_evaluate(layout, cid, group)
        trains.append(
            Job(
                tid,
                "train",
                {
                    **common,
                    "algo": "biased",
                    "seed": seed + i,
                    "steps": pb.candidate_steps,
                    "checkpoint_every": max(1, pb.candidate_steps // pb.checkpoints),
                    # the whole trail stays on disk: the mid checkpoint is chosen from all of it
                    "keep_checkpoints": pb.checkpoints + 1,
                    "algo_options": {"weights": [float(x) for x in w]},
                },
                out=tid,
            )
        )
        evals.append(
            Job(
                eid,
                "candidate.evaluate",
                {
                    "layout": layout,
                    "episodes": pb.feature_episodes,
                    "seed": seed + i,
                    "device": common["device"],
                    "weights": [float(x) for x in w],
                },
                needs=(tid,),
                out=eid,
            )
        )
    sel_id = ids.select(layout)
    select = Job(
        sel_id,
        "partners.select",
        {"k": pb.k, "seed": seed, "num_samples": pb.dpp_samples, "min_return": pb.min_return},
        needs=tuple(e.id for e in evals),
        out=sel_id,
    )
    return trains, evals, select
