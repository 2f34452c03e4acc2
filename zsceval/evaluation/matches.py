"""Match evaluation: play fixed policies together, many pairings in one batched engine call.

:func:`play_games` runs G games at once, one episode each, with any agent in any seat of any game
(``assignment [G, n]``) through the shared :class:`~zsceval.rl.runner.EpisodeRunner`; every agent
runs one batched forward per step over the rows it drives. :func:`evaluate_agent` uses it to play
an ego agent against a whole partner set, the ego in every seat and the partner in all the others
(1 ego with n - 1 copies of the partner, every seating), for E episodes each, and
:func:`evaluate_br_references` to measure each partner with its own best
response (BR): the denominators of BR-Prox. Both return tables in the schema of
:mod:`zsceval.stats.metrics` (one row per episode).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from zsceval.envs.scenarios import make_scenario_env, num_players
from zsceval.evaluation.combinations import Combination, br_key, seat_combinations
from zsceval.rl.policy import Policy
from zsceval.rl.runner import EpisodeRunner
from zsceval.rl.seating import Arm

__all__ = [
    "GameResults",
    "PartnerSpec",
    "combination_label",
    "evaluate_agent",
    "evaluate_br_references",
    "evaluate_combination_brs",
    "play_games",
]


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
    return make_scenario_env(str(layout), num_envs, device=device, horizon=horizon)


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
        layout: layout or Football scenario name (:mod:`zsceval.envs.scenarios`), or a batched env of
            G games (``zsceval.envs.base`` protocol).
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
    try:
        return _play(env, policies, assignment, generator, deterministic)
    finally:
        if env is not layout and hasattr(env, "close"):
            env.close()  # worker processes of a Football env


def _play(env, policies: list, assignment: torch.Tensor, generator, deterministic: bool) -> GameResults:
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
        columns, and the ``labels``. Games of n > 2 players (Football) pair the ego with every
        combination of partners instead (:func:`_evaluate_combinations`).
    """
    n = num_players(layout)
    if n > 2:
        return _evaluate_combinations(layout, agent, partners, n, episodes, generator, device, labels)
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
    return _with_events_and_labels(frame, ego_events, res.event_names, labels)


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
    n, P = num_players(layout), len(partners)
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


# -- n > 2 players: combinations of partners (Football; docs/reference-protocol.md "Football")
# ---------------------
def combination_label(combo: Combination, partners: list[PartnerSpec]) -> str:
    """The ``partner`` column of a combination: seat by seat, ``ego`` or the partner id, joined by
    ``|`` (e.g. ``"ego|c001_final|c003_mid"``)."""
    return "|".join("ego" if p < 0 else partners[p].id for p in combo.seats)


def combination_level(combo: Combination, partners: list[PartnerSpec]) -> str:
    """``"expert"`` when every partner of the combination is an expert (``final``), else ``"moderate"``."""
    return "expert" if all(partners[p].level == "expert" for p in combo.partners) else "moderate"


def _combination_games(combos: list[Combination], episodes: int, fill) -> tuple[torch.Tensor, np.ndarray]:
    """Assignment ``[G, n]`` for (combination, episode) games, seat k driven by ``fill(combo, k)``;
    and the keys ``[G, 2]`` (combination index, episode)."""
    rows = [[fill(c, k) for k in range(len(c.seats))] for c in combos]
    assignment = torch.as_tensor(rows, dtype=torch.int64).repeat_interleave(episodes, dim=0)
    idx, ep = np.meshgrid(np.arange(len(combos)), np.arange(episodes), indexing="ij")
    return assignment, np.stack([idx.ravel(), ep.ravel()], axis=1)


def _evaluate_combinations(layout, agent, partners, n, episodes, generator, device, labels) -> pd.DataFrame:
    """The ego with every combination of partners (:func:`seat_combinations`), ``episodes`` each.

    One row per (combination, episode): ``partner`` = :func:`combination_label`, ``partner_level`` =
    :func:`combination_level`, ``seat`` = the ego's first seat, ``ev_<name>`` = the ego's event
    counts averaged over its seats. ZSC-Eval ``grf_runner.py: get_agent_pairs``.
    """
    combos = seat_combinations(len(partners), n)
    assignment, keys = _combination_games(
        combos, episodes, lambda c, k: 0 if c.seats[k] < 0 else 1 + c.seats[k]
    )
    res = play_games(
        layout, [agent, *(p.policy for p in partners)], assignment, generator=generator, device=device
    )
    ego = (assignment == 0).unsqueeze(-1).float()
    ego_events = (res.events * ego).sum(1) / ego.sum(1)
    frame = pd.DataFrame(
        {
            "layout": layout,
            "partner": [combination_label(combos[i], partners) for i in keys[:, 0]],
            "partner_level": [combination_level(combos[i], partners) for i in keys[:, 0]],
            "seat": [combos[i].ego_seats[0] for i in keys[:, 0]],
            "episode": keys[:, 1].astype(int),
            "sparse_return": res.sparse.numpy().astype(float),
        }
    )
    return _with_events_and_labels(frame, ego_events, res.event_names, labels)


def evaluate_combination_brs(
    layout: str,
    partners: list[PartnerSpec],
    brs: dict[tuple[int, ...], Policy],
    *,
    episodes: int,
    generator: torch.Generator | None = None,
    device: str | torch.device = "cpu",
) -> pd.DataFrame:
    """BR-Prox references for n > 2 players: each combination played with the BR of its set of
    distinct partners (:func:`br_key`) in the ego's seats.

    Args:
        layout: a scenario of n > 2 players.
        partners: the evaluation partners.
        brs: BR policy per partner set (sorted partner indices); a single partner's set defaults to
            that partner's own ``br``.
        episodes: episodes per combination.

    Returns:
        One row per (combination, episode): ``layout, partner`` (:func:`combination_label`),
        ``episode, br_return`` (no ``seat`` column: a combination fixes its seats).

    Raises:
        ValueError: a partner set without a BR.
    """
    n, P = num_players(layout), len(partners)
    combos = seat_combinations(P, n)
    table = {(p,): partners[p].br for p in range(P) if partners[p].br is not None} | dict(brs)
    missing = sorted({br_key(c) for c in combos} - set(table))
    if missing:
        raise ValueError(f"no best response for the partner sets {missing}")
    keys_order = sorted({br_key(c) for c in combos})
    br_index = {key: P + i for i, key in enumerate(keys_order)}
    assignment, keys = _combination_games(
        combos, episodes, lambda c, k: br_index[br_key(c)] if c.seats[k] < 0 else c.seats[k]
    )
    policies = [p.policy for p in partners] + [table[key] for key in keys_order]
    res = play_games(layout, policies, assignment, generator=generator, device=device)
    return pd.DataFrame(
        {
            "layout": layout,
            "partner": [combination_label(combos[i], partners) for i in keys[:, 0]],
            "episode": keys[:, 1].astype(int),
            "br_return": res.sparse.numpy().astype(float),
        }
    )


def _with_events_and_labels(
    frame: pd.DataFrame, ego_events: torch.Tensor, event_names, labels
) -> pd.DataFrame:
    """``frame`` with the ego's event counts (``float [G, E]``) as ``ev_<name>`` columns and the
    constant ``labels`` columns."""
    for e, name in enumerate(event_names):
        frame[f"ev_{name}"] = ego_events[:, e].numpy().astype(float)
    for key, value in (labels or {}).items():
        frame[key] = value
    return frame
