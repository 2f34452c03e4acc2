"""Match evaluation: play fixed policies together, many pairings in one batched engine call.

:func:`play_games` runs G games at once, one episode each, with any agent in any seat of any game
(``assignment [G, n]``) through the shared :class:`~zsceval.rl.runner.EpisodeRunner`; every agent
runs one batched forward per step over the rows it drives. :func:`evaluate_agent` uses it to play
an ego agent against a whole partner set, the ego in every seat and the partner in all the others
(1 ego with n - 1 copies of the partner, every seating), for E episodes each, and
:func:`evaluate_br_references` to measure each partner with its own best
response (BR): the denominators of BR-Prox. Both return tables in the schema of
:mod:`zsceval.evaluation.metrics` (one row per episode).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from zsceval.envs.overcooked import OvercookedEnv, load_layout
from zsceval.rl.policy import Policy
from zsceval.rl.runner import EpisodeRunner
from zsceval.rl.seating import Arm

__all__ = ["GameResults", "play_games", "evaluate_agent", "evaluate_br_references", "PartnerSpec"]


@dataclass
class GameResults:
    """Per-game outcomes of :func:`play_games` (CPU tensors).

    Attributes:
        sparse: ``float32 [G]`` team sparse return of each game's episode (20 per onion soup).
        shaped: ``float32 [G, n]`` base shaped return per seat.
        events: ``float32 [G, n, E]`` event counts per seat (``event_names`` order).
        event_names: the env's event names.
    """

    sparse: torch.Tensor
    shaped: torch.Tensor
    events: torch.Tensor
    event_names: tuple[str, ...]


def _make_env(layout, num_envs: int, device, horizon: int | None):
    if not isinstance(layout, str | Path):
        return layout
    return OvercookedEnv(layout, num_envs=num_envs, device=device, horizon=horizon)


@torch.no_grad()
def play_games(
    layout,
    policies: list,
    assignment: torch.Tensor,
    *,
    generator: torch.Generator | None = None,
    device: str | torch.device = "cpu",
    horizon: int | None = None,
    deterministic: bool = False,
) -> GameResults:
    """Play one episode in each of G games; game g seat k is driven by ``policies[assignment[g, k]]``.

    Args:
        layout: layout name, or a batched env of G games (``zsceval.envs.base`` protocol).
        policies: the agents (on ``device``; the same agent may drive many seats).
        assignment: ``int64 [G, n]`` agent index per game and seat.
        generator: action-sampling generator on ``device`` (ZSC-Eval evaluates stochastically).
        device: env device.
        horizon: episode length (default: the layout's).
        deterministic: arg-max actions instead of sampling.

    Raises:
        ValueError: ``assignment`` of the wrong shape or with an index outside ``policies``.
    """
    G = assignment.shape[0]
    env = _make_env(layout, G, device, horizon)
    n = env.num_agents
    if assignment.dim() != 2 or assignment.shape != (env.num_envs, n):
        raise ValueError(f"assignment must be [{env.num_envs}, {n}], got {list(assignment.shape)}")
    if int(assignment.min()) < 0 or int(assignment.max()) >= len(policies):
        raise ValueError(f"assignment indices must be in 0..{len(policies) - 1}")
    names = [f"agent{i}" for i in range(len(policies))]
    seatings, game_arm = torch.unique(assignment.cpu(), dim=0, return_inverse=True)
    arms = [Arm.of(*(names[int(i)] for i in row)) for row in seatings]
    fixed = game_arm.to(env.device)
    runner = EpisodeRunner(
        env, dict(zip(names, policies)), arms, assign=lambda games, _g: fixed[games], generator=generator
    )
    table = runner.play(deterministic)
    return GameResults(table.sparse, table.shaped, table.events, table.event_names)


@dataclass(frozen=True)
class PartnerSpec:
    """An evaluation partner for :func:`evaluate_agent`.

    Attributes:
        id: partner id (unique within the set).
        level: ``"moderate"`` (a ``mid`` checkpoint) or ``"expert"`` (``final``).
        policy: the partner policy.
        br: its best-response policy (for :func:`evaluate_br_references`), or None.
    """

    id: str
    level: str
    policy: Policy
    br: Policy | None = None


def _pairings(num_partners: int, n: int, episodes: int) -> tuple[torch.Tensor, np.ndarray]:
    """Assignment ``[G, n]`` for (partner, ego seat, episode) games: the ego (policy 0) in its seat,
    partner p (policy 1 + p) in every other seat; and the keys ``[G, 3]`` (partner, seat, episode)."""
    p_idx, seat, ep = np.meshgrid(np.arange(num_partners), np.arange(n), np.arange(episodes), indexing="ij")
    p_idx, seat, ep = p_idx.ravel(), seat.ravel(), ep.ravel()
    assignment = np.repeat((1 + p_idx)[:, None], n, axis=1)
    assignment[np.arange(len(seat)), seat] = 0
    return torch.as_tensor(assignment), np.stack([p_idx, seat, ep], axis=1)


def evaluate_agent(
    layout: str,
    agent: Policy,
    partners: list[PartnerSpec],
    *,
    episodes: int,
    generator: torch.Generator | None = None,
    device: str | torch.device = "cpu",
    labels: dict | None = None,
) -> pd.DataFrame:
    """Play ``agent`` with every partner, in every seat, ``episodes`` times each, in one batch.

    Args:
        layout: layout name.
        agent: the ego agent's policy.
        partners: the evaluation partners.
        episodes: E, episodes per (partner, seat) (ZSC-Eval's reference uses 20, the paper 50).
        generator: action-sampling generator.
        device: env device.
        labels: constant columns to add (e.g. ``{"algorithm": "sp", "ego_seed": 0}``).

    Returns:
        One row per (partner, seat, episode) with ``layout, partner, partner_level, seat, episode,
        sparse_return`` (``seat`` = the ego's seat), the ego's event counts as ``ev_<name>``
        columns, and the ``labels``.
    """
    n = load_layout(layout).num_players
    assignment, keys = _pairings(len(partners), n, episodes)
    res = play_games(
        layout, [agent, *(p.policy for p in partners)], assignment, generator=generator, device=device
    )
    ego_events = res.events[torch.arange(len(keys)), torch.as_tensor(keys[:, 1])]
    frame = pd.DataFrame(
        {
            "layout": layout,
            "partner": [partners[i].id for i in keys[:, 0]],
            "partner_level": [partners[i].level for i in keys[:, 0]],
            "seat": keys[:, 1].astype(int),
            "episode": keys[:, 2].astype(int),
            "sparse_return": res.sparse.numpy().astype(float),
        }
    )
    for e, name in enumerate(res.event_names):
        frame[f"ev_{name}"] = ego_events[:, e].numpy().astype(float)
    for key, value in (labels or {}).items():
        frame[key] = value
    return frame


def evaluate_br_references(
    layout: str,
    partners: list[PartnerSpec],
    *,
    episodes: int,
    generator: torch.Generator | None = None,
    device: str | torch.device = "cpu",
) -> pd.DataFrame:
    """Each partner with its own BR, BR in every seat: the BR-Prox reference returns.

    Returns:
        One row per (partner, seat, episode): ``layout, partner, seat, episode, br_return``
        (``seat`` = the BR's seat, matching the ego's seat in :func:`evaluate_agent`).

    Raises:
        ValueError: a partner without a BR policy.
    """
    missing = [p.id for p in partners if p.br is None]
    if missing:
        raise ValueError(f"partners without a best response: {missing}")
    n, P = load_layout(layout).num_players, len(partners)
    assignment, keys = _pairings(P, n, episodes)
    # Policies: BR of partner p at index p, partner p at index P + p.
    p_idx = torch.as_tensor(keys[:, 0])
    seat = torch.as_tensor(keys[:, 1])
    assignment = (P + p_idx)[:, None].repeat(1, n).clone()
    assignment[torch.arange(len(keys)), seat] = p_idx
    policies = [p.br for p in partners] + [p.policy for p in partners]
    res = play_games(layout, policies, assignment, generator=generator, device=device)
    return pd.DataFrame(
        {
            "layout": layout,
            "partner": [partners[i].id for i in keys[:, 0]],
            "seat": keys[:, 1].astype(int),
            "episode": keys[:, 2].astype(int),
            "br_return": res.sparse.numpy().astype(float),
        }
    )
