"""Play fixed policies against each other (no learning): returns, event counts, 95% CIs."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from zsceval.rl.runner import EpisodeRunner
from zsceval.rl.seating import fixed_seating

__all__ = ["PlayResult", "mean_ci", "play", "summarize"]


@dataclass
class PlayResult:
    """Per-episode outcomes of :func:`play` (CPU tensors).

    Attributes:
        sparse: ``float32 [M]`` team sparse return per episode.
        shaped: ``float32 [M, n]`` base shaped return per seat.
        events: ``float32 [M, n, E]`` event counts per seat.
        event_names: the env's event names (length E).
    """

    sparse: torch.Tensor
    shaped: torch.Tensor
    events: torch.Tensor
    event_names: tuple[str, ...]


def mean_ci(
    x: torch.Tensor, level: float = 0.95, low_bound: float | None = None
) -> tuple[float, float, float]:
    """Mean and Student-t confidence interval of i.i.d. episode returns.

    Args:
        x: ``float [M]``.
        level: confidence level.
        low_bound: the least value a return can take (Overcooked's sparse return: 0); the
            interval is clipped there, so it never reaches below what can happen.

    Returns:
        ``(mean, low, high)``; low = high = mean when M < 2.
    """
    from scipy import stats  # imported lazily: scipy.stats costs ~1 s at import

    x = x.double().cpu()
    m = float(x.mean()) if x.numel() else float("nan")
    if x.numel() < 2:
        return m, m, m
    half = float(stats.t.ppf(0.5 + level / 2, x.numel() - 1)) * float(x.std()) / math.sqrt(x.numel())
    low = m - half if low_bound is None else max(m - half, low_bound)
    return m, low, m + half


@torch.no_grad()
def play(
    env,
    seat_policies: list,
    episodes: int,
    generator: torch.Generator | None = None,
    deterministic: bool = False,
) -> PlayResult:
    """Run ``episodes`` full episodes with agent ``seat_policies[k]`` in seat k of every game.

    Uses the :class:`~zsceval.rl.runner.EpisodeRunner`: ``ceil(episodes / B)`` rounds of one
    episode per game; the first ``episodes`` finished ones are returned.

    Args:
        env: batched env (it is reset).
        seat_policies: one agent per seat (length n; the same agent may appear in several seats).
        episodes: M.
        generator: action-sampling generator on the env device.
        deterministic: arg-max actions instead of sampling (ZSC-Eval evaluates stochastically).

    Raises:
        ValueError: wrong number of seat agents.
    """
    n = env.num_agents
    if len(seat_policies) != n:
        raise ValueError(f"need {n} seat policies, got {len(seat_policies)}")
    actors, arm = fixed_seating(seat_policies)
    runner = EpisodeRunner(env, actors, [arm], generator=generator)
    tables = []
    done = 0
    while done < episodes:
        tables.append(runner.play(deterministic))
        done += len(tables[-1])
    return PlayResult(
        torch.cat([t.sparse for t in tables])[:episodes],
        torch.cat([t.shaped for t in tables])[:episodes],
        torch.cat([t.events for t in tables])[:episodes],
        tuple(env.event_names),
    )


def summarize(result: PlayResult, level: float = 0.95, low_bound: float | None = None) -> dict:
    """JSON-able summary: mean sparse return with CI (clipped at ``low_bound``, :func:`mean_ci`),
    mean shaped return and events per seat."""
    mean, low, high = mean_ci(result.sparse, level, low_bound)
    return {
        "episodes": int(result.sparse.numel()),
        "sparse_return_mean": mean,
        "sparse_return_ci95": [low, high],
        "sparse_return_std": float(result.sparse.double().std()) if result.sparse.numel() > 1 else 0.0,
        "shaped_return_mean_by_seat": [float(v) for v in result.shaped.mean(0)],
        "events_mean_by_seat": [
            {name: float(result.events[:, k, e].mean()) for e, name in enumerate(result.event_names)}
            for k in range(result.events.shape[1])
        ],
    }
