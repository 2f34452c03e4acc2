"""Analysis module: detect and classify interdependencies ("Who is Helping Whom?", Sec. 4.3, App. C.2 Alg. 2).

An **interdependence** (Def. 4.1) is a pair of actions ``(a_i^{t0+k}, a_j^{t0})``, ``i != j``, such
that an add effect of the giver's action ``a_j^{t0}`` is a precondition of the receiver's later
action ``a_i^{t0+k}``; it is associated with the object ``obj_int`` the shared proposition is
about. As in Alg. 2, each agent keeps an *effect list*: the ``at(obj, state, cell)`` propositions
its actions added that are still in force (the object is still where that action left it and no
agent acted on it since; the environment's own cooking progress does not end an effect). Actions
are taken in turn order (step ``t``, then seat order, see :mod:`.predicates`); a receiver's
preconditions are matched against the other agents' effect lists built from earlier turns.

Each interdependence is classified (Alg. 2, lines 17-26):

* **goal reaching** (Def. 4.4): the final state of ``obj_int`` (of the soup it became part of:
  onion or tomato put in a pot, dish that plated a soup) is in the goal predicates ``p_n^G``, i.e.
  that soup was served and is one of the layout's orders;
* **giver loop** (Def. 4.5 (1)): the giver holds ``obj_int`` again, in the state it gave it in, at a
  state after the receiver's action;
* **receiver loop** (Def. 4.5 (2)): the receiver held ``obj_int``, in the state it receives it in,
  at a state up to its action;
* **constructive** (Def. 4.6) = goal reaching and non-looping; otherwise **looping** if a loop was
  found, otherwise **irrelevant** (not goal reaching). **Non-constructive** is the paper's
  ``Int_non-cons`` of Sec. 6: looping + irrelevant (Alg. 2's last ``else`` branch can never be taken,
  docs/differences.md ("Interdependence metric")).

**Trigger actions** (Def. 4.2) are the actions whose effects could be a precondition of another
agent's action: here, an INTERACT that leaves an object on a counter or in a pot (put on a counter,
an ingredient into a pot, a cook start) at a cell some other agent can face from its floor region.
Per seat we count trigger actions, the interdependencies it *triggered* (it is the giver: the
partner took up its trigger) and those it *accepted* (it is the receiver) by category; Sec. 6
reports triggered-but-not-accepted shares (Tables 1 and 4).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zsceval.envs.overcooked.constants import Action
from zsceval.envs.overcooked.layout import Layout

from .predicates import ObjectState, Operator, Pred, SymbolicTrace, map_trajectory

__all__ = [
    "CATEGORIES",
    "Interdependency",
    "InterdependenceCounts",
    "detect",
    "interdependence",
    "interdependence_of_trajectory",
    "interdependence_of_file",
    "summarize",
]

CATEGORIES = ("constructive", "looping", "irrelevant", "non_constructive")
_DISJOINT = ("constructive", "looping", "irrelevant")
TRIGGER_KINDS = ("put_counter", "pot_ingredient", "cook")


@dataclass(frozen=True)
class Interdependency:
    """One detected interdependence (Def. 4.1) and its classification.

    Attributes:
        t_effect: step of the giver's action ``a_j^{t0}`` (``t0``).
        t_use: step of the receiver's action ``a_i^{t0+k}``.
        giver: seat j.
        receiver: seat i.
        object_id: id of ``obj_int`` (:class:`~.predicates.ObjectRecord`).
        object_kind: ``"onion"``, ``"tomato"``, ``"dish"`` or ``"soup"``.
        predicate: the giver's add effect ``at(obj, state, cell)`` the receiver relied on.
        giver_action: operator kind of the giver's action, e.g. ``"put_counter"``.
        receiver_action: operator kind of the receiver's action, e.g. ``"pickup_counter"``.
        goal_reaching: Def. 4.4.
        giver_loop: Def. 4.5 (1) violated.
        receiver_loop: Def. 4.5 (2) violated.
        category: ``"constructive"``, ``"looping"`` or ``"irrelevant"``.
    """

    t_effect: int
    t_use: int
    giver: int
    receiver: int
    object_id: int
    object_kind: str
    predicate: Pred
    giver_action: str
    receiver_action: str
    goal_reaching: bool
    giver_loop: bool
    receiver_loop: bool
    category: str

    @property
    def cell(self) -> tuple[int, int]:
        """Cell ``(x, y)`` where the object was handed over."""
        return self.predicate.args[2]


def _zero() -> dict[str, int]:
    return dict.fromkeys(CATEGORIES, 0)


@dataclass
class InterdependenceCounts:
    """Interdependence counts of one episode ("Who is Helping Whom?", Sec. 6).

    Attributes:
        num_steps: T.
        trigger_actions: per seat, the number of trigger actions (Def. 4.2).
        interact_actions: per seat, the number of INTERACT actions.
        triggered: per seat, ``{category: n}`` of the interdependencies it triggered (seat = giver).
        accepted: per seat, ``{category: n}`` of the interdependencies it accepted (seat = receiver).
        interdependencies: every detected interdependence, in order of ``t_use``.
        triggers: ``(t, seat, operator kind, cell)`` of every trigger action.
    """

    num_steps: int
    trigger_actions: list[int]
    interact_actions: list[int]
    triggered: list[dict[str, int]]
    accepted: list[dict[str, int]]
    interdependencies: list[Interdependency] = field(default_factory=list)
    triggers: list[tuple[int, int, str, tuple[int, int]]] = field(default_factory=list)

    @property
    def num_players(self) -> int:
        """n."""
        return len(self.trigger_actions)

    def count(self, category: str) -> int:
        """Number of interdependencies of ``category`` (one of :data:`CATEGORIES`), both seats.

        Raises:
            KeyError: unknown category.
        """
        if category not in CATEGORIES:
            raise KeyError(f"unknown category {category!r}; one of {CATEGORIES}")
        return sum(s[category] for s in self.triggered)

    @property
    def constructive(self) -> int:
        """``Int_cons`` (Def. 4.6)."""
        return self.count("constructive")

    @property
    def looping(self) -> int:
        """Interdependencies with a giver or receiver loop (Def. 4.5)."""
        return self.count("looping")

    @property
    def irrelevant(self) -> int:
        """Non-looping interdependencies that do not reach the goal (Def. 4.4)."""
        return self.count("irrelevant")

    @property
    def non_constructive(self) -> int:
        """``Int_non-cons`` (Sec. 6) = looping + irrelevant."""
        return self.count("non_constructive")

    @property
    def total(self) -> int:
        """All detected interdependencies."""
        return len(self.interdependencies)

    def not_accepted(self, seat: int) -> int:
        """Trigger actions of ``seat`` that no partner took up."""
        used = {(i.t_effect, i.giver) for i in self.interdependencies if i.giver == seat}
        return self.trigger_actions[seat] - len(used)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able counts: totals per category and, under ``"seats"``, per-seat counts."""
        return {
            "steps": self.num_steps,
            **{c: self.count(c) for c in CATEGORIES},
            "total": self.total,
            "seats": [
                {
                    "trigger_actions": self.trigger_actions[k],
                    "interact_actions": self.interact_actions[k],
                    "not_accepted": self.not_accepted(k),
                    "triggered": dict(self.triggered[k]),
                    "accepted": dict(self.accepted[k]),
                }
                for k in range(self.num_players)
            ],
        }


