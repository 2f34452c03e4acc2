"""Arms: who drives each seat of a game for one episode (ZSC-Eval's (partner, seat) arms).

An **arm** seats every seat of a game: seat k is driven by actor ``seats[k] = (name, member)``,
where ``name`` is a learner or partner of the run and ``member`` a member index when that actor is
a :class:`~zsceval.rl.population.pool.PolicyPool` (0 otherwise). An algorithm lists its arms once;
at every episode start of every game it picks one arm for that game (per game and per episode,
inside the env's auto-reset). The arm of each finished episode is recorded in the episode table
(:class:`~zsceval.rl.runner.EpisodeTable`) with its ``partner`` label and ``ego_seat``.

:func:`ego_partner_arms` builds the usual set: the ego in each seat with a partner (or each member
of a partner pool) in every other seat.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

__all__ = ["Arm", "ArmTable", "Seating", "ego_partner_arms", "fixed_seating", "self_play_arm"]


@dataclass(frozen=True)
class Arm:
    """One seating of a game.

    Attributes:
        seats: per seat, ``(actor name, member index)``; length n.
        partner: label of the partner in the episode table (e.g. a partner id, ``"self"``).
        ego_seat: seat of the agent under study (reported as ``seat`` in the episode table).
    """

    seats: tuple[tuple[str, int], ...]
    partner: str = ""
    ego_seat: int = 0

    @classmethod
    def of(cls, *seats: str | tuple[str, int], partner: str = "", ego_seat: int = 0) -> Arm:
        """``Arm.of("ego", ("pool", 3), partner="pool/3", ego_seat=0)``: names alone mean member 0."""
        norm = tuple((s, 0) if isinstance(s, str) else (str(s[0]), int(s[1])) for s in seats)
        return cls(norm, partner, ego_seat)


@dataclass(frozen=True)
class Seating:
    """Who drove each seat of each game in one step (what ``training_reward`` receives).

    Attributes:
        actor: ``int64 [B, n]`` actor index per game and seat (learners first, then partners).
        member: ``int64 [B, n]`` pool member index (0 for actors that are not pools).
        arm: ``int64 [B]`` the arm of each game's current episode.
    """

    actor: torch.Tensor
    member: torch.Tensor
    arm: torch.Tensor


def fixed_seating(agents_by_seat: Sequence) -> tuple[dict[str, object], Arm]:
    """Actors and the one arm that seat ``agents_by_seat[k]`` in seat k of every game.

    The same agent object in several seats becomes one actor (one forward over all its rows).

    Returns:
        ``({"agent0": ..., "agent1": ...}, Arm)`` for :class:`~zsceval.rl.runner.EpisodeRunner`.
    """
    actors: dict[str, object] = {}
    names = []
    for agent in agents_by_seat:
        name = next((k for k, a in actors.items() if a is agent), None)
        if name is None:
            name = f"agent{len(actors)}"
            actors[name] = agent
        names.append(name)
    return actors, Arm.of(*names)


def self_play_arm(name: str, n: int) -> Arm:
    """The actor ``name`` in all ``n`` seats (partner label ``"self"``, ego seat 0)."""
    return Arm.of(*([name] * n), partner="self", ego_seat=0)


def ego_partner_arms(
    ego: str, partner: str, n: int, members: Sequence[int] | None = None, labels: Sequence[str] | None = None
) -> list[Arm]:
    """The ego in each seat, the partner (or member m of a partner pool) in every other seat.

    Args:
        ego: actor name of the ego.
        partner: actor name of the partner (a policy, or a pool when ``members`` is given).
        n: seats per game.
        members: pool member indices (None: the partner is one policy).
        labels: partner label per member (default ``partner`` or ``f"{partner}/{m}"``).

    Returns:
        ``len(members or [0]) * n`` arms, member-major then ego seat.
    """
    ms = list(members) if members is not None else [0]
    if labels is None:
        labels = [partner if members is None else f"{partner}/{m}" for m in ms]
    arms = []
    for m, label in zip(ms, labels, strict=True):
        for seat in range(n):
            seats = [(partner, m)] * n
            seats[seat] = (ego, 0)
            arms.append(Arm(tuple(seats), label, seat))
    return arms


class ArmTable:
    """Arms compiled to tensors for masked selects in the auto-reset.

    Args:
        arms: the arms (A of them).
        actor_names: every actor's name in actor-index order.
        n: seats per game.
        device: torch device.

    Attributes:
        actor: ``int64 [A, n]`` actor index per arm and seat.
        member: ``int64 [A, n]`` member index per arm and seat.
        ego_seat: ``int64 [A]``.

    Raises:
        ValueError: no arms, an arm of the wrong length, or an unknown actor name.
    """

    def __init__(self, arms: Sequence[Arm], actor_names: Sequence[str], n: int, device) -> None:
        if not arms:
            raise ValueError("an algorithm must declare at least one arm")
        index = {name: i for i, name in enumerate(actor_names)}
        actor, member = [], []
        for a in arms:
            if len(a.seats) != n:
                raise ValueError(f"arm {a} seats {len(a.seats)} agents, the env has {n}")
            for name, _ in a.seats:
                if name not in index:
                    raise ValueError(f"arm {a} names actor '{name}'; actors are {', '.join(actor_names)}")
            actor.append([index[name] for name, _ in a.seats])
            member.append([m for _, m in a.seats])
        self.arms = list(arms)
        self.actor = torch.tensor(actor, dtype=torch.int64, device=device)
        self.member = torch.tensor(member, dtype=torch.int64, device=device)
        self.ego_seat = torch.tensor([a.ego_seat for a in arms], dtype=torch.int64, device=device)

    def __len__(self) -> int:
        return len(self.arms)
