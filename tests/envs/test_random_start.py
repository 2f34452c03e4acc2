"""Random start states (``random_start_prob``; ZSC-Eval's random start, docs/overcooked-rules.md §5.9)."""

import pytest
import torch

from zsceval.envs.overcooked import OvercookedEnv
from zsceval.envs.overcooked.constants import Obj, encode_seq
from zsceval.rl.config import ConfigError, EnvConfig, TrainConfig, validate
from zsceval.rl.envs import make_env

ONION, TOMATO = 1, 2


def _standard(name: str, B: int) -> OvercookedEnv:
    env = OvercookedEnv(name, num_envs=B)
    env.reset()
    return env


@pytest.mark.parametrize("name,kinds", [("counter_circuit_mr", 2), ("counter_circuit", 1)])
def test_counters_uniform_over_items_and_ready_same_ingredient_soups(name, kinds):
    B = 4000
    env = OvercookedEnv(name, num_envs=B, random_start_prob=1.0, seed=1)
    env.reset()
    s, T = env.state, env.tables
    obj = s.obj[:, T.counter_cells].long()
    # Categories: each ingredient kind, dish, soup, nothing -> uniform.
    options = [Obj.ONION, Obj.TOMATO][:kinds] + [Obj.DISH, Obj.SOUP, Obj.NONE]
    freq = torch.stack([(obj == k).float().mean() for k in options])
    assert torch.allclose(freq, torch.full_like(freq, 1 / len(options)), atol=0.01), freq
    if kinds == 1:
        assert not bool((obj == Obj.TOMATO).any())
    soup = obj == Obj.SOUP
    seq = s.obj_seq[:, T.counter_cells].long()[soup]
    tick = s.obj_tick[:, T.counter_cells].long()[soup]
    allowed = {encode_seq([ONION] * 3), encode_seq([TOMATO] * 3)} if kinds == 2 else {encode_seq([ONION] * 3)}
    assert set(seq.unique().tolist()) == allowed
    assert torch.equal(tick, T.seq_time[seq])  # ready: cooked to the recipe's time (20)
    assert bool((tick == 20).all())
    # Non-soup counter objects carry no soup data.
    assert bool((s.obj_seq[:, T.counter_cells][~soup] == 0).all())
    assert bool((s.obj_tick[:, T.counter_cells][~soup] == -1).all())


@pytest.mark.parametrize("name,kinds", [("counter_circuit_mr", 2), ("counter_circuit", 1)])
def test_pots_hold_zero_to_three_of_one_kind_full_ones_ready(name, kinds):
    B = 4000
    env = OvercookedEnv(name, num_envs=B, random_start_prob=1.0, seed=2)
    env.reset()
    s, T = env.state, env.tables
    seq = s.obj_seq[:, T.pot_cells].long()
    tick = s.obj_tick[:, T.pot_cells].long()
    count = T.seq_len[seq]
    for k in range(4):
        assert abs((count == k).float().mean().item() - 0.25) < 0.015
    onions, tomatoes = T.seq_onions[seq], T.seq_tomatoes[seq]
    assert bool(((onions == 0) | (tomatoes == 0)).all())  # one kind per pot
    tomato_share = (tomatoes > 0).float().sum().item() / (count > 0).float().sum().item()
    assert 0.45 < tomato_share < 0.55 if kinds == 2 else tomato_share == 0
    has = count > 0
    assert torch.equal(s.obj[:, T.pot_cells].long() == Obj.SOUP, has)
    assert bool((tick[count == 3] == 20).all())  # ready
    assert bool((tick[(count > 0) & (count < 3)] == -1).all())  # idle, cooking not started
    assert bool((tick[~has] == -1).all())


def test_players_and_clock_are_standard_and_prob_zero_is_the_standard_start():
    B = 64
    std = _standard("coordination_ring_mr", B).state
    env = OvercookedEnv("coordination_ring_mr", num_envs=B, random_start_prob=1.0, seed=3)
    env.reset()
    for field in ("pos", "ori", "held", "held_seq", "held_tick", "timestep"):
        assert torch.equal(getattr(env.state, field), getattr(std, field)), field
    assert bool((env.state.obj != 0).any())
    zero = OvercookedEnv("coordination_ring_mr", num_envs=B, random_start_prob=0.0, seed=3)
    zero.reset()
    for field in ("obj", "obj_seq", "obj_tick", "obj_stamp"):
        assert torch.equal(getattr(zero.state, field), getattr(std, field)), field


