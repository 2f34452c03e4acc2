"""Partially observable Overcooked (``view_radius``; TBS paper Sec. 4.1): the Chebyshev view window."""

import json

import pytest
import torch
from click.testing import CliRunner

from zsceval.cli import main
from zsceval.envs.overcooked import OvercookedEnv
from zsceval.envs.overcooked.observation import view_window
from zsceval.rl.config import ConfigError, EnvConfig, TrainConfig, apply_overrides, validate
from zsceval.rl.envs import make_env

# Planes zeroed outside the window (observation module docstring): other players 1, 6-9 and objects.
LOCAL = {
    "counter_circuit": [1, 6, 7, 8, 9, 15, 16, 17, 18, 19],
    "counter_circuit_mr": [1, 6, 7, 8, 9, *range(16, 24)],
}


def rollout(layout, steps, seed=0, **kwargs):
    """Steps of one run with random actions from random starts (objects everywhere)."""
    env = OvercookedEnv(layout, num_envs=32, seed=seed, random_start_prob=1.0, horizon=7, **kwargs)
    gen = torch.Generator().manual_seed(seed)
    out = [env.reset()]
    for _ in range(steps):
        out.append(env.step(torch.randint(0, 6, (32, 2), generator=gen)))
    return env, out


def chebyshev_from_ego(full):
    """``int64 [B, n, H, W]``: distance of every cell to the agent, located by its own plane 0
    (a Python loop over games: an independent check of the vectorized window)."""
    B, n, H, W, _ = full.shape
    dist = torch.empty(B, n, H, W, dtype=torch.int64)
    ys, xs = torch.arange(H)[:, None], torch.arange(W)[None, :]
    for b in range(B):
        for k in range(n):
            (y, x), = full[b, k, :, :, 0].nonzero().tolist()  # fmt: skip
            dist[b, k] = torch.maximum((ys - y).abs(), (xs - x).abs())
    return dist


def test_view_window_hand_computed():
    w = view_window(3, 4, 1)
    assert w.shape == (12, 12) and w.dtype == torch.uint8
    # Cell (y=0, x=0) sees (0,0), (0,1), (1,0), (1,1): flat 0, 1, 4, 5.
    assert w[0].nonzero().flatten().tolist() == [0, 1, 4, 5]
    # Cell (y=1, x=2) = 6 sees columns 1-3 of rows 0-2.
    assert w[6].view(3, 4).tolist() == [[0, 1, 1, 1]] * 3
    assert view_window(3, 4, 0) is None
    assert bool((view_window(3, 4, 3) == 1).all()) and not bool((view_window(3, 4, 2) == 1).all())


@pytest.mark.parametrize("layout", ["counter_circuit", "counter_circuit_mr"])
@pytest.mark.parametrize("radius", [1, 2])
def test_masked_planes_zero_outside_window_and_full_inside(layout, radius):
    env, steps = rollout(layout, 10, view_radius=radius, randomize_seats=True)
    C = env.encoder.num_channels
    local = torch.zeros(C, dtype=torch.bool)
    local[LOCAL[layout]] = True
    hidden_nonzero = 0
    for s in steps:
        full = s.infos["full_obs"]
        assert s.obs.shape == full.shape == (32, 2, *env.obs_shape) and s.obs.dtype == torch.uint8
        inside = (chebyshev_from_ego(full) <= radius)[..., None]  # [B, n, H, W, 1]
        expected = torch.where(inside | ~local, full, torch.zeros_like(full))
        assert torch.equal(s.obs, expected)
        hidden_nonzero += int(full[(~inside).expand_as(full) & local].count_nonzero())
        if s.final_obs is not None:
            final_full = s.infos["final_full_obs"]
            inside = (chebyshev_from_ego(final_full) <= radius)[..., None]
            assert torch.equal(s.final_obs, torch.where(inside | ~local, final_full, 0))
    assert hidden_nonzero > 100  # the mask really hid objects and partners