def _holding_index(trace: SymbolicTrace) -> dict[tuple, list[int]]:
    """``{(seat, obj, state): sorted state indices s where holding(seat, obj, state) ∈ p_s}``."""
    idx: dict[tuple, list[int]] = defaultdict(list)
    for s, preds in enumerate(trace.states):
        for p in preds:
            if p.name == "holding":
                idx[p.args].append(s)
    return idx


def detect(trace: SymbolicTrace) -> InterdependenceCounts:
    """Detect and classify the interdependencies of a STRIPS trace ("Who is Helping Whom?", App. C.2, Alg. 2).

    Args:
        trace: from :func:`~.predicates.map_trajectory`.

    Returns:
        The :class:`InterdependenceCounts` of the episode.
    """
    n = len(trace.regions)
    T = trace.num_steps
    holding = _holding_index(trace)
    # effect list: obj -> (giver seat, t0, add predicate, giver operator kind); None when no effect
    effect: dict[int, tuple[int, int, Pred, str]] = {}
    found: list[Interdependency] = []
    triggers: list[tuple[int, int, str, tuple[int, int]]] = []
    interacts = [0] * n
    for t in range(T):
        for k, op in enumerate(trace.operators[t]):
            if op.action == Action.INTERACT:
                interacts[k] += 1
            for p in op.pre:
                if p.name != "at":
                    continue
                e = effect.get(p.obj)
                if e is None or e[0] == k or e[2].args[2] != p.args[2]:
                    continue
                found.append(_classify(trace, holding, e, op, p))
            _apply(effect, op, k, t)
            if op.kind in TRIGGER_KINDS and any(
                trace.partner_can_reach(k, q.args[2]) for q in op.add if q.name == "at"
            ):
                triggers.append((t, k, op.kind, op.cell))
    triggered = [_zero() for _ in range(n)]
    accepted = [_zero() for _ in range(n)]
    for i in found:
        for table, seat in ((triggered, i.giver), (accepted, i.receiver)):
            table[seat][i.category] += 1
            if i.category != "constructive":
                table[seat]["non_constructive"] += 1
    per_seat = [sum(1 for tr in triggers if tr[1] == k) for k in range(n)]
    return InterdependenceCounts(T, per_seat, interacts, triggered, accepted, found, triggers)


def _apply(effect: dict, op: Operator, k: int, t: int) -> None:
    """Update the effect lists after ``op``: every object it acts on leaves the effect lists
    (``filter_effect_list_by_state``), then its ``at`` add effects enter seat ``k``'s list."""
    for obj in op.objects():
        effect.pop(obj, None)
    for q in op.add:
        if q.name == "at":
            effect[q.obj] = (k, t, q, op.kind)


