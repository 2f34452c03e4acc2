"""Overcooked's host-side episode clock (``lockstep_timestep``): it follows every game's
``timestep`` through steps, the horizon's auto-reset, the compiled step's path, a restored state and
an imported game, and says None when the games' timesteps differ."""

import torch

from zsceval.envs.overcooked import OvercookedEnv

STAY = 4


def _stay(env):
    return env.step(torch.full((env.num_envs, env.num_agents), STAY, dtype=torch.int64))


def test_the_clock_equals_every_games_timestep_and_wraps_at_the_horizon():
    env = OvercookedEnv("cramped_room", num_envs=3, horizon=5)
    assert env.lockstep_timestep is None  # before the first reset
    s = env.reset()
    assert env.lockstep_timestep == 0
    seen = []
    for _ in range(12):
        s = _stay(env)
        t = s.infos["timestep"]
        assert bool((t == t[0]).all())
        assert env.lockstep_timestep == int(t[0])
        assert bool(s.done.all()) == (env.lockstep_timestep == 0)
        seen.append(env.lockstep_timestep)
    assert seen == [1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2]


def test_the_compiled_step_path_advances_the_clock():
    env = OvercookedEnv("cramped_room", num_envs=2, horizon=3)
    env.reset()
    env._compiled_step = env.graph_step  # the compiled path, run eagerly
    ticks = [(_stay(env).infos["timestep"][0].item(), env.lockstep_timestep) for _ in range(4)]
    assert ticks == [(1, 1), (2, 2), (0, 0), (1, 1)]


def test_a_restored_state_sets_the_clock_and_mixed_timesteps_clear_it():
    env = OvercookedEnv("cramped_room", num_envs=2, horizon=10)
    env.reset()
    for _ in range(4):
        _stay(env)
    saved = env.state_dict()
    other = OvercookedEnv("cramped_room", num_envs=2, horizon=10)
    other.load_state_dict(saved)
    assert other.lockstep_timestep == 4
    saved["state"]["timestep"] = torch.tensor([4, 6])
    other.load_state_dict(saved)
    assert other.lockstep_timestep is None
    # unknown stays unknown through steps (the runner then reads done on the host)
    s = _stay(other)
    assert other.lockstep_timestep is None and s.infos["timestep"].tolist() == [5, 7]


def test_importing_one_game_at_another_timestep_clears_the_clock():
    env = OvercookedEnv("cramped_room", num_envs=2)
    env.reset()
    state = env.export_state(0)
    env.import_state(1, {**state, "timestep": 0})
    assert env.lockstep_timestep == 0
    env.import_state(1, {**state, "timestep": 7})
    assert env.lockstep_timestep is None
    env.import_state(0, {**state, "timestep": 7})
    assert env.lockstep_timestep == 7
