"""Turns, masks, observations and scores of hand-played Yōkai games (YLE Sec. 2 and 4)."""

from __future__ import annotations

import pytest
import torch

from zsceval.envs.yokai import EVENT_NAMES, YokaiEnv
from zsceval.envs.yokai.graph import adjacency, legal_moves

from .helpers import place

ROWS = [0, 0, 0, 1, 1, 1, 2, 2, 2]  # one colour per row of the start square: every colour clustered
MIXED = [0, 0, 0, 1, 2, 1, 2, 1, 2]  # Fig. 2's lost game: only colour 0 clustered
HINTS = [[1, 0, 0], [1, 1, 0], [0, 1, 1], [1, 0, 1]]  # {0}, {0, 1}, {1, 2}, {0, 2}
G = 9
EV = {name: i for i, name in enumerate(EVENT_NAMES)}


class Play:
    """Action indices of a 2-player 3x3 env and a one-player-at-a-time stepper."""

    def __init__(self, env: YokaiEnv) -> None:
        self.env, self.lay = env, env.rules.actions

    def peek(self, card):
        return self.lay.peek + card

    def move(self, card, r, c):
        return self.lay.move + card * G * G + r * G + c

    def reveal(self, hint):
        return self.lay.reveal + hint

    def put(self, hint, r, c):
        return self.lay.place + hint * G * G + r * G + c

    @property
    def end(self):
        return self.lay.end

    def __call__(self, action, player=None):
        """Step every game with ``action`` for the current player (or ``player``), NOOP for the rest."""
        env = self.env
        cur = env.state.current if player is None else torch.full((env.num_envs,), player)
        actions = torch.zeros(env.num_envs, env.num_agents, dtype=torch.int64)
        actions[torch.arange(env.num_envs), cur] = action
        return env.step(actions)


def allowed(step, game=0, player=0) -> set[int]:
    return set(step.avail_actions[game, player].nonzero().flatten().tolist())


def test_end_at_the_first_step_scores_eq_1_when_won_and_eq_3_when_lost(env2):
    play = Play(env2)
    place(env2, colours=ROWS)
    step = play(play.end)
    assert step.terminated.all() and not step.truncated.any()
    assert step.reward.tolist() == [20.0, 20.0]  # S = 5 x 4 face-down hints
    assert step.infos["score"].tolist() == [20.0, 20.0] and step.infos["win"].all()
    assert step.infos["ended_early"].all() and step.infos["clustered"].tolist() == [3, 3]
    assert step.sparse_by_agent[:, 0].tolist() == [20.0, 20.0] and (step.sparse_by_agent[:, 1] == 0).all()
    assert (step.events[:, 0, EV["end_early"]] == 1).all()

    place(env2, colours=MIXED)
    step = play(play.end)
    assert step.reward.tolist() == [-3.0, -3.0]  # -d_a - (|C| - c_a) - i_h = -1 - 2 - 0
    assert not step.infos["win"].any() and step.infos["clustered"].tolist() == [1, 1]


@pytest.mark.parametrize(
    ("colours", "score", "reward", "win"), [(ROWS, 2.0, 2.0, True), (MIXED, 4.0, -2.0, False)]
)
def test_a_full_game_ends_with_the_last_hint_and_scores_its_hints(env2, colours, score, reward, win):
    play = Play(env2)
    place(env2, colours=colours, hint_colours=torch.tensor(HINTS, dtype=torch.bool))
    # Turns 1..8: peek 1 and 2, move card 2 between (3, 5) and (2, 4), then the hint action:
    # reveal h, place h (h = 0..3) on cards 0, 3, 6 and 4.
    targets = [(3, 3), (4, 3), (5, 3), (4, 4)]
    shaped = torch.zeros(2, 2)
    for turn in range(8):
        cell = (2, 4) if turn % 2 == 0 else (3, 5)
        hint = turn // 2
        hint_action = play.reveal(hint) if turn % 2 == 0 else play.put(hint, *targets[hint])
        for action in (play.peek(1), play.peek(2), play.move(2, *cell), hint_action):
            step = play(action)
            assert not step.events[..., EV["illegal"]].any(), (turn, action)
            shaped += step.shaped_by_agent
            last = turn == 7 and action == hint_action
            assert bool(step.terminated.all()) == last and not step.truncated.any()
            if not last:
                assert (step.reward == 0).all()
    assert int(step.infos["timestep"][0]) == 0, "restarted"
    assert step.reward.tolist() == [reward, reward]
    assert step.infos["score"].tolist() == [score, score] and bool(step.infos["win"][0]) == win
    assert not step.infos["ended_early"].any()
    # Shaped (Sec. 4): each player's first peeks at cards 1 and 2 (+2 each); player 1 placed
    # the hints: +1 per hint showing the card's colour, -1 otherwise (h3 {0, 2} on card 4).
    correct_last = colours[4] in (0, 2)
    assert shaped[0].tolist() == [2.0, 2.0 + 3 + (1 if correct_last else -1)]


