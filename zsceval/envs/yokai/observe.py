"""What each player observes: node features, the image-like grid and the graph view.

Public: positions and adjacency, card identities, locks, hints once face up, who peeked at which
card (and which cards the current player is peeking at this turn), whose turn and which phase.
Private: a card's colour, shown only to a player who is peeking at it this turn (or who ever
peeked at it, with ``perfect_memory``; the paper's "-M" setting, YLE Sec. 5.1). Seat-relative:
the ``seen_by_r`` channels count players from the observer (r = 0 is the observer).

Channels (the same for the image's cells and the graph's nodes, :func:`channel_names`):

====================  =========================================================================
``colour_c``          the card has colour c and the observer may see it (cards)
``hint_colour_c``     the hint on the card shows colour c (cards); the hint shows c, once face
                      up (hint nodes)
``present``           a card or a hint card is here
``card_id``           card index + 1 (cards); card index + 1 of the card a placed hint lies on
                      (hint nodes; 0 when not placed)
``locked``            a hint lies on the card / the hint is placed
``hint_status``       1 face down, 2 face up, 3 placed (hint nodes; 0 on cards)
``peeked``            the current player peeks at the card this turn
``seen_by_r``         player ``(observer + r) mod n`` has peeked at the card in this game
``is_current``        the observer is the current player (every cell / node)
``turn_offset``       ``(current - observer) mod n`` (every cell / node)
``phase``             the turn's sub-step, 1..4 (:class:`Phase` + 1; every cell / node)
====================  =========================================================================

Image (YLE Sec. 4): ``uint8 [B, n, g, g + 1, F]``; cards at their cell, hint h at row h of the
extra column g. Graph: adjacency ``bool [B, Y + H, Y + H]`` (hints unconnected) and node features
``uint8 [B, n, Y + H, F + 2]``, the channels above plus ``row`` and ``col`` (cell + 1; 0 for hints).
"""

from __future__ import annotations

import numpy as np
import torch

from .graph import adjacency
from .rules import HINT_COUNTS, VERSIONS, HintStatus, Rules
from .state import YokaiState

__all__ = ["channel_high", "channel_names", "graph_view", "image", "node_features", "rules_for_observation"]

GLOBALS = ("is_current", "turn_offset", "phase")


def channel_names(rules: Rules) -> tuple[str, ...]:
    """The F channel names, in order (see the module docstring)."""
    C, n = rules.num_colours, rules.num_players
    return (
        *(f"colour_{c}" for c in range(C)),
        *(f"hint_colour_{c}" for c in range(C)),
        "present",
        "card_id",
        "locked",
        "hint_status",
        "peeked",
        *(f"seen_by_{r}" for r in range(n)),
        *GLOBALS,
    )


def channel_high(rules: Rules) -> np.ndarray:
    """``int [F]``: the largest value of each channel."""
    high = {"card_id": rules.num_cards, "hint_status": int(HintStatus.PLACED)}
    high |= {"turn_offset": rules.num_players - 1, "phase": 4}
    return np.array([high.get(name, 1) for name in channel_names(rules)], dtype=np.int64)


def node_features(state: YokaiState, rules: Rules, perfect_memory: bool) -> torch.Tensor:
    """Per-observer features of the Y card nodes then the H hint nodes.

    Returns:
        ``uint8 [B, n, Y + H, F]`` (channels of :func:`channel_names`).
    """
    B, Y = state.pos.shape
    n, C, H = rules.num_players, rules.num_colours, rules.num_hints
    dev = state.pos.device
    me = torch.arange(n, device=dev)  # observer seats
    is_current = state.current[:, None] == me  # [B, n]
    if perfect_memory:
        knows = state.seen
    else:
        knows = is_current[:, :, None] & state.peeked[:, None, :]
    colour = torch.nn.functional.one_hot(state.colour, C).bool()[:, None] & knows[..., None]  # [B,n,Y,C]

    placed = state.hint_status == HintStatus.PLACED
    face_up = state.hint_status != HintStatus.FACE_DOWN
    on_card = (state.hint_card[:, :, None] == torch.arange(Y, device=dev)) & placed[:, :, None]  # [B,H,Y]
    card_hint = (on_card[..., None] & state.hint_colours[:, :, None, :]).any(1)  # [B, Y, C]
    hint_shown = state.hint_colours & face_up[..., None]  # [B, H, C]
    locked = on_card.any(1)

    seats = (me[:, None] + me[None, :]) % n  # [observer, r] -> seat
    seen_rel = state.seen[:, seats]  # [B, n(observer), n(r), Y]

    def cards_then_hints(card_part: torch.Tensor, hint_part: torch.Tensor) -> torch.Tensor:
        return torch.cat([card_part, hint_part], dim=-2)

    u8 = torch.uint8
    zeros_hc = torch.zeros(B, n, H, C, dtype=u8, device=dev)
    zeros_h1 = torch.zeros(B, n, H, 1, dtype=u8, device=dev)

    def per_obs(x: torch.Tensor) -> torch.Tensor:  # [B, nodes, k] -> [B, n, nodes, k]
        return x[:, None].expand(B, n, *x.shape[1:]).to(u8)

    ids = torch.arange(1, Y + 1, device=dev).expand(B, Y)
    parts = [
        cards_then_hints(colour.to(u8), zeros_hc),
        per_obs(torch.cat([card_hint, hint_shown], 1)),
        per_obs(torch.ones(B, Y + H, 1, device=dev)),
        per_obs(torch.cat([ids, torch.where(placed, state.hint_card + 1, 0)], 1)[..., None]),
        per_obs(torch.cat([locked, placed], 1)[..., None]),
        per_obs(torch.cat([torch.zeros_like(ids), state.hint_status], 1)[..., None]),
        cards_then_hints(per_obs(state.peeked[..., None]), zeros_h1),
        cards_then_hints(seen_rel.transpose(2, 3).to(u8), torch.zeros(B, n, H, n, dtype=u8, device=dev)),
    ]
    offset = (state.current[:, None] - me) % n  # [B, n]
    glob = torch.stack([is_current.long(), offset, (state.phase + 1)[:, None].expand(B, n)], -1)
    parts.append(glob[:, :, None, :].expand(B, n, Y + H, len(GLOBALS)).to(u8))
    return torch.cat(parts, dim=-1)


