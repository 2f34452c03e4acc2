"""COLE: Cooperative Open-ended LEarning, as ZSC-Eval trains it (reward-ranking meta-solver).

Method (ZSC-Eval Sec. 4 and App. C; docs/reference-protocol.md "COLE"). One learner, the ego, trains
against a population that grows out of its own past: every new member is a frozen snapshot of
the ego. The population has N slots (``population.size``: ZSC-Eval 25 / 50 / 75); at the start
the first max(r, N // 5) slots hold snapshots of freshly initialised (random) networks, where
r = ``algo.population_play_ratio`` = 3.

*The graphic-form game.* The learning process is a cooperative game over the members and the
ego, summarised by a payoff matrix U (rows: members then the ego; columns: members). After every
iteration the ego's row moves half-way towards what it just got,

    U[ego][p] <- (U[ego][p] + r_p) / 2,

with r_p the mean team sparse return of the iteration's finished episodes with member p (per
seat, then averaged over the seats that finished episodes). Member-to-member entries are never
re-measured: an admitted member q inherits the ego's row as its row and column, and
`U[q][q] = U[ego][q]` = the ego's latest self-play return (:func:`admit_payoff`).

*Who the ego plays.* A fixed share 1 / (r + 1) of the games (the first B // (r + 1)) is ego
self-play; every other game draws a (member, seat) arm at each episode start. The members that
cooperate worst on average are the ego's priority: the meta-solver scores member p by its row
mean m_p, normalises m to sum 1 (when the sum is positive), takes 1 - m, renormalises, ranks
densely (the worst cooperator gets the highest rank) and samples P(p) ~ rank_p^alpha (prioritized
sampling, alpha 1.5 / 1.0 / 0.5 for N = 25 / 50 / 75, :func:`prioritized_alpha`); each member's
probability is split equally over its seats (:func:`sampling_probabilities`). This reward-based
ranking replaces the COLE papers' Shapley-value (cooperative incompatibility) meta-solver, as
ZSC-Eval does "due to time consumption".

*Open-ended growth.* Every ``algo.generation_interval`` iterations (ZSC-Eval: 20 iterations of
125 x 400 env steps = 1e6 steps per generation) the ego's snapshot is a candidate. Each member is
scored by its U-row mean and the ego by its own row mean; the ego's rank among the n + 1 scores
(:func:`ego_rank`) must reach ceil(0.9 n) while free slots remain, ceil(0.8 n) when the
population is full (:func:`admission_threshold`); after two consecutive failed tries the third
admits regardless (:func:`should_admit`). An admitted snapshot fills the next free slot, or, when
all N are full, overwrites a uniformly drawn member among the first 10 generated
(:func:`replacement_slot`).

*Three players (Football; ZSC-Eval ``grf_runner.py: train_cole``).* The arms are self-play and
the reference's GRF combinations of the filled members (two members drawn with replacement in the
two other seats, every ego seat, then one member with the ego in two seats; :func:`grf_arms`). U
gains an ego column: every update also sets ``U[p][ego] = U[ego][p]``, and r_p is the mean, over
the unordered combinations that contain p and finished episodes, of each combination's mean return
(:func:`combination_returns`). The row means count every entry the reference's dict holds
(:func:`row_scores`). Who the ego plays is not drawn from P: P (alpha 1.25, the GRF script's value)
gets a UCB bonus ``c sqrt(sum_q n_q) / (n_p + 1)`` over per-iteration selection counts n
(:func:`ucb_probabilities`, c = ``algo.ucb_factor`` = 1), the top member s is selected
(:func:`top_member`, its count + 1), and the iteration's seatings are every combination of one
member, any member, plus every combination of two members that includes s
(:func:`selected_seatings`); they are shuffled and dealt to the population games in turn, each game
keeping its seating for the iteration's episodes. A generation try resets the counts.

The output agent is the ego learner itself (never a population member). The ego is an MLP-style
feed-forward network (ZSC-Eval's ``mlp_policy_config``: no GRU; the paper preset keeps its CNN
encoder), trained with MAPPO on the ordinary reward (team sparse + annealed own shaping).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from zsceval.algorithms.base.stage2 import population_arms
from zsceval.registry import register
from zsceval.rl.algorithm import Algorithm
from zsceval.rl.config import ConfigError, TrainConfig, population_size
from zsceval.rl.policy import Policy
from zsceval.rl.population import PolicyPool
from zsceval.rl.seating import Arm, ego_partner_arms, self_play_arm

__all__ = [
    "COLE",
    "COLEOptions",
    "admission_threshold",
    "admit_payoff",
    "arm_members",
    "combination_returns",
    "ego_rank",
    "generation_due",
    "grf_admit_payoff",
    "grf_arms",
    "grf_ego_rank",
    "grf_update_payoff",
    "initial_members",
    "partner_returns",
    "prioritized_alpha",
    "ranked_probabilities",
    "replacement_slot",
    "row_scores",
    "sampling_probabilities",
    "selected_seatings",
    "self_play_return",
    "should_admit",
    "top_member",
    "ucb_probabilities",
    "update_payoff",
]

FREE_PERCENT = 0.9
"""Admission percentile while free slots remain (docs/reference-protocol.md "COLE")."""
FULL_PERCENT = 0.8
"""Admission percentile once the population is full."""
MAX_FAILED_TRIES = 2
"""Consecutive failed tries after which the next try admits regardless."""
REPLACE_AMONG = 10
"""A full population overwrites one of its first this many generated members."""
PAPER_STEPS_PER_MEMBER = 2_000_000
"""ZSC-Eval's COLE budget per slot: 5e7 / 1e8 / 1.5e8 env steps for N = 25 / 50 / 75."""
QUICK_POPULATION = 5
PAPER_POPULATION = 25
GRF_ALPHA = 1.25
"""Prioritized-sampling exponent of the GRF script (``scripts/grf/shell/train_cole.sh``)."""
GRF_POPULATION = 15
"""ZSC-Eval's COLE population on Football (paper App. C; ``train_cole.sh``)."""
GRF_STEPS_PER_MEMBER = 2_400_000
"""``train_cole.sh`` (GRF): 3.6e7 env steps for N = 15."""
GRF_GAMES = 200
"""``train_cole.sh`` (GRF): 200 rollout threads."""
GRF_GENERATION_INTERVAL = 30
"""``train_cole.sh`` (GRF): a generation try every 30 iterations (200 x 200 env steps each)."""


