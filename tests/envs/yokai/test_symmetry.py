"""The symmetries other-play uses (YLE Sec. 5.4, App. C.4): bijections that commute with the rules."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from zsceval.envs.yokai import YokaiEnv
from zsceval.envs.yokai.dynamics import apply, available_actions, score

from .helpers import place, random_legal


def _random_positions(version: str, players: int, B: int, seed: int) -> YokaiEnv:
    """An env whose B games were played for different numbers of random legal steps (every phase,
    hints face up and placed, cards moved)."""
    env = YokaiEnv(B, num_agents=players, version=version, seed=seed)
    step = env.reset()
    gen = torch.Generator().manual_seed(seed)
    stop = torch.randint(0, env.rules.max_game_length, (B,), generator=gen)
    for t in range(env.rules.max_game_length):
        acts = random_legal(step.avail_actions, gen)
        # games past their stop step only NOOP (ignored, counted as illegal): they keep their position
        acts = torch.where((t >= stop)[:, None], 0, acts)
        step = env.step(acts)
    return env


def _assert_states_equal(a, b) -> None:
    for f in dataclasses.fields(a):
        assert torch.equal(getattr(a, f.name), getattr(b, f.name)), f.name


def test_group_sizes_and_elements():
    sym = YokaiEnv(1).symmetries()
    assert sym.groups == {"C": 6, "R": 4} and sym.size == 24
    assert sym.elements("C").tolist() == [0, 1, 2, 3, 4, 5]
    assert sym.elements("R").tolist() == [0, 6, 12, 18]
    assert sym.elements("r+c").tolist() == list(range(24))
    assert YokaiEnv(1, version="4x4").symmetries().size == 96
    with pytest.raises(ValueError, match="unknown Yokai symmetries 'C\\+X'.*C \\(colour"):
        sym.elements("C+X")
    with pytest.raises(ValueError, match="unknown Yokai symmetries"):
        sym.elements("")


@pytest.mark.parametrize("version", ["3x3", "4x4"])
def test_maps_are_bijections_with_inverses(version):
    env = _random_positions(version, 2, 8, seed=1)
    sym = env.symmetries()
    A = env.num_actions
    assert torch.equal(sym.action_perm.sort(-1).values, torch.arange(A).expand(sym.size, A))
    for e in range(sym.size):
        inv = int(sym.inverse[e])
        assert torch.equal(sym.action_perm[inv][sym.action_perm[e]], torch.arange(A)), e
    e = torch.arange(env.num_envs) % sym.size + 1
    e = e % sym.size
    back = sym.state(sym.state(env.state, e), sym.inverse[e])
    _assert_states_equal(back, env.state)
    obs = env._observe(env.state).flatten(0, 1)  # [B n, g, g + 1, F]
    en = e.repeat_interleave(env.num_agents)
    assert torch.equal(sym.observation(sym.observation(obs, en), sym.inverse[en]), obs)


def test_quarter_turn_and_recolouring_on_a_hand_built_position():
    """Element 7 = one clockwise quarter-turn with the colour permutation (0, 2, 1), by hand:
    the card at (3,3) moves to (3,5), where card 2 starts, so card 0 becomes card 2."""
    env = YokaiEnv(1, num_agents=2, version="3x3", seed=0)
    env.reset()
    sym = env.symmetries()
    e = torch.tensor([7])
    assert sym.colour_perm[7].tolist() == [0, 2, 1]
    assert sym.card_perm[7].tolist() == [2, 5, 8, 1, 4, 7, 0, 3, 6]
    cells = [(3, 3), (3, 4), (3, 5), (4, 3), (4, 4), (4, 5), (5, 3), (5, 4), (2, 3)]  # card 8 above card 0
    place(env, cells=cells, colours=[1, 0, 0, 2, 2, 2, 0, 1, 1],
          hint_status=torch.tensor([3, 1, 1, 1]), hint_card=torch.tensor([0, -1, -1, -1]))  # fmt: skip
    g = sym.state(env.state, e)
    assert g.pos[0, 2].item() == 3 * 9 + 5  # card 0 at (3,3) -> card 2 at (3,5)
    assert g.pos[0, sym.card_perm[7, 8]].item() == 3 * 9 + 6  # card 8 at (2,3) -> (3,6)
    assert g.colour[0, 2].item() == 2  # colour 1 -> 2
    assert g.hint_card[0].tolist() == [2, -1, -1, -1]  # the hint on card 0 lies on card 2
    layout = env.rules.actions
    peek0 = torch.tensor([layout.peek + 0])
    assert sym.action(peek0, e).item() == layout.peek + 2
    move = torch.tensor([layout.move + 8 * 81 + 2 * 9 + 4])  # card 8 to (2,4)
    assert sym.action(move, e).item() == layout.move + 6 * 81 + 4 * 9 + 6  # card 6 to (4,6)
    assert sym.action(move, e, inverse=True).item() != sym.action(move, e).item()
    for fixed in (0, layout.reveal + 1, layout.end):
        assert sym.action(torch.tensor([fixed]), e).item() == fixed
    place_a = torch.tensor([layout.place + 0 * 81 + 3 * 9 + 3])  # hint 0 on the card at (3,3)
    assert sym.action(place_a, e).item() == layout.place + 3 * 9 + 5


@pytest.mark.parametrize(
    ("version", "players", "spec"), [("3x3", 2, "C+R"), ("4x4", 3, "C+R"), ("3x3", 4, "R")]
)
def test_symmetries_commute_with_the_rules(version, players, spec):
    """For random positions and every element g: mask(g s) = g mask(s), obs(g s) = g obs(s) for
    every seat (the critic's too), and step(g s, g a) = g step(s, a) with equal rewards, events,
    termination and score."""
    env = _random_positions(version, players, 48, seed=3)
    sym = env.symmetries()
    rules, n = env.rules, env.num_agents
    elements = sym.elements(spec)
    e = elements[torch.arange(env.num_envs) % len(elements)]
    s = env.state.clone()
    avail = available_actions(s, rules)
    assert avail.flatten(0, 1)[:, 1:].any(), "the positions must offer more than NOOP"
    gs = sym.state(s, e)
    en = e.repeat_interleave(n)
    assert torch.equal(available_actions(gs, rules).flatten(0, 1), sym.mask(avail.flatten(0, 1), en))

    other = YokaiEnv(env.num_envs, num_agents=players, version=version, seed=9)
    other.reset()
    mapped = other.set_state(gs)
    first = env.set_state(s)
    assert torch.equal(mapped.obs.flatten(0, 1), sym.observation(first.obs.flatten(0, 1), en))
    assert torch.equal(mapped.critic_obs.flatten(0, 1), sym.observation(first.critic_obs.flatten(0, 1), en))

    gen = torch.Generator().manual_seed(4)
    for _ in range(6):  # several steps from each position, each with a random legal action
        acts = random_legal(avail, gen)
        gacts = sym.action(acts.flatten(), en).view_as(acts)
        nxt, out = apply(s, rules, acts, avail)
        gnxt, gout = apply(gs, rules, gacts, sym.mask(avail.flatten(0, 1), en).view_as(avail))
        _assert_states_equal(gnxt, sym.state(nxt, e))
        for f in ("terminated", "ended_early", "shaped", "events", "actor"):
            assert torch.equal(getattr(gout, f), getattr(out, f)), f
        assert torch.equal(gout.clustered, out.clustered.gather(1, sym.colour_perm[e].argsort(-1)))
        assert all(torch.equal(x, y) for x, y in zip(score(gnxt, rules), score(nxt, rules), strict=True))
        s, gs = nxt, gnxt
        avail = available_actions(s, rules)
