"""TBS Theory-of-Mind models: predict the partner's next concept from the ego's observations.

The TBS paper, Sec. 2.3 / 3.3 and App. D.3. A ToM model is a recurrent network that reads the ego's
observation history ``o_1..o_t`` and outputs M Bernoulli probabilities ``c_hat_t``, one per
concept (:mod:`zsceval.algorithms.tbs.concepts`): the partner's next high-level interaction. It is trained
with the binary cross-entropy of Eq. 4 / Eq. 10,
``L = mean_t sum_j -[c_t[j] log c_hat_t[j] + (1 - c_t[j]) log(1 - c_hat_t[j])]``, on trajectories
of partners with best responses: a cluster model ToM_Ci on cluster i's partners with BR_i, the
global model ("3rd observer") on all of them (Eq. 11).

Architecture (ours; the paper says "recurrent networks" only): the uint8 observation is flattened
and cast to float, an MLP of two ReLU layers of ``hidden_size`` encodes it, a GRU cell of
``hidden_size`` carries the history and a linear head gives M logits.

:func:`collect_tom_data` plays full episodes of an ego with a partner (one agent, or a policy pool
with one member per game) through :class:`~zsceval.rl.runner.EpisodeRunner`, the ego in seat 0 in
even games and seat 1 in odd games, and returns the ego's observations with the partner's
concept labels. :func:`train_tom` fits a model to them with chunked truncated BPTT and Adam.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from zsceval.algorithms.tbs.concepts import ConceptSet, next_interaction_labels
from zsceval.rl.agent import register_agent
from zsceval.rl.runner import EpisodeRunner
from zsceval.rl.seating import Arm

__all__ = [
    "ToMData",
    "ToMModel",
    "collect_tom_data",
    "label_entropy",
    "prior_logits",
    "tom_loss",
    "train_tom",
]


@register_agent("tbs-tom")
class ToMModel(nn.Module):
    """Recurrent concept predictor (module docstring). Registered as agent class ``tbs-tom``.

    Args:
        spec: ``{"obs_shape": [H, W, C], "num_concepts": M, "hidden_size": h, "granularity": str,
            "layout": str}`` (JSON-able; saved in checkpoints).

    Raises:
        ValueError: a missing spec key, or non-positive sizes.
    """

    def __init__(self, spec: dict[str, Any]) -> None:
        super().__init__()
        for key in ("obs_shape", "num_concepts", "hidden_size", "granularity", "layout"):
            if key not in spec:
                raise ValueError(f"ToM spec lacks {key!r}; it has {sorted(spec)}")
        self.spec = {**spec, "obs_shape": [int(d) for d in spec["obs_shape"]]}
        hidden, m = int(spec["hidden_size"]), int(spec["num_concepts"])
        if hidden < 1 or m < 1:
            raise ValueError(f"hidden_size and num_concepts must be >= 1, got {hidden}, {m}")
        inputs = math.prod(self.spec["obs_shape"])
        self.encoder = nn.Sequential(
            nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
        )
        self.gru = nn.GRUCell(hidden, hidden)
        self.head = nn.Linear(hidden, m)

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> ToMModel:
        """An untrained model of ``spec`` (e.g. from checkpoint metadata)."""
        return cls(spec)

    @classmethod
    def for_env(cls, env, concepts: ConceptSet, hidden_size: int = 64) -> ToMModel:
        """A model for ``env``'s observations and the concept set ``concepts``."""
        return cls(
            {
                "obs_shape": list(env.obs_shape),
                "num_concepts": concepts.num_concepts,
                "hidden_size": int(hidden_size),
                "granularity": concepts.granularity,
                "layout": concepts.layout,
            }
        )

    @property
    def hidden_size(self) -> int:
        """Width of the GRU state."""
        return int(self.spec["hidden_size"])

    @property
    def num_concepts(self) -> int:
        """M."""
        return int(self.spec["num_concepts"])

    def initial_state(self, rows: int, device: torch.device | str) -> torch.Tensor:
        """Zero state ``float32 [rows, hidden]``."""
        return torch.zeros(rows, self.hidden_size, device=device)

    def _cell(
        self, obs: torch.Tensor, h: torch.Tensor, starts: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One step: ``(logits [N, M], h [N, hidden])``; the state is zeroed where ``starts``."""
        x = self.encoder(obs.reshape(obs.shape[0], -1).float())
        h = self.gru(x, h * (~starts).unsqueeze(-1).to(h.dtype))
        return self.head(h), h

    @torch.no_grad()
    def step(
        self, obs: torch.Tensor, h: torch.Tensor, starts: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Concept probabilities of N rows after one more observation (no gradients).

        Args:
            obs: ``uint8 [N, *obs_shape]``.
            h: ``float32 [N, hidden]`` state before this step.
            starts: ``bool [N]`` rows whose episode starts here (state zeroed first).

        Returns:
            ``(probs float32 [N, M] in (0, 1), h float32 [N, hidden])``.
        """
        logits, h = self._cell(obs, h, starts)
        return torch.sigmoid(logits), h

    def sequence(
        self, obs: torch.Tensor, h0: torch.Tensor, starts: torch.Tensor, return_state: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Logits over a sequence, with gradients (training).

        Args:
            obs: ``uint8 [L, N, *obs_shape]``.
            h0: ``float32 [N, hidden]`` state before step 0.
            starts: ``bool [L, N]`` state zeroed before these steps.
            return_state: also return the state after step L-1.

        Returns:
            ``logits float32 [L, N, M]`` (and ``h float32 [N, hidden]``).
        """
        h, out = h0, []
        for t in range(obs.shape[0]):
            logits, h = self._cell(obs[t], h, starts[t])
            out.append(logits)
        logits = torch.stack(out)
        return (logits, h) if return_state else logits


# -- loss --------------------------------------------------------------------------------------------
def tom_loss(logits: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """BCE of Eq. 4 / Eq. 10: summed over the M concepts, averaged over the (unmasked) steps.

    Args:
        logits: ``float32 [..., M]``; labels: ``float32 [..., M]`` in {0, 1};
        mask: ``bool [...]`` steps that count (None: all).

    Returns:
        Scalar loss in nats per step.
    """
    per_step = F.binary_cross_entropy_with_logits(logits, labels, reduction="none").sum(-1)
    if mask is None:
        return per_step.mean()
    m = mask.to(per_step.dtype)
    return (per_step * m).sum() / m.sum().clamp(min=1.0)


def label_entropy(labels: torch.Tensor, mask: torch.Tensor | None = None) -> float:
    """Loss of the best constant predictor, ``sum_j H(p_j)`` with ``p_j`` concept j's frequency.

    The baseline a ToM model must beat to have learned anything from the observations (nats per
    step; ``labels [..., M]``, ``mask bool [...]``).
    """
    p = _frequencies(labels, mask).clamp(1e-12, 1 - 1e-12)
    return float(-(p * p.log() + (1 - p) * (1 - p).log()).sum())


def _frequencies(labels: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Each concept's frequency over the (unmasked) steps, ``float64 [M]`` (0.5 where no step counts)."""
    flat = labels.reshape(-1, labels.shape[-1]).double()
    if mask is not None:
        flat = flat[mask.reshape(-1)]
    return flat.mean(0) if flat.shape[0] else flat.new_full(flat.shape[1:], 0.5)


def prior_logits(labels: torch.Tensor, mask: torch.Tensor | None = None, eps: float = 1e-4) -> torch.Tensor:
    """Log-odds of each concept's frequency, ``log(p_j / (1 - p_j))``: the logits of the constant
    predictor whose loss is :func:`label_entropy`.

    Args:
        labels: ``float [..., M]`` in {0, 1}; mask: ``bool [...]`` steps that count (None: all).
        eps: ``p_j`` is clipped to ``[eps, 1 - eps]`` (a concept never or always seen gets
            ``-+log((1 - eps) / eps)``, about 9.2, instead of an infinite logit).

    Returns:
        ``float32 [M]``.
    """
    p = _frequencies(labels, mask).clamp(eps, 1 - eps)
    return (p / (1 - p)).log().float()


# -- training ------------------------------------------------------------------------------------------
@torch.no_grad()
def _chunk_states(model: ToMModel, obs: torch.Tensor, starts: torch.Tensor, L: int, device) -> torch.Tensor:
    """State before every chunk start, ``[num_chunks, B, hidden]``, from one pass of the model."""
    T, B = starts.shape
    h = model.initial_state(B, device)
    states = []
    for t0 in range(0, T, L):
        states.append(h)
        _, h = model.sequence(
            obs[t0 : t0 + L].to(device), h, starts[t0 : t0 + L].to(device), return_state=True
        )
    return torch.stack(states)


def train_tom(
    model: ToMModel,
    obs: torch.Tensor,
    starts: torch.Tensor,
    labels: torch.Tensor,
    epochs: int,
    lr: float = 1e-3,
    chunk_length: int = 20,
    minibatch: int = 64,
    generator: torch.Generator | None = None,
    mask: torch.Tensor | None = None,
    max_grad_norm: float = 10.0,
    holdout: float = 0.0,
    prior_bias: bool = True,
) -> dict[str, list[float]]:
    """Fit ``model`` to next-concept labels (Eq. 4 / Eq. 10) with chunked truncated BPTT and Adam.

    The T steps of each of the B columns are cut into chunks of ``chunk_length`` steps (the last
    may be shorter). A chunk starts from the state the current model reaches at that step: at the
    start of every epoch one gradient-free pass over the whole data stores the state before each
    chunk (the "stored states" of recurrent PPO); inside a chunk the state is zeroed at episode
    starts. Gradients flow within a chunk only. Each epoch shuffles the ``(chunk, column)``
    sequences with ``generator`` and takes one Adam step per ``minibatch`` sequences.

    Early stopping (``holdout > 0``): a random ``holdout`` fraction of the B columns (at least one,
    and at least one left to train on; drawn with ``generator``) is not trained on. Before training,
    after every ``max(1, epochs // 50)`` epochs and after the last, the model's loss on those
    columns (whole sequences from a zero state) is measured, and the model ends with the parameters
    of the lowest one. A cluster model sees a single cluster's episodes, and with many passes it
    fits them far below the global model's loss; what Eq. 8 needs is how it predicts episodes it
    has not seen.

    Prior bias (``prior_bias``, ours; the paper does not say how its models start): before the
    first epoch the head's bias is set to the log-odds of each concept's frequency in the training
    steps (:func:`prior_logits`), the constant predictor of :func:`label_entropy`, so the model
    starts near that baseline and its gradients carry what the observations add. From PyTorch's
    default bias (small, near zero) the first epoch's gradients drive every logit towards the rare
    concepts' strongly negative log-odds through the whole network; in some runs that saturated
    the GRU's candidate state (tanh at +-1, a state constant over every step), no gradient reached
    the inputs again, and the model stayed at the baseline for all its epochs (``docs/results.md``,
    the larger-budget TBS chain: 3.56 against a baseline of 3.54 nats per step; with the prior
    bias 0.14).

    Args:
        model: the ToM model (trained in place, on its device).
        obs: ``uint8 [T, B, *obs_shape]`` the ego's observations (any device).
        starts: ``bool [T, B]`` episode starts (state zeroed before the step).
        labels: ``float32 [T, B, M]`` next-concept labels (:func:`next_interaction_labels`).
        epochs: passes over the data.
        lr: Adam learning rate.
        chunk_length: BPTT chunk length L in steps.
        minibatch: sequences per gradient step.
        generator: CPU torch generator for the shuffles (None: the global one).
        mask: ``bool [T, B]`` steps that count in the loss (e.g. ``known`` labels); None: all.
        max_grad_norm: gradient-norm clip.
        holdout: fraction of the columns kept out of training for early stopping (0: none).
        prior_bias: start the head's bias at :func:`prior_logits` of the training steps (False:
            leave the model's bias as it is).

    Returns:
        ``{"loss": [mean training loss per epoch], "baseline": [label_entropy of the training
        data]}`` in nats per step; with ``holdout`` also ``"val_epoch"`` (epochs after which the
        held-out loss was measured, 0 = before training), ``"val_loss"`` (that loss) and
        ``"best_epoch"`` (``[epoch whose parameters the model keeps]``).

    Raises:
        ValueError: mismatched shapes, non-positive sizes, or ``holdout`` outside [0, 1).
    """
    T, B = starts.shape
    if obs.shape[:2] != (T, B) or labels.shape[:2] != (T, B) or labels.shape[-1] != model.num_concepts:
        raise ValueError(
            f"obs {list(obs.shape)}, starts {list(starts.shape)} and labels {list(labels.shape)} must share "
            f"[T, B] and labels need M = {model.num_concepts} concepts"
        )
    if epochs < 0 or chunk_length < 1 or minibatch < 1:
        raise ValueError(
            f"need epochs >= 0, chunk_length >= 1, minibatch >= 1; got {epochs}, {chunk_length}, {minibatch}"
        )
    if not 0.0 <= holdout < 1.0:
        raise ValueError(f"holdout must be in [0, 1), got {holdout}")
    device = next(model.parameters()).device
    held = None
    if holdout > 0:
        val_cols, train_cols = _split_columns(B, holdout, generator)
        val_mask = None if mask is None else mask[:, val_cols]
        held = _HeldOut(model, obs[:, val_cols], starts[:, val_cols], labels[:, val_cols], val_mask, device)
        obs, starts, labels = obs[:, train_cols], starts[:, train_cols], labels[:, train_cols]
        mask = None if mask is None else mask[:, train_cols]
        T, B = starts.shape
    L = int(chunk_length)
    valid = torch.ones(T, B, dtype=torch.bool) if mask is None else mask.cpu().bool()
    if prior_bias:
        with torch.no_grad():
            model.head.bias.copy_(prior_logits(labels.cpu(), valid).to(model.head.bias))
    obs_p, starts_p, data = _chunked(obs, starts, labels, valid, L)
    C = obs_p.shape[0] // L
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    curve: list[float] = []
    every = max(1, int(epochs) // 50)
    model.train()
    if held is not None:
        held.measure(0)
    for epoch in range(1, int(epochs) + 1):
        h0 = _chunk_states(model, obs_p, starts_p, L, device).reshape(C * B, -1)
        curve.append(_tom_epoch(model, optimizer, data, h0, minibatch, max_grad_norm, generator))
        if held is not None and (epoch % every == 0 or epoch == int(epochs)):
            held.measure(epoch)
    model.eval()
    out: dict[str, list] = {"loss": curve, "baseline": [label_entropy(labels.cpu(), valid)]}
    if held is not None:
        out.update(held.keep_best())
    return out


def _chunked(obs, starts, labels, valid, L: int):
    """``(obs, starts)`` on the CPU padded to a multiple of L steps (padded steps: episode starts,
    masked out), and the chunks of :func:`train_tom`: obs, starts, labels (float) and valid, each
    ``[C*L, B, ...] -> [L, C*B, ...]``."""
    T, B = starts.shape
    pad = (-T) % L  # pad T to a multiple of L; padded steps are masked out

    def padded(x: torch.Tensor, value=0) -> torch.Tensor:
        x = x.cpu()
        return torch.cat([x, x.new_full((pad, *x.shape[1:]), value)]) if pad else x

    obs_p, starts_p, labels_p = padded(obs), padded(starts.bool(), True), padded(labels.float())
    valid_p = padded(valid, False)
    C = (T + pad) // L

    def chunks(x: torch.Tensor) -> torch.Tensor:  # [C*L, B, ...] -> [L, C*B, ...]
        return x.reshape(C, L, B, *x.shape[2:]).transpose(0, 1).reshape(L, C * B, *x.shape[2:])

    return obs_p, starts_p, (chunks(obs_p), chunks(starts_p), chunks(labels_p), chunks(valid_p))


def _split_columns(B: int, holdout: float, generator: torch.Generator | None):
    """``(held-out columns, training columns)`` of :func:`train_tom`, each sorted ``int64``: a
    ``holdout`` fraction of the B columns (at least one, and one left), drawn with ``generator``.

    Raises:
        ValueError: B < 2.
    """
    if B < 2:
        raise ValueError(f"holdout needs at least 2 columns, got B = {B}")
    n_val = min(B - 1, max(1, round(holdout * B)))
    perm = torch.randperm(B, generator=generator)
    return perm[:n_val].sort().values, perm[n_val:].sort().values


class _HeldOut:
    """Early stopping of :func:`train_tom`: the loss on the held-out columns (whole sequences from a
    zero state) after the epochs it is measured, and the parameters of the lowest."""

    def __init__(self, model: ToMModel, obs, starts, labels, mask, device) -> None:
        self.model, self.device = model, device
        # moved once, measured up to 51 times
        self.obs, self.starts, self.labels = obs.to(device), starts.to(device), labels.float().to(device)
        self.mask = None if mask is None else mask.bool().to(device)
        self.epochs: list[int] = []
        self.losses: list[float] = []
        self.best: tuple[float, int, dict] | None = None

    def measure(self, epoch: int) -> None:
        model = self.model
        model.eval()
        with torch.no_grad():
            logits = model.sequence(
                self.obs, model.initial_state(self.obs.shape[1], self.device), self.starts
            )
            loss = float(tom_loss(logits, self.labels, self.mask))
        model.train()
        self.epochs.append(epoch)
        self.losses.append(loss)
        if self.best is None or loss < self.best[0]:
            self.best = (loss, epoch, {k: v.detach().clone() for k, v in model.state_dict().items()})

    def keep_best(self) -> dict[str, list]:
        """Load the best parameters into the model; the curve entries of :func:`train_tom`."""
        self.model.load_state_dict(self.best[2])
        return {"val_epoch": self.epochs, "val_loss": self.losses, "best_epoch": [self.best[1]]}


def _tom_epoch(model, optimizer, data, h0, minibatch: int, max_grad_norm: float, generator) -> float:
    """One epoch of :func:`train_tom` over the chunked ``data`` (obs, starts, labels, valid; each
    ``[L, C*B, ...]``) from the stored states ``h0 [C*B, hidden]``: shuffled minibatches of chunks,
    an Adam step each. Returns the mean loss per valid step (nats)."""
    obs_c, starts_c, labels_c, valid_c = data
    device = h0.device
    order = torch.randperm(obs_c.shape[1], generator=generator)
    total, weight = 0.0, 0.0
    for i in range(0, obs_c.shape[1], minibatch):
        idx = order[i : i + minibatch]
        v = valid_c[:, idx].to(device)
        if not bool(v.any()):
            continue
        logits = model.sequence(obs_c[:, idx].to(device), h0[idx.to(device)], starts_c[:, idx].to(device))
        loss = tom_loss(logits, labels_c[:, idx].to(device), v)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        n = float(v.sum())
        total, weight = total + float(loss.detach()) * n, weight + n
    return total / max(weight, 1.0)


# -- data --------------------------------------------------------------------------------------------
@dataclass
class ToMData:
    """Ego-view trajectories with the partner's concept labels (all CPU tensors).

    Attributes:
        obs: ``uint8 [T, B, *obs_shape]`` the ego's observation before acting at step t.
        starts: ``bool [T, B]`` step t starts an episode.
        labels: ``float32 [T, B, M]`` the partner's next-concept labels.
        known: ``bool [T, B]`` labels determined by the data (all True for full episodes).
        mask: ``bool [T, B]`` steps inside the requested episodes (False once a game has played
            ``episodes`` episodes while others still run).
        concepts: ``int64 [T, B]`` concept the partner performed at step t (-1 = none).
        interactions, cells, partner_actions: ``int64 [T, B]`` the partner's raw interaction kind,
            flat cell and action at step t.
        done: ``bool [T, B]`` step t ended an episode.
        ego_seat: ``int64 [B]`` the ego's seat in each game; member: ``int64 [B]`` partner member.
    """

    obs: torch.Tensor
    starts: torch.Tensor
    labels: torch.Tensor
    known: torch.Tensor
    mask: torch.Tensor
    concepts: torch.Tensor
    interactions: torch.Tensor
    cells: torch.Tensor
    partner_actions: torch.Tensor
    done: torch.Tensor
    ego_seat: torch.Tensor
    member: torch.Tensor


@torch.no_grad()
def collect_tom_data(
    env,
    ego,
    partner,
    concept_set: ConceptSet,
    episodes: int = 1,
    partner_members=None,
    generator: torch.Generator | None = None,
    deterministic: bool = False,
) -> ToMData:
    """Play ``episodes`` full episodes per game of ``ego`` with ``partner``; label the partner.

    Game g seats the ego in seat ``g % 2`` (half the games in each seat) and the partner (member
    ``partner_members[g]`` of a pool) in the other seat, for all its episodes. Use an env with
    ``randomize_seats=False`` so that seats are as stated.

    Args:
        env: a 2-player :class:`~zsceval.envs.overcooked.OvercookedEnv` (B games).
        ego, partner: agents (:mod:`zsceval.rl.agent`); ``partner`` may be a policy pool.
        concept_set: the concepts to label (its layout should be the env's).
        episodes: episodes per game.
        partner_members: ``int [B]`` pool member per game (None: ``partner`` is one agent).
        generator: torch generator on the env's device for action sampling.
        deterministic: arg-max actions.

    Returns:
        :class:`ToMData` with T = steps until every game finished ``episodes`` episodes.

    Raises:
        ValueError: not 2 players, ``partner_members`` of the wrong length, ``episodes < 1``.
    """
    B, n = env.num_envs, env.num_agents
    if n != 2:
        raise ValueError(f"collect_tom_data needs a 2-player env, got {n} players")
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    members = [0] * B if partner_members is None else [int(m) for m in partner_members]
    if len(members) != B:
        raise ValueError(f"partner_members has {len(members)} entries for {B} games")
    seat = [g % 2 for g in range(B)]
    arms = []
    for g in range(B):
        seats = [("partner", members[g])] * 2
        seats[seat[g]] = ("ego", 0)
        arms.append(Arm(tuple(seats), f"partner/{members[g]}", seat[g]))
    runner = EpisodeRunner(
        env,
        {"ego": ego, "partner": partner},
        arms,
        assign=lambda games, _: games.clone(),
        generator=generator,
    )
    runner.reset()
    dev = runner.device
    games = torch.arange(B, device=dev)
    ego_seat = torch.tensor(seat, dtype=torch.int64, device=dev)
    partner_seat = 1 - ego_seat
    finished = torch.zeros(B, dtype=torch.int64, device=dev)
    rec: dict[str, list[torch.Tensor]] = {
        k: [] for k in ("obs", "starts", "kind", "cell", "act", "done", "mask")
    }
    limit = 100 * episodes * int(env.horizon)
    for _ in range(limit):
        if bool((finished >= episodes).all()):
            break
        rec["obs"].append(runner.step_out.obs[games, ego_seat].cpu())
        rec["starts"].append(runner.starts.view(B, n)[games, ego_seat].cpu())
        rec["mask"].append((finished < episodes).cpu())
        actions = runner.act(deterministic)
        s, _, done = runner.env_step(actions)
        rec["kind"].append(s.interactions[games, partner_seat].cpu())
        rec["cell"].append(s.interaction_cell[games, partner_seat].cpu())
        rec["act"].append(actions.view(B, n)[games, partner_seat].cpu())
        rec["done"].append(done.cpu())
        finished += done.long()
        runner.finish_step(s, done, None)
    else:
        raise RuntimeError(f"not every game finished {episodes} episodes within {limit} steps")
    data = {k: torch.stack(v) for k, v in rec.items()}
    concepts = concept_set.concept_index(data["kind"], data["cell"], data["act"])
    labels, known = next_interaction_labels(
        concepts, data["done"], concept_set.num_concepts, return_known=True
    )
    return ToMData(
        obs=data["obs"],
        starts=data["starts"],
        labels=labels,
        known=known,
        mask=data["mask"],
        concepts=concepts,
        interactions=data["kind"],
        cells=data["cell"],
        partner_actions=data["act"],
        done=data["done"],
        ego_seat=ego_seat.cpu(),
        member=torch.tensor(members, dtype=torch.int64),
    )
