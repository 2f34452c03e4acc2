"""Hypothesis scoring after Hypothetical Minds (Sec. 3.2 "Hypothesis Evaluation"), over
TBS's finite hypothesis set: the k cluster ToM models, each paired with its cluster's best response.

**The rule.** Each hypothesis i predicts the partner's next interaction concept (its ToM model's
output, :mod:`zsceval.algorithms.tbs.tom`). When the partner then performs a concept, every
hypothesis whose prediction named it (the arg-max concept, or one of the ``top_k`` most probable)
earns the intrinsic reward ``r = +c``, every other one ``r = -c``, and its value follows the
Rescorla-Wagner rule ``V <- V + alpha (r - V)`` (Hypothetical Minds, Sec. 3.2), from ``V = 0`` at every
episode start. A hypothesis is *validated* while ``V >= v_thr``; the agent acts with the best
response of the highest-valued validated hypothesis and keeps it while it stays validated. With none
validated the ``fallback`` decides: ``highest`` (the hypothesis of the highest value; Hypothetical Minds: "the
highest value hypothesis could also be used in our code") or ``latest_correct`` (the one that was
right most recently, the higher value on ties: our reading of "the latest generated hypothesis",
which a fixed set does not have). Exact ties keep the current choice, else the lowest index; the
choice at t = 0 (all values 0) is drawn uniformly per game, as TBS's first step.

With ``alpha = 0.3, c = 1`` a hypothesis that is always right has ``V_n = 1 - 0.7^n`` after n
scored predictions: 0.3, 0.51, 0.657, 0.7599, so it is validated at the 4th (``v_thr = 0.7``).

**When a prediction is scored.** The ToM models are trained on the partner's *next* concept (the
first concept it performs at or after the step, :func:`~.concepts.next_interaction_labels`), so a
prediction is settled when the partner performs its next concept, not at every step. As in paper
003 (App. A, step 4: one guess per hypothesis after each interaction, scored after the next one),
``prediction="held"`` keeps the prediction each model made at the first step after the partner's
previous concept (or at the episode start) and scores it when the next concept appears;
``prediction="latest"`` scores the prediction of the step at which the partner performed the
concept (an easier test: the partner is then already at the tile). With the ``action`` granularity
the concept of a step is the partner's action there, so the prediction of that very step is scored
whenever the action is known (both settings coincide).

**The partner's concept online.** The agent sees only its own observation, which is lossless and
shows the partner (:mod:`zsceval.envs.overcooked.observation`). :func:`infer_partner_interaction`
reads the interaction kind from the partner's held object before and after a step in which it
neither moved nor turned (an interaction never moves), and the tile it faces: e.g. empty-handed ->
onion while facing an onion pile is ``PICKUP_ONION_DISPENSER``; the cell is the faced tile, so the
ToM models' own :class:`~.concepts.ConceptSet` maps it to the concept index. Every concept kind
changes the held object, so this recovers every concept exactly while the partner is visible
(``tests/algorithms/tbs/test_hypothesis.py``); a step in which the partner is out of a partial view is
unknown and scores nothing.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from zsceval.algorithms.tbs.agents import (
    _build,
    _Composite,
    _entry,
    infer_partner_action,
    partner_summary,
)
from zsceval.algorithms.tbs.concepts import ConceptSet, build_concept_set
from zsceval.envs.overcooked.constants import Interaction, Terrain
from zsceval.envs.overcooked.observation import NUM_PLAYER_CHANNELS
from zsceval.rl.agent import ActOutput, register_agent

__all__ = [
    "FALLBACKS",
    "PREDICTIONS",
    "HypothesisAgent",
    "infer_partner_interaction",
    "prediction_rewards",
    "rescorla_wagner",
    "select_hypothesis",
]

FALLBACKS = ("highest", "latest_correct")
"""The hypothesis used while none is validated (module docstring); the first is the default."""
PREDICTIONS = ("held", "latest")
"""Which prediction a realised concept scores (module docstring); the first is the default."""

# -- pure rules -----------------------------------------------------------------------------------


def rescorla_wagner(values: torch.Tensor, reward: torch.Tensor, alpha: float, mask=None) -> torch.Tensor:
    """Rescorla-Wagner update ``V <- V + alpha (r - V)`` (Hypothetical Minds, Sec. 3.2).

    Args:
        values: ``float32 [N, k]`` hypothesis values.
        reward: ``float32 [N, k]`` intrinsic rewards (+c right, -c wrong).
        alpha: learning rate in (0, 1].
        mask: ``bool [N]`` rows that update (None: all).

    Returns:
        ``float32 [N, k]``.
    """
    new = values + alpha * (reward - values)
    return new if mask is None else torch.where(mask[:, None], new, values)


def prediction_rewards(probs: torch.Tensor, realised: torch.Tensor, top_k: int = 1, c: float = 1.0):
    """Intrinsic reward of each hypothesis' prediction (Hypothetical Minds, Sec. 3.2: +c right, -c wrong).

    Args:
        probs: ``float32 [N, k, M]`` each hypothesis' concept probabilities (the prediction).
        realised: ``int64 [N]`` the concept the partner performed (-1: none, every prediction wrong).
        top_k: a prediction is right iff ``realised`` is among its ``top_k`` most probable concepts
            (1: the arg-max; exact ties by the lower index).
        c: the reward magnitude.

    Returns:
        ``float32 [N, k]``: ``+c`` right, ``-c`` wrong.
    """
    top = probs.topk(min(int(top_k), probs.shape[-1]), dim=-1).indices  # [N, k, top_k]
    right = (top == realised.view(-1, 1, 1)).any(-1)
    return torch.where(right, c, -c).to(probs.dtype)


def _argmax_keep(score: torch.Tensor, current: torch.Tensor) -> torch.Tensor:
    """Arg-max over the last dim of ``score [N, k]``; on exact ties ``current`` if it is among the
    best, else the lowest index."""
    best = score == score.max(-1, keepdim=True).values
    keep = best.gather(1, current.view(-1, 1)).squeeze(1)
    return torch.where(keep, current, best.float().argmax(-1))


def select_hypothesis(
    values: torch.Tensor,
    current: torch.Tensor,
    v_thr: float = 0.7,
    fallback: str = "highest",
    last_right: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The hypothesis that conditions the plan (Hypothetical Minds, Sec. 3.2; module docstring).

    Args:
        values: ``float32 [N, k]``.
        current: ``int64 [N]`` the hypothesis in use (kept on exact ties).
        v_thr: validation threshold (validated iff ``V >= v_thr``).
        fallback: one of :data:`FALLBACKS`, used where no hypothesis is validated.
        last_right: ``int64 [N, k]`` when each hypothesis was last right (a count of scored
            predictions; -1 never), needed by ``latest_correct``.

    Returns:
        ``(choice int64 [N], validated bool [N])``: ``validated`` says a validated hypothesis is used.

    Raises:
        ValueError: an unknown ``fallback``, or ``latest_correct`` without ``last_right``.
    """
    if fallback not in FALLBACKS:
        raise ValueError(f"fallback must be one of {', '.join(FALLBACKS)}, got {fallback!r}")
    validated = values.max(-1).values >= v_thr
    best = _argmax_keep(values, current)
    if fallback == "highest":
        other = best
    else:
        if last_right is None:
            raise ValueError("the latest_correct fallback needs last_right")
        latest = last_right == last_right.max(-1, keepdim=True).values
        other = _argmax_keep(values.masked_fill(~latest, float("-inf")), current)
    return torch.where(validated, best, other), validated


