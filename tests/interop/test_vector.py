"""Gymnasium vector adapter: the checks ``check_env`` makes for single envs, for the vector env.

Spaces vs returned arrays (shape, dtype, bounds) at reset and at every step including autoresets,
terminated/truncated kept apart, same-step autoreset with ``final_obs``, seeding determinism, and
clear errors.
"""

import subprocess
import sys

import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode, VectorEnv

from zsceval.envs.registry import make
from zsceval.interop.vector import BatchedVectorEnv


def check_step_output(venv, out):
    obs, rew, term, trunc, infos = out
    B, n = venv.num_envs, venv.num_agents
    assert obs.dtype == venv.observation_space.dtype and obs.shape == venv.observation_space.shape
    assert venv.observation_space.contains(obs)
    assert all(venv.single_observation_space.contains(o) for o in obs)
    assert rew.dtype == np.float32 and rew.shape == (B,)
    assert term.dtype == trunc.dtype == np.bool_ and term.shape == trunc.shape == (B,)
    assert infos["action_mask"].shape == (B, n, venv.single_action_space.nvec[0])
    assert infos["_action_mask"].all()


@pytest.mark.parametrize(
    "name,options",
    [("overcooked", {"layout": "asymmetric_advantages"}), ("toy", {"num_agents": 3, "obs_dtype": "float32"})],
)
def test_spaces_match_arrays_through_autoresets(name, options):
    venv = BatchedVectorEnv(name, num_envs=4, horizon=5, **options)
    assert isinstance(venv, VectorEnv) and venv.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    n = venv.num_agents
    assert venv.single_observation_space.shape == (n, *make(name, num_envs=1, **options).obs_shape)
    assert venv.action_space.shape == (4, n) and venv.single_action_space.shape == (n,)
    obs, infos = venv.reset(seed=0)
    assert obs.shape == venv.observation_space.shape and venv.observation_space.contains(obs)
    venv.action_space.seed(0)
    for t in range(11):
        out = venv.step(venv.action_space.sample())
        check_step_output(venv, out)
        _, _, term, trunc, infos = out
        assert not term.any()
        assert trunc.all() == (t % 5 == 4) and trunc.any() == (t % 5 == 4)
        assert ("final_obs" in infos) == (t % 5 == 4)
        if t % 5 == 4:
            assert infos["_final_obs"].all() and venv.observation_space.contains(infos["final_obs"])


def test_autoreset_same_step_returns_final_and_first_obs():
    venv = BatchedVectorEnv("overcooked", num_envs=3, layout="cramped_room", horizon=3)
    first, _ = venv.reset(seed=1)
    moves = np.array([[1, 2], [3, 0], [2, 1]])
    for _ in range(2):
        obs, *_ = venv.step(moves)
    obs, rew, term, trunc, infos = venv.step(moves)
    assert trunc.all() and not term.any()
    np.testing.assert_array_equal(obs, first)  # standard start again
    assert not np.array_equal(infos["final_obs"], first)
    assert (infos["timestep"] == 0).all()


def test_seeding_is_deterministic():
    def rollout(seed):
        venv = BatchedVectorEnv(
            "overcooked", num_envs=4, layout="coordination_ring", randomize_seats=True, random_start_prob=1.0
        )
        obs, _ = venv.reset(seed=seed)
        frames = [obs]
        rng = np.random.default_rng(0)
        for _ in range(5):
            frames.append(venv.step(rng.integers(0, 6, (4, 2)))[0])
        return np.stack(frames)

    assert np.array_equal(rollout(7), rollout(7))
    assert not np.array_equal(rollout(7), rollout(8))


def test_wraps_an_instance_and_rejects_bad_input():
    env = make("toy", num_envs=2)
    venv = BatchedVectorEnv(env)
    assert venv.num_envs == 2 and venv.env is env
    with pytest.raises(RuntimeError, match="reset"):
        venv.step(np.zeros((2, 2), dtype=np.int64))
    venv.reset()
    with pytest.raises(ValueError, match=r"shape \(2, 2\)"):
        venv.step(np.zeros((2, 3), dtype=np.int64))
    with pytest.raises(ValueError, match=r"0\.\.5"):
        venv.step(np.full((2, 2), 9))
    with pytest.raises(ValueError, match="one int seed"):
        venv.reset(seed=[1, 2])
    with pytest.raises(ValueError, match="num_envs=3"):
        BatchedVectorEnv(env, num_envs=3)
    with pytest.raises(ValueError, match="only be given with an env name"):
        BatchedVectorEnv(env, layout="cramped_room")
    assert torch.equal(torch.as_tensor(venv.reset(seed=0)[0]), torch.as_tensor(venv.reset(seed=0)[0]))


def test_package_imports_lazily_without_pettingzoo():
    code = (
        "import sys, zsceval.interop as I; I.BatchedVectorEnv; I.load_trajectories; "
        "assert 'pettingzoo' not in sys.modules; assert sorted(I.__all__) == I.__all__"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
