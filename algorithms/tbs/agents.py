"""Composite agents of TBS and its test-time baselines (TBS paper, Sec. 3.3 and Sec. 4).

* ``tbs`` (:class:`TBSAgent`): k cluster best responses, k cluster ToM models and one global ToM
  model; at every step the ToM outputs enter the KL distances of Eq. 8 (or Eq. 9's window) and the
  best response of the closest cluster acts (:mod:`zsceval.algorithms.tbs.selection`).
* ``tbs-random`` (:class:`RandomSelectionAgent`): a uniformly drawn agent plays the whole episode.
* ``tbs-cbpr`` (:class:`CBPRAgent`): intra-episode Bayesian belief over partner types (clusters),
  each type's action model the mean of its members' action probabilities (docs/reference-protocol.md
  "TBS baselines"; the member mean is our choice where CBPR's adaptation in TBS is unstated).
* ``tbs-cem`` (:class:`CEMAgent`): cross-entropy of the partner's observed actions under every pool
  pair's partner-seat policy; the ego-seat agent of the closest pair acts.

Every composite is an ``nn.Module`` (sub-agents in ``nn.ModuleList`` so ``state_dict`` covers
them) with a JSON-able ``spec`` naming each sub-agent's registry class and spec, and it carries
everything it needs between steps in ONE flat ``float32 [rows, D]`` state (sub-agent states, ToM
GRU states, accumulators, current choice, step counter), so rows are independent games and
``starts`` resets rows.

**The partner's observation and action.** CBPR and CEM score the partner's actions, but an agent
only sees its own observation. The Overcooked observation is lossless and both players are on it
(:mod:`zsceval.envs.overcooked.observation`): :func:`partner_view` swaps the player planes (0 <-> 1,
2-5 <-> 6-9) and is exactly the env's observation of the other seat for two players. The partner's
action a_{t-1} is inferred from o_{t-1} and o_t (:func:`infer_partner_action`): a changed
position or orientation means the direction action equal to the new orientation (a move always
turns the player); otherwise a change of the object the partner holds means INTERACT (every
interaction that changes the world changes the held object, except COOK on multi-recipe layouts);
otherwise the action (STAY, an interaction that changed nothing, or a move blocked while already
facing that way) is unknown and the step is skipped in the likelihoods. The partner's available
actions are approximated from its view (:func:`partner_avail`: direction masks exact, INTERACT
masked in the guaranteed-idle cases visible without the layout's tables).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from zsceval.algorithms.tbs.selection import (
    CBPR_CLIP,
    accumulate_distances,
    argmax_random_ties,
    cbpr_integrate,
    cbpr_likelihood,
    cbpr_update,
    cem_scores,
    cluster_distances,
    kl_select,
    push_ring,
)
from zsceval.envs.overcooked.constants import Action
from zsceval.envs.overcooked.observation import NUM_PLAYER_CHANNELS
from zsceval.rl.agent import ActOutput, agent_class, agent_class_name, register_agent

__all__ = [
    "CBPRAgent",
    "CEMAgent",
    "RandomSelectionAgent",
    "TBSAgent",
    "action_probs",
    "infer_partner_action",
    "partner_avail",
    "partner_summary",
    "partner_visible",
    "partner_view",
]

NUM_ACTIONS = len(Action)
UNKNOWN = -1
# Static planes after the 10 player planes; the last multi-recipe plane is the urgency flag.
_LAYOUTS = {20: (5, 20), 25: (6, 24)}  # channels -> (number of static planes, end of object planes)


# -- partner observation and action ---------------------------------------------------------------
def _channel_layout(num_channels: int) -> tuple[int, int]:
    if num_channels not in _LAYOUTS:
        raise ValueError(
            f"not an Overcooked lossless observation: {num_channels} channels (expected 20 or 25)"
        )
    return _LAYOUTS[num_channels]


def partner_view(obs: torch.Tensor) -> torch.Tensor:
    """The partner's own observation built from the ego's (two-player Overcooked).

    Args:
        obs: ``uint8 [..., H, W, C]`` the ego's lossless observation (C = 20 or 25).

    Returns:
        ``uint8 [..., H, W, C]``: player planes swapped (0 <-> 1, 2-5 <-> 6-9); every other plane
        is the same for both perspectives.
    """
    C = obs.shape[-1]
    _channel_layout(C)
    perm = [1, 0, 6, 7, 8, 9, 2, 3, 4, 5, *range(NUM_PLAYER_CHANNELS, C)]
    return obs.index_select(-1, torch.tensor(perm, device=obs.device))


def partner_summary(obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Where the partner is, where it faces and what it holds, read from the ego's observation.

    Args:
        obs: ``uint8 [N, H, W, C]``.

    Returns:
        ``(cell int64 [N], ori int64 [N], held int64 [N])``: flat cell ``y * W + x``,
        orientation (0 N, 1 S, 2 E, 3 W), and a code of the object planes at the partner's cell
        (bit c set iff object plane c is non-zero there; 0 = empty-handed).
    """
    N, H, W, C = obs.shape
    num_static, end = _channel_layout(C)
    flat = obs.reshape(N, H * W, C)
    cell = flat[:, :, 1].argmax(1)
    at = flat.gather(1, cell.view(N, 1, 1).expand(N, 1, C)).squeeze(1).long()  # [N, C]
    ori = at[:, 6:10].argmax(1)
    start = NUM_PLAYER_CHANNELS + num_static
    bits = 2 ** torch.arange(end - start, device=obs.device)
    held = ((at[:, start:end] > 0).long() * bits).sum(1)
    return cell, ori, held