def test_phases_and_masks_of_a_turn(env2):
    play = Play(env2)
    step = place(env2, colours=ROWS)
    lay = env2.rules.actions
    assert allowed(step, player=0) == set(range(1, 10)) | {lay.end}
    assert allowed(step, player=1) == {0}, "a waiting player may only NOOP"
    step = play(play.peek(4))
    assert allowed(step, player=0) == set(range(1, 10)) - {5}, "a second, different card; no END"
    step = play(play.peek(0))
    moves = legal_moves(env2.state.pos, ~env2.state.locked, G)[0].flatten().nonzero().flatten() + lay.move
    assert allowed(step, player=0) == set(moves.tolist()) and len(moves) > 9
    step = play(play.move(4, 2, 4))
    assert allowed(step, player=0) == {lay.reveal + h for h in range(4)}, "nothing revealed to place yet"
    step = play(play.reveal(2))
    assert (env2.state.current == 1).all() and (env2.state.phase == 0).all()
    assert allowed(step, player=1) == set(range(1, 10)) | {lay.end} and allowed(step, player=0) == {0}
    for action in (play.peek(1), play.peek(2), play.move(1, 2, 3)):
        step = play(action)
    on_cards = {lay.place + 2 * G * G + int(p) for p in env2.state.pos[0]}
    assert allowed(step, player=1) == {lay.reveal + h for h in (0, 1, 3)} | on_cards
    step = play(play.put(2, 2, 4))  # on card 4
    assert env2.state.locked[0].tolist() == [k == 4 for k in range(9)]
    assert lay.peek + 4 not in allowed(step, player=0), "a card with a hint can no longer be peeked at"


def test_unavailable_actions_change_nothing_but_the_clock(env2):
    play = Play(env2)
    place(env2, colours=ROWS)
    play(play.peek(4))
    before = env2.state.clone()
    step = play(play.peek(4))  # the same card twice
    assert (step.events[:, 0, EV["illegal"]] == 1).all() and (step.events[:, 0, : EV["illegal"]] == 0).all()
    after = env2.state
    assert torch.equal(after.phase, before.phase) and torch.equal(after.peeked, before.peeked)
    assert torch.equal(after.t, before.t + 1)
    # The waiting player acting out of turn is ignored; the current player's action still counts.
    actions = torch.tensor([[play.peek(0), play.peek(3)]] * 2)
    step = env2.step(actions)
    assert (step.events[:, 1, EV["illegal"]] == 1).all() and (step.events[:, 0, EV["peek"]] == 1).all()
    assert (env2.state.phase == 2).all()


def test_move_is_passed_only_when_no_card_can_move(env2):
    play = Play(env2)
    line = [(4, c) for c in range(9)]
    step = place(
        env2, cells=line, colours=ROWS, phase=2,
        hint_status=torch.tensor([3, 3, 1, 1]), hint_card=torch.tensor([0, 8, -1, -1]),
    )  # fmt: skip
    assert allowed(step, player=0) == {0}, "inner cards of a line cannot move; the ends carry hints"
    step = play(0)
    assert (step.events[:, 0, EV["pass"]] == 1).all() and (env2.state.phase == 3).all()


def test_others_see_which_card_is_peeked_but_not_its_colour():
    for memory in (False, True):
        env = YokaiEnv(1, num_agents=2, perfect_memory=memory)
        env.reset()
        play = Play(env)
        place(env, colours=ROWS, hint_colours=torch.tensor(HINTS, dtype=torch.bool))
        ch = {name: i for i, name in enumerate(env.obs_channels)}
        step = play(play.peek(7))  # card 7 at (5, 4), colour 2
        cell = step.obs[0, :, 5, 4]  # [n, F]
        assert cell[0, ch["colour_2"]] == 1 and cell[0, : ch["hint_colour_0"]].sum() == 1
        assert step.obs[0, 1, ..., : ch["hint_colour_0"]].sum() == 0, "player 1 sees no colour at all"
        assert cell[:, ch["peeked"]].tolist() == [1, 1]
        assert cell[0, ch["seen_by_0"]] == 1 and cell[1, ch["seen_by_1"]] == 1, "seat-relative: player 0"
        assert cell[1, ch["seen_by_0"]] == 0
        assert step.obs[0, :, 0, 0, ch["phase"]].tolist() == [2, 2]
        assert step.obs[0, :, 8, 8, ch["is_current"]].tolist() == [1, 0]
        assert step.obs[0, :, 8, 8, ch["turn_offset"]].tolist() == [0, 1]
        hint_col = step.obs[0, :, :4, G]  # [n, H, F]
        assert hint_col[..., ch["hint_status"]].tolist() == [[1] * 4] * 2
        assert hint_col[..., ch["hint_colour_0"] : ch["present"]].sum() == 0, "face-down hints are hidden"
        for action in (play.peek(1), play.move(1, 2, 3)):
            play(action)
        step = play(play.reveal(1))
        assert step.obs[0, :, 1, G, ch["hint_colour_0"] : ch["present"]].tolist() == [[1, 1, 0]] * 2
        # The turn is over: the colour stays only with perfect memory; who peeked stays public.
        assert int(step.obs[0, 0, 5, 4, ch["colour_2"]]) == int(memory)
        assert step.obs[0, 0, 5, 4, ch["seen_by_0"]] == 1 and step.obs[0, 0, 5, 4, ch["peeked"]] == 0