# -- the partner's realised concept ---------------------------------------------------------------
_NONE, _ONION, _TOMATO, _DISH, _SOUP = range(5)
# held-object code bits (partner_summary: bit c = object plane c after the static planes) per item
_HELD_BITS = {
    20: {_SOUP: (2,), _DISH: (3,), _ONION: (4,)},
    25: {_SOUP: (2, 3), _DISH: (5,), _ONION: (6,), _TOMATO: (7,)},
}
_STATIC_TERRAIN = {
    20: (Terrain.POT, Terrain.COUNTER, Terrain.ONION_DISPENSER, Terrain.DISH_DISPENSER, Terrain.SERVE),
    25: (Terrain.POT, Terrain.COUNTER, Terrain.ONION_DISPENSER, Terrain.TOMATO_DISPENSER,
         Terrain.DISH_DISPENSER, Terrain.SERVE),
}  # fmt: skip
_KIND_OF_CHANGE = {  # (held before, held after, faced terrain) -> interaction kind
    (_NONE, _ONION, Terrain.ONION_DISPENSER): Interaction.PICKUP_ONION_DISPENSER,
    (_NONE, _ONION, Terrain.COUNTER): Interaction.PICKUP_ONION_COUNTER,
    (_NONE, _TOMATO, Terrain.TOMATO_DISPENSER): Interaction.PICKUP_TOMATO_DISPENSER,
    (_NONE, _TOMATO, Terrain.COUNTER): Interaction.PICKUP_TOMATO_COUNTER,
    (_NONE, _DISH, Terrain.DISH_DISPENSER): Interaction.PICKUP_DISH_DISPENSER,
    (_NONE, _DISH, Terrain.COUNTER): Interaction.PICKUP_DISH_COUNTER,
    (_NONE, _SOUP, Terrain.COUNTER): Interaction.PICKUP_SOUP_COUNTER,
    (_DISH, _SOUP, Terrain.POT): Interaction.SOUP_PICKUP_POT,
    (_ONION, _NONE, Terrain.POT): Interaction.POT_ONION,
    (_ONION, _NONE, Terrain.COUNTER): Interaction.PUT_ONION_COUNTER,
    (_TOMATO, _NONE, Terrain.POT): Interaction.POT_TOMATO,
    (_TOMATO, _NONE, Terrain.COUNTER): Interaction.PUT_TOMATO_COUNTER,
    (_DISH, _NONE, Terrain.COUNTER): Interaction.PUT_DISH_COUNTER,
    (_SOUP, _NONE, Terrain.SERVE): Interaction.DELIVER,
    (_SOUP, _NONE, Terrain.COUNTER): Interaction.PUT_SOUP_COUNTER,
}
_KIND_TABLE = torch.zeros(5, 5, len(Terrain), dtype=torch.int64)
for (_a, _b, _tile), _kind in _KIND_OF_CHANGE.items():
    _KIND_TABLE[_a, _b, int(_tile)] = int(_kind)


