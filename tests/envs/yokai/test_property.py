"""Random legal play never reaches an illegal layout; masks, clusters and rewards agree with a
plain-Python reading of the rules (tests/envs/yokai/reference.py)."""

from __future__ import annotations

import pytest
import torch

from zsceval.envs.yokai import YokaiEnv
from zsceval.envs.yokai.dynamics import apply
from zsceval.envs.yokai.graph import legal_moves

from . import reference
from .helpers import random_legal


def cells_of(pos: torch.Tensor, g: int) -> list[tuple[int, int]]:
    return [(int(p) // g, int(p) % g) for p in pos]


def check_layout(env: YokaiEnv) -> None:
    """Every game: cards inside the field, on distinct cells, all connected by their sides."""
    g, pos = env.rules.grid, env.state.pos
    assert ((pos >= 0) & (pos < g * g)).all()
    ordered = pos.sort(1).values
    assert (ordered[:, 1:] != ordered[:, :-1]).all(), "two cards on one cell"
    for b in range(env.num_envs):
        assert reference.connected(cells_of(pos[b], g)), f"game {b} disconnected"


def check_legal_moves(env: YokaiEnv, games: range) -> None:
    """The engine's targets equal the brute-force definition for every movable card."""
    g, state = env.rules.grid, env.state
    legal = legal_moves(state.pos, ~state.locked, g)
    for b in games:
        cells = cells_of(state.pos[b], g)
        for card in range(env.rules.num_cards):
            got = {(int(p) // g, int(p) % g) for p in legal[b, card].nonzero().flatten()}
            want = set() if state.locked[b, card] else reference.legal_targets(cells, card, g)
            assert got == want, (b, card)


def check_mask_of_every_game(env: YokaiEnv, avail: torch.Tensor) -> None:
    """The move block of the mask (computed for move-phase games only on the CPU) equals the
    static formula used on accelerators: every game's legal moves, masked by the phase."""
    state, lay = env.state, env.rules.actions
    static = legal_moves(state.pos, ~state.locked, env.rules.grid) & (state.phase == 2)[:, None, None]
    rows = torch.arange(env.num_envs)
    assert torch.equal(avail[rows, state.current, lay.move : lay.reveal], static.flatten(1))


def check_final_reward(env: YokaiEnv, before, actions, avail, step) -> None:
    """Eq. 1 and Eq. 3 recomputed in plain Python on the final layout of every ended game."""
    final, out = apply(before, env.rules, actions, avail)
    C = env.rules.num_colours
    for b in step.terminated.nonzero().flatten().tolist():
        cells = cells_of(final.pos[b], env.rules.grid)
        colours = final.colour[b].tolist()
        clusters = reference.clustered(cells, colours)
        under = [colours[k] if k >= 0 else 0 for k in final.hint_card[b].tolist()]
        shows = [bool(final.hint_colours[b, h, c]) for h, c in enumerate(under)]
        statuses = final.hint_status[b].tolist()
        s = reference.score(statuses, shows)
        wrong = sum(st == 3 and not ok for st, ok in zip(statuses, shows, strict=True))
        early = bool(out.ended_early[b])
        want = s if all(clusters) else -int(early) - (C - sum(clusters)) - wrong
        assert float(step.reward[b]) == want, b
        assert float(step.infos["score"][b]) == s and bool(step.infos["win"][b]) == all(clusters)
        assert int(step.infos["clustered"][b]) == sum(clusters)


def play_randomly(version: str, players: int, games: int, steps: int, seed: int) -> dict[str, int]:
    env = YokaiEnv(games, num_agents=players, version=version, seed=seed)
    step = env.reset()
    gen = torch.Generator().manual_seed(seed)
    counts = {"ended": 0, "early": 0, "won": 0, "longest": 0}
    for t in range(steps):
        before, avail = env.state.clone(), step.avail_actions
        actions = random_legal(avail, gen)
        step = env.step(actions)
        assert not step.events[..., -1].any(), "a sampled available action was refused"
        assert not step.truncated.any(), "legal play ends by the rules, within 8 |H| steps"
        kept = ~step.terminated
        locked = before.locked & kept[:, None]
        assert torch.equal(env.state.pos[locked], before.pos[locked]), "a card under a hint moved"
        assert (env.state.hint_status[kept] >= before.hint_status[kept]).all()
        assert torch.equal(env.state.locked.sum(1), (env.state.hint_status == 3).sum(1))
        check_layout(env)
        if t % 7 == 0:
            check_legal_moves(env, range(2))
            check_mask_of_every_game(env, step.avail_actions)
        if step.terminated.any():
            check_final_reward(env, before, actions, avail, step)
        counts["ended"] += int(step.terminated.sum())
        counts["early"] += int(step.infos["ended_early"].sum())
        counts["won"] += int(step.infos["win"].sum())
        counts["longest"] = max(counts["longest"], int(before.t.max()) + 1)
    assert counts["longest"] <= env.rules.max_game_length
    return counts


@pytest.mark.parametrize(("version", "players"), [("3x3", 2), ("4x4", 3), ("3x3", 4)])
def test_random_legal_play_keeps_every_layout_legal(version, players):
    counts = play_randomly(version, players, games=48, steps=90, seed=1)
    assert counts["ended"] > 48 and counts["early"] < counts["ended"], counts


@pytest.mark.slow
@pytest.mark.parametrize(("version", "players"), [("3x3", 2), ("4x4", 2), ("4x4", 4)])
def test_random_legal_play_long(version, players):
    counts = play_randomly(version, players, games=256, steps=600, seed=2)
    assert counts["longest"] == YokaiEnv(1, num_agents=players, version=version).rules.max_game_length