# -- the rules, as pure functions ------------------------------------------------------------------
def initial_members(size: int, play_ratio: int = 3, init_ratio: int = 5) -> int:
    """Slots filled with random networks at the start: ``min(N, max(r, N // init_ratio))``.

    docs/reference-protocol.md "COLE" ("Initial population"): 5 / 10 / 15 for N = 25 / 50 / 75.
    """
    return min(size, max(play_ratio, size // init_ratio))


def prioritized_alpha(size: int) -> float:
    """The prioritized-sampling exponent for a population of ``size`` slots.

    ZSC-Eval uses 1.5 / 1.0 / 0.5 for N = 25 / 50 / 75 (docs/reference-protocol.md "COLE"); other sizes
    interpolate linearly, ``1.5 - (N - 25) / 50``, clipped to [0.5, 1.5] (so N <= 25 gives 1.5).
    """
    return float(min(1.5, max(0.5, 1.5 - (size - 25) / 50)))


def update_payoff(payoff: np.ndarray, returns: np.ndarray) -> np.ndarray:
    """One iteration's update of the ego's row: ``U[ego][p] <- (U[ego][p] + r_p) / 2``.

    docs/reference-protocol.md "COLE" ("Graphic-form game"); members without a finished episode this
    iteration (``r_p`` NaN) keep their entry.

    Args:
        payoff: ``float64 [n + 1, n]`` U: rows = the n members then the ego, columns = members.
        returns: ``float64 [n]`` r_p, NaN where member p finished no episode.

    Returns:
        A new ``float64 [n + 1, n]`` matrix (only the last row changes).
    """
    out = np.array(payoff, dtype=np.float64, copy=True)
    seen = np.isfinite(returns)
    out[-1, seen] = (out[-1, seen] + returns[seen]) / 2
    return out


def admit_payoff(payoff: np.ndarray, slot: int, self_play: float) -> np.ndarray:
    """U after admitting the ego's snapshot as member ``slot`` (a new slot ``n`` or an overwrite).

    docs/reference-protocol.md "COLE": q's row and column are copied from the ego's current row
    (``U[q][p] = U[p][q] = U[ego][p]``), then ``U[q][q] = U[ego][q] = self_play``, the ego's latest
    self-play return. No other entry changes.

    Args:
        payoff: ``float64 [n + 1, n]`` U (members then the ego by members).
        slot: ``n`` to fill a new slot (U grows to ``[n + 2, n + 1]``) or ``0 <= slot < n`` to
            overwrite that member.
        self_play: the ego's latest self-play sparse return.

    Returns:
        The new U.

    Raises:
        ValueError: ``slot`` outside ``[0, n]``.
    """
    payoff = np.asarray(payoff, dtype=np.float64)
    n = payoff.shape[1]
    if not 0 <= slot <= n:
        raise ValueError(f"slot {slot} outside [0, {n}]")
    ego_row = payoff[-1].copy()
    if slot == n:
        out = np.zeros((n + 2, n + 1))
        out[:n, :n] = payoff[:n]
        out[-1, :n] = ego_row
    else:
        out = payoff.copy()
    out[slot, :n] = ego_row
    out[:n, slot] = ego_row
    out[slot, slot] = self_play
    out[-1, slot] = self_play
    return out


def sampling_probabilities(payoff: np.ndarray, alpha: float) -> np.ndarray:
    """The reward-ranking meta-solver with prioritized sampling: P(member) ``float64 [n]``.

    docs/reference-protocol.md "COLE" ("Partner sampling"): ``m_p`` = mean of member p's U row; if
    ``sum(m) > 0`` then ``m <- m / sum(m)``; ``m <- 1 - m``, renormalised; dense ranks of m (equal
    values share a rank; the largest ``1 - m``, i.e. the worst cooperator, gets the highest rank);
    ``P(p) = rank_p^alpha / sum_q rank_q^alpha``.

    Args:
        payoff: ``float64 [n + 1, n]`` U (members then the ego by members); the ego row is unused.
        alpha: the prioritization exponent (0: uniform).
    """
    return ranked_probabilities(np.asarray(payoff, dtype=np.float64)[:-1].mean(axis=1), alpha)


def ranked_probabilities(scores: np.ndarray, alpha: float) -> np.ndarray:
    """:func:`sampling_probabilities` from the members' scores ``float64 [n]`` (U-row means)."""
    m = np.asarray(scores, dtype=np.float64)
    if m.sum() > 0:
        m = m / m.sum()
    m = 1.0 - m
    if m.sum() > 0:  # n = 1 leaves 1 - m = [0]; the ranks below are the same either way
        m = m / m.sum()
    rank = np.unique(m, return_inverse=True)[1].reshape(-1) + 1.0  # dense ranks, 1 = smallest
    p = (rank / rank.sum()) ** alpha
    return p / p.sum()


def ego_rank(payoff: np.ndarray) -> int:
    """The ego's 0-based ascending rank among the n + 1 row means of U (members, then the ego).

    docs/reference-protocol.md "COLE" ("Meta-solver"): the ego's position when the n members' row means
    and its own row mean are sorted ascending. Ties count in the ego's favour (it is placed after
    the members with the same score, as the reference's ``argsort(argsort(.))[-1]`` does with a
    stable sort), so the rank is the number of members whose score is at most the ego's.
    """
    scores = np.asarray(payoff, dtype=np.float64).mean(axis=1)
    return int(np.sum(scores[:-1] <= scores[-1]))


def admission_threshold(filled: int, full: bool) -> int:
    """The rank the ego must reach: ``ceil(0.9 n)`` while free slots remain, ``ceil(0.8 n)`` when
    the population is full (docs/reference-protocol.md "COLE"), n = members filled."""
    return math.ceil(filled * (FULL_PERCENT if full else FREE_PERCENT))


def should_admit(rank: int, threshold: int, failed_tries: int) -> bool:
    """Admit when ``rank >= threshold`` or after ``MAX_FAILED_TRIES`` (2) consecutive failed tries
    (docs/reference-protocol.md "COLE": at most 3 intervals between admissions)."""
    return rank >= threshold or failed_tries >= MAX_FAILED_TRIES


def replacement_slot(filled: int, rng: np.random.Generator) -> int:
    """The member a full population overwrites: uniform among the first ``min(10, n)`` generated
    (docs/reference-protocol.md "COLE"; slots are filled in generation order)."""
    return int(rng.integers(0, min(REPLACE_AMONG, filled)))


def generation_due(iteration: int, interval: int) -> bool:
    """A generation try after every ``interval`` iterations (``iteration`` = iterations done)."""
    return iteration > 0 and iteration % interval == 0


def partner_returns(arm: np.ndarray, sparse: np.ndarray, members: int, num_agents: int) -> np.ndarray:
    """r_p of :func:`update_payoff`: mean sparse return with member p, ``float64 [members]``.

    Arms are laid out as :meth:`COLE.arms` lists them: arm 0 is self-play, arm ``1 + p * n + s``
    is member p with the ego in seat s. Each seat's episodes are averaged, then the seats that
    have episodes are averaged (ZSC-Eval averages its per-arm logs of (p, ego) and (ego, p)).

    Args:
        arm: ``int64 [M]`` arm index of each finished episode.
        sparse: ``float [M]`` its team sparse return.
        members: n, members with arms.
        num_agents: seats per game.

    Returns:
        ``float64 [members]``, NaN for a member without finished episodes.
    """
    arm = np.asarray(arm, dtype=np.int64)
    sparse = np.asarray(sparse, dtype=np.float64)
    out = np.full(members, np.nan)
    for p in range(members):
        seat_means = [
            sparse[arm == 1 + p * num_agents + s].mean()
            for s in range(num_agents)
            if np.any(arm == 1 + p * num_agents + s)
        ]
        if seat_means:
            out[p] = float(np.mean(seat_means))
    return out


def self_play_return(arm: np.ndarray, sparse: np.ndarray) -> float:
    """Mean sparse return of the finished self-play episodes (arm 0); NaN if there are none."""
    arm = np.asarray(arm)
    sp = np.asarray(sparse, dtype=np.float64)[arm == 0]
    return float(sp.mean()) if sp.size else float("nan")


# -- three players: the reference's GRF variant (grf_runner.py: train_cole) ----------------------
def grf_arms(ego: str, pool: str, n: int, filled: int) -> list[Arm]:
    """Self-play, then the GRF combinations of ``filled`` members, ordered so that a new member only
    appends arms: member m's block holds :func:`~zsceval.algorithms.base.stage2.population_arms`'s
    combinations whose highest member is m, in that function's order.

    With n = 3 and M members: ``1 + 3 M^2 + 3 M`` arms; member ``m`` in an arm is ``(pool, m)``,
    the partner label joins ``pool/m`` in seat order with ``+``. The reference skips the m-tuples
    when fewer than m members exist; COLE never has fewer than n - 1 (its population.size check).
    """
    arms = [self_play_arm(ego, n)]
    labels = [f"{pool}/{m}" for m in range(filled)]
    for m in range(filled):
        block = population_arms(ego, pool, n, labels[: m + 1])
        arms += [a for a in block if max(k for name, k in a.seats if name == pool) == m]
    return arms


def arm_members(arm: Arm, pool: str = "pool") -> frozenset[int]:
    """The distinct pool members seated by ``arm`` (empty for self-play)."""
    return frozenset(k for name, k in arm.seats if name == pool)


def grf_update_payoff(payoff: np.ndarray, returns: np.ndarray) -> np.ndarray:
    """The GRF update: ``U[ego][p] <- (U[ego][p] + r_p) / 2`` and ``U[p][ego] <- U[ego][p]``.

    Args:
        payoff: ``float64 [n + 1, n + 1]`` U: rows = the n members then the ego; columns = the
            members then the ego. ``NaN`` marks an entry the reference's dict does not hold:
            ``U[p][ego]`` until member p's first update, and ``U[ego][ego]`` always.
        returns: ``float64 [n]`` r_p (:func:`combination_returns`), NaN where member p played no
            finished episode.

    Returns:
        A new ``float64 [n + 1, n + 1]`` matrix.
    """
    out = np.array(payoff, dtype=np.float64, copy=True)
    n = out.shape[0] - 1
    seen = np.flatnonzero(np.isfinite(returns))
    out[n, seen] = (out[n, seen] + returns[seen]) / 2
    out[seen, n] = out[n, seen]
    return out


def grf_admit_payoff(payoff: np.ndarray, slot: int, self_play: float) -> np.ndarray:
    """U (GRF layout of :func:`grf_update_payoff`) after admitting the ego's snapshot as ``slot``.

    The reference copies the ego's row dict (member keys only) into q's row, so ``U[q][ego]`` is
    dropped (NaN) until q's next update; then :func:`admit_payoff`'s rule on the member block:
    ``U[p][q] = U[ego][p]`` for every member p, ``U[q][q] = U[ego][q] = self_play``.

    Args:
        payoff: ``float64 [n + 1, n + 1]``.
        slot: ``n`` for a new slot (U grows to ``[n + 2, n + 2]``, the ego stays last) or
            ``0 <= slot < n`` to overwrite that member.
        self_play: the ego's latest self-play sparse return.

    Raises:
        ValueError: ``slot`` outside ``[0, n]``.
    """
    payoff = np.asarray(payoff, dtype=np.float64)
    n = payoff.shape[0] - 1
    block = admit_payoff(payoff[:, :n], slot, self_play)  # members then ego, by members
    ego_col = payoff[:n, n]
    m = block.shape[1]
    out = np.full((m + 1, m + 1), np.nan)
    out[:, :m] = block
    out[:n, m] = ego_col
    out[slot, m] = np.nan
    return out


def row_scores(payoff: np.ndarray) -> np.ndarray:
    """``float64 [rows]`` the mean of each row's held (non-NaN) entries: the reference's
    ``np.mean(list(u_matrix[name].values()))``."""
    return np.nanmean(np.asarray(payoff, dtype=np.float64), axis=1)


def combination_returns(
    arm: np.ndarray, sparse: np.ndarray, arms: Sequence[Arm], members: int, pool: str = "pool"
) -> np.ndarray:
    """r_p of :func:`grf_update_payoff`: the mean, over the unordered combinations (who plays,
    seats forgotten) that contain member p and finished episodes, of each combination's mean
    sparse return (``grf_runner.py`` logs one ``ep_sparse_r`` per sorted combination name).

    Args:
        arm: ``int64 [M]`` arm index of each finished episode, into ``arms``.
        sparse: ``float [M]`` its team sparse return.
        arms: the arms (:func:`grf_arms`).
        members: n, members with arms.

    Returns:
        ``float64 [members]``, NaN for a member without finished episodes.
    """
    arm = np.asarray(arm, dtype=np.int64)
    sparse = np.asarray(sparse, dtype=np.float64)
    by_unit: dict[tuple, list[float]] = {}
    for a, r in zip(arm.tolist(), sparse.tolist(), strict=True):
        by_unit.setdefault(tuple(sorted(arms[a].seats)), []).append(r)
    unit_means = {u: float(np.mean(v)) for u, v in by_unit.items()}
    out = np.full(members, np.nan)
    for p in range(members):
        vals = [v for u, v in unit_means.items() if (pool, p) in u]
        if vals:
            out[p] = float(np.mean(vals))
    return out


def grf_ego_rank(payoff: np.ndarray) -> int:
    """:func:`ego_rank` on the GRF U (:func:`grf_update_payoff`), scores by :func:`row_scores`."""
    scores = row_scores(payoff)
    return int(np.sum(scores[:-1] <= scores[-1]))


def ucb_probabilities(probs: np.ndarray, counts: np.ndarray, factor: float) -> np.ndarray:
    """The GRF UCB bonus: ``P_p + c sqrt(sum_q n_q) / (n_p + 1)``, renormalised, ``float64 [n]``.

    Args:
        probs: ``float64 [n]`` the meta-solver's P (:func:`sampling_probabilities`).
        counts: ``[n]`` iterations in which member p was the selected top member since the last
            generation try.
        factor: c (``cole_ucb_factor``, 1 in the GRF script).
    """
    counts = np.asarray(counts, dtype=np.float64)
    p = np.asarray(probs, dtype=np.float64) + factor * np.sqrt(counts.sum()) / (counts + 1.0)
    return p / p.sum()


def top_member(probs: np.ndarray) -> int:
    """The member with the highest probability; ties go to the latest generated (the reference's
    stable ``sorted(..., key=prob)[-1]``)."""
    p = np.asarray(probs)
    return len(p) - 1 - int(np.argmax(p[::-1]))


def selected_seatings(arms: Sequence[Arm], top: int, filled: int, n: int, pool: str = "pool") -> list[int]:
    """Indices of the arms the population games play this iteration (``train_cole``): the GRF
    combinations of ``[s]`` and of ``list(T) + [s]`` for every (n - 2)-tuple T of members, i.e. the
    arms whose members D satisfy ``D <= {s}`` or ``|D - {s}| <= n - 2 <= filled`` (with at least
    n - 1 members, as :class:`COLE` ensures). On three players:
    every one-member combination of any member, and every two-member combination that includes s.
    Self-play (no member) is never one of them."""
    out = []
    for i, arm in enumerate(arms):
        d = arm_members(arm, pool)
        if d and (d <= {top} or len(d - {top}) <= n - 2 <= filled):
            out.append(i)
    return out


# -- the plug-in -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class COLEOptions:
    """Options of the ``cole`` algorithm (``algo.*`` config keys); N is ``population.size``."""

    generation_interval: int = 20
    """Iterations between generation tries (ZSC-Eval 20: 1e6 env steps at 125 x 400 per iteration)."""
    population_play_ratio: int = 3
    """r: 1 / (r + 1) of the games are ego self-play; also the minimum initial population."""
    init_agent_ratio: int = 5
    """The initial population is max(r, N // this) random networks."""
    prioritized_alpha: float = -1.0
    """Exponent of the rank-based sampling; negative: by population size (:func:`prioritized_alpha`)
    for two players, :data:`GRF_ALPHA` for more."""
    ucb_factor: float = 1.0
    """c of the UCB bonus on more than two players (:func:`ucb_probabilities`; ``cole_ucb_factor``)."""


@register("cole", "COLE: ego vs a growing population, reward-ranking meta-solver (Li et al. 2023).")
class COLE(Algorithm):
    """The ego learner with a growing pool of its own snapshots (module docstring).

    Actors: learner ``ego``; partner ``pool`` (a :class:`PolicyPool` of the filled members).
    Arms: 0 = ego self-play, then for two players ``1 + p * n + s`` = member p with the ego in seat
    s; for more, the GRF combinations in member blocks (:func:`grf_arms`).
    """

    Options = COLEOptions
    default_population_size = PAPER_POPULATION
    core = "ppo"

    def __init__(self, config: TrainConfig, num_envs: int, num_agents: int, device) -> None:
        super().__init__(config, num_envs, num_agents, device)
        o = self.options
        if num_agents < 2:
            raise ConfigError(f"algorithm 'cole' needs 2 or more players, the env has {num_agents}")
        self.grf = num_agents > 2
        """The reference's GRF variant (``grf_runner.py: train_cole``): more than two players."""
        self.size = population_size(config)
        if self.size < 1:
            raise ConfigError(f"cole needs population.size >= 1, got {self.size}")
        if o.generation_interval < 1:
            raise ConfigError(f"algo.generation_interval must be >= 1, got {o.generation_interval}")
        if o.population_play_ratio < 0 or o.init_agent_ratio < 1:
            raise ConfigError("algo.population_play_ratio must be >= 0 and algo.init_agent_ratio >= 1")
        if self.grf and self.size < num_agents - 1:
            raise ConfigError(
                f"cole on {num_agents} players needs population.size >= {num_agents - 1} (the reference's "
                f"combinations fill the {num_agents - 1} partner seats with distinct members too), "
                f"got {self.size}"
            )
        if o.ucb_factor < 0:
            raise ConfigError(f"algo.ucb_factor must be >= 0, got {o.ucb_factor}")
        default_alpha = GRF_ALPHA if self.grf else prioritized_alpha(self.size)
        self.alpha = o.prioritized_alpha if o.prioritized_alpha >= 0 else default_alpha
        self.self_play_games = num_envs // (o.population_play_ratio + 1)
        """Games ``0 .. self_play_games - 1`` always play ego self-play (ZSC-Eval's first threads)."""
        self.pool: PolicyPool | None = None
        self.payoff = np.zeros((1, 0))
        self.generation = 0
        """Snapshots generated so far (random initial members included); names ``gen<k>``."""
        self.failed_tries = 0
        self.sp_return = 0.0
        """The ego's latest self-play sparse return (what an admitted member's diagonal gets)."""
        self.probs = np.zeros(0)
        # more than two players (GRF): UCB counts, the selected top member, this iteration's seatings
        self.ucb_counts = np.zeros(0, dtype=np.int64)
        """Iterations each member was the top member since the last generation try."""
        self.ucb_probs = np.zeros(0)
        self.top = 0
        self.seatings: list[int] = []
        """Arm indices the population games play this iteration (:func:`selected_seatings`)."""
        self.game_arm: torch.Tensor | None = None
        """``int64 [B]`` each game's arm this iteration; drawn at the iteration's first episode start."""
        self._arms: tuple[int, list[Arm]] | None = None

    @classmethod
    def preset_config(cls, preset: str, cfg: TrainConfig) -> dict[str, Any]:
        """Population size, budget and schedules for ``quick`` and ``paper``.

        ``population.size`` 0 (the config default) means COLE's own default: 5 (quick) or 25
        (paper). ``paper`` = ZSC-Eval's COLE runs (docs/reference-protocol.md
        "COLE" and "Training settings"): 125 games, 2e6 env steps per slot (5e7 / 1e8 / 1.5e8
        for N = 25 / 50 / 75), entropy 0.2 -> 0.05 -> 0.01 at 0, T / 2, T (up to 0, 7.5e7, 1.5e8),
        shaping annealed over T, 20 iterations per generation, no GRU (``--steps`` changes only the
        budget, not these schedules). ``quick``: N = 5 and a generation try every 4 iterations (one
        400-step episode at rollout length 100); about 5 minutes for its 3e6 steps on cramped_room.

        Football (``env.name=football``), ``paper`` = the GRF script (``scripts/grf/shell/
        train_cole.sh``): N = 15, 200 games, 2.4e6 env steps per slot (3.6e7 for N = 15), entropy
        0.02 -> 0.01 -> 0.01 at 0, T / 2, T, a generation try every 30 iterations; the preset's
        Football section gives the rest (200-step rollouts, 15 epochs x 1 minibatch, MLP). ``quick``:
        N = 5, a try every 4 iterations. On Football alpha defaults to the GRF script's 1.25.
        """
        size = cfg.population.size
        football = cfg.env.name == "football"
        if size == 0:
            paper_size = GRF_POPULATION if football else cls.default_population_size
            size = QUICK_POPULATION if preset == "quick" else paper_size
        out: dict[str, Any] = {"population": {"size": size}, "model": {"recurrent": False}}
        if preset == "paper" and football:
            total = GRF_STEPS_PER_MEMBER * size
            out["env"] = {"num_envs": GRF_GAMES}
            out["run"] = {"total_steps": total}
            out["ppo"] = {"entropy_coefs": [0.02, 0.01, 0.01], "entropy_milestones": [0, total // 2, total]}
            out["algo"] = {"generation_interval": GRF_GENERATION_INTERVAL}
        elif preset == "paper":
            total = PAPER_STEPS_PER_MEMBER * size
            out["env"] = {"num_envs": 125}
            out["run"] = {"total_steps": total}
            out["ppo"] = {"entropy_coefs": [0.2, 0.05, 0.01], "entropy_milestones": [0, total // 2, total]}
            out["shaping"] = {"horizon": total}
            out["algo"] = {"generation_interval": 20}
        elif preset == "quick":
            out["algo"] = {"generation_interval": 4}
        return out

    # -- policies ---------------------------------------------------------------------------------
    def build_learners(self, make_policy: Callable[[], Policy]) -> dict[str, Policy]:
        """The ego learner (the output agent)."""
        return {"ego": make_policy()}

    def build_partners(self, make_policy: Callable[[], Policy]) -> dict[str, Any]:
        """The population: a pool holding the initial random networks (:func:`initial_members`)."""
        o = self.options
        count = initial_members(self.size, o.population_play_ratio, o.init_agent_ratio)
        names = [f"gen{k}" for k in range(count)]
        self.pool = PolicyPool.from_policies([make_policy() for _ in range(count)], names)
        self.generation = count
        if self.grf:
            self.payoff = np.zeros((count + 1, count + 1))
            self.payoff[:, count] = np.nan  # no U[p][ego] before p's first update, never U[ego][ego]
            self.ucb_counts = np.zeros(count, dtype=np.int64)
            self._select()
        else:
            self.payoff = np.zeros((count + 1, count))
            self._refresh_probs()
        return {"pool": self.pool}

    @property
    def filled(self) -> int:
        """n, members in the population."""
        return 0 if self.pool is None else len(self.pool)

    # -- seating ----------------------------------------------------------------------------------
    def arms(self) -> list[Arm]:
        """Ego self-play, then every (member, ego seat), member-major (new members append arms);
        more than two players: :func:`grf_arms`."""
        if self.grf:
            if self._arms is None or self._arms[0] != self.filled:
                self._arms = (self.filled, grf_arms("ego", "pool", self.num_agents, self.filled))
            return self._arms[1]
        return [
            self_play_arm("ego", self.num_agents),
            *ego_partner_arms("ego", "pool", self.num_agents, members=range(self.filled)),
        ]

    def assign(self, games: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        """Self-play for the first B // (r + 1) games; a member arm by the meta-solver's P elsewhere.
        More than two players: the game's arm of this iteration (:meth:`_deal`, dealt once per
        iteration with ``generator``), so a game keeps its seating for every episode it starts in
        the iteration, as the reference's threads do.

        Args:
            games: ``int64 [k]`` games starting an episode.
            generator: the trainer's algorithm generator (saved and restored).

        Returns:
            ``int64 [k]`` arm indices (0 = self-play).
        """
        if games.numel() == 0:
            return torch.zeros_like(games)
        if self.grf:
            if self.game_arm is None:
                self.game_arm = self._deal(generator).to(games.device)
            return self.game_arm[games]
        arm_p = torch.as_tensor(np.repeat(self.probs / self.num_agents, self.num_agents), dtype=torch.float64)
        arm_p = arm_p.to(games.device)
        drawn = torch.multinomial(arm_p, games.numel(), replacement=True, generator=generator) + 1
        return torch.where(games < self.self_play_games, torch.zeros_like(drawn), drawn)

    def _deal(self, generator: torch.Generator | None) -> torch.Tensor:
        """``int64 [B]`` the iteration's arm of every game (more than two players): self-play for
        the first B // (r + 1) games; the others take the shuffled :attr:`seatings` in turn
        (``random.shuffle`` then thread i gets seating ``i mod len``, as ``train_cole`` deals them),
        so each seating is played by about ``(B - B // (r + 1)) / len`` games, or, when there are
        more seatings than games, a random subset is."""
        B, sp = self.num_envs, self.self_play_games
        device = generator.device if generator is not None else torch.device("cpu")
        order = torch.tensor(self.seatings, dtype=torch.int64, device=device)
        order = order[torch.randperm(len(order), generator=generator, device=device)]
        out = torch.zeros(B, dtype=torch.int64, device=device)
        out[sp:] = order[torch.arange(B - sp, device=device) % len(order)]
        return out

    # -- the graphic-form game --------------------------------------------------------------------
    def _refresh_probs(self) -> None:
        self.probs = sampling_probabilities(self.payoff, self.alpha)

    def _select(self) -> None:
        """More than two players, before each iteration (``cole_reset_map_ea2t_fn``): P from the
        members' U-row scores, the UCB bonus, the top member (its count + 1) and the seatings around
        it; the games' arms are dealt at the iteration's first episode start."""
        self.probs = ranked_probabilities(row_scores(self.payoff)[:-1], self.alpha)
        self.ucb_probs = ucb_probabilities(self.probs, self.ucb_counts, self.options.ucb_factor)
        self.top = top_member(self.ucb_probs)
        self.ucb_counts[self.top] += 1
        self.seatings = selected_seatings(self.arms(), self.top, self.filled, self.num_agents)
        self.game_arm = None

    def after_iteration(self, iteration: int, env_steps: int, stats: dict[str, float], episodes: Any) -> None:
        """Update U from the finished episodes; every ``generation_interval`` iterations try to
        admit the ego's snapshot; refresh the sampling probabilities.

        Adds ``cole/members``, ``cole/arms`` (after this iteration), ``cole/ego_rank`` and
        ``cole/admitted`` (on generation tries) to the iteration's metrics row. More than two
        players: the GRF update of U (ego column too), the UCB counts reset on every generation try,
        then :meth:`_select` for the next iteration (``cole/top``: the top member,
        ``cole/seatings``: how many seatings the population games share).
        """
        arm = episodes.arm.cpu().numpy() if len(episodes) else np.zeros(0, dtype=np.int64)
        sparse = episodes.sparse.cpu().numpy() if len(episodes) else np.zeros(0)
        if self.grf:
            returns = combination_returns(arm, sparse, self.arms(), self.filled)
            self.payoff = grf_update_payoff(self.payoff, returns)
        else:
            returns = partner_returns(arm, sparse, self.filled, self.num_agents)
            self.payoff = update_payoff(self.payoff, returns)
        sp = self_play_return(arm, sparse)
        if np.isfinite(sp):
            self.sp_return = sp
        if generation_due(iteration, self.options.generation_interval):
            full = self.filled >= self.size
            rank = grf_ego_rank(self.payoff) if self.grf else ego_rank(self.payoff)
            admitted = should_admit(rank, admission_threshold(self.filled, full), self.failed_tries)
            stats["cole/ego_rank"] = rank
            stats["cole/admitted"] = int(admitted)
            if admitted:
                self._admit(replacement_slot(self.filled, self.np_rng) if full else self.filled)
                self.failed_tries = 0
            else:
                self.failed_tries += 1
            if self.grf:
                self.ucb_counts = np.zeros(self.filled, dtype=np.int64)
        stats["cole/members"] = self.filled
        if self.grf:
            self._select()
            stats["cole/arms"] = len(self.arms())
            stats["cole/top"] = self.top
            stats["cole/seatings"] = len(self.seatings)
        else:
            self._refresh_probs()
            stats["cole/arms"] = 1 + self.filled * self.num_agents

    def _admit(self, slot: int) -> None:
        """Put the ego's current weights into ``slot`` (append or overwrite) and update U."""
        assert self.pool is not None
        ego = self.learners["ego"]
        name = f"gen{self.generation}"
        if slot == len(self.pool):
            self.pool.add(ego, name)
        else:
            state = ego.state_dict()
            for key, stacked in self.pool.stacked.items():
                stacked[slot].copy_(state[key].detach().to(stacked.device, stacked.dtype))
            self.pool.names[slot] = name
            self.pool.sha256 = None
        self.generation += 1
        admit = grf_admit_payoff if self.grf else admit_payoff
        self.payoff = admit(self.payoff, slot, self.sp_return)

    # -- resumable state --------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """U, counters, the latest self-play return and the pool (names and stacked weights); more
        than two players also the UCB counts, the top member, its P + UCB and the dealt arms."""
        assert self.pool is not None
        state = {
            "payoff": torch.as_tensor(self.payoff, dtype=torch.float64).clone(),
            "generation": self.generation,
            "failed_tries": self.failed_tries,
            "sp_return": float(self.sp_return),
            "names": list(self.pool.names),
            "pool": {k: v.detach().cpu().clone() for k, v in self.pool.stacked.items()},
        }
        if self.grf:  # the UCB counts, the top member and the iteration's dealt arms (if dealt)
            state["ucb_counts"] = torch.as_tensor(self.ucb_counts, dtype=torch.int64).clone()
            state["top"] = self.top
            state["ucb_probs"] = torch.as_tensor(self.ucb_probs, dtype=torch.float64).clone()
            dealt = self.game_arm is not None
            state["game_arm"] = self.game_arm.cpu().clone() if dealt else torch.zeros(0, dtype=torch.int64)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`'s output into the existing pool object (the runner holds it).

        Raises:
            ValueError: the saved population is smaller than the freshly built one.
        """
        assert self.pool is not None
        names = [str(n) for n in state["names"]]
        if len(names) < len(self.pool):
            raise ValueError(f"saved COLE population has {len(names)} members, fewer than {len(self.pool)}")
        while len(self.pool) < len(names):
            self.pool.add(self.pool.member(0), f"_restoring{len(self.pool)}")
        for key, stacked in self.pool.stacked.items():
            stacked.copy_(state["pool"][key].to(stacked.device, stacked.dtype))
        self.pool.names[:] = names
        self.pool.sha256 = None
        self.payoff = state["payoff"].cpu().numpy().astype(np.float64).copy()
        self.generation = int(state["generation"])
        self.failed_tries = int(state["failed_tries"])
        self.sp_return = float(state["sp_return"])
        if not self.grf:
            self._refresh_probs()
            return
        self.ucb_counts = state["ucb_counts"].cpu().numpy().astype(np.int64).copy()
        self.top = int(state["top"])
        self.probs = ranked_probabilities(row_scores(self.payoff)[:-1], self.alpha)
        self.ucb_probs = state["ucb_probs"].cpu().numpy().astype(np.float64).copy()
        self.seatings = selected_seatings(self.arms(), self.top, self.filled, self.num_agents)
        dealt = state["game_arm"]
        self.game_arm = dealt.clone().to(self.device) if dealt.numel() else None
