"""Stage 2 of the population methods: a recurrent ego trained against a frozen population.

The population is ``3 * W`` policies: the init, mid and final checkpoints
(:mod:`zsceval.rl.population.checkpoints`) of a window of W members of one or more stage-1 runs,
stacked in one :class:`~zsceval.rl.population.PolicyPool`. The arms are the ``2 * 3W`` (partner, ego
seat) pairs (docs/reference-protocol.md "Population machinery"); each game draws an arm at every episode
start, uniformly by default (FCP, TrajeDi, HSP) or by a plug-in's
:meth:`~zsceval.rl.algorithm.Algorithm.assign` (MEP's prioritized sampling). The partners act by sampling,
with fresh recurrent states each episode, as in ZSC-Eval.

Games of n > 2 players (Football's 3) seat the ego with the reference's GRF combinations
(``grf_runner.py: get_agent_pairs``, :func:`population_arms`): every ordered (n - 1)-tuple of pool
members drawn *independently* (with replacement) in the other seats, then every ordered tuple of
fewer members with the ego's copies in the remaining seats (down to one member), for every choice
of the ego's seats. The reference draws a combination uniformly over the unordered multisets and
then a random seat permutation; :func:`multiset_weights` gives each arm that probability.

:meth:`PopulationEgo.jobs` declares the whole chain for ``zsceval bench`` and ``zsceval train``:
one stage-1 population run per layout shared by every ego seed, and per ego seed the stage-2 run on
its sliding window of members (ZSC-Eval ``scripts/prep/gen_S2_yml.py``).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import torch

from zsceval.algorithms.base.stage1 import DEFAULT_SIZE, member_name, stage1_size
from zsceval.envs.scenarios import env_flags, num_players
from zsceval.execution import job_ids
from zsceval.rl.algorithm import Algorithm, JobContext
from zsceval.rl.budget_check import check_episode_budget
from zsceval.rl.config import ConfigError, TrainConfig, population_size
from zsceval.rl.policy import Policy
from zsceval.rl.population.checkpoints import load_population
from zsceval.rl.population.pool import PolicyPool
from zsceval.rl.seating import Arm, Seating, ego_partner_arms

__all__ = [
    "PopulationEgo",
    "PopulationEgoOptions",
    "multiset_weights",
    "population_arms",
    "sliding_window",
    "stage2_preset",
]

PAPER_STEPS = {12: 50_000_000, 24: 80_000_000, 36: 100_000_000}
"""ZSC-Eval's stage-2 budgets by population size (docs/reference-protocol.md "Training settings")."""


@dataclasses.dataclass(frozen=True)
class PopulationEgoOptions:
    """``algo.*`` options of a stage-2 ego."""

    population: tuple[str, ...] = ()
    """Stage-1 run folders (filled in by the job chain from the stage-1 jobs)."""
    window: tuple[int, ...] = ()
    """Member indices taken from each stage-1 run (default: the first ``population.size / 3``)."""