def image(nodes: torch.Tensor, state: YokaiState, rules: Rules) -> torch.Tensor:
    """The image-like observation (YLE Sec. 4): node features scattered onto a g x (g + 1) grid.

    Args:
        nodes: ``uint8 [B, n, Y + H, F]`` from :func:`node_features`.

    Returns:
        ``uint8 [B, n, g, g + 1, F]``; empty cells hold zeros except the global channels.
    """
    B, n, N, F = nodes.shape
    g, H = rules.grid, rules.num_hints
    dev = nodes.device
    width = g + 1
    card_cells = (state.pos // g) * width + state.pos % g  # [B, Y]
    hint_cells = (torch.arange(H, device=dev) * width + g).expand(B, H)
    index = torch.cat([card_cells, hint_cells], 1)[:, None, :, None].expand(B, n, N, F)
    out = torch.zeros(B, n, g * width, F, dtype=torch.uint8, device=dev)
    out.scatter_(2, index, nodes)
    k = len(GLOBALS)
    out[..., F - k :] = nodes[:, :, :1, F - k :]  # the global planes cover every cell
    return out.view(B, n, g, width, F)


def graph_view(nodes: torch.Tensor, state: YokaiState, rules: Rules) -> tuple[torch.Tensor, torch.Tensor]:
    """The graph observation (YLE Sec. 4): adjacency and node features with the position.

    Args:
        nodes: ``uint8 [B, n, Y + H, F]`` from :func:`node_features`.

    Returns:
        ``(adjacency bool [B, Y + H, Y + H], features uint8 [B, n, Y + H, F + 2])``; hint nodes
        have no edges; the two extra channels are ``row + 1`` and ``col + 1`` (0 for hints).
    """
    B, n, N, F = nodes.shape
    Y, g = rules.num_cards, rules.grid
    adj = torch.zeros(B, N, N, dtype=torch.bool, device=nodes.device)
    adj[:, :Y, :Y] = adjacency(state.pos, g)
    rc = torch.stack([state.pos // g + 1, state.pos % g + 1], -1)  # [B, Y, 2]
    rc = torch.cat([rc, torch.zeros(B, N - Y, 2, dtype=rc.dtype, device=rc.device)], 1)
    feats = torch.cat([nodes, rc[:, None].expand(B, n, N, 2).to(torch.uint8)], -1)
    return adj, feats


def rules_for_observation(obs_shape: tuple[int, ...], num_actions: int | None = None) -> tuple[Rules, int]:
    """The configuration whose image observation (own or the critic's) has ``obs_shape``.

    Version and player count fix the grid g and the channels F = 2|C| + n + 8 (the critic's
    observation has n F); no two configurations share them, so a network built from a policy's
    shapes finds its game.

    Args:
        obs_shape: ``(g, g + 1, F)`` or ``(g, g + 1, n F)``.
        num_actions: A, checked against the configuration when given.

    Returns:
        ``(rules, views)``: the configuration and how many players' F channels ``obs_shape``
        holds (1 for the own observation, n for the critic's).

    Raises:
        ValueError: no configuration has these sizes (the valid ones listed).
    """
    found, valid = [], []
    for version in VERSIONS:
        for players in HINT_COUNTS[version]:
            rules = Rules(version, players)
            g, F = rules.grid, len(channel_names(rules))
            valid.append(
                f"{version} {players}p: ({g}, {g + 1}, {F} or {F * players}), A={rules.actions.size}"
            )
            for views in (1, players):
                shape_ok = tuple(int(x) for x in obs_shape) == (g, g + 1, F * views)
                if shape_ok and num_actions in (None, rules.actions.size):
                    found.append((rules, views))
    if len(found) != 1:
        raise ValueError(
            f"no Yokai configuration has observations {tuple(obs_shape)}"
            f"{'' if num_actions is None else f' and {num_actions} actions'} ({'; '.join(valid)})"
        )
    return found[0]
