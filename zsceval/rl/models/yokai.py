"""A structured policy for Yōkai: per-card, per-hint and per-cell embeddings scored in Eq. 8's layout.

``model.kind = yokai-relational``. The YLE paper compares encoders that treat the field as a set of
related objects (Sec. 5.1: CNN, GCN, GATv2 and a relation module); a flat head over all
``A = 2 + (|Y| + |H|)(1 + g²)`` actions (1,068 for 2-player 3x3) has to learn every card x cell
pair on its own. Here every score comes from the embeddings of the objects the action names, with
the same weights for every card, cell and hint (YLE App. B.2, Eq. 8's blocks):

=========================  ================================================================
``NOOP``, ``END``          a linear map of the context vector ``c`` (the pooled tokens, or the
                           GRU state)
``PEEK y``                 ``w · card_y``
``MOVE y to p``            ``(U card_y) · cell_p / sqrt(d) + a · card_y + b · cell_p``
``REVEAL h``               ``w' · hint_h``
``PLACE h on p``           ``(U' hint_h) · cell'_p / sqrt(d) + a' · hint_h + b' · cell'_p``
=========================  ================================================================

**Tokens** (:class:`TokenEncoder`). The image observation ``uint8 [g, g + 1, F]`` (own) or
``[g, g + 1, n F]`` (the critic's) is read as objects: card y is the cell whose ``card_id`` channel
is ``y + 1`` (its channels, and learned row and column embeddings of its cell); hint h is row h of
the extra column; a placed hint also receives its card's token. The ``card_id`` channels are used
only to find cards, never as features, so relabelling the cards permutes the card tokens and the
PEEK / MOVE scores the same way (tested). ``model.mlp_layers`` relation blocks
(:class:`RelationBlock`: messages between cards that share a side, between a hint and the card it
lies on, and from the mean of all tokens) mix the tokens. (Self-attention over the tokens was
tried first: 4x the update time on the CPU for this size, from small batched matrix products.)

**Cells.** ``cell_p`` is a learned position embedding plus messages from the cards on ``p`` and on
its 4 side neighbours, one linear map per direction (one step of message passing from cards to
cells), plus the context: what a card moved to ``p`` would touch. The map is linear, so a MOVE
score is a sum of pairwise terms between the moved card and each card around the target (cheap:
no per-cell matrix product).

**Memory.** With ``model.recurrent`` a GRUCell(d) takes the pooled tokens each step; its state is
the context ``c`` of the heads and is added (linearly mapped) to every token and cell before
scoring. ``d`` is ``model.hidden_size``. The critic is the built-in MLP critic (with its GRU under
``model.recurrent``), the same as the ``mlp`` policy's, so the two policies differ in the actor only.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from zsceval.envs.yokai.observe import channel_names, rules_for_observation
from zsceval.rl.networks import CriticNet, ObsColumns, register_model

__all__ = ["RelationBlock", "TokenEncoder", "YokaiActor", "YokaiRelational", "YokaiTrunk"]

_DIRECTIONS = ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1))
"""(row, col) offsets of the cells a card sends a message to: its own and its 4 side neighbours."""


def _init(layer: nn.Linear, gain: float) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, gain=gain)
    nn.init.zeros_(layer.bias)
    return layer


class RelationBlock(nn.Module):
    """One residual step of relational message passing over the card and hint tokens (R-GCN style).

    ``x <- x + W_o relu(W_self h_i + sum_{j side by side with i} W_side h_j + sum_{j under/on i}
    W_on h_j + W_all mean_j h_j)`` with ``h = LayerNorm(x)``: one weight per relation, the same for
    every token (Schlichtkrull et al., "Modeling Relational Data with Graph Convolutional
    Networks", Eq. 2; the YLE paper's GCN / relation-module encoders, Sec. 5.1).

    Args:
        d: token width.
        cards: |Y|, the first tokens (the rest are hints).
    """

    def __init__(self, d: int, cards: int) -> None:
        super().__init__()
        self.cards = cards
        self.norm = nn.LayerNorm(d)
        self.parts = _init(nn.Linear(d, 3 * d), 1.0)  # self, side, on
        self.all = _init(nn.Linear(d, d), 1.0)
        self.out = _init(nn.Linear(d, d), 1.0)

    def forward(self, x: torch.Tensor, side: torch.Tensor, under: torch.Tensor) -> torch.Tensor:
        """``x float [N, Y + H, d]``, ``side [N, Y, Y]`` (cards sharing a side), ``under [N, H, Y]``
        (hint h lies on card y), both 0/1 floats -> ``float [N, Y + H, d]``."""
        N, T, d = x.shape
        Y = self.cards
        h = self.norm(x)
        own, by_side, by_on = self.parts(h).view(N, T, 3, d).unbind(-2)
        on_cards = torch.einsum("nhy,nhd->nyd", under, by_on[:, Y:])  # a card hears its hint
        on_hints = torch.einsum("nhy,nyd->nhd", under, by_on[:, :Y])  # a hint hears its card
        heard = torch.cat([torch.einsum("nyz,nzd->nyd", side, by_side[:, :Y]) + on_cards, on_hints], 1)
        msg = own + heard + self.all(h.mean(1))[:, None]
        return x + self.out(F.relu(msg))


class TokenEncoder(nn.Module):
    """Image observation -> card and hint tokens, their cells, and a pooled vector.

    Args:
        obs_shape: ``(g, g + 1, views * F)``: the own observation (views 1) or the critic's (n).
        d: token width.
        blocks: relation blocks.
    """

    def __init__(self, obs_shape: tuple[int, ...], d: int, blocks: int) -> None:
        super().__init__()
        rules, views = rules_for_observation(obs_shape)
        names = channel_names(rules)
        Fo = len(names)
        self.Y, self.H, self.g = rules.num_cards, rules.num_hints, rules.grid
        card_id = names.index("card_id")
        ids = [v * Fo + card_id for v in range(views)]
        self.card_id = card_id  # the first view's card_id channel finds the cards
        keep = [c for c in range(views * Fo) if c not in ids]
        self.register_buffer("keep", torch.tensor(keep, dtype=torch.long), persistent=False)
        relu = math.sqrt(2)
        self.card_in = _init(nn.Linear(len(keep), d), relu)
        self.hint_in = _init(nn.Linear(len(keep), d), relu)
        self.row = nn.Embedding(self.g, d)
        self.col = nn.Embedding(self.g, d)
        nn.init.normal_(self.row.weight, std=0.1)
        nn.init.normal_(self.col.weight, std=0.1)
        self.under_hint = _init(nn.Linear(d, d), 1.0)
        self.blocks = nn.ModuleList(RelationBlock(d, self.Y) for _ in range(blocks))
        self.norm = nn.LayerNorm(d)
        self.pool = _init(nn.Linear(d, d), relu)
        self.out_size = d

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Tokens of N observations.

        Args:
            obs: ``[N, g, g + 1, C]`` (uint8 or float).

        Returns:
            ``(pooled float [N, d], tokens float [N, Y + H, d] (cards, then hints), cells int64
            [N, Y]: the cell row * g + col of each card)``.
        """
        N, g, Y, H = obs.shape[0], self.g, self.Y, self.H
        field = obs[:, :, :g, :].reshape(N, g * g, -1)
        ids = field[..., self.card_id].long()  # [N, g²]: card index + 1, 0 empty
        on = ids[:, None, :] == torch.arange(1, Y + 1, device=obs.device)[None, :, None]  # [N, Y, g²]
        cells = on.to(torch.uint8).argmax(-1)  # [N, Y]; every card lies on one cell
        raw = field.gather(1, cells[..., None].expand(N, Y, field.shape[-1])).index_select(-1, self.keep)
        cards = self.card_in(raw.float()) + self.row(cells // g) + self.col(cells % g)
        hint_obs = obs[:, :H, g, :]  # [N, H, C]
        hints = self.hint_in(hint_obs.index_select(-1, self.keep).float())
        under = F.one_hot(hint_obs[..., self.card_id].long(), Y + 1)[..., 1:].to(cards.dtype)  # [N, H, Y]
        hints = hints + under @ self.under_hint(cards)
        x = torch.cat([cards, hints], 1)
        rows, cols = cells // g, cells % g
        side = (
            (rows[:, :, None] - rows[:, None, :]).abs() + (cols[:, :, None] - cols[:, None, :]).abs()
        ) == 1
        side = side.to(x.dtype)
        for block in self.blocks:
            x = block(x, side, under)
        x = self.norm(x)
        return F.relu(self.pool(x.mean(1))), x, cells


class YokaiTrunk(nn.Module):
    """The actor's encoder plus optional GRU, with the interface of :class:`zsceval.rl.networks._Trunk`.

    Its features ``[N, d + (Y + H) d + Y]`` are the context (pooled tokens, or the GRU state), the
    flattened tokens and the cards' cells (as floats), which :meth:`YokaiActor.out` scores.

    Args:
        obs_shape: the observation's shape (:class:`TokenEncoder`).
        model: the spec's ``model`` dict (``hidden_size``, ``mlp_layers``, ``recurrent``).
    """

    def __init__(self, obs_shape: tuple[int, ...], model: dict[str, Any]) -> None:
        super().__init__()
        d = int(model["hidden_size"])
        self.encoder = TokenEncoder(obs_shape, d, int(model["mlp_layers"]))
        Y, H = self.encoder.Y, self.encoder.H
        self.out_size = d + (Y + H) * d + Y
        self.gru: nn.GRUCell | None = None
        if model["recurrent"]:
            self.gru = nn.GRUCell(d, d)
            for name, p in self.gru.named_parameters():
                (nn.init.orthogonal_ if "weight" in name else nn.init.zeros_)(p)

    @property
    def hidden_size(self) -> int:
        """GRU state width, 0 for a feed-forward trunk."""
        return 0 if self.gru is None else self.gru.hidden_size

    @staticmethod
    def _plain(extra: torch.Tensor | None, columns: ObsColumns | None) -> None:
        if extra is not None or columns is not None:
            raise ValueError(
                "the yokai-relational actor takes neither extra features nor column-compressed obs"
            )

    def _features(self, ctx: torch.Tensor, tokens: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
        return torch.cat([ctx, tokens.flatten(-2), cells.to(ctx.dtype)], -1)

    def step(
        self, obs: torch.Tensor, h: torch.Tensor | None, starts: torch.Tensor | None,
        extra: torch.Tensor | None = None, columns: ObsColumns | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:  # fmt: skip
        """One env step: ``obs [N, g, g + 1, C]``, ``h float32 [N, d]``, ``starts bool [N]`` ->
        ``(features [N, out_size], h)``."""
        self._plain(extra, columns)
        pooled, tokens, cells = self.encoder(obs)
        if self.gru is not None:
            h = self.gru(pooled, h * (~starts).unsqueeze(-1).to(h.dtype))
            pooled = h
        return self._features(pooled, tokens, cells), h

    def sequence(
        self, obs: torch.Tensor, h0: torch.Tensor | None, starts: torch.Tensor | None,
        extra: torch.Tensor | None = None, columns: ObsColumns | None = None,
    ) -> torch.Tensor:  # fmt: skip
        """L steps of N sequences: ``obs [L, N, ...]``, ``h0 [N, d]``, ``starts bool [L, N]`` ->
        features ``[L, N, out_size]`` (truncated BPTT through the chunk)."""
        self._plain(extra, columns)
        L, N = obs.shape[:2]
        pooled, tokens, cells = self.encoder(obs.reshape(L * N, *obs.shape[2:]))
        if self.gru is not None:
            x = pooled.view(L, N, -1)
            keep = (~starts).unsqueeze(-1)
            h, outs = h0, []
            for t in range(L):
                h = self.gru(x[t], h * keep[t].to(h.dtype))
                outs.append(h)
            pooled = torch.stack(outs).reshape(L * N, -1)
        return self._features(pooled, tokens, cells).view(L, N, -1)


class _PairScore(nn.Module):
    """``s(x_i, z_p) = (U x_i) · z_p / sqrt(d) + a · x_i + b · z_p`` for every object i and cell p,
    where ``z_p = base_p + ctx + sum of the messages m heard at p`` (:meth:`YokaiActor._targets`).

    ``z`` is linear in the messages, so the scores are computed without building ``z``: each
    message's score ``(U x_i) · m / sqrt(d) + b · m`` is added to its cell (a scatter over
    ``[M, I, g² + 1]``, the last column collecting messages that fall outside the field), then the
    position and context terms. The same as forming ``z`` up to float rounding, at ``I`` numbers
    per cell instead of ``d``.
    """

    def __init__(self, d: int) -> None:
        super().__init__()
        self.u = _init(nn.Linear(d, d), 0.01)
        self.a = _init(nn.Linear(d, 1), 0.01)
        self.b = nn.Linear(d, 1, bias=False)  # linear: a cell's term is the sum of its parts' terms
        nn.init.orthogonal_(self.b.weight, gain=0.01)
        self.scale = 1.0 / math.sqrt(d)

    def forward(
        self, x: torch.Tensor, msg: torch.Tensor, target: torch.Tensor, base: torch.Tensor, ctx: torch.Tensor
    ) -> torch.Tensor:  # fmt: skip
        """Scores ``[M, I, P]`` of ``x [M, I, d]`` against cells that hear ``msg [M, K, d]`` at
        ``target int64 [M, K]`` (``P`` = outside), with ``base [P, d]`` and ``ctx [M, d]``."""
        M, I = x.shape[:2]
        P = base.shape[0]
        u = self.u(x) * self.scale  # [M, I, d]
        per_msg = u @ msg.transpose(1, 2) + self.b(msg).transpose(1, 2)  # [M, I, K]
        heard = per_msg.new_zeros(M, I, P + 1).scatter_add_(2, target[:, None].expand(M, I, -1), per_msg)
        at_cell = (u @ base.T.to(u.dtype)) + self.b(base).T  # [M, I, P]
        return (
            heard[..., :P]
            + at_cell
            + (u * ctx[:, None]).sum(-1, keepdim=True)
            + self.a(x)
            + self.b(ctx)[:, None]
        )


class YokaiActor(nn.Module):
    """Action logits ``[N, A]`` in Eq. 8's order from the trunk's tokens (module docstring).

    Args:
        obs_shape: ``(g, g + 1, F)``; num_actions: A (checked against the configuration).
        model: the spec's ``model`` dict.

    Raises:
        ValueError: shapes of no Yōkai configuration; a partner model (not supported).
    """

    partner = None
    """No partner-prediction head (E3T's option is not supported)."""

    def __init__(self, obs_shape: tuple[int, ...], num_actions: int, model: dict[str, Any]) -> None:
        super().__init__()
        rules, views = rules_for_observation(obs_shape, num_actions)
        if views != 1:
            raise ValueError(f"the actor takes one player's observation, got {tuple(obs_shape)}")
        if int(model.get("partner_model", 0)):
            raise ValueError("model.kind 'yokai-relational' has no partner-model head")
        self.trunk = YokaiTrunk(obs_shape, model)
        d, g = int(model["hidden_size"]), rules.grid
        self.d, self.Y, self.H, self.g = d, rules.num_cards, rules.num_hints, g
        self.context = _init(nn.Linear(d, d), 1.0)
        self.cell_context = _init(nn.Linear(d, 2 * d), 1.0)
        self.cell_row, self.cell_col = nn.Embedding(g, 2 * d), nn.Embedding(g, 2 * d)
        nn.init.normal_(self.cell_row.weight, std=0.1)
        nn.init.normal_(self.cell_col.weight, std=0.1)
        self.messages = _init(nn.Linear(d, len(_DIRECTIONS) * 2 * d), 1.0)
        self.peek = _init(nn.Linear(d, 1), 0.01)
        self.reveal = _init(nn.Linear(d, 1), 0.01)
        self.move = _PairScore(d)
        self.place = _PairScore(d)
        self.noop_end = _init(nn.Linear(d, 2), 0.01)
        offsets = torch.tensor(_DIRECTIONS, dtype=torch.long)
        self.register_buffer("offsets", offsets, persistent=False)
        cell = torch.arange(g * g)
        self.register_buffer("cell_rc", torch.stack([cell // g, cell % g], -1), persistent=False)

    def _targets(self, cards: torch.Tensor, cells: torch.Tensor, c: torch.Tensor):
        """The cells as MOVE and PLACE targets (module docstring), as their parts: the cards'
        messages ``[M, 5 Y, 2d]`` (card y's for direction j at ``5 y + j``), the cell that hears
        each ``int64 [M, 5 Y]`` (g² when outside the field), the position embeddings ``[g², 2d]``
        and the context ``[M, 2d]``; the first d features serve MOVE, the last d PLACE."""
        M, Y, d, g = cards.shape[0], self.Y, self.d, self.g
        k = len(_DIRECTIONS)
        msg = self.messages(cards).view(M, Y * k, 2 * d)
        r = (cells // g)[:, :, None] - self.offsets[:, 0]  # [M, Y, k]: the cell that hears it
        col = (cells % g)[:, :, None] - self.offsets[:, 1]
        inside = (r >= 0) & (r < g) & (col >= 0) & (col < g)
        target = torch.where(inside, r * g + col, g * g).view(M, Y * k)
        base = self.cell_row(self.cell_rc[:, 0]) + self.cell_col(self.cell_rc[:, 1])  # [g², 2d]
        return msg, target, base, self.cell_context(c)

    def out(self, feats: torch.Tensor) -> torch.Tensor:
        """Action logits ``[..., A]`` from trunk features ``[..., out_size]``."""
        lead, d, Y, H = feats.shape[:-1], self.d, self.Y, self.H
        x = feats.reshape(-1, feats.shape[-1])
        M = x.shape[0]
        c = x[:, :d]
        tokens = x[:, d : d + (Y + H) * d].view(M, Y + H, d)
        cells = x[:, d + (Y + H) * d :].round().long()
        ctx = self.context(c)
        tokens = F.relu(tokens + ctx[:, None])
        cards, hints = tokens[:, :Y], tokens[:, Y:]
        msg, target, base, cell_ctx = self._targets(cards, cells, c)
        move_to = (msg[..., :d], target, base[:, :d], cell_ctx[:, :d])
        place_on = (msg[..., d:], target, base[:, d:], cell_ctx[:, d:])
        ne = self.noop_end(F.relu(c))
        logits = torch.cat(
            [
                ne[:, :1],
                self.peek(cards).squeeze(-1),
                self.move(cards, *move_to).flatten(1),
                self.reveal(hints).squeeze(-1),
                self.place(hints, *place_on).flatten(1),
                ne[:, 1:],
            ],
            -1,
        )
        return logits.view(*lead, -1)


@register_model("yokai-relational")
class YokaiRelational:
    """The ``yokai-relational`` model plug-in: :class:`YokaiActor` and the MLP critic."""

    @classmethod
    def actor(cls, obs_shape: tuple[int, ...], num_actions: int, model: dict[str, Any]) -> YokaiActor:
        """The actor of a Yōkai configuration's observation shape and action count."""
        return YokaiActor(tuple(obs_shape), int(num_actions), model)

    @classmethod
    def critic(cls, critic_obs_shape: tuple[int, ...], model: dict[str, Any]) -> CriticNet:
        """The built-in MLP critic (:class:`~zsceval.rl.networks.CriticNet` with ``kind=mlp``, the
        same ``hidden_size``, ``mlp_layers`` and GRU option) over the critic observation: the
        value needs no per-action structure, and with the same critic as the MLP policy a
        comparison of the two isolates the actor (the relational critic tried first cost a
        third of the update)."""
        return CriticNet(tuple(critic_obs_shape), {**model, "kind": "mlp"})
