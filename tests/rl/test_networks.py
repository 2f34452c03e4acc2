"""Networks and policy: shapes, init, action masking, chunked BPTT reproduces collection."""

import math

import pytest
import torch

from zsceval.rl.config import ModelConfig
from zsceval.rl.policy import Policy, network_spec
from zsceval.rl.ppo import _chunks
from zsceval.rl.trainer import Trainer


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
@pytest.mark.parametrize("recurrent", [False, True])
def test_policy_shapes(kind, recurrent):
    spec = network_spec(ModelConfig(kind=kind, recurrent=recurrent, mlp_layers=1), (4, 5, 20), (4, 5, 40), 6)
    p = Policy(spec)
    N = 7
    obs = torch.randint(0, 3, (N, 4, 5, 20), dtype=torch.uint8)
    h = p.initial_state(N, "cpu")
    assert h.shape == (N, 64 if recurrent else 0)
    a, logp, h2 = p.act(obs, None, h, torch.ones(N, dtype=torch.bool))
    assert a.shape == (N,) and a.dtype == torch.int64 and logp.shape == (N,)
    v, _ = p.value(torch.randint(0, 3, (N, 4, 5, 40), dtype=torch.uint8), h, torch.ones(N, dtype=torch.bool))
    assert v.shape == (N,)
    if recurrent:
        assert not torch.equal(h2, h)


def test_zsceval_cnn_architecture_and_init():
    spec = network_spec(ModelConfig(kind="cnn", mlp_layers=1), (4, 5, 20), (4, 5, 40), 6)
    p = Policy(spec)
    convs = [m for m in p.actor.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [(c.in_channels, c.out_channels, c.kernel_size, c.stride, c.padding) for c in convs] == [
        (20, 32, (3, 3), (1, 1), (1, 1)),
        (32, 64, (3, 3), (1, 1), (1, 1)),
        (64, 32, (3, 3), (1, 1), (1, 1)),
    ]
    # final policy layer: orthogonal with gain 0.01 -> rows have norm 0.01
    w = p.actor.head.weight
    assert torch.allclose(w.norm(dim=1), torch.full((6,), 0.01), atol=1e-5)
    assert p.critic.trunk.encoder.net[0].in_channels == 40


def test_unavailable_actions_are_never_sampled():
    spec = network_spec(ModelConfig(), (3, 3, 6), (3, 3, 12), 6)
    p = Policy(spec)
    N = 5000
    avail = torch.ones(N, 6, dtype=torch.bool)
    avail[:, 5] = False
    avail[::2, 0] = False
    g = torch.Generator().manual_seed(0)
    a, logp, _ = p.act(torch.zeros(N, 3, 3, 6, dtype=torch.uint8), avail, p.initial_state(N, "cpu"),
                       torch.ones(N, dtype=torch.bool), g)  # fmt: skip
    assert not bool((a == 5).any())
    assert not bool((a[::2] == 0).any())
    assert bool((a[1::2] == 0).any())  # still sampled where available
    # near-uniform initial policy over the available actions
    assert torch.allclose(logp[1::2], torch.full_like(logp[1::2], -math.log(5)), atol=0.05)


@pytest.mark.parametrize("recurrent", [False, True])
def test_update_replay_reproduces_collected_log_probs_and_values(toy_config, tmp_path, recurrent):
    cfg = toy_config("model.recurrent=true" if recurrent else "model.recurrent=false", "model.chunk_length=4",
                     "ppo.rollout_length=16", "env.horizon=6")  # fmt: skip
    tr = Trainer(cfg, tmp_path / "run", progress=False)
    buf = tr.core.buffer
    # run two rollouts so that chunks start mid-episode with non-zero recorded GRU states
    for _ in range(2):
        tr.core.collect(tr.runner, 0)
    p, L = tr.learners["ego"], 4 if recurrent else 1
    seq = lambda x: _chunks(buf.flat(x), L)  # noqa: E731
    h_a, h_c = (buf.flat(h)[::L].flatten(0, 1) for h in (buf.h_actor, buf.h_critic))
    if recurrent:
        assert h_a.abs().sum() > 0
    with torch.no_grad():
        logp, _, values = p.evaluate(
            seq(buf.obs), seq(buf.critic_obs), seq(buf.avail), seq(buf.actions), h_a, h_c, seq(buf.starts)
        )
    assert torch.allclose(logp, seq(buf.log_probs), atol=1e-5)
    assert torch.allclose(values, seq(buf.values[: buf.T]), atol=1e-5)


def test_cast_observation_equals_torch_cast_on_every_path(monkeypatch):
    """The numpy route for large CPU uint8 -> bf16 casts gives exactly ``obs.to(bf16)``: every value
    0..127, strided input, C order on request, a value above 127 (fallback), other dtypes, inside
    vmap (fallback), and below the size threshold (torch's route)."""
    from zsceval.rl import networks
    from zsceval.rl.networks import cast_observation

    every = torch.arange(128, dtype=torch.uint8).repeat(3).reshape(2, 2, 8, 12)
    channel_major = every.permute(0, 3, 1, 2).contiguous().permute(0, 2, 3, 1)
    big = channel_major.clone()
    big[0, 0, 0, 0] = 255
    # below the size threshold: torch's cast; C order when asked for (the bytes reordered first)
    small = cast_observation(channel_major, torch.float32, contiguous=True)
    assert small.is_contiguous() and torch.equal(small, channel_major.float())
    assert not cast_observation(channel_major, torch.float32).is_contiguous()  # layout kept
    monkeypatch.setattr(networks, "FAST_CAST_MIN_ELEMENTS", 1)
    fast = cast_observation(every, torch.bfloat16)
    assert fast.dtype == torch.bfloat16 and torch.equal(fast, every.to(torch.bfloat16))
    c_orders = []
    for x in (channel_major, big):
        kept = cast_observation(x, torch.bfloat16)
        assert torch.equal(kept, x.to(torch.bfloat16)) and kept.stride() == x.to(torch.bfloat16).stride()
        c_order = cast_observation(x, torch.bfloat16, contiguous=True)
        assert torch.equal(c_order, x.to(torch.bfloat16))
        c_orders.append(c_order.is_contiguous())
    assert c_orders == [True, True]  # the value 255 takes torch's route, in C order too
    assert torch.equal(cast_observation(every, torch.float32), every.float())
    batched = torch.func.vmap(lambda x: cast_observation(x, torch.bfloat16))(every)
    assert torch.equal(batched, every.to(torch.bfloat16))


def test_cast_shared_casts_one_shared_input_once_and_leaves_two_alone():
    from zsceval.rl.networks import cast_shared

    obs = torch.randint(0, 20, (4, 5, 8, 3), dtype=torch.uint8)
    a, c = cast_shared(obs, obs, torch.bfloat16, contiguous=True)
    assert a is c and a.dtype == torch.bfloat16 and torch.equal(a, obs.to(torch.bfloat16))
    other = obs.clone()
    a, c = cast_shared(obs, other, torch.bfloat16, contiguous=True)
    assert a is obs and c is other  # two inputs: each encoder casts its own
