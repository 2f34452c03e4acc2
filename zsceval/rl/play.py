"""Play fixed policies against each other (no learning): returns, event counts, 95% CIs."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from zsceval.rl.policy import Policy

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


def mean_ci(x: torch.Tensor, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and Student-t confidence interval of i.i.d. episode returns.

    Args:
        x: ``float [M]``.
        level: confidence level.

    Returns:
        ``(mean, low, high)``; low = high = mean when M < 2.
    """
    from scipy import stats  # imported lazily: scipy.stats costs ~1 s at import

    x = x.double().cpu()
    m = float(x.mean()) if x.numel() else float("nan")
    if x.numel() < 2:
        return m, m, m
    half = float(stats.t.ppf(0.5 + level / 2, x.numel() - 1)) * float(x.std()) / math.sqrt(x.numel())
    return m, m - half, m + half


@torch.no_grad()
def play(
    env,
    seat_policies: list[Policy],
    episodes: int,
    generator: torch.Generator | None = None,
    deterministic: bool = False,
) -> PlayResult:
    """Run ``episodes`` full episodes with policy ``seat_policies[k]`` in seat k of every game.

    The env runs ``ceil(episodes / B)`` rounds of lockstep episodes; the first ``episodes``
    finished ones are returned.

    Args:
        env: batched env; all games must start together (a fresh ``reset``).
        seat_policies: one policy per seat (length n; the same policy may appear twice).
        episodes: M.
        generator: action-sampling generator on the env device.
        deterministic: arg-max actions instead of sampling (ZSC-Eval evaluates stochastically).

    Raises:
        ValueError: wrong number of seat policies.
    """
    B, n = env.num_envs, env.num_agents
    if len(seat_policies) != n:
        raise ValueError(f"need {n} seat policies, got {len(seat_policies)}")
    device = torch.device(env.device)
    E = len(env.event_names)
    s = env.reset()
    h = [p.initial_state(B, device) for p in seat_policies]
    starts = torch.ones(B, dtype=torch.bool, device=device)
    ep_sparse = torch.zeros(B, device=device)
    ep_shaped = torch.zeros(B, n, device=device)
    ep_events = torch.zeros(B, n, E, device=device)
    out_sparse, out_shaped, out_events = [], [], []
    finished = 0
    while finished < episodes:
        actions = torch.empty(B, n, dtype=torch.int64, device=device)
        for k, p in enumerate(seat_policies):
            a, _, h[k] = p.act(s.obs[:, k], s.avail_actions[:, k], h[k], starts, generator, deterministic)
            actions[:, k] = a
        s = env.step(actions)
        ep_sparse += s.reward
        ep_shaped += s.shaped_by_agent
        ep_events += s.events
        done = s.done
        if bool(done.any()):
            out_sparse.append(ep_sparse[done].cpu())
            out_shaped.append(ep_shaped[done].cpu())
            out_events.append(ep_events[done].cpu())
            finished += int(done.sum())
            keep = (~done).to(torch.float32)
            ep_sparse *= keep
            ep_shaped *= keep.unsqueeze(-1)
            ep_events *= keep.view(B, 1, 1)
        starts = done
    return PlayResult(
        torch.cat(out_sparse)[:episodes],
        torch.cat(out_shaped)[:episodes],
        torch.cat(out_events)[:episodes],
        tuple(env.event_names),
    )


def summarize(result: PlayResult, level: float = 0.95) -> dict:
    """JSON-able summary: mean sparse return with CI, mean shaped return and events per seat."""
    mean, low, high = mean_ci(result.sparse, level)
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
