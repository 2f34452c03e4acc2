"""One env step of B Yōkai games, split by job: the action mask, the transition, the score.

Turn-based: only the current player acts; every other player's only available action is NOOP
(index 0), and what they send is ignored. An action the mask does not allow (including a
non-NOOP action of a waiting player) changes nothing: the phase does not advance, the step still
counts towards the horizon and the ``illegal`` event is set for the agent who sent it.

Sources: YLE paper Sec. 2 (turn, Eq. 1), Sec. 4 (Eq. 2, Eq. 3, shaped reward), App. B.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .graph import adjacency, card_grid, clustered_colours, legal_moves
from .rules import ActionKind, HintStatus, Phase, Rules
from .state import YokaiState

__all__ = [
    "EVENT_NAMES",
    "SHAPED_CLUSTER",
    "SHAPED_HINT_CORRECT",
    "SHAPED_HINT_WRONG",
    "SHAPED_PEEK_NEW",
    "Outcome",
    "apply",
    "available_actions",
    "final_reward",
    "score",
]

# The shaped training reward (YLE Sec. 4, "Reward"), earned by the acting player.
SHAPED_PEEK_NEW = 1.0  # peeking at a card this player had never peeked at
SHAPED_CLUSTER = 1.0  # per colour that becomes one cluster (minus this when one is broken up)
SHAPED_HINT_CORRECT = 1.0  # placing a hint that shows the card's colour
SHAPED_HINT_WRONG = -1.0  # placing a hint that does not

EVENT_NAMES = (
    "peek",  # peeked at a card
    "peek_new",  # ... that this player had never peeked at
    "move",  # moved a card
    "pass",  # passed the move: no card had a legal move
    "reveal_hint",  # turned a face-down hint face up
    "hint_correct",  # placed a hint showing the card's colour
    "hint_wrong",  # placed a hint not showing it
    "colour_clustered",  # a move made a colour one cluster
    "colour_unclustered",  # a move broke a colour's cluster up
    "end_early",  # ended the game at the start of a turn
    "illegal",  # sent an unavailable action (ignored)
)
EVENT = {name: i for i, name in enumerate(EVENT_NAMES)}


def available_actions(state: YokaiState, rules: Rules) -> torch.Tensor:
    """The action mask (YLE Sec. 4: illegal actions are always masked).

    The current player may, by phase: PEEK_FIRST: peek at any unlocked card or END; PEEK_SECOND:
    peek at an unlocked card not yet peeked at this turn; MOVE: move an unlocked card to a legal
    cell (:func:`legal_moves`), or NOOP (pass) only when no move is legal; HINT: reveal a
    face-down hint, or place a revealed hint on a cell holding an unlocked card. Everyone else:
    NOOP only.

    On the CPU, legal moves are computed for the games in the MOVE phase only (a data-dependent
    row selection, about 4x less work); on other devices for every game (static shapes, no host
    synchronization). The mask is the same.

    Returns:
        ``bool [B, n, A]``; every row has at least one true entry.
    """
    n, Y = rules.num_players, rules.num_cards
    phase = state.phase
    B = phase.shape[0]
    unlocked = ~state.locked
    peek = ((phase == Phase.PEEK_FIRST)[:, None] & unlocked) | (
        (phase == Phase.PEEK_SECOND)[:, None] & unlocked & ~state.peeked
    )
    in_move = phase == Phase.MOVE
    if phase.device.type == "cpu":  # the costly test only where it is needed
        moves = torch.zeros(B, Y, rules.grid**2, dtype=torch.bool, device=phase.device)
        moving = in_move.nonzero().squeeze(1)
        moves[moving] = legal_moves(state.pos[moving], unlocked[moving], rules.grid)
    else:  # accelerators: every game, static shapes, no host synchronization
        moves = legal_moves(state.pos, unlocked, rules.grid) & in_move[:, None, None]
    stuck = in_move & ~moves.flatten(1).any(1)
    hinting = phase == Phase.HINT
    reveal = hinting[:, None] & (state.hint_status == HintStatus.FACE_DOWN)
    cells = card_grid(state.pos, rules.grid)
    free_card = torch.cat([unlocked, torch.zeros_like(unlocked[:, :1])], 1).gather(
        1, torch.where(cells < 0, rules.num_cards, cells)
    )  # [B, g*g]: the cell holds an unlocked card
    place = (hinting[:, None] & (state.hint_status == HintStatus.REVEALED))[:, :, None] & free_card[:, None]
    end = phase == Phase.PEEK_FIRST
    row = torch.cat([stuck[:, None], peek, moves.flatten(1), reveal, place.flatten(1), end[:, None]], 1)
    is_current = torch.arange(n, device=phase.device) == state.current[:, None]  # [B, n]
    avail = is_current[:, :, None] & row[:, None, :]
    avail[:, :, 0] |= ~is_current
    return avail


@dataclass
class Outcome:
    """What one step did, per game.

    Attributes:
        actor: ``int64 [B]`` seat of the player whose turn it was.
        terminated: ``bool [B]`` the game ended (END, or the last hint placed).
        ended_early: ``bool [B]`` it ended by END.
        shaped: ``float32 [B]`` shaped training reward of the actor (YLE Sec. 4).
        events: ``int16 [B, n, E]`` event counts (:data:`EVENT_NAMES`).
        clustered: ``bool [B, C]`` colours forming one cluster after the step (Eq. 2).
    """

    actor: torch.Tensor
    terminated: torch.Tensor
    ended_early: torch.Tensor
    shaped: torch.Tensor
    events: torch.Tensor
    clustered: torch.Tensor


def _one_hot(index: torch.Tensor, size: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(index, size).bool()


def apply(
    state: YokaiState, rules: Rules, actions: torch.Tensor, avail: torch.Tensor
) -> tuple[YokaiState, Outcome]:
    """Advance every game by one joint action.

    Args:
        state: the current state (not modified).
        rules: the configuration.
        actions: ``int64 [B, n]`` in ``0..A-1`` (checked by the caller).
        avail: ``bool [B, n, A]`` the mask of ``state`` (:func:`available_actions`).

    Returns:
        ``(next_state, outcome)``.
    """
    B, n = actions.shape
    Y, C = rules.num_cards, rules.num_colours
    cur = state.current
    allowed = avail.gather(2, actions[:, :, None]).squeeze(2)  # [B, n]
    action = actions.gather(1, cur[:, None]).squeeze(1)
    ok = allowed.gather(1, cur[:, None]).squeeze(1)
    kind, card, hint, cell = rules.actions.decode(action)
    kind = torch.where(ok, kind, -1)
    is_peek, is_move, is_end = kind == ActionKind.PEEK, kind == ActionKind.MOVE, kind == ActionKind.END
    is_reveal, is_place = kind == ActionKind.REVEAL, kind == ActionKind.PLACE
    is_pass = kind == ActionKind.NOOP  # only available to the current player when stuck in MOVE

    card_1h = _one_hot(card, Y)  # [B, Y]
    actor_1h = _one_hot(cur, n)  # [B, n]
    peek_new = is_peek & ~(state.seen.gather(1, cur[:, None, None].expand(B, 1, Y)).squeeze(1) & card_1h).any(
        1
    )
    seen = state.seen | (actor_1h[:, :, None] & (card_1h & is_peek[:, None])[:, None, :])
    peeked = state.peeked | (card_1h & is_peek[:, None])
    pos = torch.where(is_move[:, None] & card_1h, cell[:, None], state.pos)

    hint_1h = _one_hot(hint, rules.num_hints)  # [B, H]
    target = card_grid(state.pos, rules.grid).gather(1, cell[:, None]).squeeze(1)  # card on the cell
    target = torch.where(is_place, target, 0)
    status = torch.where(is_reveal[:, None] & hint_1h, int(HintStatus.REVEALED), state.hint_status)
    status = torch.where(is_place[:, None] & hint_1h, int(HintStatus.PLACED), status)
    hint_card = torch.where(is_place[:, None] & hint_1h, target[:, None], state.hint_card)
    shown = state.hint_colours.gather(1, hint[:, None, None].expand(B, 1, C)).squeeze(1)  # [B, C]
    correct = shown.gather(1, state.colour.gather(1, target[:, None])).squeeze(1)
    hint_correct, hint_wrong = is_place & correct, is_place & ~correct

    turn_over = is_reveal | is_place
    phase = torch.where(is_peek | is_move | is_pass, state.phase + 1, state.phase)
    phase = torch.where(turn_over, int(Phase.PEEK_FIRST), phase)
    current = torch.where(turn_over, (cur + 1) % n, cur)
    peeked = peeked & ~turn_over[:, None]

    clustered = clustered_colours(adjacency(pos, rules.grid), state.colour, C)
    clusters = clustered.sum(-1)
    delta = clusters - state.clusters
    terminated = is_end | (is_place & (status == HintStatus.PLACED).all(1))
    shaped = (
        SHAPED_PEEK_NEW * peek_new.float()
        + SHAPED_CLUSTER * delta.float()
        + SHAPED_HINT_CORRECT * hint_correct.float()
        + SHAPED_HINT_WRONG * hint_wrong.float()
    )
    acted = [is_peek, peek_new, is_move, is_pass, is_reveal, hint_correct, hint_wrong]
    acted = torch.stack([*acted, delta > 0, delta < 0, is_end], dim=-1)  # EVENT_NAMES order
    events = (actor_1h[:, :, None] & acted[:, None, :]).to(torch.int16)
    events = torch.cat([events, (~allowed).to(torch.int16)[:, :, None]], dim=-1)
    nxt = YokaiState(
        pos=pos,
        colour=state.colour,
        hint_colours=state.hint_colours,
        hint_status=status,
        hint_card=hint_card,
        seen=seen,
        peeked=peeked,
        current=current,
        phase=phase,
        t=state.t + 1,
        clusters=clusters,
    )
    return nxt, Outcome(cur, terminated, is_end, shaped, events, clustered)


def score(
    state: YokaiState, rules: Rules, clustered: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The final score and what it is made of (YLE Sec. 2, Eq. 1; Sec. 4, Eq. 2).

    ``S = 5 N_face_down + 2 N_revealed_not_placed + N_correct - N_wrong``, where a placed hint is
    correct when it shows the colour of the card under it.

    Args:
        state: the state scored.
        rules: the configuration.
        clustered: ``bool [B, C]`` of ``state`` when already known (:class:`Outcome`).

    Returns:
        ``(S float32 [B], won bool [B], clustered int64 [B], wrong int64 [B])``: the score, all
        colours clustered (Eq. 2), how many colours are one cluster (NC), wrongly placed hints.
    """
    C = rules.num_colours
    placed = state.hint_status == HintStatus.PLACED
    under = state.colour.gather(1, state.hint_card.clamp(min=0))  # [B, H]
    shows = state.hint_colours.gather(2, under[:, :, None]).squeeze(2)
    correct = (placed & shows).sum(1)
    wrong = (placed & ~shows).sum(1)
    face_down = (state.hint_status == HintStatus.FACE_DOWN).sum(1)
    revealed = (state.hint_status == HintStatus.REVEALED).sum(1)
    s = (5 * face_down + 2 * revealed + correct - wrong).to(torch.float32)
    if clustered is None:
        clustered = clustered_colours(adjacency(state.pos, rules.grid), state.colour, C)
    return s, clustered.all(1), clustered.sum(1), wrong


def final_reward(
    s: torch.Tensor,
    won: torch.Tensor,
    clustered: torch.Tensor,
    wrong: torch.Tensor,
    early: torch.Tensor,
    C: int,
) -> torch.Tensor:
    """The reward of a finished game (YLE Sec. 4, Eq. 3).

    ``R = S`` if won, else ``-d_a - (|C| - c_a) - i_h`` with ``d_a`` = ended early, ``c_a`` the
    colours clustered and ``i_h`` the wrongly placed hints.

    Returns:
        ``float32 [B]``.
    """
    lost = -early.float() - (C - clustered).float() - wrong.float()
    return torch.where(won, s, lost)