def test_probability_selects_that_fraction_of_games_also_at_auto_reset():
    B = 4000
    env = OvercookedEnv("cramped_room", num_envs=B, random_start_prob=0.3, seed=4, horizon=3)
    env.reset()
    frac = (env.state.obj != 0).any(1).float().mean().item()
    assert abs(frac - 0.3) < 0.03
    stay = torch.full((B, 2), 4)
    env.step(stay)
    env.step(stay)
    before = env.state.obj.clone()
    step = env.step(stay)  # horizon: every game resets
    assert bool(step.truncated.all())
    assert int(env.state.timestep.max()) == 0
    frac_after = (env.state.obj != 0).any(1).float().mean().item()
    assert abs(frac_after - 0.3) < 0.03
    assert not torch.equal(env.state.obj, before)  # fresh draws


def test_same_seed_same_kitchens_other_seed_other_kitchens():
    def kitchens(seed):
        env = OvercookedEnv("counter_circuit_mr", num_envs=32, random_start_prob=0.5, seed=seed)
        env.reset()
        return env.state.obj.clone(), env.state.obj_seq.clone()

    a, b, c = kitchens(9), kitchens(9), kitchens(10)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


def test_random_kitchen_soups_deliver_for_their_recipe_value():
    """In every game, player 1 picks up whatever the random kitchen left on counter (5, 2) of
    counter_circuit_mr and faces the serving window (7, 2): three onions pay 20 (an order), three
    tomatoes -10 (not an order; ZSC-Eval's rule), anything else is not delivered."""
    B = 200
    env = OvercookedEnv("counter_circuit_mr", num_envs=B, random_start_prob=1.0, seed=6, horizon=10**6)
    env.reset()
    W = env.layout.width
    counter = 2 * W + 5
    obj, seq = env.state.obj[:, counter].long(), env.state.obj_seq[:, counter].long()
    T = env.tables
    expected = torch.zeros(B)
    soup = obj == Obj.SOUP
    expected[soup & (T.seq_onions[seq] == 3)] = env.layout.recipe(3, 0)[0]
    expected[soup & (T.seq_tomatoes[seq] == 3)] = env.layout.recipe(0, 3)[0]
    assert env.layout.recipe(3, 0)[0] == 20 and env.layout.recipe(0, 3)[0] == -10
    assert bool((expected == 20).any()) and bool((expected == -10).any()) and bool((expected == 0).any())
    env.state.pos[:, 0] = 2 * W + 6  # player 1 at (6, 2) ...
    env.state.ori[:, 0] = 3  # ... facing west, toward the counter
    total = torch.zeros(B)
    for action in (5, 2, 5):  # pick up, turn east (the window is not walkable), deliver
        total += env.step(torch.tensor([[action, 4]] * B)).reward
    assert torch.equal(total, expected)


def test_bad_probability_is_rejected():
    with pytest.raises(ValueError, match="random_start_prob"):
        OvercookedEnv("cramped_room", num_envs=1, random_start_prob=1.5)
    cfg = TrainConfig()
    cfg = type(cfg)(**{**cfg.__dict__, "env": EnvConfig(random_start_prob=-0.1)})
    with pytest.raises(ConfigError, match="random_start_prob"):
        validate(cfg)


def test_evaluation_envs_always_use_the_standard_start():
    cfg = EnvConfig(layout="counter_circuit_mr", num_envs=16, random_start_prob=1.0)
    train_env = make_env(cfg, seed=0)
    eval_env = make_env(cfg, seed=0, evaluation=True)
    train_env.reset()
    eval_env.reset()
    assert bool((train_env.state.obj != 0).any())
    assert not bool((eval_env.state.obj != 0).any())
