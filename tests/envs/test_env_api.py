"""The OvercookedEnv contract: spaces match what is returned, seeding, auto-reset, bad input."""

import pytest
import torch

from zsceval.envs.overcooked import (
    CLASSIC_CHANNELS,
    CLASSIC_EVENTS,
    MULTI_RECIPE_CHANNELS,
    MULTI_RECIPE_EVENTS,
    OvercookedEnv,
    list_layouts,
)

ALL = [lay.name for lay in list_layouts()]


def random_actions(env, gen, p_interact=0.3):
    a = torch.randint(0, 5, (env.num_envs, env.num_agents), generator=gen)
    interact = torch.rand(env.num_envs, env.num_agents, generator=gen) < p_interact
    return torch.where(interact, 5, a)


@pytest.mark.parametrize("name", ALL)
def test_returned_arrays_match_declared_spec(name):
    env = OvercookedEnv(name, num_envs=5, horizon=25)
    H, W, C = env.obs_shape
    multi = env.layout.dynamics == "multi_recipe"
    assert env.obs_channels == (MULTI_RECIPE_CHANNELS if multi else CLASSIC_CHANNELS)
    assert env.event_names == (MULTI_RECIPE_EVENTS if multi else CLASSIC_EVENTS)
    assert (H, W) == (env.layout.height, env.layout.width) and C == len(env.obs_channels)
    gen = torch.Generator().manual_seed(0)
    step = env.reset()
    for t in range(30):
        B, n, E = env.num_envs, env.num_agents, len(env.event_names)
        assert step.obs.shape == (B, n, H, W, C) and step.obs.dtype == torch.uint8
        assert step.critic_obs.shape == (B, n, *env.critic_obs_shape)
        assert step.avail_actions.shape == (B, n, 6) and step.avail_actions.dtype == torch.bool
        assert step.avail_actions[..., 4].all()  # STAY is never masked
        assert step.reward.shape == (B,) and step.reward.dtype == torch.float32
        assert step.sparse_by_agent.shape == step.shaped_by_agent.shape == (B, n)
        assert step.events.shape == (B, n, E) and step.events.dtype == torch.int16
        assert step.events.min() >= 0 and step.events.max() <= 1
        assert step.interactions.shape == step.interaction_cell.shape == (B, n)
        assert step.terminated.dtype == step.truncated.dtype == torch.bool
        assert not step.terminated.any()
        # Every plane is integer-valued and small: 0/1 planes, counts <= 3, ticks <= 20.
        assert int(step.obs.max()) <= 20
        # Exactly one ego location per perspective.
        assert (step.obs[..., 0].flatten(2).sum(-1) == 1).all()
        assert torch.equal(step.reward, step.sparse_by_agent.sum(1))
        step = env.step(random_actions(env, gen))
        assert bool(step.truncated.all()) == (t + 1 == 25)


def test_critic_obs_concatenates_own_then_other_encodings():
    env = OvercookedEnv("counter_circuit", num_envs=2)
    step = env.reset()
    C = env.obs_shape[2]
    crit = step.critic_obs
    assert torch.equal(crit[:, 0, ..., :C], step.obs[:, 0]) and torch.equal(
        crit[:, 0, ..., C:], step.obs[:, 1]
    )
    assert torch.equal(crit[:, 1, ..., :C], step.obs[:, 1]) and torch.equal(
        crit[:, 1, ..., C:], step.obs[:, 0]
    )


def test_same_seed_same_trajectory_and_seats():
    def rollout(seed):
        env = OvercookedEnv("coordination_ring", num_envs=16, seed=seed, randomize_seats=True, horizon=20)
        gen = torch.Generator().manual_seed(123)
        out = [env.reset().obs]
        seats = [env.state.seats.clone()]
        for _ in range(45):
            step = env.step(random_actions(env, gen))
            out.append(step.obs)
            seats.append(env.state.seats.clone())
        return torch.stack(out), torch.stack(seats)

    obs_a, seats_a = rollout(7)
    obs_b, seats_b = rollout(7)
    obs_c, seats_c = rollout(8)
    assert torch.equal(obs_a, obs_b) and torch.equal(seats_a, seats_b)
    assert not torch.equal(seats_a, seats_c)
    # Seats are re-drawn at each reset (every 20 steps) and both orders occur.
    assert not torch.equal(seats_a[0], seats_a[-1])


def test_seat_randomization_reports_in_slot_order():
    env = OvercookedEnv("cramped_room", num_envs=64, seed=0, randomize_seats=True)
    step = env.reset()
    seats = env.state.seats
    swapped = seats[:, 0] == 1
    assert swapped.any() and (~swapped).any()
    # Slot 0's ego plane is at the start cell of the seat it drives.
    W = env.layout.width
    starts = [y * W + x for x, y in env.layout.start_positions]
    ego0 = step.obs[:, 0, ..., 0].flatten(1).argmax(1)
    expected = torch.where(swapped, starts[1], starts[0])
    assert torch.equal(ego0, expected)