def _held_item(code: torch.Tensor, num_channels: int) -> torch.Tensor:
    """Held item (0 none, 1 onion, 2 tomato, 3 dish, 4 soup) from a :func:`partner_summary` code."""
    item = torch.zeros_like(code)
    for it, bits in _HELD_BITS[num_channels].items():
        has = torch.zeros_like(code, dtype=torch.bool)
        for b in bits:
            has |= ((code >> b) & 1) == 1
        item = torch.where(has & (item == _NONE), it, item)
    return item


def _faced(obs: torch.Tensor, cell: torch.Tensor, ori: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The cell the partner faces (``int64 [N]``, -1 off the grid) and its terrain code (``int64 [N]``)."""
    N, H, W, C = obs.shape
    dx = torch.tensor([0, 0, 1, -1], device=obs.device)[ori]
    dy = torch.tensor([-1, 1, 0, 0], device=obs.device)[ori]
    x, y = cell % W + dx, cell // W + dy
    inside = (x >= 0) & (x < W) & (y >= 0) & (y < H)
    faced = torch.where(inside, y * W + x, -1)
    kinds = _STATIC_TERRAIN[C]
    static = obs.reshape(N, H * W, C)[:, :, NUM_PLAYER_CHANNELS : NUM_PLAYER_CHANNELS + len(kinds)]
    at = static.gather(1, faced.clamp(min=0).view(N, 1, 1).expand(N, 1, len(kinds))).squeeze(1)  # [N, S]
    codes = torch.tensor([int(k) for k in kinds], device=obs.device)
    terrain = torch.where(at.amax(-1) > 0, codes[at.long().argmax(-1)], int(Terrain.FLOOR))
    return faced, torch.where(inside, terrain, int(Terrain.FLOOR))


def partner_visible(obs: torch.Tensor) -> torch.Tensor:
    """``bool [N]``: the partner is on the ego's observation ``uint8 [N, H, W, C]`` (always in the full
    view; in a partial view only within the radius)."""
    return obs[..., 1].flatten(1).amax(1) > 0


def infer_partner_interaction(
    prev: tuple[torch.Tensor, ...], obs: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The partner's interaction between two consecutive observations (module docstring).

    Args:
        prev: :func:`~.agents.partner_summary` of o_{t-1}.
        obs: ``uint8 [N, H, W, C]`` o_t, the ego's observation.

    Returns:
        ``(kind int64 [N], cell int64 [N])``: the :class:`Interaction` of the partner's step t-1
        (``NONE`` when its held object did not change, it moved or turned, or the change is no
        interaction kind) and the tile it faced (-1 with ``NONE``), as ``Step.interactions`` and
        ``Step.interaction_cell`` report them for concepts.
    """
    (pc, po, ph), (cc, co, ch) = prev, partner_summary(obs)
    C = obs.shape[-1]
    faced, terrain = _faced(obs, cc, co)
    before, after = _held_item(ph, C), _held_item(ch, C)
    kind = _KIND_TABLE.to(obs.device)[before, after, terrain]
    kind = torch.where((pc == cc) & (po == co) & (faced >= 0), kind, int(Interaction.NONE))
    return kind, torch.where(kind != int(Interaction.NONE), faced, -1)