def partner_visible(obs: torch.Tensor) -> torch.Tensor:
    """``bool [N]``: the partner is in the ego's view (its location plane is non-zero somewhere;
    always true with full observability, false where a partial view, ``env.view_radius``, hides it).

    Args:
        obs: ``uint8 [N, H, W, C]``.
    """
    return obs[..., 1].flatten(1).amax(1) > 0


def infer_partner_action(prev: tuple[torch.Tensor, ...], cur: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """The partner's action between two consecutive observations (see the module docstring).

    Args:
        prev, cur: :func:`partner_summary` of o_{t-1} and o_t.

    Returns:
        ``int64 [N]``: the action (0-3 directions, 5 INTERACT), or -1 when it cannot be told
        (STAY, an idle interaction, a blocked move facing the same way; STAY is never returned).
    """
    (pc, po, ph), (cc, co, ch) = prev, cur
    moved = (pc != cc) | (po != co)
    interacted = ~moved & (ph != ch)
    out = torch.full_like(cc, UNKNOWN)
    out = torch.where(interacted, torch.full_like(cc, int(Action.INTERACT)), out)
    return torch.where(moved, co, out)


def partner_avail(obs: torch.Tensor) -> torch.Tensor:
    """Approximate available actions of the partner, from the ego's observation.

    A direction is masked iff the neighbouring cell that way is not floor and the partner already
    faces it (exact, as the env's mask). INTERACT is masked for the guaranteed-idle cases that the
    observation shows directly: facing floor, facing a counter empty-handed when it is empty or
    holding something when it is occupied, facing a dispenser while holding something; the env's
    finer pot and serving-window rules are not reproduced (INTERACT is then available). STAY is
    always available.

    Args:
        obs: ``uint8 [N, H, W, C]``.

    Returns:
        ``bool [N, 6]``.
    """
    N, H, W, C = obs.shape
    num_static, end = _channel_layout(C)
    s0 = NUM_PLAYER_CHANNELS
    pad = F.pad(obs.permute(0, 3, 1, 2), (1, 1, 1, 1)).permute(0, 2, 3, 1).reshape(N, -1, C)
    static = pad[:, :, s0 : s0 + num_static].long()  # [N, cells, S]; off-grid: nothing = not floor below
    nonfloor = (static.sum(-1) > 0) | (F.pad(torch.ones(N, H, W), (1, 1, 1, 1)) == 0).reshape(N, -1)
    cell, ori, held = partner_summary(obs)
    y, x = cell // W, cell % W
    avail = torch.ones(N, NUM_ACTIONS, dtype=torch.bool, device=obs.device)
    facing = torch.zeros_like(cell)
    for d, (dx, dy) in enumerate(((0, -1), (0, 1), (1, 0), (-1, 0))):
        nb = (y + 1 + dy) * (W + 2) + (x + 1 + dx)
        avail[:, d] = ~(nonfloor.gather(1, nb[:, None]).squeeze(1) & (ori == d))
        facing = torch.where(ori == d, nb, facing)
    f_static = static.gather(1, facing.view(N, 1, 1).expand(N, 1, num_static)).squeeze(1)  # [N, S]
    f_obj = pad[:, :, s0 + num_static : end].gather(
        1, facing.view(N, 1, 1).expand(N, 1, end - s0 - num_static)
    )
    occupied = f_obj.squeeze(1).amax(-1) > 0
    holding = held != 0
    counter = f_static[:, 1] > 0
    dispensers = f_static[:, 2:-1] if num_static == 6 else f_static[:, 2:4]  # onion (tomato) dish
    idle = ~nonfloor.gather(1, facing[:, None]).squeeze(1)
    idle |= counter & (holding == occupied)
    idle |= (dispensers.sum(-1) > 0) & holding
    avail[:, int(Action.INTERACT)] = ~idle
    return avail


def action_probs(
    logits: torch.Tensor, avail: torch.Tensor | None, model: str = "softmax", greedy_eps: float = 0.2
) -> torch.Tensor:
    """Action distribution of an action model from its (Q-value or policy) logits.

    Args:
        logits: ``float32 [N, A]``; avail ``bool [N, A]`` or None (all valid).
        model: ``"softmax"`` (a PPO policy) or ``"epsilon_greedy"`` (a greedy Q-network:
            ``(1 - eps) [a = argmax masked logits] + eps / |valid|`` on valid actions).
        greedy_eps: eps of the epsilon-greedy model (0.2: the pool's final exploration rate).

    Returns:
        ``float32 [N, A]`` rows summing to 1.

    Raises:
        ValueError: unknown ``model``.
    """
    if avail is None:
        avail = torch.ones_like(logits, dtype=torch.bool)
    masked = logits.float().masked_fill(~avail, -1e9)
    if model == "softmax":
        return masked.softmax(-1)
    if model == "epsilon_greedy":
        valid = avail.float()
        greedy = F.one_hot(masked.argmax(-1), logits.shape[-1]).float()
        return (1 - greedy_eps) * greedy + greedy_eps * valid / valid.sum(-1, keepdim=True)
    raise ValueError(f"action_model must be 'softmax' or 'epsilon_greedy', got {model!r}")


# -- state packing and sub-agents -----------------------------------------------------------------
def _entry(agent: Any) -> dict[str, Any]:
    return {"class": agent_class_name(agent), "spec": agent.spec}


def _build(entry: dict[str, Any]) -> Any:
    return agent_class(entry["class"]).from_spec(entry["spec"])


class _Packer:
    """Named fields of a flat ``float32 [rows, D]`` state (shapes per row, dtypes restored)."""

    def __init__(self) -> None:
        self.fields: list[tuple[str, tuple[int, ...], torch.dtype]] = []

    def add(self, name: str, shape: tuple[int, ...], dtype: torch.dtype = torch.float32) -> None:
        self.fields.append((name, tuple(shape), dtype))

    @property
    def width(self) -> int:
        return sum(math.prod(shape) for _, shape, _ in self.fields)

    def pack(self, parts: dict[str, torch.Tensor]) -> torch.Tensor:
        cols = [parts[name].reshape(parts[name].shape[0], -1).float() for name, _, _ in self.fields]
        return torch.cat(cols, 1)

    def unpack(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        out, i = {}, 0
        for name, shape, dtype in self.fields:
            n = math.prod(shape)
            out[name] = x[:, i : i + n].reshape(x.shape[0], *shape).to(dtype)
            i += n
        return out


class _Composite(nn.Module):
    """Shared machinery: sub-agent states in the packed state, stepping a group of agents."""

    def _init_packer(self) -> None:
        self._packer = _Packer()
        self._packer.add("t", (), torch.int64)
        self._packer.add("choice", (), torch.int64)

    def _add_states(self, prefix: str, agents) -> None:
        for i, a in enumerate(agents):
            s = a.initial_state(1, "cpu")
            self._packer.add(f"{prefix}{i}", tuple(s.shape[1:]), s.dtype)

    def _zero(self, rows: int, device) -> dict[str, torch.Tensor]:
        return {
            name: torch.zeros(rows, *shape, dtype=dtype, device=device)
            for name, shape, dtype in self._packer.fields
        }

    def initial_state(self, rows: int, device: torch.device | str) -> torch.Tensor:
        """Fresh state ``float32 [rows, D]`` (sub-agents' own initial states packed in)."""
        parts = self._zero(rows, device)
        for prefix, agents in self._groups():
            for i, a in enumerate(agents):
                parts[f"{prefix}{i}"] = a.initial_state(rows, device)
        parts.update(self._extra_initial(rows, device))
        return self._packer.pack(parts)

    def _groups(self):
        return ()

    def _extra_initial(self, rows: int, device) -> dict[str, torch.Tensor]:
        return {}

    def _act_all(self, agents, prefix, s, obs, avail, starts, generator, deterministic):
        """Step every agent of a group on all rows; returns ``(actions [K, N], log_probs [K, N])``."""
        acts, logps = [], []
        for i, a in enumerate(agents):
            out = a.act(
                obs, avail, s[f"{prefix}{i}"], starts, generator=generator, deterministic=deterministic
            )
            s[f"{prefix}{i}"] = out.state
            acts.append(out.actions)
            logps.append(out.log_probs)
        return torch.stack(acts), torch.stack(logps)

    @staticmethod
    def _pick(acts: torch.Tensor, logps: torch.Tensor, choice: torch.Tensor):
        idx = choice.view(1, -1)
        return acts.gather(0, idx).squeeze(0), logps.gather(0, idx).squeeze(0)

    def _partner_models(self, models, prefix, s, obs, starts, model, greedy_eps):
        """Action probabilities ``float32 [K, N, A]`` of each model for the partner's next action."""
        pv, pav = partner_view(obs), partner_avail(obs)
        probs = []
        for i, m in enumerate(models):
            logits, s[f"{prefix}{i}"] = m.logits(pv, s[f"{prefix}{i}"], starts)
            probs.append(action_probs(logits, pav, model, greedy_eps))
        return torch.stack(probs)


def _step_partner_actions(s: dict, obs: torch.Tensor, t: torch.Tensor, starts: torch.Tensor):
    """Infer a_{t-1} from the stored summary and ``obs``; store the new summary.

    Returns:
        ``(action int64 [N] clamped to >= 0, known bool [N])``.
    """
    cur = partner_summary(obs)
    seen = partner_visible(obs)
    a = infer_partner_action((s["p_cell"], s["p_ori"], s["p_held"]), cur)
    # a partner that leaves or enters a partial view seems to jump: nothing is inferred unless it is
    # seen in both observations (the stored cell is -1 where it was not seen)
    known = (a >= 0) & (t > 0) & ~starts & seen & (s["p_cell"] >= 0)
    s["p_cell"] = torch.where(seen, cur[0], -1)
    s["p_ori"], s["p_held"] = cur[1], cur[2]
    return a.clamp(min=0), known


def _add_partner_fields(packer: _Packer, num_models: int) -> None:
    packer.add("p_cell", (), torch.int64)
    packer.add("p_ori", (), torch.int64)
    packer.add("p_held", (), torch.int64)
    packer.add("prev_probs", (num_models, NUM_ACTIONS))


# -- TBS ------------------------------------------------------------------------------------------
@register_agent("tbs")
class TBSAgent(_Composite):
    """TBS's online adaptation (TBS paper, Sec. 3.3, Eq. 8; Eq. 9 with ``window``).

    Args:
        brs: k best-response agents (cluster order).
        cluster_toms: k ToM models (``step(obs, h, starts) -> (probs [N, M], h)``), same order.
        global_tom: the global ToM model.
        window: Eq. 9's w (the w most recent steps), or None for the whole episode (Eq. 8).
        reselect_every: steps per selection (App. A.2; 1 = every step).
        first_step_random: random best response at t = 0 (the paper), KL rule from t = 1.
        kl_eps: probability clamp of the Bernoulli KL.

    ``act`` exposes ``extras["choice"] int64 [N]`` (the acting best response) and
    ``extras["distances"] float32 [N, k]`` (the D_i used at this step).

    Raises:
        ValueError: no best response, ``len(brs) != len(cluster_toms)``, window < 1 or
            reselect_every < 1.
    """

    def __init__(self, brs, cluster_toms, global_tom, window: int | None = None, reselect_every: int = 1,
                 first_step_random: bool = True, kl_eps: float = 1e-6) -> None:  # fmt: skip
        super().__init__()
        if not brs or len(brs) != len(cluster_toms):
            raise ValueError(
                f"need k >= 1 best responses and k ToM models, got {len(brs)} and {len(cluster_toms)}"
            )
        if window is not None and int(window) < 1:
            raise ValueError(f"window must be >= 1 or None, got {window}")
        if int(reselect_every) < 1:
            raise ValueError(f"reselect_every must be >= 1, got {reselect_every}")
        self.brs = nn.ModuleList(brs)
        self.toms = nn.ModuleList(cluster_toms)
        self.global_tom = global_tom
        self.window = None if window is None else int(window)
        self.reselect_every = int(reselect_every)
        self.first_step_random = bool(first_step_random)
        self.kl_eps = float(kl_eps)
        k = len(brs)
        self._init_packer()
        self._add_states("br", self.brs)
        self._add_states("tom", self.toms)
        self._add_states("gtom", [self.global_tom])
        self._packer.add("total", (k,))
        self._packer.add("ring", (self.window or 0, k))

    @property
    def spec(self) -> dict[str, Any]:
        """JSON-able description (sub-agents by registry class and spec, and the options)."""
        return {
            "brs": [_entry(a) for a in self.brs],
            "cluster_toms": [_entry(a) for a in self.toms],
            "global_tom": _entry(self.global_tom),
            "window": self.window,
            "reselect_every": self.reselect_every,
            "first_step_random": self.first_step_random,
            "kl_eps": self.kl_eps,
        }

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> TBSAgent:
        """Rebuild (untrained) from :attr:`spec`; load weights with ``load_state_dict``."""
        return cls(
            [_build(e) for e in spec["brs"]],
            [_build(e) for e in spec["cluster_toms"]],
            _build(spec["global_tom"]),
            window=spec.get("window"),
            reselect_every=spec.get("reselect_every", 1),
            first_step_random=spec.get("first_step_random", True),
            kl_eps=spec.get("kl_eps", 1e-6),
        )

    def _groups(self):
        return (("br", self.brs), ("tom", self.toms), ("gtom", [self.global_tom]))

    @torch.no_grad()
    def act(self, obs, avail, state, starts, generator=None, deterministic=False) -> ActOutput:
        """One step for N rows (``obs [N, ...]``, ``avail bool [N, A]``, ``state [N, D]``,
        ``starts bool [N]``); the chosen best response's action and log-probability."""
        s = self._packer.unpack(state)
        starts = starts.bool()
        N, k = obs.shape[0], len(self.brs)
        t = torch.where(starts, 0, s["t"])
        c_g, s["gtom0"] = self.global_tom.step(obs, s["gtom0"], starts)
        c = []
        for i, tom in enumerate(self.toms):
            p, s[f"tom{i}"] = tom.step(obs, s[f"tom{i}"], starts)
            c.append(p)
        d = cluster_distances(torch.stack(c, 1), c_g, self.kl_eps)
        total = s["total"].masked_fill(starts[:, None], 0)
        ring = s["ring"].masked_fill(starts[:, None, None], 0)
        s["total"], s["ring"], D = accumulate_distances(total, ring, d, t, self.window)
        random_choice = torch.randint(k, (N,), generator=generator, device=obs.device)
        choice = kl_select(D, t, s["choice"], random_choice, self.reselect_every, self.first_step_random)
        acts, logps = self._act_all(self.brs, "br", s, obs, avail, starts, generator, deterministic)
        actions, logp = self._pick(acts, logps, choice)
        s["t"], s["choice"] = t + 1, choice
        return ActOutput(actions, logp, self._packer.pack(s), {"choice": choice, "distances": D})


# -- Random Selection -----------------------------------------------------------------------------
@register_agent("tbs-random")
class RandomSelectionAgent(_Composite):
    """Random Selection (TBS paper, Sec. 4; docs/reference-protocol.md "TBS baselines"): at each episode start
    a uniformly drawn agent (per row, from ``generator``) plays the whole episode.

    Only the drawn agent acts on a row (each agent is stepped on its own rows), so a pool of any size
    costs one forward pass per row. ``extras["choice"] int64 [N]``.

    Args:
        agents: the candidates (e.g. the training pool's ego-seat agents).
    """

    def __init__(self, agents) -> None:
        super().__init__()
        if not agents:
            raise ValueError("need at least one agent")
        self.agents = nn.ModuleList(agents)
        self._init_packer()
        self._add_states("a", self.agents)

    @property
    def spec(self) -> dict[str, Any]:
        """JSON-able description."""
        return {"agents": [_entry(a) for a in self.agents]}

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> RandomSelectionAgent:
        """Rebuild (untrained) from :attr:`spec`."""
        return cls([_build(e) for e in spec["agents"]])

    def _groups(self):
        return (("a", self.agents),)

    @torch.no_grad()
    def act(self, obs, avail, state, starts, generator=None, deterministic=False) -> ActOutput:
        """One step for N rows; rows draw a new agent where ``starts``."""
        s = self._packer.unpack(state)
        starts = starts.bool()
        N = obs.shape[0]
        draw = torch.randint(len(self.agents), (N,), generator=generator, device=obs.device)
        choice = torch.where(starts, draw, s["choice"])
        actions = torch.zeros(N, dtype=torch.int64, device=obs.device)
        logp = torch.zeros(N, device=obs.device)
        for i, a in enumerate(self.agents):
            rows = (choice == i).nonzero().squeeze(1)
            if rows.numel() == 0:
                continue
            h = s[f"a{i}"]
            out = a.act(obs[rows], None if avail is None else avail[rows], h[rows], starts[rows],
                        generator=generator, deterministic=deterministic)  # fmt: skip
            actions[rows], logp[rows] = out.actions, out.log_probs.float()
            h = h.clone()
            h[rows] = out.state.to(h.dtype)
            s[f"a{i}"] = h
        s["t"], s["choice"] = torch.where(starts, 0, s["t"]) + 1, choice
        return ActOutput(actions, logp, self._packer.pack(s), {"choice": choice})


# -- CBPR -----------------------------------------------------------------------------------------
@register_agent("tbs-cbpr")
class CBPRAgent(_Composite):
    """CBPR's intra-episode Bayesian selection over clusters (docs/reference-protocol.md "TBS baselines").

    At step t: infer the partner's a_{t-1} (:func:`infer_partner_action`); if known, push its
    log-probability under every type (computed at t-1 from the partner's view) into the queue of
    the last ``queue_len`` known pairs and update ``xi`` (:func:`~.selection.cbpr_update`;
    steps with an unknown action neither enter the queue nor update ``xi``); ``zeta = rho^t beta +
    (1 - rho^t) xi`` with beta uniform; act with the best response of ``argmax zeta`` (exact ties,
    e.g. at t = 0, broken uniformly at random); ``xi <- clip(zeta)``. ``extras["choice"]`` and
    ``extras["belief"] float32 [N, k]`` (zeta).

    Args:
        brs: k best responses (one per cluster / type).
        members: k lists of partner-seat action models (agents with ``logits(obs, h, starts)``);
            a type's action probabilities are the mean over its members.
        rho: inter-episode belief weight decay (CBPR default 0.1).
        queue_len: L, the number of (obs, action) pairs in the likelihood (CBPR: 20).
        eps: smoothing of the normalizations (CBPR: 1e-7).
        action_model: ``"softmax"`` or ``"epsilon_greedy"`` (:func:`action_probs`).
        greedy_eps: eps of the epsilon-greedy action model.
    """

    def __init__(self, brs, members, rho: float = 0.1, queue_len: int = 20, eps: float = 1e-7,
                 action_model: str = "softmax", greedy_eps: float = 0.2) -> None:  # fmt: skip
        super().__init__()
        if not brs or len(brs) != len(members) or any(len(m) == 0 for m in members):
            raise ValueError("need k >= 1 best responses and k non-empty member lists")
        action_probs(torch.zeros(1, NUM_ACTIONS), None, action_model)  # validates the name
        self.brs = nn.ModuleList(brs)
        self.members = nn.ModuleList([m for group in members for m in group])
        self.sizes = [len(g) for g in members]
        self.rho, self.queue_len, self.eps = float(rho), int(queue_len), float(eps)
        self.action_model, self.greedy_eps = action_model, float(greedy_eps)
        k = len(brs)
        self._init_packer()
        self._add_states("br", self.brs)
        self._add_states("m", self.members)
        _add_partner_fields(self._packer, k)
        self._packer.add("xi", (k,))
        self._packer.add("queue", (self.queue_len, k))
        self._packer.add("queued", (), torch.int64)

    @property
    def spec(self) -> dict[str, Any]:
        """JSON-able description."""
        groups, i = [], 0
        for n in self.sizes:
            groups.append([_entry(m) for m in self.members[i : i + n]])
            i += n
        return {
            "brs": [_entry(a) for a in self.brs], "members": groups, "rho": self.rho,
            "queue_len": self.queue_len, "eps": self.eps, "action_model": self.action_model,
            "greedy_eps": self.greedy_eps,
        }  # fmt: skip

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> CBPRAgent:
        """Rebuild (untrained) from :attr:`spec`."""
        return cls(
            [_build(e) for e in spec["brs"]], [[_build(e) for e in g] for g in spec["members"]],
            rho=spec["rho"], queue_len=spec["queue_len"], eps=spec["eps"],
            action_model=spec["action_model"], greedy_eps=spec["greedy_eps"],
        )  # fmt: skip

    def _groups(self):
        return (("br", self.brs), ("m", self.members))

    def _extra_initial(self, rows, device):
        k = len(self.brs)
        return {"xi": torch.full((rows, k), 1.0 / k, device=device)}

    @torch.no_grad()
    def act(self, obs, avail, state, starts, generator=None, deterministic=False) -> ActOutput:
        """One step for N rows (see the class docstring)."""
        s = self._packer.unpack(state)
        starts = starts.bool()
        k = len(self.brs)
        t = torch.where(starts, 0, s["t"])
        a_prev, known = _step_partner_actions(s, obs, t, starts)
        uniform = torch.full_like(s["xi"], 1.0 / k)
        xi = torch.where(starts[:, None], uniform, s["xi"])
        queue = s["queue"].masked_fill(starts[:, None, None], 0)
        queued = torch.where(starts, 0, s["queued"])
        p_prev = s["prev_probs"].gather(2, a_prev.view(-1, 1, 1).expand(-1, k, 1)).squeeze(2)
        queue = push_ring(queue, p_prev.clamp(min=1e-30).log(), queued, known)
        s["queued"] = queued + known.long()
        updated = cbpr_update(xi, cbpr_likelihood(queue, self.eps), self.eps)
        xi = torch.where(known[:, None], updated, xi)
        zeta = cbpr_integrate(xi, uniform, t, self.rho)
        choice = argmax_random_ties(zeta, generator)
        s["xi"], s["queue"] = zeta.clamp(*CBPR_CLIP), queue
        probs = self._partner_models(self.members, "m", s, obs, starts, self.action_model, self.greedy_eps)
        s["prev_probs"] = torch.stack([g.mean(0) for g in probs.split(self.sizes)], 1)  # [N, k, A]
        acts, logps = self._act_all(self.brs, "br", s, obs, avail, starts, generator, deterministic)
        actions, logp = self._pick(acts, logps, choice)
        s["t"], s["choice"] = t + 1, choice
        return ActOutput(actions, logp, self._packer.pack(s), {"choice": choice, "belief": zeta})


# -- CEM ------------------------------------------------------------------------------------------
@register_agent("tbs-cem")
class CEMAgent(_Composite):
    """Cross-entropy selection over pool pairs (docs/reference-protocol.md "TBS baselines", "CEM", inferred).

    At step t: infer the partner's a_{t-1}; if known, add ``-log pi_j(a_{t-1} | o^p_{t-1})`` for every
    pair j (all observed steps, or the ``window`` most recent observed ones); act with the
    ego-seat agent of ``argmin_j`` mean cross entropy (first index on ties). Before any observed
    partner action (t = 0 and while unknown) the choice drawn at the episode start is kept.
    ``extras["choice"]`` and ``extras["cross_entropy"] float32 [N, J]`` (inf before evidence).

    Args:
        egos: J ego-seat agents (what acts); partners: J partner-seat action models (pair order).
        window: number of most recent observed partner actions, or None (all).
        action_model, greedy_eps: as :class:`CBPRAgent`.
    """

    def __init__(self, egos, partners, window: int | None = None, action_model: str = "softmax",
                 greedy_eps: float = 0.2) -> None:  # fmt: skip
        super().__init__()
        if not egos or len(egos) != len(partners):
            raise ValueError(
                f"need J >= 1 ego agents and J partner models, got {len(egos)} and {len(partners)}"
            )
        if window is not None and int(window) < 1:
            raise ValueError(f"window must be >= 1 or None, got {window}")
        action_probs(torch.zeros(1, NUM_ACTIONS), None, action_model)
        self.egos, self.partners = nn.ModuleList(egos), nn.ModuleList(partners)
        self.window = None if window is None else int(window)
        self.action_model, self.greedy_eps = action_model, float(greedy_eps)
        J = len(egos)
        self._init_packer()
        self._add_states("e", self.egos)
        self._add_states("p", self.partners)
        _add_partner_fields(self._packer, J)
        self._packer.add("total", (J,))
        self._packer.add("ring", (self.window or 0, J))
        self._packer.add("count", (), torch.int64)

    @property
    def spec(self) -> dict[str, Any]:
        """JSON-able description."""
        return {
            "egos": [_entry(a) for a in self.egos], "partners": [_entry(a) for a in self.partners],
            "window": self.window, "action_model": self.action_model, "greedy_eps": self.greedy_eps,
        }  # fmt: skip

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> CEMAgent:
        """Rebuild (untrained) from :attr:`spec`."""
        return cls(
            [_build(e) for e in spec["egos"]], [_build(e) for e in spec["partners"]],
            window=spec.get("window"), action_model=spec["action_model"], greedy_eps=spec["greedy_eps"],
        )  # fmt: skip

    def _groups(self):
        return (("e", self.egos), ("p", self.partners))

    @torch.no_grad()
    def act(self, obs, avail, state, starts, generator=None, deterministic=False) -> ActOutput:
        """One step for N rows (see the class docstring)."""
        s = self._packer.unpack(state)
        starts = starts.bool()
        N, J = obs.shape[0], len(self.egos)
        t = torch.where(starts, 0, s["t"])
        a_prev, known = _step_partner_actions(s, obs, t, starts)
        nll = (
            -s["prev_probs"]
            .gather(2, a_prev.view(-1, 1, 1).expand(-1, J, 1))
            .squeeze(2)
            .clamp(min=1e-30)
            .log()
        )
        count = torch.where(starts, 0, s["count"])
        total = s["total"].masked_fill(starts[:, None], 0)
        if self.window is None:
            total = total + torch.where(known[:, None], nll, 0)
            n_used = count + known.long()
        else:
            ring = push_ring(s["ring"].masked_fill(starts[:, None, None], 0), nll, count, known)
            s["ring"], total = ring, ring.sum(1)
            n_used = (count + known.long()).clamp(max=self.window)
        s["total"], s["count"] = total, count + known.long()
        ce = cem_scores(total, n_used)
        draw = torch.randint(J, (N,), generator=generator, device=obs.device)
        choice = torch.where(t == 0, draw, s["choice"])
        choice = torch.where(n_used > 0, ce.argmin(-1), choice)
        probs = self._partner_models(self.partners, "p", s, obs, starts, self.action_model, self.greedy_eps)
        s["prev_probs"] = probs.transpose(0, 1)  # [N, J, A]
        acts, logps = self._act_all(self.egos, "e", s, obs, avail, starts, generator, deterministic)
        actions, logp = self._pick(acts, logps, choice)
        s["t"], s["choice"] = t + 1, choice
        return ActOutput(actions, logp, self._packer.pack(s), {"choice": choice, "cross_entropy": ce})