def test_auto_reset_returns_final_obs_of_the_truncated_state():
    env = OvercookedEnv("cramped_room", num_envs=3, horizon=5)
    env.reset()
    east = torch.tensor([[2, 3]] * 3)  # player 0 east, player 1 west
    for _ in range(4):
        step = env.step(east)
        assert step.final_obs is None and not step.truncated.any()
    moved = env.export_state(0)
    step = env.step(east)
    assert step.truncated.all() and step.final_obs is not None
    # final_obs shows the moved players; obs is the fresh start state.
    start = OvercookedEnv("cramped_room", num_envs=3).reset().obs
    assert torch.equal(step.obs, start)
    assert not torch.equal(step.final_obs, start)
    assert env.export_state(0)["timestep"] == 0 and moved["timestep"] == 4


def test_bad_actions_raise_and_leave_the_state_unchanged():
    env = OvercookedEnv("counter_circuit", num_envs=4)
    env.reset()
    env.step(torch.full((4, 2), 5))
    before = [env.export_state(i) for i in range(4)]
    bad = [
        torch.zeros(4, 3, dtype=torch.int64),  # wrong shape
        torch.zeros(3, 2, dtype=torch.int64),
        torch.zeros(4, 2, dtype=torch.float32),  # wrong dtype
        torch.zeros(4, 2, dtype=torch.int32),
        torch.full((4, 2), 6),  # out of range
        torch.full((4, 2), -1),
        [[0, 0]] * 4,  # not a tensor
    ]
    for actions in bad:
        with pytest.raises(ValueError):
            env.step(actions)
    assert [env.export_state(i) for i in range(4)] == before


def test_step_before_reset_and_bad_construction():
    env = OvercookedEnv("counter_circuit", num_envs=2)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(torch.zeros(2, 2, dtype=torch.int64))
    with pytest.raises(ValueError, match="num_envs"):
        OvercookedEnv("counter_circuit", num_envs=0)
    with pytest.raises(ValueError, match="Valid layouts"):
        OvercookedEnv("no_such_layout")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error raised without CUDA")
def test_cuda_without_cuda_is_a_clear_error():
    with pytest.raises(ValueError, match="CUDA is not available"):
        OvercookedEnv("counter_circuit", device="cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    gen = torch.Generator().manual_seed(0)
    cpu = OvercookedEnv("counter_circuit", num_envs=64)
    gpu = OvercookedEnv("counter_circuit", num_envs=64, device="cuda")
    a, b = cpu.reset(), gpu.reset()
    for _ in range(100):
        actions = random_actions(cpu, gen, p_interact=0.4)
        a, b = cpu.step(actions), gpu.step(actions.cuda())
        assert torch.equal(a.obs, b.obs.cpu()) and torch.equal(a.events, b.events.cpu())
        assert torch.equal(a.shaped_by_agent, b.shaped_by_agent.cpu())


def _state(players, objects=(), timestep=0):
    return {
        "players": [{"position": p, "orientation": (0, -1), "held_object": h} for p, h in players],
        "objects": list(objects),
        "bonus_orders": [],
        "all_orders": [{"ingredients": ("onion", "onion", "onion")}],
        "timestep": timestep,
    }


def test_import_export_round_trip_and_render():
    env = OvercookedEnv("counter_circuit", num_envs=2)
    env.reset()
    soup = {
        "name": "soup", "position": (3, 0), "_ingredients": [{"name": "onion", "position": (3, 0)}] * 2,
        "cooking_tick": -1, "is_cooking": False, "is_ready": False, "is_idle": True, "cook_time": -1,
        "_cooking_tick": -1,
    }  # fmt: skip
    d = _state([((3, 3), {"name": "dish", "position": (3, 3)}), ((3, 1), None)],
               [{"name": "onion", "position": (0, 1)}, soup], timestep=7)  # fmt: skip
    env.import_state(1, d)
    assert env.export_state(1) == d
    assert env.export_state(0)["timestep"] == 0  # other games untouched
    picture = env.render(1)
    assert "t=7" in picture and "soup[onion,onion] idle" in picture and "holding dish" in picture


@pytest.mark.parametrize(
    "players, objects, message",
    [
        ([((0, 0), None), ((3, 1), None)], [], "not a floor cell"),
        ([((3, 1), None), ((3, 1), None)], [], "two players"),
        ([((3, 3), None), ((3, 1), None)],
         [{"name": "onion", "position": (0, 1)}, {"name": "dish", "position": (0, 1)}], "two objects"),
        ([((3, 3), None), ((3, 1), None)], [{"name": "onion", "position": (1, 2)}], "counters and pots"),
        ([((3, 3), None), ((3, 1), None)], [{"name": "onion", "position": (3, 0)}], "only hold a soup"),
        ([((3, 3), None), ((3, 1), None)], [{"name": "tomato", "position": (0, 1)}], "tomatoes"),
        ([((3, 3), None), ((3, 1), None)], [{"name": "cake", "position": (0, 1)}], "unknown object"),
        ([((3, 3), None), ((3, 1), None)], [{"name": "onion", "position": (9, 9)}], "outside"),
    ],
)  # fmt: skip
def test_import_of_inconsistent_state_is_refused_and_changes_nothing(players, objects, message):
    env = OvercookedEnv("counter_circuit", num_envs=1)
    env.reset()
    before = env.export_state(0)
    with pytest.raises(ValueError, match=message):
        env.import_state(0, _state(players, objects))
    assert env.export_state(0) == before