# -- the agent ------------------------------------------------------------------------------------
@register_agent("tbs-hypothesis")
class HypothesisAgent(_Composite):
    """Hypothesis scoring over TBS's cluster ToM models and BRs (Hypothetical Minds; module docstring).

    At step t: read the partner's concept of step t-1 from o_{t-1} and o_t; if it is known and is a
    concept, score every hypothesis' pending prediction (:func:`prediction_rewards`) and update the
    values (:func:`rescorla_wagner`); choose the hypothesis (:func:`select_hypothesis`); step the ToM
    models on o_t and refresh the pending predictions (``prediction``); act with the chosen
    hypothesis' best response. ``extras``: ``choice int64 [N]``, ``values float32 [N, k]``,
    ``validated bool [N]`` (a validated hypothesis acts).

    Args:
        brs: k best-response agents (cluster order).
        toms: k ToM models (``step(obs, h, starts) -> (probs [N, M], h)``), same order.
        alpha: Rescorla-Wagner learning rate (Hypothetical Minds: 0.3).
        c: intrinsic reward magnitude (Hypothetical Minds: 1).
        v_thr: validation threshold (Hypothetical Minds: 0.7).
        top_k: a prediction is right iff the realised concept is among its ``top_k`` most probable
            concepts (1: the arg-max; not Hypothetical Minds' ``top_k``, which counts LLM hypotheses kept).
        fallback: :data:`FALLBACKS`.
        prediction: :data:`PREDICTIONS`.
        layout, granularity: the concept set of the ToM models (default: the first model's spec).

    Raises:
        ValueError: mismatched lists, out-of-range options, or ToM models whose concept count differs
            from the concept set's.
    """

    def __init__(self, brs, toms, alpha: float = 0.3, c: float = 1.0, v_thr: float = 0.7, top_k: int = 1,
                 fallback: str = "highest", prediction: str = "held", layout: str | None = None,
                 granularity: str | None = None) -> None:  # fmt: skip
        super().__init__()
        if not brs or len(brs) != len(toms):
            raise ValueError(f"need k >= 1 best responses and k ToM models, got {len(brs)} and {len(toms)}")
        self.check_options(alpha, c, v_thr, top_k, fallback, prediction)
        self.brs, self.toms = nn.ModuleList(brs), nn.ModuleList(toms)
        self.alpha, self.c, self.v_thr, self.top_k = float(alpha), float(c), float(v_thr), int(top_k)
        self.fallback, self.prediction = fallback, prediction
        self.layout = layout or toms[0].spec["layout"]
        self.granularity = granularity or toms[0].spec["granularity"]
        self.concepts: ConceptSet = build_concept_set(self.layout, self.granularity)
        M = self.concepts.num_concepts
        sizes = {int(t.spec["num_concepts"]) for t in toms if "num_concepts" in t.spec}
        if sizes - {M}:
            raise ValueError(f"the ToM models predict {sorted(sizes)} concepts; {self.layout} at "
                             f"{self.granularity!r} has {M}")  # fmt: skip
        k = len(brs)
        self._init_packer()
        self._add_states("br", self.brs)
        self._add_states("tom", self.toms)
        for name in ("p_cell", "p_ori", "p_held", "p_seen", "scored"):
            self._packer.add(name, (), torch.int64)
        self._packer.add("values", (k,))
        self._packer.add("pending", (k, M))
        self._packer.add("last_right", (k,), torch.int64)

    @staticmethod
    def check_options(alpha: float = 0.3, c: float = 1.0, v_thr: float = 0.7, top_k: int = 1,
                      fallback: str = "highest", prediction: str = "held") -> None:  # fmt: skip
        """Validate the scoring options (see the class docstring).

        Raises:
            ValueError: ``alpha`` outside (0, 1], ``c <= 0``, ``top_k < 1``, or an unknown ``fallback``
                or ``prediction`` (the valid names listed).
        """
        if not 0 < alpha <= 1 or c <= 0 or int(top_k) < 1:
            raise ValueError(f"need 0 < alpha <= 1, c > 0 and top_k >= 1, got {alpha}, {c}, {top_k}")
        if fallback not in FALLBACKS:
            raise ValueError(f"fallback must be one of {', '.join(FALLBACKS)}, got {fallback!r}")
        if prediction not in PREDICTIONS:
            raise ValueError(f"prediction must be one of {', '.join(PREDICTIONS)}, got {prediction!r}")

    @property
    def spec(self) -> dict[str, Any]:
        """JSON-able description."""
        return {
            "brs": [_entry(a) for a in self.brs], "toms": [_entry(m) for m in self.toms],
            "alpha": self.alpha, "c": self.c, "v_thr": self.v_thr, "top_k": self.top_k,
            "fallback": self.fallback, "prediction": self.prediction, "layout": self.layout,
            "granularity": self.granularity,
        }  # fmt: skip

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> HypothesisAgent:
        """Rebuild (untrained) from :attr:`spec`; load weights with ``load_state_dict``."""
        options = {key: spec[key] for key in ("alpha", "c", "v_thr", "top_k", "fallback", "prediction",
                                              "layout", "granularity") if key in spec}  # fmt: skip
        return cls([_build(e) for e in spec["brs"]], [_build(e) for e in spec["toms"]], **options)

    def _groups(self):
        return (("br", self.brs), ("tom", self.toms))

    def _extra_initial(self, rows, device):
        return {"last_right": torch.full((rows, len(self.brs)), -1, dtype=torch.int64, device=device)}

    def _realised(self, s: dict, obs: torch.Tensor, t: torch.Tensor, starts: torch.Tensor):
        """The partner's concept of step t-1 (``int64 [N]``, -1 none) and whether it is known."""
        seen = partner_visible(obs)
        prev = (s["p_cell"], s["p_ori"], s["p_held"])
        known = seen & (s["p_seen"] > 0) & (t > 0) & ~starts
        if self.granularity == "action":
            concept = infer_partner_action(prev, partner_summary(obs))
            known &= concept >= 0
        else:
            kind, cell = infer_partner_interaction(prev, obs)
            concept = self.concepts.concept_index(kind, cell)
        s["p_cell"], s["p_ori"], s["p_held"] = partner_summary(obs)
        s["p_seen"] = seen.long()
        return concept, known

    @torch.no_grad()
    def act(self, obs, avail, state, starts, generator=None, deterministic=False) -> ActOutput:
        """One step for N rows (``obs [N, ...]``, ``avail bool [N, A]``, ``state [N, D]``,
        ``starts bool [N]``); the chosen hypothesis' best response acts."""
        s = self._packer.unpack(state)
        starts = starts.bool()
        N, k = obs.shape[0], len(self.brs)
        t = torch.where(starts, 0, s["t"])
        values = s["values"].masked_fill(starts[:, None], 0.0)
        last_right = s["last_right"].masked_fill(starts[:, None], -1)
        scored = torch.where(starts, 0, s["scored"])
        concept, known = self._realised(s, obs, t, starts)
        event = known & (concept >= 0)
        reward = prediction_rewards(s["pending"], concept, self.top_k, self.c)
        values = rescorla_wagner(values, reward, self.alpha, event)
        last_right = torch.where(event[:, None] & (reward > 0), scored[:, None], last_right)
        scored = scored + event.long()
        draw = torch.randint(k, (N,), generator=generator, device=obs.device)
        current = torch.where(t == 0, draw, s["choice"])
        choice, validated = select_hypothesis(values, current, self.v_thr, self.fallback, last_right)
        probs = []
        for i, tom in enumerate(self.toms):
            p, s[f"tom{i}"] = tom.step(obs, s[f"tom{i}"], starts)
            probs.append(p)
        refresh = (t == 0) | event
        if self.prediction == "latest" or self.granularity == "action":
            refresh = torch.ones_like(refresh)
        s["pending"] = torch.where(refresh[:, None, None], torch.stack(probs, 1).float(), s["pending"])
        acts, logps = self._act_all(self.brs, "br", s, obs, avail, starts, generator, deterministic)
        actions, logp = self._pick(acts, logps, choice)
        s["t"], s["choice"], s["values"] = t + 1, choice, values
        s["last_right"], s["scored"] = last_right, scored
        extras = {"choice": choice, "values": values, "validated": validated}
        return ActOutput(actions, logp, self._packer.pack(s), extras)
