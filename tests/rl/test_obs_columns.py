"""The column-compressed first layer of MLP models (``ppo.obs_columns``): the
same outputs and gradients as the dense layer up to float rounding, exact zeros where the dense
gradient is exactly zero, and the same first PPO update of a real Overcooked rollout."""

import pytest
import torch

from zsceval.rl.config import resolve_config
from zsceval.rl.networks import Encoder, compress_observation, observation_columns
from zsceval.rl.trainer import Trainer


def _batch(rows=64, width=60, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand(rows, width, generator=g) < 0.2).to(torch.uint8) * torch.randint(
        1, 4, (rows, width), generator=g, dtype=torch.uint8
    )
    x[:, 5] = 3  # a constant non-zero entry (a counter of the layout)
    x[:, 7] = 1
    x[:, 10:20] = 0  # never non-zero
    return x.view(rows, 3, 4, 5)


def test_columns_split_the_batch_into_varying_constant_and_zero_entries():
    obs = _batch().reshape(64, -1)
    c = observation_columns(obs, obs_scale=0.5)
    assert set(c.constant.tolist()) == {5, 7}
    assert c.constant_values.tolist() == [1.5, 0.5]  # scaled like the encoder's input
    assert not set(c.varying.tolist()) & (set(range(10, 20)) | {5, 7})
    varying = [j for j in range(60) if obs[:, j].unique().numel() > 1]
    assert c.varying.tolist() == varying
    x = compress_observation(obs, c, 0.5)
    assert x.dtype == torch.float32 and torch.equal(x, obs[:, varying].float() * 0.5)
    with pytest.raises(ValueError, match=r"\[rows, width\]"):
        observation_columns(obs.view(64, 3, 20))


@pytest.mark.parametrize("extra", [0, 3])
@pytest.mark.parametrize("scale", [1.0, 0.25])
def test_compressed_encoder_equals_the_dense_one_in_outputs_and_gradients(extra, scale):
    torch.manual_seed(0)
    enc = Encoder((3, 4, 5), "mlp", 16, 2, (), scale, extra)
    obs = _batch()
    feats = torch.randn(64, extra) if extra else None
    dense = enc(obs, feats)
    dense.square().sum().backward()
    g_dense = enc.net[0].weight.grad.clone()
    enc.zero_grad()
    c = observation_columns(obs.reshape(64, -1), scale)
    out = enc(compress_observation(obs.reshape(64, -1), c, scale), feats, columns=c)
    out.square().sum().backward()
    g = enc.net[0].weight.grad
    torch.testing.assert_close(out, dense, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(g, g_dense, rtol=1e-5, atol=1e-4)
    assert torch.count_nonzero(g[:, 10:20]) == 0  # zero entries: zero gradient
    assert g[:, 5].abs().sum() > 0 and g[:, 7].abs().sum() > 0  # constant entries: through the bias
    assert torch.count_nonzero(g_dense[:, 10:20]) == 0


def test_compressed_input_is_refused_by_cnn_encoders_and_wrong_widths():
    obs = _batch()
    c = observation_columns(obs.reshape(64, -1))
    x = compress_observation(obs.reshape(64, -1), c)
    with pytest.raises(ValueError, match="mlp encoder"):
        Encoder((3, 4, 5), "cnn", 16, 1, (4,), 1.0)(x, columns=c)
    with pytest.raises(ValueError, match="width 60 for an encoder of input width 24"):
        Encoder((2, 3, 4), "mlp", 16, 1, (), 1.0)(x, columns=c)


def _first_update_grads(tmp_path, on: bool, *extra):
    # float32: bf16 autocast (on by default where the CPU has it natively) rounds the two paths apart
    cfg = resolve_config(preset="quick", overrides=[
        "env.layout=counter_circuit", "env.num_envs=8", "ppo.rollout_length=40", "ppo.epochs=1",
        "ppo.num_minibatches=2", "run.num_threads=1", "run.eval_episodes=2", "run.seed=3",
        f"ppo.obs_columns={str(on).lower()}", "model.bf16=false", *extra,
    ])  # fmt: skip
    tr = Trainer(cfg, tmp_path / f"run-{on}", progress=False)
    grads = []
    try:
        core = tr.core
        for opt in (o for opts in core.group.optimizers.values() for o in opts.values()):
            step = opt.step

            def capture(*a, _step=step, _opt=opt, **kw):
                grads.append([p.grad.clone() for grp in _opt.param_groups for p in grp["params"]])
                return _step(*a, **kw)

            opt.step = capture
        core.collect(tr.runner, 0)
        core.bootstrap(tr.runner)
        adv, ret = core.advantages()
        stats = core.learn(adv, ret, 0, torch.Generator().manual_seed(0))
        columns = core._compressed_obs()
    finally:
        tr.close()
    return grads, stats, columns


@pytest.mark.parametrize("extra", [[], ["model.recurrent=true", "model.chunk_length=10"]])
def test_the_first_ppo_update_has_the_dense_gradients(tmp_path, extra):
    dense, s_dense, none = _first_update_grads(tmp_path, False, *extra)
    comp, s_comp, columns = _first_update_grads(tmp_path, True, *extra)
    assert none is None and columns is not None
    assert columns[1].varying.numel() < 800 // 2  # the rollout's observations are sparse
    assert len(dense) == len(comp) > 0
    for a, b in zip(dense, comp):
        for ga, gb in zip(a, b):
            torch.testing.assert_close(gb, ga, rtol=1e-4, atol=1e-5)
    assert s_comp["policy_loss"] == pytest.approx(s_dense["policy_loss"], rel=1e-4, abs=1e-6)


def test_dense_rollouts_keep_the_dense_first_layer(tmp_path):
    """A rollout whose observations vary in more than half their entries is not compressed (the
    float32 columns would outgrow the uint8 buffer); the toy env's cue observations are dense."""
    cfg = resolve_config(preset="quick", overrides=[
        "env.name=toy", "env.horizon=8", "env.num_envs=4", "ppo.rollout_length=8", "run.num_threads=1",
        "run.eval_episodes=0",
    ])  # fmt: skip
    tr = Trainer(cfg, tmp_path / "toy", progress=False)
    try:
        tr.core.collect(tr.runner, 0)
        rows = tr.core.buffer.obs.reshape(-1, tr.core.buffer.obs[0, 0, 0].numel())
        varying = observation_columns(rows).varying.numel()
        assert varying > rows.shape[1] // 2  # the toy's observations are dense
        assert tr.core._compressed_obs() is None
    finally:
        tr.close()
