"""Replay check of the 2019 human-human trials: which recorded transitions each simulator reproduces.

For every recorded transition ``(state_t, joint action, next_state_t, reward_t)`` of
:func:`zsceval.human.trials.load_trials` we step

* the reference simulator (PyPI ``overcooked`` 0.2.1, ZSC-Eval's simulator, through
  :class:`zsceval.envs.overcooked.reference.ReferenceGame`) from ``state_t``, one transition at a
  time, and
* our engine (``OvercookedEnv``) from ``state_t``, batched: B games are each loaded with one
  transition's ``state_t`` (``import_state``) and stepped once together,

and compare the result with the recorded ``next_state_t`` and ``reward_t``.

What is compared (:func:`canonical`): each player's position, orientation and held object (kind;
for a soup its ingredients and cooking tick), and the set of objects on counters and in pots with
their cells (for a soup: ingredients and cooking tick, i.e. pot contents and cooking progress).
Not compared: object order in the dicts, ``timestep``, orders. The 2019 cooking counter is clipped
at the cook time (20) when the trials are loaded, since ours stops there (see
:mod:`zsceval.human.trials`). The reward matches when the simulator's team sparse reward equals
the recorded one (``reward_norm``, 20 per delivery).

A transition neither simulator reproduces gets a reason (:func:`reason`), the first of:
``not importable`` (``state_t`` is not a legal state here), ``moved without a move action`` /
``move action not applied`` / ``movement differs`` (a recorded tick whose movement is not the
one its joint action causes, as input lag in the 2019 browser game would give), ``held objects``,
``pots and counters``, ``reward only``.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from zsceval.envs.overcooked import OvercookedEnv, load_layout

from .trials import SPLITS, Trial, load_trials

__all__ = [
    "COLUMNS",
    "ReplayResult",
    "canonical",
    "reason",
    "replay",
    "replay_engine",
    "replay_reference",
    "replay_table",
    "replay_trials",
    "transitions",
    "Transitions",
]

COLUMNS = (
    "transitions",
    "reference reproduces",
    "engine reproduces",
    "both",
    "reference only",
    "engine only",
)
"""Count columns of :func:`replay_table` (after ``layout`` and ``split``)."""

_STAY = 4


# ---------------------------------------------------------------------------- comparison
def _item(d: dict | None):
    if d is None:
        return None
    if d["name"] != "soup":
        return d["name"]
    names = sorted(i["name"] if isinstance(i, dict) else i for i in d["_ingredients"])
    return ("soup", tuple(names), int(d["cooking_tick"]))


def canonical(state: dict) -> tuple:
    """The compared content of an overcooked-ai state dict (ours, the reference's, or a trial's).

    Returns:
        ``(players, objects)``: ``players`` a tuple per seat of ``(position, orientation, held)``
        and ``objects`` a sorted tuple of ``(position, item)``, where an item is ``"onion"``,
        ``"dish"``, ``"tomato"`` or ``("soup", sorted ingredient names, cooking_tick)``.
    """
    players = tuple(
        (tuple(p["position"]), tuple(p["orientation"]), _item(p.get("held_object"))) for p in state["players"]
    )
    objects = tuple(sorted((tuple(o["position"]), _item(o)) for o in state["objects"]))
    return players, objects


def reason(before: dict, actions: Sequence[int], predicted: dict | None, recorded: dict) -> str:
    """Why a simulator's next state ``predicted`` misses the ``recorded`` one.

    Args:
        before: the state the simulator was stepped from.
        actions: the joint action (our indices, seat order).
        predicted: the simulator's next state; None when ``before`` was not importable.
        recorded: the recorded next state.

    Returns:
        The first that applies, checking seats in order: ``"not importable"``; ``"moved without
        a move action"`` (the recorded player changed cell under STAY or INTERACT: the joint
        action is not the one that was applied, e.g. input lag); ``"move action not applied"``
        (the recorded player kept cell and orientation under a move action); ``"movement
        differs"`` (another position or orientation difference); ``"held objects"``; ``"pots
        and counters"``; ``"reward only"`` (the states agree).
    """
    if predicted is None:
        return "not importable"
    (pp, po), (rp, ro), (bp, _) = canonical(predicted), canonical(recorded), canonical(before)
    for s in range(len(rp)):
        if rp[s][:2] != pp[s][:2]:
            if rp[s][0] != bp[s][0] and actions[s] >= _STAY:
                return "moved without a move action"
            if rp[s][:2] == bp[s][:2] and actions[s] < _STAY:
                return "move action not applied"
            return "movement differs"
    if [p[2] for p in pp] != [p[2] for p in rp]:
        return "held objects"
    if po != ro:
        return "pots and counters"
    return "reward only"


# ---------------------------------------------------------------------------- transitions
@dataclass
class Transitions:
    """The recorded transitions of one layout, flattened over trials.

    Attributes:
        layout: our layout name.
        before: N state dicts ``state_t``.
        actions: ``int64 [N, 2]``.
        after: N recorded next states.
        rewards: ``float32 [N]``, recorded (20 per delivery).
        where: N ``(split, trial_id, t)``.
    """

    layout: str
    before: list[dict] = field(default_factory=list)
    actions: torch.Tensor | None = None
    after: list[dict] = field(default_factory=list)
    rewards: torch.Tensor | None = None
    where: list[tuple[str, str, int]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.before)

    def subset(self, index: Sequence[int]) -> Transitions:
        """The transitions at ``index`` (in that order)."""
        idx = torch.as_tensor(list(index), dtype=torch.int64)
        return Transitions(
            self.layout,
            [self.before[i] for i in idx.tolist()],
            self.actions[idx],
            [self.after[i] for i in idx.tolist()],
            self.rewards[idx],
            [self.where[i] for i in idx.tolist()],
        )


def transitions(trials: Sequence[Trial], limit: int | None = None) -> dict[str, Transitions]:
    """Recorded transitions per layout (the first ``limit`` of each layout's trials' transitions,
    trials in the given order).
    """
    out: dict[str, Transitions] = {}
    acts: dict[str, list] = {}
    rews: dict[str, list] = {}
    for trial in trials:
        tr = out.setdefault(trial.layout, Transitions(trial.layout))
        n = len(trial) if limit is None else min(len(trial), limit - len(tr))
        if n <= 0:
            continue
        tr.before += trial.states[:n]
        tr.after += trial.states[1 : n + 1]
        tr.where += [(trial.split, trial.trial_id, t) for t in range(n)]
        acts.setdefault(trial.layout, []).append(trial.actions[:n])
        rews.setdefault(trial.layout, []).append(trial.rewards[:n])
    for name, tr in out.items():
        tr.actions = torch.cat(acts[name]) if name in acts else torch.zeros(0, 2, dtype=torch.int64)
        tr.rewards = torch.cat(rews[name]) if name in rews else torch.zeros(0)
    return out


# ---------------------------------------------------------------------------- simulators
def replay_engine(tr: Transitions, batch: int = 1024) -> tuple[list[dict | None], torch.Tensor]:
    """Step our engine once from every ``tr.before``, ``batch`` transitions at a time.

    Returns:
        ``(next_states, rewards)``: N exported state dicts (None where ``before`` is not
        importable) and ``float32 [N]`` team sparse rewards in our units (NaN where not importable).
    """
    n = len(tr)
    env = OvercookedEnv(tr.layout, num_envs=max(1, min(batch, n)), horizon=10**6)
    env.reset()
    states: list[dict | None] = [None] * n
    rewards = torch.full((n,), float("nan"))
    for lo in range(0, n, env.num_envs):
        hi = min(lo + env.num_envs, n)
        ok = []
        for i in range(lo, hi):
            try:
                env.import_state(i - lo, tr.before[i])
                ok.append(i)
            except ValueError:
                pass
        actions = torch.full((env.num_envs, 2), _STAY, dtype=torch.int64)
        actions[: hi - lo] = tr.actions[lo:hi]
        step = env.step(actions, observe=False)
        for i in ok:
            states[i] = env.export_state(i - lo)
            rewards[i] = float(step.reward[i - lo])
    return states, rewards


def replay_reference(tr: Transitions) -> tuple[list[dict | None], torch.Tensor]:
    """Step the reference simulator once from every ``tr.before`` (same returns as
    :func:`replay_engine`).

    Raises:
        ImportError: the reference simulator is not installed (``pip install 'overcooked==0.2.1'``).
    """
    from zsceval.envs.overcooked.reference import ReferenceGame

    game = ReferenceGame(load_layout(tr.layout))
    states: list[dict | None] = [None] * len(tr)
    rewards = torch.full((len(tr),), float("nan"))
    for i, (before, joint) in enumerate(zip(tr.before, tr.actions.tolist(), strict=True)):
        try:
            game.set_state(before)
        except Exception:  # noqa: BLE001 - the reference raises assorted errors on bad states
            continue
        sparse, _ = game.step(joint)
        states[i] = game.to_dict()
        rewards[i] = float(sum(sparse))
    return states, rewards


def _matches(tr: Transitions, states: list[dict | None], rewards: torch.Tensor) -> torch.Tensor:
    """``bool [N]``: state and reward reproduce the recorded transition."""
    want = tr.rewards
    same = [s is not None and canonical(s) == canonical(r) for s, r in zip(states, tr.after, strict=True)]
    return torch.tensor(same, dtype=torch.bool) & (rewards == want)


# ---------------------------------------------------------------------------- results
@dataclass
class ReplayResult:
    """Per-transition outcome of one layout's replay.

    Attributes:
        transitions: the replayed transitions.
        engine: ``bool [N]``, our engine reproduces transition i.
        reference: ``bool [N]`` or None (reference not run).
        engine_states: our engine's next states (None where not importable).
        reasons: ``Counter`` of :func:`reason` labels over the transitions our engine misses.
        neither: ``Counter`` of :func:`reason` labels (of our engine's miss) over the transitions
            neither simulator reproduces (empty when the reference was not run).
        seconds: wall time of ``{"engine": ..., "reference": ...}`` stepping.
    """

    transitions: Transitions
    engine: torch.Tensor
    reference: torch.Tensor | None
    engine_states: list[dict | None]
    reasons: Counter
    neither: Counter
    seconds: dict[str, float]

    def counts(self) -> dict[str, int]:
        """The :data:`COLUMNS` counts (reference columns are -1 when the reference was not run)."""
        e = self.engine
        r = self.reference
        if r is None:
            return dict(zip(COLUMNS, [len(e), -1, int(e.sum()), -1, -1, -1], strict=True))
        values = [
            len(e),
            int(r.sum()),
            int(e.sum()),
            int((e & r).sum()),
            int((r & ~e).sum()),
            int((e & ~r).sum()),
        ]
        return dict(zip(COLUMNS, values, strict=True))


def replay(tr: Transitions, *, reference: bool = True) -> ReplayResult:
    """Replay one layout's transitions in our engine and, with ``reference``, the reference."""
    start = time.perf_counter()
    states, rewards = replay_engine(tr)
    engine = _matches(tr, states, rewards)
    seconds = {"engine": time.perf_counter() - start, "reference": 0.0}
    ref = None
    if reference:
        start = time.perf_counter()
        ref = _matches(tr, *replay_reference(tr))
        seconds["reference"] = time.perf_counter() - start
    label = {
        i: reason(tr.before[i], tr.actions[i].tolist(), states[i], tr.after[i])
        for i in torch.nonzero(~engine).flatten().tolist()
    }
    neither = Counter() if ref is None else Counter(label[i] for i in label if not ref[i])
    return ReplayResult(tr, engine, ref, states, Counter(label.values()), neither, seconds)


def replay_trials(
    trials: Sequence[Trial], *, limit: int | None = None, reference: bool = True
) -> dict[str, ReplayResult]:
    """Replay the trials' transitions (per layout, the first ``limit``) in our engine and, with
    ``reference``, in the reference simulator.

    Returns:
        ``{layout: ReplayResult}``.

    Raises:
        ImportError: ``reference`` without the reference simulator installed.
    """
    return {name: replay(tr, reference=reference) for name, tr in transitions(trials, limit).items()}


def replay_table(
    splits: Sequence[str] = SPLITS,
    *,
    layouts: Sequence[str] | None = None,
    limit: int | None = None,
    reference: bool = True,
    data_dir=None,
):
    """The replay counts per layout and split as a DataFrame.

    Args:
        splits: ``"train"`` and/or ``"test"``.
        layouts: layouts to replay (either naming; default all five).
        limit: at most this many transitions per layout and split (the first ones, trials in id
            order); None replays all.
        reference: also run the reference simulator (needs ``overcooked==0.2.1``).
        data_dir: see :func:`zsceval.human.trials.find_data_dir`.

    Returns:
        ``(table, reasons, seconds)``: ``table`` a DataFrame with columns ``layout``, ``split`` and
        :data:`COLUMNS` (one row per layout and split, then a ``total`` row; reference columns
        are -1 without ``reference``); ``reasons`` a ``Counter`` of ``(layout, split, reason)``
        over the transitions neither simulator reproduces (without ``reference``: that our
        engine misses); ``seconds`` the wall time of ``load``, ``engine``, ``reference`` and
        ``total``.

    Raises:
        ValueError: unknown split or layout.
        HumanDataMissing: the data is not installed.
        ImportError: ``reference`` without the reference simulator installed.
    """
    import pandas as pd

    start = time.perf_counter()
    rows, reasons = [], Counter()
    seconds = {"load": 0.0, "engine": 0.0, "reference": 0.0}
    for split in splits:
        t0 = time.perf_counter()
        trials = load_trials(split, layouts, data_dir)
        seconds["load"] += time.perf_counter() - t0
        for name, res in sorted(replay_trials(trials, limit=limit, reference=reference).items()):
            rows.append({"layout": name, "split": split, **res.counts()})
            missed = res.neither if reference else res.reasons
            reasons.update({(name, split, k): v for k, v in missed.items()})
            for k, v in res.seconds.items():
                seconds[k] += v
    table = pd.DataFrame(rows, columns=["layout", "split", *COLUMNS])
    total = {"layout": "total", "split": "+".join(splits), **table[list(COLUMNS)].sum().to_dict()}
    if not reference:
        total.update({c: -1 for c in COLUMNS[1:] if c != "engine reproduces"})
    table = pd.concat([table, pd.DataFrame([total])], ignore_index=True)
    seconds["total"] = time.perf_counter() - start
    return table, reasons, seconds
