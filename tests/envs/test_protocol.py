"""Conformance of every registered env to ``BatchedEnv``: declared spaces match what is returned,
and ``state_dict`` / ``load_state_dict`` resume a run bit-identically."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from zsceval.envs import BatchedEnv, Step, env_names, make

B = 6
# (name, options): every registered env, several configs each; small horizons cross auto-resets.
SEATS_AND_STARTS = {"horizon": 7, "randomize_seats": True}
CASES = [
    ("overcooked", {"layout": "cramped_room", "horizon": 7}),
    ("overcooked", {"layout": "counter_circuit_mr", **SEATS_AND_STARTS, "random_start_prob": 0.5}),
    ("overcooked", {"layout": "forced_coordination", **SEATS_AND_STARTS, "random_start_prob": 1.0}),
    ("toy", {"num_agents": 2, "horizon": 3}),
    ("toy", {"num_agents": 3, "horizon": 4}),
    ("toy", {"num_agents": 3, "horizon": 4, "obs_dtype": "float32"}),
    ("yokai", {"num_agents": 2, "horizon": 5}),
    ("yokai", {"num_agents": 3, "version": "4x4", "horizon": 6, "perfect_memory": True}),
]  # fmt: skip
IDS = [f"{name}-{'-'.join(str(v) for v in opts.values())}" for name, opts in CASES]
TORCH_DTYPE = {np.dtype(np.uint8): torch.uint8, np.dtype(np.float32): torch.float32}


def random_actions(env, gen: torch.Generator) -> torch.Tensor:
    return torch.randint(0, env.num_actions, (env.num_envs, env.num_agents), generator=gen)


def check_obs(space, obs: torch.Tensor, lead: tuple[int, ...], what: str) -> None:
    """``obs [*lead, *space.shape]`` has the space's dtype and lies within its bounds."""
    assert obs.dtype == TORCH_DTYPE[space.dtype], f"{what}: dtype {obs.dtype} != declared {space.dtype}"
    assert tuple(obs.shape) == (*lead, *space.shape), f"{what}: shape {tuple(obs.shape)} vs {space.shape}"
    arr = obs.cpu().numpy()
    assert (arr >= space.low).all() and (arr <= space.high).all(), f"{what}: values outside the bounds"
    rows = arr.reshape(-1, *space.shape)
    assert all(space.contains(row) for row in rows), f"{what}: space.contains refused a row"


def check_step(env, step: Step) -> None:
    """Everything a ``Step`` holds has the declared shape, dtype and range."""
    n, A, E = env.num_agents, env.num_actions, len(env.event_names)
    check_obs(env.single_observation_space, step.obs, (B, n), "obs")
    check_obs(env.single_critic_observation_space, step.critic_obs, (B, n), "critic_obs")
    assert (step.final_obs is not None) == bool(step.done.any())
    if step.final_obs is not None:
        check_obs(env.single_observation_space, step.final_obs, (B, n), "final_obs")
        check_obs(env.single_critic_observation_space, step.final_critic_obs, (B, n), "final_critic_obs")
        kept = ~step.done
        assert torch.equal(step.final_obs[kept], step.obs[kept])
    assert step.avail_actions.shape == (B, n, A) and step.avail_actions.dtype == torch.bool
    assert step.avail_actions.any(-1).all(), "every agent has an available action"
    assert step.reward.shape == (B,) and step.reward.dtype == torch.float32
    for x in (step.sparse_by_agent, step.shaped_by_agent):
        assert x.shape == (B, n) and x.dtype == torch.float32
    assert step.events.shape == (B, n, E) and step.events.dtype == torch.int16
    assert step.interactions.shape == step.interaction_cell.shape == (B, n)
    assert step.terminated.shape == step.truncated.shape == (B,)
    assert step.terminated.dtype == step.truncated.dtype == torch.bool
    assert isinstance(step.infos, dict)
    for key, value in step.infos.items():
        assert isinstance(key, str) and isinstance(value, torch.Tensor) and value.shape[0] == B, key
    for f in dataclasses.fields(step):
        value = getattr(step, f.name)
        if isinstance(value, torch.Tensor):
            assert value.device == env.device, f.name


@pytest.mark.parametrize(("name", "options"), CASES, ids=IDS)
def test_env_conforms_to_protocol_and_declared_spaces(name, options):
    env = make(name, num_envs=B, device="cpu", seed=1, **options)
    assert isinstance(env, BatchedEnv)
    n = env.num_agents
    assert env.num_envs == B and n == options.get("num_agents", 2)
    assert env.possible_agents == tuple(f"agent_{k}" for k in range(n))
    assert env.single_action_space.n == env.num_actions and env.single_action_space.start == 0
    assert env.single_observation_space.shape == tuple(env.obs_shape)
    assert env.single_critic_observation_space.shape == tuple(env.critic_obs_shape)
    assert (env.single_observation_space.low == 0).all()
    assert isinstance(env.spec_dict(), dict) and json.dumps(env.spec_dict())
    gen = torch.Generator().manual_seed(0)
    step = env.reset()
    check_step(env, step)
    truncations = 0
    for _ in range(2 * env.horizon + 2):
        step = env.step(random_actions(env, gen))
        check_step(env, step)
        truncations += int(step.truncated.any())
    assert truncations == 2, "the rollout crossed two auto-resets"