def test_graph_view_matches_the_image(env2):
    step = place(env2, colours=ROWS)
    adj, feats = env2.graph_observation()
    Y, H = 9, 4
    assert adj.shape == (2, Y + H, Y + H) and feats.shape == (2, 2, Y + H, len(env2.obs_channels) + 2)
    assert torch.equal(adj[:, :Y, :Y], adjacency(env2.state.pos, G)) and not adj[:, Y:].any()
    assert feats[0, 0, 4, -2:].tolist() == [5, 5], "card 4 at row 4, col 4 (+1)"
    F = len(env2.obs_channels)
    assert torch.equal(feats[0, :, 4, :F], step.obs[0, :, 4, 4])
    assert torch.equal(feats[0, :, Y + 2, :F], step.obs[0, :, 2, G])


def test_auto_reset_and_seeding():
    def deal_colours(seed):
        env = YokaiEnv(8, seed=seed)
        env.reset()
        return env.state.colour.clone(), env

    a, env = deal_colours(3)
    b, _ = deal_colours(3)
    c, _ = deal_colours(4)
    assert torch.equal(a, b) and not torch.equal(a, c)
    play = Play(env)
    for action in (play.peek(0), play.peek(1), play.move(4, 2, 4), play.reveal(0), play.end):
        step = play(action)
    assert step.terminated.all() and step.final_obs is not None
    assert not torch.equal(env.state.colour, a), "new deals"
    assert (step.infos["timestep"] == 0).all() and (env.state.phase == 0).all()
    assert not torch.equal(step.final_obs, step.obs), "the final view shows the moved card and the hint"
    assert (step.final_obs[:, :, 2, 4, 2 * 3 + 1] == 5).all(), "card 4 (id 5) at (2, 4) before the reset"


def test_truncation_at_the_horizon_with_ignored_actions():
    env = YokaiEnv(2, horizon=3)
    env.reset()
    wrong = torch.full((2, 2), env.rules.actions.move)  # never legal at the first phase
    steps = [env.step(wrong) for _ in range(3)]
    assert [bool(s.truncated.all()) for s in steps] == [False, False, True]
    assert not any(s.terminated.any() for s in steps) and (steps[-1].reward == 0).all()


def test_bad_actions_and_step_before_reset():
    env = YokaiEnv(2)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(torch.zeros(2, 2, dtype=torch.int64))
    env.reset()
    for bad in (torch.zeros(2, 3, dtype=torch.int64), torch.zeros(2, 2, dtype=torch.int32),
                torch.full((2, 2), env.num_actions), torch.full((2, 2), -1), [[0, 0], [0, 0]]):  # fmt: skip
        with pytest.raises(ValueError):
            env.step(bad)
    assert "a0" in env.render(0) or "hints:" in env.render(0)
    with pytest.raises(IndexError):
        env.render(5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_runs_on_cuda_with_the_same_rules():
    from .helpers import random_legal

    env = YokaiEnv(64, device="cuda", seed=0)
    step = env.reset()
    gen = torch.Generator(device="cuda").manual_seed(0)
    for _ in range(40):
        step = env.step(random_legal(step.avail_actions, gen))
        assert step.obs.device.type == "cuda" and step.avail_actions.any(-1).all()


def test_clustering_events_sum_to_the_colours_clustered_by_play():
    """Per game, the ``colour_clustered`` minus ``colour_unclustered`` events of all seats equal NC at
    the end minus NC of the deal (the learning benchmark's dNC rests on this)."""
    from .helpers import random_legal

    env = YokaiEnv(64, seed=11)
    step = env.reset()
    deal_nc = env.state.clusters.clone()
    net = torch.zeros(64)
    first_end = torch.full((64,), -1.0)
    gen = torch.Generator().manual_seed(12)
    for _ in range(32):
        mask = step.avail_actions.clone()
        mask[..., env.rules.actions.end] = False  # play whole games: more moves
        mask[..., 0] |= ~mask.any(-1)
        step = env.step(random_legal(mask, gen))
        live = first_end < 0
        ev = step.events[:, :, EV["colour_clustered"]] - step.events[:, :, EV["colour_unclustered"]]
        net += torch.where(live, ev.sum(1).float(), 0.0)
        ended = live & step.terminated
        first_end[ended] = step.infos["clustered"][ended].float()
    assert (first_end >= 0).all(), "every game ended within 8 |H| steps"
    assert torch.equal(net, first_end - deal_nc.float())
    assert (net != 0).any() and (deal_nc > 0).any()  # the check is not vacuous