def _classify(
    trace: SymbolicTrace, holding: dict, e: tuple[int, int, Pred, str], op: Operator, pre: Pred
) -> Interdependency:
    giver, t0, given, giver_kind = e
    obj = pre.obj
    state_given: ObjectState = given.args[1]
    state_used: ObjectState = pre.args[1]
    goal = trace.reaches_goal(obj)
    # Def. 4.5 (1): giver holds obj in its given state at a state index > t_use (after the use).
    after = holding.get((giver, obj, state_given), [])
    giver_loop = bisect_right(after, op.t) < len(after)
    # Def. 4.5 (2): receiver held obj in the received state at a state index <= t_use.
    before = holding.get((op.seat, obj, state_used), [])
    receiver_loop = bisect_left(before, op.t + 1) > 0
    if goal and not giver_loop and not receiver_loop:
        cat = "constructive"
    elif giver_loop or receiver_loop:
        cat = "looping"
    else:
        cat = "irrelevant"
    return Interdependency(
        t_effect=t0,
        t_use=op.t,
        giver=giver,
        receiver=op.seat,
        object_id=obj,
        object_kind=trace.objects[obj].kind,
        predicate=given,
        giver_action=giver_kind,
        receiver_action=op.kind,
        goal_reaching=goal,
        giver_loop=giver_loop,
        receiver_loop=receiver_loop,
        category=cat,
    )


def interdependence(
    states: Sequence[dict], actions: Any, layout: str | Path | Layout
) -> InterdependenceCounts:
    """Interdependence counts of one episode ("Who is Helping Whom?", Sec. 4.3; a pure function of its
    inputs).

    Args:
        states: ``T + 1`` overcooked-ai state dicts (``OvercookedEnv.export_state(i)`` format).
        actions: ``int [T, n]`` joint actions, zsceval indices (0 N, 1 S, 2 E, 3 W, 4 STAY, 5 INTERACT).
        layout: layout name, path or :class:`~zsceval.envs.overcooked.layout.Layout`.

    Raises:
        TraceError: the states are not what the actions lead to on ``layout``.
    """
    return detect(map_trajectory(states, actions, layout))


def interdependence_of_trajectory(traj) -> InterdependenceCounts:
    """Counts of a :class:`zsceval.interop.trajectory.Trajectory` (its states, joint actions, layout)."""
    return interdependence(traj.states, traj.joint_actions, traj.layout)


def interdependence_of_file(path: str | Path) -> list[InterdependenceCounts]:
    """Counts of every episode of a ``zsceval-trajectory`` file (``zsceval eval --save-trajectories``).

    Raises:
        TrajectoryError: unreadable or malformed file.
        TraceError: an episode is inconsistent with its layout's dynamics.
    """
    from zsceval.interop.trajectory import load_trajectories

    return [interdependence_of_trajectory(t) for t in load_trajectories(path)]


def summarize(counts: Sequence[InterdependenceCounts]) -> dict[str, Any]:
    """Means per episode ("Who is Helping Whom?", Tables 1-4 average over runs).

    Returns:
        ``{"episodes": N, <category>: mean, "total": mean, "seats": [per seat {"trigger_actions",
        "interact_actions", "not_accepted": means, "triggered": {category: mean}, "accepted":
        {category: mean}, "pct_not_accepted": mean over episodes with >= 1 trigger action of
        100 * not_accepted / trigger_actions (None if there is none), "pct_trigger": the same mean
        of 100 * trigger_actions / interact_actions}]}``.

    Raises:
        ValueError: no episodes, or episodes with different numbers of players.
    """
    if not counts:
        raise ValueError("summarize needs at least one episode")
    n = counts[0].num_players
    if any(c.num_players != n for c in counts):
        raise ValueError("episodes have different numbers of players")
    N = len(counts)

    def mean(xs):
        xs = list(xs)
        return sum(xs) / len(xs) if xs else None

    out: dict[str, Any] = {"episodes": N}
    for c in CATEGORIES:
        out[c] = mean(x.count(c) for x in counts)
    out["total"] = mean(x.total for x in counts)
    seats = []
    for k in range(n):
        seats.append(
            {
                "trigger_actions": mean(x.trigger_actions[k] for x in counts),
                "interact_actions": mean(x.interact_actions[k] for x in counts),
                "not_accepted": mean(x.not_accepted(k) for x in counts),
                "triggered": {c: mean(x.triggered[k][c] for x in counts) for c in CATEGORIES},
                "accepted": {c: mean(x.accepted[k][c] for x in counts) for c in CATEGORIES},
                "pct_not_accepted": mean(
                    100.0 * x.not_accepted(k) / x.trigger_actions[k] for x in counts if x.trigger_actions[k]
                ),
                "pct_trigger": mean(
                    100.0 * x.trigger_actions[k] / x.interact_actions[k]
                    for x in counts
                    if x.interact_actions[k]
                ),
            }
        )
    out["seats"] = seats
    return out