def test_partner_outside_window_is_invisible_and_inside_visible():
    env, steps = rollout("counter_circuit", 10, view_radius=1)
    seen = {True: 0, False: 0}
    for s in steps:
        full = s.infos["full_obs"]
        ego = full[..., 0].flatten(2).argmax(-1)  # [B, n] flat cell
        W = env.layout.width
        partner = ego.flip(1)
        far = torch.maximum((ego // W - partner // W).abs(), (ego % W - partner % W).abs()) > 1
        partner_seen = s.obs[..., 1].flatten(2).sum(-1) > 0
        assert torch.equal(partner_seen, ~far)
        seen[True] += int((~far).sum())
        seen[False] += int(far.sum())
    assert seen[True] > 0 and seen[False] > 0


@pytest.mark.parametrize("layout", ["counter_circuit", "counter_circuit_mr"])
def test_radius_zero_is_the_fully_observable_env_bit_for_bit(layout):
    _, default = rollout(layout, 12, randomize_seats=True)
    env0, zero = rollout(layout, 12, view_radius=0, randomize_seats=True)
    assert (
        env0.spec_dict() == OvercookedEnv(layout, horizon=7).spec_dict()
        and "view_radius" not in env0.spec_dict()
    )
    for a, b in zip(default, zero):
        assert torch.equal(a.obs, b.obs) and set(a.infos) == set(b.infos) == {"seats", "timestep"}
        assert (a.final_obs is None) == (b.final_obs is None)
        if a.final_obs is not None:
            assert torch.equal(a.final_obs, b.final_obs)


def test_radius_covering_the_grid_equals_the_full_obs():
    env, steps = rollout(
        "counter_circuit", 10, view_radius=max(OvercookedEnv("counter_circuit").obs_shape[:2])
    )
    _, default = rollout("counter_circuit", 10)
    for s, d in zip(steps, default):
        assert torch.equal(s.obs, d.obs) and torch.equal(s.infos["full_obs"], d.obs)
    assert env.spec_dict()["view_radius"] == 8


def test_dynamics_do_not_depend_on_the_view():
    _, full = rollout("counter_circuit", 12, randomize_seats=True)
    _, part = rollout("counter_circuit", 12, view_radius=1, randomize_seats=True)
    for a, b in zip(full, part):
        assert torch.equal(a.reward, b.reward) and torch.equal(a.avail_actions, b.avail_actions)
        assert torch.equal(a.obs, b.infos["full_obs"])


def test_bad_radius_and_state_of_another_radius_are_rejected():
    with pytest.raises(ValueError, match="view_radius must be an integer >= 0"):
        OvercookedEnv("cramped_room", view_radius=-1)
    with pytest.raises(ValueError, match="view_radius must be an integer >= 0"):
        OvercookedEnv("cramped_room", view_radius=1.5)
    env = OvercookedEnv("cramped_room", view_radius=2)
    env.reset()
    saved = env.state_dict()
    with pytest.raises(ValueError, match="view_radius: saved 2 != this env 0"):
        OvercookedEnv("cramped_room").load_state_dict(saved)
    with pytest.raises(ValueError, match="view_radius"):
        OvercookedEnv("cramped_room", view_radius=3).load_state_dict(saved)
    OvercookedEnv("cramped_room", view_radius=2).load_state_dict(saved)


def test_config_passes_view_radius_to_the_env():
    cfg = apply_overrides(TrainConfig(), ["env.view_radius=2"])
    assert cfg.env.view_radius == 2 and EnvConfig().view_radius == 0
    assert make_env(cfg.env, num_envs=2).view_radius == 2
    with pytest.raises(ConfigError, match="env.view_radius must be >= 0"):
        validate(apply_overrides(TrainConfig(), ["env.view_radius=-1"]))
    with pytest.raises(ConfigError, match="does not use env.view_radius"):
        make_env(EnvConfig(name="toy", view_radius=1), num_envs=2)


def test_cli_training_starts_with_partial_view(tmp_path):
    out = tmp_path / "run"
    res = CliRunner().invoke(main, ["train", "--algo", "sp", "--layout", "cramped_room", "--steps", "1600",
                                    "--no-progress", "--out", str(out), "--set", "env.view_radius=2",
                                    "--set", "env.num_envs=16", "--set", "ppo.rollout_length=50",
                                    "--set", "ppo.epochs=1", "--set", "ppo.num_minibatches=1",
                                    "--set", "run.eval_episodes=0"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "view_radius: 2" in (out / "config.yaml").read_text()
    (ckpt,) = sorted((out / "checkpoints").glob("step_*"))
    assert json.loads((ckpt / "meta.json").read_text())["env_spec"]["view_radius"] == 2
