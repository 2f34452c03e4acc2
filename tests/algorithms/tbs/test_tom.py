"""TBS ToM model: learning, state handling, checkpoints, data collection (TBS paper, Sec. 2.3, App. D.3)."""

import math

import pytest
import torch

from zsceval.algorithms.tbs.concepts import build_concept_set, next_interaction_labels
from zsceval.algorithms.tbs.tom import (
    ToMModel,
    collect_tom_data,
    label_entropy,
    prior_logits,
    tom_loss,
    train_tom,
)
from zsceval.envs.overcooked import OvercookedEnv
from zsceval.rl.agent import ActOutput
from zsceval.rl.checkpoint import load_agent, save_checkpoint
from zsceval.rl.config import ModelConfig
from zsceval.rl.policy import Policy, network_spec
from zsceval.rl.population import PolicyPool

OBS = [2, 2, 3]


def model(m: int = 3, hidden: int = 32, seed: int = 0) -> ToMModel:
    torch.manual_seed(seed)
    spec = {
        "obs_shape": OBS,
        "num_concepts": m,
        "hidden_size": hidden,
        "granularity": "coarse",
        "layout": "toy",
    }
    return ToMModel(spec)


def cue_data(T: int = 64, B: int = 32, episode: int = 8, seed: int = 1):
    """Each episode shows a cue k in {0, 1, 2} on its first step only (then noise); the label of
    every step of the episode is one-hot(k). Predicting it needs memory across BPTT chunks."""
    g = torch.Generator().manual_seed(seed)
    obs = torch.randint(0, 2, (T, B, *OBS), generator=g, dtype=torch.uint8)
    obs[..., 0, 0, :] = 0
    starts = torch.zeros(T, B, dtype=torch.bool)
    starts[::episode] = True
    cue = torch.randint(0, 3, (T // episode, B), generator=g)
    obs[::episode, :, 0, 0, :] = torch.nn.functional.one_hot(cue, 3).to(torch.uint8) * 5
    labels = torch.nn.functional.one_hot(cue.repeat_interleave(episode, 0), 3).float()
    return obs, starts, labels


def test_tom_loss_hand_computed():
    logits = torch.tensor([[0.0, math.log(3.0)]])  # probs 0.5, 0.75
    labels = torch.tensor([[1.0, 0.0]])
    assert torch.isclose(tom_loss(logits, labels), torch.tensor(math.log(2) + math.log(4)))
    mask = torch.tensor([False])
    assert float(tom_loss(logits, labels, mask)) == 0.0
    p = 1 / 3
    assert math.isclose(label_entropy(torch.eye(3)), -3 * (p * math.log(p) + (1 - p) * math.log(1 - p)))


def test_learns_cue_pattern_across_chunks():
    obs, starts, labels = cue_data()
    tom = model()
    curve = train_tom(tom, obs, starts, labels, epochs=12, lr=3e-3, chunk_length=4, minibatch=32,
                      generator=torch.Generator().manual_seed(0))  # fmt: skip
    baseline = curve["baseline"][0]
    assert math.isclose(baseline, 3 * 0.6365141682948128, rel_tol=0.02)  # 3 H(1/3), labels near uniform
    assert curve["loss"][0] > 0.8 * baseline
    assert curve["loss"][-1] < 0.25 * baseline, curve["loss"]
    # held-out episodes: the cue is remembered on steps 1..7, which only show noise
    obs2, starts2, labels2 = cue_data(seed=7)
    with torch.no_grad():
        probs = torch.sigmoid(tom.sequence(obs2, tom.initial_state(32, "cpu"), starts2))
    assert float(tom_loss(torch.logit(probs.clamp(1e-6, 1 - 1e-6)), labels2)) < 0.3 * baseline
    accuracy = (probs.argmax(-1) == labels2.argmax(-1)).float().mean()
    assert accuracy > 0.9


def test_step_equals_sequence_and_state_zeroed_at_starts():
    tom = model(m=5, hidden=16)
    g = torch.Generator().manual_seed(3)
    L, N = 7, 4
    obs = torch.randint(0, 3, (L, N, *OBS), generator=g, dtype=torch.uint8)
    starts = torch.rand(L, N, generator=g) < 0.3
    starts[0, 0] = True
    h0 = torch.randn(N, 16, generator=g)
    with torch.no_grad():
        logits, h_seq = tom.sequence(obs, h0, starts, return_state=True)
    h = h0
    for t in range(L):
        probs, h = tom.step(obs[t], h, starts[t])
        assert torch.allclose(probs, torch.sigmoid(logits[t]), atol=1e-6)
        assert probs.dtype == torch.float32 and probs.shape == (N, 5)
        assert bool(((probs > 0) & (probs < 1)).all())
    assert torch.allclose(h, h_seq, atol=1e-6)
    # a start row forgets its state: same output from a random state and from zeros
    p_rand, _ = tom.step(obs[0], h0, torch.ones(N, dtype=torch.bool))
    p_zero, _ = tom.step(obs[0], tom.initial_state(N, "cpu"), torch.zeros(N, dtype=torch.bool))
    assert torch.equal(p_rand, p_zero)
    p_keep, _ = tom.step(obs[0], h0, torch.zeros(N, dtype=torch.bool))
    assert not torch.allclose(p_keep, p_zero)


def test_checkpoint_round_trip(tmp_path):
    tom = model(m=4, hidden=8, seed=5)
    ckpt = save_checkpoint(tmp_path / "checkpoints", 0, {"tom": tom}, {"algo": "tbs"})
    loaded, meta = load_agent(ckpt, "tom")
    assert isinstance(loaded, ToMModel) and meta["agents"]["tom"]["class"] == "tbs-tom"
    assert loaded.spec == tom.spec
    obs = torch.randint(0, 3, (3, *OBS), dtype=torch.uint8)
    starts = torch.tensor([True, False, True])
    h = torch.randn(3, 8)
    assert torch.equal(loaded.step(obs, h, starts)[0], tom.step(obs, h, starts)[0])


class Stay:
    """An agent that always STAYs (the partner must then never interact)."""

    def initial_state(self, rows, device):
        return torch.zeros(rows, 0, device=device)

    def act(self, obs, avail, state, starts, generator=None, deterministic=False):
        n = obs.shape[0]
        return ActOutput(torch.full((n,), 4, dtype=torch.int64), torch.zeros(n), state)


def test_collect_tom_data_with_random_policies():
    horizon = 40
    env = OvercookedEnv("cramped_room", num_envs=2, horizon=horizon)
    spec = network_spec(ModelConfig(hidden_size=16), env.obs_shape, env.critic_obs_shape, env.num_actions)
    torch.manual_seed(0)
    ego, p0, p1 = Policy(spec), Policy(spec), Policy(spec)
    pool = PolicyPool.from_policies([p0, p1])
    concepts = build_concept_set("cramped_room")
    data = collect_tom_data(env, ego, pool, concepts, episodes=1, partner_members=[1, 0],
                            generator=torch.Generator().manual_seed(0))  # fmt: skip
    T, B, M = horizon, 2, concepts.num_concepts
    assert data.obs.shape == (T, B, *env.obs_shape) and data.obs.dtype == torch.uint8
    assert data.labels.shape == (T, B, M) and data.labels.dtype == torch.float32
    assert data.ego_seat.tolist() == [0, 1] and data.member.tolist() == [1, 0]
    assert data.starts[0].all() and not data.starts[1:].any()
    assert data.done[-1].all() and not data.done[:-1].any()
    assert data.mask.all() and data.known.all()
    start_obs = env.reset().obs[0]  # both games start from the same state: seat s sees start_obs[s]
    assert torch.equal(data.obs[0, 0], start_obs[0]) and torch.equal(data.obs[0, 1], start_obs[1])
    assert not torch.equal(start_obs[0], start_obs[1])
    recomputed = next_interaction_labels(concepts.concept_index(data.interactions, data.cells), data.done, M)
    assert torch.equal(data.labels, recomputed)
    assert (data.concepts >= 0).sum() > 0  # random partners do interact with something in 40 steps
    assert torch.equal(data.labels.sum(-1) > 0, data.labels.amax(-1) == 1)  # one-hot or zero rows

    # roles: a partner that only stays never interacts, however much the ego does
    still = collect_tom_data(env, ego, Stay(), concepts, generator=torch.Generator().manual_seed(0))
    assert (still.interactions == 0).all() and (still.partner_actions == 4).all()
    assert not still.labels.any()


def _val_loss(tom, obs, starts, labels, cols):
    with torch.no_grad():
        logits = tom.sequence(obs[:, cols], tom.initial_state(len(cols), "cpu"), starts[:, cols])
    return float(tom_loss(logits, labels[:, cols]))


def test_holdout_columns_are_not_trained_on():
    obs, starts, labels = cue_data(B=16)
    kw = dict(epochs=3, lr=3e-3, chunk_length=4, minibatch=8)
    with_holdout = model(seed=2)
    c = train_tom(
        with_holdout, obs, starts, labels, generator=torch.Generator().manual_seed(5), holdout=0.25, **kw
    )
    # the same run by hand: draw the split first, then train on the other columns only
    g = torch.Generator().manual_seed(5)
    perm = torch.randperm(16, generator=g)
    val, train = perm[:4].sort().values, perm[4:].sort().values
    by_hand = model(seed=2)
    c2 = train_tom(by_hand, obs[:, train], starts[:, train], labels[:, train], generator=g, **kw)
    assert c["loss"] == c2["loss"]
    # garbage labels on the held-out columns change the held-out curve, not the training
    bad = labels.clone()
    bad[:, val] = 1.0 - bad[:, val]
    c3 = train_tom(
        model(seed=2), obs, starts, bad, generator=torch.Generator().manual_seed(5), holdout=0.25, **kw
    )
    assert c3["loss"] == c["loss"] and c3["val_loss"] != c["val_loss"]
    assert c["val_epoch"] == [0, 1, 2, 3] and len(c["val_loss"]) == 4


def test_holdout_keeps_the_parameters_of_the_best_held_out_loss():
    # labels unrelated to the observations: the model can only memorize its training columns, so the
    # held-out loss falls (towards the label frequencies) and then rises
    T, B = 16, 8
    g = torch.Generator().manual_seed(0)
    obs = torch.randint(0, 4, (T, B, *OBS), generator=g, dtype=torch.uint8)
    starts = torch.zeros(T, B, dtype=torch.bool)
    starts[0] = True
    labels = (torch.rand(T, B, 3, generator=g) < 0.3).float()
    tom = model(hidden=64, seed=1)
    c = train_tom(tom, obs, starts, labels, epochs=150, lr=1e-2, chunk_length=16, minibatch=8,
                  generator=torch.Generator().manual_seed(1), holdout=0.25)  # fmt: skip
    vl, ve = c["val_loss"], c["val_epoch"]
    best = ve[min(range(len(vl)), key=vl.__getitem__)]
    assert c["best_epoch"] == [best] and 0 < best < 150
    assert vl[-1] > min(vl) + 0.1 and c["loss"][-1] < c["loss"][best - 1] - 0.1  # it did overfit
    perm = torch.randperm(B, generator=torch.Generator().manual_seed(1))
    assert abs(_val_loss(tom, obs, starts, labels, perm[:2].sort().values) - min(vl)) < 1e-5
    assert len(ve) == 1 + 50 and ve[-1] == 150  # measured every 150 // 50 = 3 epochs


def test_holdout_rejects_bad_values():
    obs, starts, labels = cue_data(B=4)
    for bad in (-0.1, 1.0):
        with pytest.raises(ValueError, match="holdout"):
            train_tom(model(), obs, starts, labels, epochs=1, holdout=bad)
    with pytest.raises(ValueError, match="2 columns"):
        train_tom(model(), obs[:, :1], starts[:, :1], labels[:, :1], epochs=1, holdout=0.5)


def test_prior_logits_hand_computed():
    # 4 steps, the last masked out: concept 0 in 1 of 3 counted steps, concept 1 in all, concept 2 never
    labels = torch.tensor([[1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 1.0]])
    mask = torch.tensor([True, True, True, False])
    logits = prior_logits(labels, mask, eps=1e-3)
    assert torch.allclose(
        logits, torch.tensor([math.log(0.5), math.log(0.999 / 0.001), math.log(0.001 / 0.999)])
    )
    # its constant prediction's loss is label_entropy (for frequencies inside (eps, 1 - eps))
    lab = (torch.rand(50, 6, 3, generator=torch.Generator().manual_seed(0)) < 0.2).float()
    const = prior_logits(lab).expand(50, 6, 3)
    assert math.isclose(float(tom_loss(const, lab)), label_entropy(lab), rel_tol=1e-5)


def test_prior_bias_starts_the_head_at_the_training_frequencies():
    # sparse concepts, as the partner's next interaction is: the default (near-zero) bias starts near M log 2
    T, B, M = 24, 8, 6
    g = torch.Generator().manual_seed(3)
    obs = torch.randint(0, 2, (T, B, *OBS), generator=g, dtype=torch.uint8)
    starts = torch.zeros(T, B, dtype=torch.bool)
    starts[0] = True
    labels = (torch.rand(T, B, M, generator=g) < 0.05).float()
    mask = torch.rand(T, B, generator=g) < 0.8
    kw = dict(epochs=0, mask=mask, holdout=0.25)
    with_prior = model(m=M, seed=4)
    c = train_tom(with_prior, obs, starts, labels, generator=torch.Generator().manual_seed(2), **kw)
    perm = torch.randperm(B, generator=torch.Generator().manual_seed(2))
    train = perm[2:].sort().values  # the training columns of the holdout split
    expected = prior_logits(labels[:, train], mask[:, train])
    assert torch.allclose(with_prior.head.bias, expected)
    without = model(m=M, seed=4)
    bias0 = without.head.bias.detach().clone()
    c0 = train_tom(
        without, obs, starts, labels, generator=torch.Generator().manual_seed(2), prior_bias=False, **kw
    )
    assert torch.equal(without.head.bias, bias0)
    # the held-out loss before training: near the constant predictor's with the prior, M log 2 without
    assert abs(c["val_loss"][0] - c["baseline"][0]) < 0.5 * c["baseline"][0]
    assert c0["val_loss"][0] > 0.9 * M * math.log(2) > 2 * c["val_loss"][0]