def test_space_check_rejects_values_outside_the_declared_bounds():
    env = make("overcooked", num_envs=B, layout="cramped_room")
    step = env.reset()
    check_step(env, step)
    step.obs = step.obs.clone()
    step.obs[0, 0, 0, 0, 16] = 21  # cook ticks above the longest cook time (20)
    with pytest.raises(AssertionError, match="obs"):
        check_step(env, step)
    with pytest.raises(AssertionError, match="dtype"):
        check_obs(env.single_observation_space, step.obs.float(), (B, 2), "obs")


def test_registered_envs_are_all_covered_here():
    # football (a simulator per game in worker processes, needs gfootball) has its own protocol
    # test: tests/envs/football/test_env.py
    assert sorted({name for name, _ in CASES} | {"football"}) == env_names()


def test_toy_float32_observations_equal_uint8_values():
    def rollout(obs_dtype):
        env = make("toy", num_envs=B, seed=3, num_agents=3, horizon=4, obs_dtype=obs_dtype)
        gen = torch.Generator().manual_seed(0)
        steps = [env.reset()] + [env.step(random_actions(env, gen)) for _ in range(6)]
        return [s.obs for s in steps], [s.reward for s in steps]

    (obs_u8, rew_u8), (obs_f32, rew_f32) = rollout("uint8"), rollout("float32")
    assert all(o.dtype == torch.float32 for o in obs_f32)
    assert all(torch.equal(a.float(), b) for a, b in zip(obs_u8, obs_f32, strict=True))
    assert all(torch.equal(a, b) for a, b in zip(rew_u8, rew_f32, strict=True))


def test_toy_three_agents_score_only_when_all_match():
    env = make("toy", num_envs=2, num_agents=3)
    step = env.reset()
    cue = step.obs[:, 0, 0, 0, :4].argmax(-1)
    actions = cue[:, None].repeat(1, 3)
    actions[1, 2] = (cue[1] + 1) % 4  # game 1: the third agent misses the cue
    step = env.step(actions)
    assert step.reward.tolist() == [20.0, 0.0]
    assert step.events[..., 0].tolist() == [[1, 1, 1], [1, 1, 0]]


def test_toy_rejects_uint8_overflow_and_unknown_dtype():
    with pytest.raises(ValueError, match="float32"):
        make("toy", num_envs=1, horizon=400)
    with pytest.raises(ValueError, match="uint8, float32"):
        make("toy", num_envs=1, obs_dtype="float16")


# ---------------------------------------------------------------------------- state round trip
def serialize(state: dict) -> bytes:
    """What a checkpoint does: tensors to safetensors, everything else to JSON (strict types)."""
    tensors: dict[str, torch.Tensor] = {}

    def walk(x, path):
        if isinstance(x, torch.Tensor):
            tensors[path] = x
            return {"__tensor__": path}
        if isinstance(x, dict):
            assert all(isinstance(k, str) for k in x), path
            return {k: walk(v, f"{path}/{k}") for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v, f"{path}/{i}") for i, v in enumerate(x)]
        assert isinstance(x, int | float | str), f"{path}: {type(x).__name__} is not savable"
        return x

    tree = walk(state, "")
    blob = st_save(tensors)
    return json.dumps({"tree": tree, "size": len(blob)}).encode() + b"\n" + blob


