"""The YLE paper's evaluation metrics over episodes, each with a 95% bootstrap confidence interval.

Source: YLE paper ("The Yōkai Learning Environment: Tracking Beliefs Over Space and Time") Sec. 5
"Setup": return **R**, success rate **SR**, number of colours clustered **NC** and the rate of
successfully ending early **SEE** ("how often agents end the game early and still win"). Per episode
they are read from the ``Step.infos`` of the step that ended it (the Yōkai env's ``win``,
``ended_early``, ``clustered``) and its sparse return (the reward of Eq. 3):

* R = mean return per episode (Eq. 3: the score S of Eq. 1 if won, else ``-d_a - (|C| - c_a) - i_h``);
* SR = 100 x the fraction of episodes won (every colour one cluster, Eq. 2), in %;
* NC = mean number of colours forming one cluster at the end of the episode;
* SEE = 100 x the fraction of *all* episodes that a player ended early (END) and that were won, in %;
* S = mean game score: Eq. 1's score if the episode was won, else 0 ("the score in Equation 1 is only
  given when the game ends successfully", Sec. 3).

**Which one the paper's Table 1 calls R.** Its R values fit S and not the mean of Eq. 3: CNN-GRU
has SR 2.3%, NC 0.7 and R 0.3, but with 97.7% of games lost and at most 0.7 colours clustered in
them, Eq. 3 averages at most ``0.977 x (-2.3) + 0.023 x 20 = -1.8``; ToMTrack (SR 48.3%, NC 2.2,
SEE 0) would need a won game to score above 4, the most four hints give without ending early. As S,
every row of Table 1 and 7 gives a score per won game of 3.1 to 3.5 (humans, who end early: 6.0).
So compare S with the paper's "R"; R here is the training reward of Eq. 3 (docs/yokai.md).

Intervals are percentile bootstrap intervals over episodes (episodes resampled with replacement,
the statistic recomputed per replicate). numpy only (the statistics layer does not import torch).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .metrics import ConfidenceInterval

__all__ = ["YLE_METRICS", "bootstrap_mean_ci", "metrics_dict", "yle_episode_values", "yle_metrics"]

YLE_METRICS = ("R", "SR", "NC", "SEE", "S")
"""The metric names: the paper's Table 1 order, then the game score S (its Table 1's "R")."""


def bootstrap_mean_ci(
    values: np.ndarray, *, reps: int = 2000, level: float = 0.95, rng: np.random.Generator
) -> ConfidenceInterval:
    """Mean of per-episode values and its percentile bootstrap interval over episodes.

    Args:
        values: ``float [M]`` one value per episode, M >= 1.
        reps: bootstrap replicates (>= 1).
        level: coverage, in (0, 1).
        rng: source of randomness (the same state gives the same interval).

    Returns:
        ``ConfidenceInterval(estimate, low, high)``: the sample mean and the ``(1 - level) / 2``,
        ``(1 + level) / 2`` quantiles of the replicate means; low = high = estimate for one episode.

    Raises:
        ValueError: no episodes, a value that is not finite, bad ``reps`` or ``level``.
    """
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.size == 0:
        raise ValueError("no episodes")
    if not np.isfinite(x).all():
        raise ValueError("episode values must be finite")
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    estimate = float(x.mean())
    if x.size == 1:
        return ConfidenceInterval(estimate, estimate, estimate)
    means = x[rng.integers(0, x.size, size=(reps, x.size))].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return ConfidenceInterval(estimate, float(low), float(high))


def yle_metrics(
    returns: np.ndarray,
    win: np.ndarray,
    ended_early: np.ndarray,
    clustered: np.ndarray,
    score: np.ndarray,
    *,
    reps: int = 2000,
    level: float = 0.95,
    rng: np.random.Generator,
) -> dict[str, ConfidenceInterval]:
    """R, SR, NC, SEE and S of M episodes with bootstrap intervals (YLE Sec. 5; module docstring).

    Args:
        returns: ``float [M]`` sparse return per episode (Eq. 3).
        win: ``bool [M]`` the episode was won (Eq. 2).
        ended_early: ``bool [M]`` a player ended it with END.
        clustered: ``int [M]`` colours clustered at its end (0..|C|).
        score: ``float [M]`` Eq. 1's score at its end (the env's ``score`` info, given for lost
            games too; S counts it only for won ones).
        reps, level, rng: as :func:`bootstrap_mean_ci`; the metrics draw their replicates one
            after the other from ``rng`` in the order R, SR, NC, SEE, S.

    Returns:
        ``{"R", "SR", "NC", "SEE", "S"}`` -> ``ConfidenceInterval``; SR and SEE in percent.

    Raises:
        ValueError: arrays of different lengths or none (see :func:`bootstrap_mean_ci`).
    """
    per_episode = yle_episode_values(win, clustered, score, returns=returns, ended_early=ended_early)
    return {k: bootstrap_mean_ci(v, reps=reps, level=level, rng=rng) for k, v in per_episode.items()}


def yle_episode_values(
    win: np.ndarray,
    clustered: np.ndarray,
    score: np.ndarray,
    *,
    returns: np.ndarray | None = None,
    ended_early: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Each episode's value of the YLE metrics, ``float64 [M]`` each, in the order R, SR, NC, SEE, S
    (R only with ``returns``, SEE only with ``ended_early``): SR and SEE are 100 for a won (won
    and ended early) episode and 0 otherwise, S is Eq. 1's ``score`` of a won episode and 0 for a
    lost one (YLE Sec. 5; the arguments as :func:`yle_metrics`'). Their means are the metrics.

    Raises:
        ValueError: arrays of different lengths.
    """
    given = {"R": returns, "win": win, "SEE": ended_early, "NC": clustered, "S": score}
    arrays = {k: np.asarray(a).reshape(-1) for k, a in given.items() if a is not None}
    if len({a.size for a in arrays.values()}) != 1:
        raise ValueError(f"per-episode arrays differ in length: {[a.size for a in arrays.values()]}")
    w = arrays["win"].astype(bool)
    values = {}
    if "R" in arrays:
        values["R"] = arrays["R"].astype(np.float64)
    values["SR"] = 100.0 * w
    values["NC"] = arrays["NC"].astype(np.float64)
    if "SEE" in arrays:
        values["SEE"] = 100.0 * (w & arrays["SEE"].astype(bool))
    values["S"] = np.where(w, arrays["S"].astype(np.float64), 0.0)
    return values


def metrics_dict(metrics: Mapping[str, ConfidenceInterval]) -> dict[str, dict[str, float]]:
    """JSON-able ``{name: {"mean", "ci95": [low, high]}}`` of :func:`yle_metrics`' result."""
    return {k: {"mean": v.estimate, "ci95": [v.low, v.high]} for k, v in metrics.items()}