def sliding_window(total: int, size: int, seed: int) -> list[int]:
    """ZSC-Eval's sliding window of stage-1 members for one ego seed (``gen_S2_yml.py``).

    Ego seed s takes members ``(s * max(total // 5, 1) + p) mod total`` for p < size: with
    5 / 10 / 15 members and windows of 4 / 8 / 12 the 5 ego seeds start 1 / 2 / 3 members apart.

    Raises:
        ValueError: a window larger than the population.
    """
    if size > total:
        raise ValueError(f"a window of {size} members needs a stage-1 population of >= {size}, got {total}")
    start = seed * max(total // 5, 1)
    return [(start + p) % total for p in range(size)]


def stage2_preset(preset: str, cfg: TrainConfig) -> dict[str, Any]:
    """A recurrent ego (GRU) with ZSC-Eval's stage-2 schedules over its whole budget T: entropy
    0.2 -> 0.05 -> 0.01 at 0 / T/2 / T and shaping annealed over T (docs/reference-protocol.md "Training
    settings"). ``paper`` also sets ZSC-Eval's T for the population size (5e7 / 8e7 / 1e8 steps for 12 / 24 /
    36) and 100 games; other presets keep their T (``run.total_steps``, e.g. ``--steps``).
    """
    out: dict[str, Any] = {"model": {"recurrent": True}}
    if preset == "paper":
        size = population_size(cfg)
        total = PAPER_STEPS.get(size, round(50_000_000 * size / 12))
        out["run"] = {"total_steps": total}
    else:
        total = cfg.run.total_steps
    out["ppo"] = {"entropy_coefs": [0.2, 0.05, 0.01], "entropy_milestones": [0, total // 2, total]}
    out["shaping"] = {"horizon": total}
    return out


def population_arms(ego: str, pool: str, n: int, labels: Sequence[str]) -> list[Arm]:
    """The stage-2 arms of an ego and a pool of ``len(labels)`` members in games of n players.

    Two players: :func:`~zsceval.rl.seating.ego_partner_arms` (member-major, then ego seat). More:
    ZSC-Eval's GRF combinations (``grf_runner.py: get_agent_pairs``): for m = n - 1 down to 1, every
    ordered m-tuple of members with replacement (``itertools.product``), and for each every choice of
    the n - m seats of the ego's copies (``itertools.combinations``), members filling the other seats
    in order. With M members and 3 players: 3 M^2 arms with two partners, 3 M with one.

    Each arm's partner label joins the members' labels in seat order with ``+``; its ego seat is the
    first of the ego's seats.
    """
    M = len(labels)
    if n == 2:
        return ego_partner_arms(ego, pool, n, members=range(M), labels=labels)
    arms = []
    for m in range(n - 1, 0, -1):
        for members in itertools.product(range(M), repeat=m):
            for ego_seats in itertools.combinations(range(n), n - m):
                rest = iter(members)
                seats = [(ego, 0) if k in ego_seats else (pool, next(rest)) for k in range(n)]
                label = "+".join(labels[i] for i in members)
                arms.append(Arm(tuple(seats), label, ego_seats[0]))
    return arms


def arm_multiset(arm: Arm) -> tuple:
    """The unordered combination of an arm (who plays, seats forgotten), the unit of the reference's
    GRF sampling."""
    return tuple(sorted(arm.seats))


def multiset_weights(arms: Sequence[Arm]) -> torch.Tensor:
    """``float64 [A]`` the reference's GRF sampling as per-arm probabilities: a combination uniform
    over the unordered multisets of the arms, then a uniformly random seat permutation of it
    (``random.choice(list(itertools.permutations(pair)))``, so each distinct ordering equally)."""
    units = Counter(arm_multiset(a) for a in arms)
    w = torch.tensor([1.0 / units[arm_multiset(a)] for a in arms], dtype=torch.float64)
    return w / len(units)


def check_players(algo: str, n: int, most: int) -> None:
    """Refuse games of fewer than 2 or more than ``most`` players.

    Raises:
        ConfigError: naming the algorithm and the player count.
    """
    if not 2 <= n <= most:
        raise ConfigError(
            f"algorithm '{algo}' trains an ego with partners in games of 2 to {most} players, the env has {n}"
        )


class PopulationEgo(Algorithm):
    """A recurrent ego (``ego``) against the frozen init / mid / final pool of stage-1 members.

    Class attributes:
        stage1_algo: registry name of the stage-1 algorithm whose runs feed this one.
    """

    Options = PopulationEgoOptions
    default_population_size = DEFAULT_SIZE
    stage1_algo: ClassVar[str] = ""
    max_players: ClassVar[int] = 3
    """Most players per game this ego trains in (Football: 3)."""

    @property
    def critic_feature_size(self) -> int:
        """One policy id per seat: the seat's own agent's first, then the other seats' (2 for two
        players)."""
        return self.num_agents

    @classmethod
    def preset_config(cls, preset: str, cfg: TrainConfig) -> dict[str, Any]:
        """:func:`stage2_preset`."""
        return stage2_preset(preset, cfg)

    def build_learners(self, make_policy: Callable[[], Policy]) -> dict[str, Policy]:
        """The ego.

        Raises:
            ConfigError: an env with fewer than 2 or more than :attr:`max_players` players.
        """
        check_players(self.name, self.num_agents, self.max_players)
        return {"ego": make_policy()}

    def population_window(self) -> list[str]:
        """Learner names of the stage-1 members to take from each run.

        Raises:
            ConfigError: ``population.size`` below 3 (the pool takes the init, mid and final
                checkpoints of ``size // 3`` members).
        """
        size = population_size(self.config)
        if size < 3 and not self.options.window:
            raise ConfigError(
                f"population.size={size}: the pool of '{self.name}' holds the init, mid and final "
                f"checkpoints of population.size // 3 members, so it needs population.size >= 3"
            )
        window = self.options.window or tuple(range(size // 3))
        return [member_name(i) for i in window]

    def build_partners(self, make_policy: Callable[[], Policy]) -> dict[str, Any]:
        """``pool``: the init / mid / final checkpoints of the window's members, frozen.

        Raises:
            ConfigError: no population given, or one whose observations differ from this env's.
        """
        if not self.options.population:
            raise ConfigError(
                f"algorithm '{self.name}' needs algo.population=[STAGE1_RUN, ...] (a '{self.stage1_algo}' "
                f"run); `zsceval train --algo {self.name}` without it trains the stage-1 population first"
            )
        ego = make_policy()
        policies, names, records = [], [], []
        for run in self.options.population:
            p, n, r = load_population(run, self.population_window(), device=self.device)
            policies += p
            names += n
            records += r
        for p, name in zip(policies, names, strict=True):
            for key in ("obs_shape", "num_actions"):
                if p.spec[key] != ego.spec[key]:
                    raise ConfigError(
                        f"population member {name} has {key} {p.spec[key]}, this layout needs {ego.spec[key]}"
                    )
        self.partner_names = names
        self.partner_records = records
        return {"pool": PolicyPool.from_policies(policies, names)}

    def critic_features(self, seating: Seating) -> torch.Tensor:
        """ZSC-Eval's ``use_agent_policy_id``: the critic of each seat sees the policy id of every
        agent, own seat first: ``(m + 1) / M`` for pool member m of M, -1 for the learning ego
        (docs/reference-protocol.md "Population machinery"), so its value can depend on who the partner is.
        Feature j of seat k is the id of seat ``(k + j) mod n`` (own seat first, then the others in seat
        order; the reference's GRF critic gives all three seats the ids in seat order).

        Returns:
            ``float32 [B, n, n]``.
        """
        M = len(self.partner_names)
        ids = torch.where(seating.actor == 0, -1.0, (seating.member + 1).float() / M)  # [B, n]
        if self.num_agents == 2:
            return torch.stack([ids, ids.roll(-1, dims=1)], -1)
        return torch.stack([ids.roll(-j, dims=1) for j in range(self.num_agents)], -1)

    def arms(self) -> list[Arm]:
        """:func:`population_arms`: the ``2 * len(pool)`` (partner, ego seat) pairs for two players,
        the reference's GRF combinations for more."""
        return population_arms("ego", "pool", self.num_agents, self.partner_names)

    def arm_probabilities(self) -> torch.Tensor:
        """``float64 [A]`` the default draw: uniform for two players, :func:`multiset_weights` for
        more (the reference's GRF draw)."""
        arms = self.arms()
        if self.num_agents == 2:
            return torch.full((len(arms),), 1.0 / len(arms), dtype=torch.float64)
        return multiset_weights(arms)

    def assign(self, games: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        """Two players: uniform over the arms (the base draw). More: i.i.d. from
        :meth:`arm_probabilities`."""
        if self.num_agents == 2:
            return super().assign(games, generator)
        if getattr(self, "_arm_probs", None) is None:
            self._arm_probs = self.arm_probabilities()
        probs = self._arm_probs.to(device=games.device, dtype=torch.float32)
        return torch.multinomial(probs, games.numel(), replacement=True, generator=generator)

    @classmethod
    def jobs(cls, ctx: JobContext) -> list:
        """One stage-1 population run per layout (shared by every ego seed and by every
        algorithm that declares the same job) and this ego seed's stage-2 run on its window."""
        from zsceval.rl.config import resolve_config

        check_players(cls.name, num_players(ctx.layout), cls.max_players)
        common = ctx.common
        s1 = resolve_config(
            preset=common.get("preset", "quick"),
            overrides=list(common.get("overrides", [])),
            **{"run.algo": cls.stage1_algo, **env_flags(ctx.layout)},
        )
        total = stage1_size(s1)
        reader = "stage 2 (each member's init / mid / final checkpoints)"
        per_member = s1.env.num_envs // total
        check_episode_budget(s1, "population.stage1_steps", s1.population.stage1_steps, per_member, reader)
        s1_id = job_ids.stage1(ctx.layout, cls.stage1_algo)
        stage1 = ctx.train_job(s1_id, algo=cls.stage1_algo, seed=0, steps=s1.run.total_steps)
        window = sliding_window(total, population_size(s1) // 3, ctx.seed)
        ego = ctx.train_job(algo_options={"window": window}, algo_inputs={"population": [s1_id]})
        return [stage1, ego]