def deserialize(data: bytes) -> dict:
    head, blob = data.split(b"\n", 1)
    tensors = st_load(blob)

    def walk(x):
        if isinstance(x, dict):
            return tensors[x["__tensor__"]] if "__tensor__" in x else {k: walk(v) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x

    return walk(json.loads(head)["tree"])


def record(step: Step) -> dict:
    return {f.name: getattr(step, f.name) for f in dataclasses.fields(step)}


def assert_same_steps(a: list[dict], b: list[dict]) -> None:
    assert len(a) == len(b)
    for t, (x, y) in enumerate(zip(a, b, strict=True)):
        assert x.keys() == y.keys()
        for key in x:
            u, v = x[key], y[key]
            if isinstance(u, dict):
                assert u.keys() == v.keys(), (t, key)
                assert all(torch.equal(u[k], v[k]) and u[k].dtype == v[k].dtype for k in u), (t, key)
            elif u is None or v is None:
                assert u is None and v is None, (t, key)
            else:
                assert u.dtype == v.dtype and torch.equal(u, v), (t, key)


@pytest.mark.parametrize(("name", "options"), CASES, ids=IDS)
def test_state_dict_round_trip_continues_bit_identically(name, options):
    env = make(name, num_envs=B, seed=1, **options)
    gen = torch.Generator().manual_seed(7)
    env.reset()
    k, m = env.horizon - 2, 2 * env.horizon + 1  # save mid-episode; continue across two auto-resets
    for _ in range(k):
        env.step(random_actions(env, gen))
    saved = serialize(env.state_dict())
    actions = [random_actions(env, gen) for _ in range(m)]
    original = [record(env.step(a)) for a in actions]
    assert sum(bool(r["truncated"].any()) for r in original) == 2

    fresh = make(name, num_envs=B, seed=99, **options)  # another seed: the generator state must travel
    fresh.load_state_dict(deserialize(saved))
    restored = [record(fresh.step(a)) for a in actions]
    assert_same_steps(original, restored)
    if options.get("randomize_seats") or options.get("random_start_prob"):
        # The restarts after the cut drew seats / kitchens from the restored generator.
        other = make(name, num_envs=B, seed=99, **options)
        state = deserialize(saved)
        state["generator"] = other.generator.get_state()
        other.load_state_dict(state)
        differs = [record(other.step(a)) for a in actions]
        with pytest.raises(AssertionError):
            assert_same_steps(original, differs)


@pytest.mark.parametrize(("name", "options"), [CASES[1], CASES[4]], ids=[IDS[1], IDS[4]])
def test_state_dict_before_reset_restores_the_generator(name, options):
    env = make(name, num_envs=B, seed=5, **options)
    fresh = make(name, num_envs=B, seed=6, **options)
    fresh.load_state_dict(env.state_dict())
    assert_same_steps([record(env.reset())], [record(fresh.reset())])


def tensors_of(x, path="") -> dict[str, torch.Tensor]:
    if isinstance(x, torch.Tensor):
        return {path: x}
    items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
    return {k: v for key, value in items for k, v in tensors_of(value, f"{path}/{key}").items()}


@pytest.mark.parametrize(("name", "options"), CASES, ids=IDS)
def test_state_dict_is_a_copy_not_a_view(name, options):
    env = make(name, num_envs=B, **options)
    gen = torch.Generator().manual_seed(0)
    env.reset()
    state = env.state_dict()
    before = {k: v.clone() for k, v in tensors_of(state).items()}
    assert {"/generator"} < set(before)
    for _ in range(env.horizon + 1):  # across an auto-reset (written in place)
        env.step(random_actions(env, gen))
    after = tensors_of(env.state_dict())
    assert any(not torch.equal(after[k], v) for k, v in before.items()), "the env moved on"
    assert all(torch.equal(tensors_of(state)[k], v) for k, v in before.items())


def test_load_state_dict_refuses_other_configs_and_malformed_states():
    toy3 = make("toy", num_envs=B, num_agents=3)
    toy3.reset()
    toy2 = make("toy", num_envs=B, num_agents=2)
    with pytest.raises(ValueError, match="num_agents: saved 3 != this env 2"):
        toy2.load_state_dict(toy3.state_dict())
    cramped = make("overcooked", num_envs=B, layout="cramped_room")
    cramped.reset()
    ring = make("overcooked", num_envs=B, layout="coordination_ring")
    with pytest.raises(ValueError, match="layout: saved 'cramped_room'"):
        ring.load_state_dict(cramped.state_dict())
    with pytest.raises(ValueError, match="not an overcooked env state"):
        ring.load_state_dict(toy3.state_dict())
    seats = make("overcooked", num_envs=B, layout="cramped_room", randomize_seats=True)
    with pytest.raises(ValueError, match="randomize_seats"):
        seats.load_state_dict(cramped.state_dict())

    bad = cramped.state_dict()
    bad["state"]["pos"] = bad["state"]["pos"][:, :1]
    other = make("overcooked", num_envs=B, layout="cramped_room")
    with pytest.raises(ValueError, match="state.pos"):
        other.load_state_dict(bad)
    assert other.state is None  # unchanged
    bad = toy3.state_dict()
    bad["cue"] = bad["cue"].to(torch.int32)
    with pytest.raises(ValueError, match="cue"):
        make("toy", num_envs=B, num_agents=3).load_state_dict(bad)


def test_serialize_helper_round_trips():
    state = {"a": torch.arange(3), "b": {"c": 1, "d": [1.5, "x"]}}
    back = deserialize(serialize(state))
    assert torch.equal(back["a"], state["a"]) and back["b"] == state["b"]
    with pytest.raises(AssertionError):
        serialize({"a": object()})
