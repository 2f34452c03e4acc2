"""The value-based core (PQN-VDN): Q(lambda) targets, the VDN sum over learner seats, exploration,
learning on the toy game and exact resume."""

from types import SimpleNamespace

import pytest
import torch

from zsceval.rl.checkpoint import list_checkpoints, load_agent
from zsceval.rl.config import ConfigError, resolve_config
from zsceval.rl.networks import compress_observation
from zsceval.rl.policy import Policy, network_spec
from zsceval.rl.pqn import PQNCore, epsilon_at, lambda_returns
from zsceval.rl.qpolicy import QPolicy, epsilon_greedy, greedy_probs
from zsceval.rl.trainer import Trainer

VDN_TOY = [
    "run.algo=vdn",
    "env.name=toy",
    "env.horizon=8",
    "env.num_envs=32",
    "pqn.rollout_length=8",
    "run.num_threads=0",
    "run.eval_episodes=16",
]


def _targets(terminated=(), truncated=(), final=(0.0, 0.0, 0.0)):
    r = torch.tensor([[1.0], [0.0], [2.0]])
    m = torch.tensor([[10.0], [20.0], [30.0]])
    term = torch.zeros(3, 1, dtype=torch.bool)
    trunc = torch.zeros(3, 1, dtype=torch.bool)
    for t in terminated:
        term[t] = True
    for t in truncated:
        trunc[t] = True
    return lambda_returns(r, m, term, trunc, torch.tensor(final).view(3, 1), gamma=0.5, lam=0.5).view(-1)


def test_lambda_returns_on_a_hand_computed_three_step_example():
    # G2 = 2 + .5 * 30 = 17; G1 = 0 + .5 * (.5 * 17 + .5 * 20) = 9.25; G0 = 1 + .5 * (.5 * 9.25 + .5 * 10)
    assert torch.allclose(_targets(), torch.tensor([5.8125, 9.25, 17.0]))
    # time limit at t=1 with M(final obs) = 4: G1 = .5 * 4 = 2, G0 = 1 + .5 * (.5 * 2 + .5 * 10) = 4
    assert torch.allclose(_targets(truncated=[1], final=(0.0, 4.0, 0.0)), torch.tensor([4.0, 2.0, 17.0]))
    # termination at t=1: G1 = 0, G0 = 1 + .5 * (.5 * 0 + .5 * 10) = 3.5
    assert torch.allclose(_targets(terminated=[1]), torch.tensor([3.5, 0.0, 17.0]))
    # lambda = 1 is the discounted return bootstrapped at the end; lambda = 0 is one-step Q-learning
    r, m = torch.tensor([[1.0], [0.0], [2.0]]), torch.tensor([[10.0], [20.0], [30.0]])
    no = torch.zeros(3, 1, dtype=torch.bool)
    g1 = lambda_returns(r, m, no, no, torch.zeros(3, 1), 0.5, 1.0).view(-1)
    assert torch.allclose(g1, torch.tensor([1 + 0.5 * (0 + 0.5 * (2 + 0.5 * 30)), 0.5 * 17, 17.0]))
    g0 = lambda_returns(r, m, no, no, torch.zeros(3, 1), 0.5, 0.0).view(-1)
    assert torch.allclose(g0, torch.tensor([6.0, 10.0, 17.0]))


def test_epsilon_schedule_and_epsilon_greedy_respect_available_actions():
    assert epsilon_at(0, 100, 1.0, 0.2, 0.2) == 1.0
    assert epsilon_at(10, 100, 1.0, 0.2, 0.2) == pytest.approx(0.6)
    assert epsilon_at(20, 100, 1.0, 0.2, 0.2) == pytest.approx(0.2)
    assert epsilon_at(90, 100, 1.0, 0.2, 0.2) == pytest.approx(0.2)
    q = torch.tensor([[0.0, 5.0, 1.0, 9.0]]).repeat(4000, 1)
    avail = torch.tensor([[True, True, True, False]]).repeat(4000, 1)
    greedy, logp = epsilon_greedy(q, avail, 0.0)
    assert (greedy == 1).all() and (logp == 0).all()  # action 3 has the top Q but is unavailable
    g = torch.Generator().manual_seed(0)
    acts, logp = epsilon_greedy(q, avail, 0.3, g)
    assert not (acts == 3).any()
    freq = torch.bincount(acts, minlength=4).float() / len(acts)
    assert torch.allclose(freq[:3], torch.tensor([0.1, 0.8, 0.1]), atol=0.025)
    probs = greedy_probs(q[:1], avail[:1], 0.3)
    assert torch.allclose(probs, torch.tensor([[0.1, 0.8, 0.1, 0.0]]))
    assert torch.allclose(logp, probs[0, acts].log())


def _spec():
    model = resolve_config(preset="quick", overrides=["run.algo=vdn"]).model
    return network_spec(model, (3, 3, 6), (3, 3, 6), 6)


def _core(learners):
    cfg = resolve_config(preset="quick", overrides=["run.algo=vdn", "pqn.rollout_length=2", "env.num_envs=3"])
    env = SimpleNamespace(num_envs=3, num_agents=2, obs_shape=(3, 3, 6))
    return PQNCore(learners, cfg, env, "cpu", algorithm=None)


def test_vdn_sum_runs_over_the_learner_seats_of_a_game_only():
    torch.manual_seed(0)
    qa, qb = QPolicy(_spec()), QPolicy(_spec())
    core = _core({"a": qa, "b": qb})
    obs = torch.randint(0, 3, (3, 2, 3, 3, 6), dtype=torch.uint8)
    actions = torch.tensor([[1, 2], [0, 5], [3, 4]])
    actor = torch.tensor(
        [[0, 1], [0, 2], [1, 1]]
    )  # a pair; a with a frozen partner (index 2); b in both seats
    got = core.q_taken(obs, actions, actor)
    with torch.no_grad():
        expect = torch.stack([
            qa.q_values(obs[0, :1])[0, 1] + qb.q_values(obs[0, 1:])[0, 2],
            qa.q_values(obs[1, :1])[0, 0],
            qb.q_values(obs[2, :1])[0, 3] + qb.q_values(obs[2, 1:])[0, 4],
        ])  # fmt: skip
    assert torch.allclose(got, expect, atol=1e-6)
    got.sum().backward()  # both members of the pair get gradients from the shared sum
    assert all(p.grad is not None for p in qa.actor.parameters())
    assert all(p.grad is not None for p in qb.actor.parameters())


def test_pqn_core_refuses_a_policy_that_is_not_a_q_network():
    with pytest.raises(ConfigError, match="trains QPolicy"):
        _core({"a": Policy(_spec())})


def test_recurrent_q_network_is_refused():
    spec = _spec()
    spec["model"]["recurrent"] = True
    with pytest.raises(ValueError, match="feed-forward"):
        QPolicy(spec)


def test_vdn_solves_the_toy_cue_game_and_saves_a_greedy_q_agent(tmp_path):
    # optimum 20 * horizon = 160; a uniformly random joint policy scores 160 / 25 = 6.4
    # Adam, not RAdam: RAdam's rectification scales its first few hundred steps down (pqn.optimizer)
    more = [
        "run.total_steps=16384",
        "pqn.optimizer=adam",
        "pqn.epochs=4",
        "pqn.num_minibatches=8",
        "pqn.lr=3e-3",
    ]
    cfg = resolve_config(preset="quick", overrides=[*VDN_TOY, *more])
    tr = Trainer(cfg, tmp_path / "run", progress=False)
    summary = tr.train()
    assert tr.metrics[0]["sparse_return"] < 40
    assert summary["self_play"]["sparse_return_mean"] >= 140
    agent, _ = load_agent(tmp_path / "run")
    assert isinstance(agent, QPolicy) and agent.epsilon == 0.0
    assert all(p.epsilon == 0.0 for p in tr.learners.values())  # exploration only inside rollouts
    assert tr.metrics[0]["epsilon"] == 1.0 and tr.metrics[-1]["epsilon"] == pytest.approx(0.2)


class _Interrupt(Exception):
    pass


def test_pqn_resume_after_interruption_reproduces_uninterrupted_run(tmp_path):
    cfg = resolve_config(
        preset="quick",
        overrides=[*VDN_TOY, "env.horizon=12", "run.total_steps=3072", "run.checkpoint_every=1024"],
    )
    full = Trainer(cfg, tmp_path / "full", progress=False)
    full.train()

    def kill(trainer, row):
        if trainer.iteration == 10:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        Trainer(cfg, tmp_path / "cut", progress=False).train(kill)
    assert list_checkpoints(tmp_path / "cut")
    resumed = Trainer(cfg, tmp_path / "cut", resume=True, progress=False)
    assert 0 < resumed.env_steps < 3072
    resumed.train()
    for k, v in full.learners["ego"].state_dict().items():
        assert torch.equal(resumed.learners["ego"].state_dict()[k], v), k
    assert full.core.grad_steps == resumed.core.grad_steps
    assert [r["loss"] for r in full.metrics][-3:] == [r["loss"] for r in resumed.metrics][-3:]


def test_batched_q_of_many_learners_equals_each_learner_alone_with_gradients():
    torch.manual_seed(1)
    spec = _spec()
    spec["model"]["bf16"] = False  # exact float32 comparison
    learners = {f"q{i}": QPolicy(spec) for i in range(4)}
    core = _core(learners)
    obs = torch.randint(0, 3, (23, 3, 3, 6), dtype=torch.uint8)
    actor = torch.tensor([0, 1, 2, 3, 1, 1, 0, 2, 3, 3, 0, 1, 2, 2, 1, 0, 3, 3, 1, 2, 0, 0, 1])
    q = core.q_rows(obs, actor)
    (q * torch.arange(6.0)).sum().backward()
    grads = [[w.grad.clone() for w in p.actor.parameters()] for p in learners.values()]
    for p in learners.values():
        p.zero_grad()
    expect = torch.stack(
        [list(learners.values())[int(a)].q_values(obs[i : i + 1])[0] for i, a in enumerate(actor)]
    )
    assert torch.allclose(q, expect, atol=1e-5)
    (expect * torch.arange(6.0)).sum().backward()
    for g, p in zip(grads, learners.values(), strict=True):
        for a, w in zip(g, p.actor.parameters(), strict=True):
            assert torch.allclose(a, w.grad, atol=1e-5)


@pytest.mark.parametrize("algo", ["vdn", "tbs-pool", "tbs-br"])
@pytest.mark.parametrize("preset", ["quick", "paper"])
def test_value_based_presets_run_float32_q_networks(algo, preset):
    # the quick preset file turns bf16 on for the PPO algorithms; a greedy Q-agent's action gaps
    # (~0.2 at Q ~ 30) are below bfloat16's resolution there, so the value-based presets turn it off
    assert resolve_config(preset="quick", overrides=[], **{"run.algo": "sp"}).model.bf16
    cfg = resolve_config(preset=preset, overrides=[], **{"env.layout": "counter_circuit", "run.algo": algo})
    assert cfg.model.bf16 is False
    # a user may still ask for it
    cfg = resolve_config(preset=preset, overrides=["model.bf16=true"], **{"run.algo": algo})
    assert cfg.model.bf16 is True


def test_a_q_network_of_the_quick_vdn_preset_separates_close_q_values():
    # Q-values 0.04 apart near 30: float32 keeps them apart, bfloat16 (steps of 0.125 there) ties
    # them and the arg-max would take the lower action
    cfg = resolve_config(preset="quick", overrides=[], **{"run.algo": "vdn"})
    q = QPolicy(network_spec(cfg.model, (2, 2, 3), (2, 2, 3), 6))
    with torch.no_grad():
        q.actor.head.weight.zero_()
        q.actor.head.bias.copy_(torch.tensor([30.52, 30.56, 29.0, 29.0, 29.0, 29.0]))
    obs = torch.zeros(4, 2, 2, 3, dtype=torch.uint8)
    values = q.q_values(obs)
    assert torch.allclose(values[:, 1] - values[:, 0], torch.full((4,), 0.04), atol=1e-4)
    assert (q.act(obs, None, q.initial_state(4, "cpu"), torch.zeros(4, dtype=torch.bool),
                  deterministic=True).actions == 1).all()  # fmt: skip


def _sparse_obs(*shape, seed=0):
    """uint8 observations ``[*shape, 3, 3, 6]`` in which most entries are zero or one constant
    non-zero value in every row (as Overcooked's lossless encoding), a few vary."""
    g = torch.Generator().manual_seed(seed)
    obs = torch.zeros(*shape, 3 * 3 * 6, dtype=torch.uint8)
    obs[..., 5] = 1  # constant non-zero: folded into the first layer's bias
    obs[..., 40] = 3
    varying = torch.tensor([0, 7, 12, 20, 33, 51])
    obs[..., varying] = torch.randint(0, 4, (*shape, len(varying)), generator=g, dtype=torch.uint8)
    return obs.view(*shape, 3, 3, 6)


@pytest.mark.parametrize("num_learners", [1, 4])
def test_column_compressed_q_rows_equal_the_dense_ones_with_gradients(num_learners):
    torch.manual_seed(2)
    spec = _spec()
    spec["model"]["bf16"] = False
    learners = {f"q{i}": QPolicy(spec) for i in range(num_learners)}
    core = _core(learners)
    obs = _sparse_obs(12, 2)  # [S, n, ...]
    actor = torch.arange(24).remainder(num_learners).view(12, 2)
    actions = torch.randint(0, 6, (12, 2), generator=torch.Generator().manual_seed(3))
    columns = core.obs_columns(obs)
    assert columns is not None and columns.varying.numel() <= 6 and columns.constant.tolist() == [5, 40]
    x = compress_observation(obs.reshape(12, 2, -1), columns)
    dense = core.q_taken(obs, actions, actor)
    dense.sum().backward()
    grads = [w.grad.clone() for p in learners.values() for w in p.actor.parameters()]
    for p in learners.values():
        p.zero_grad()
    packed = core.q_taken(x, actions, actor, columns=columns)
    packed.sum().backward()
    assert torch.allclose(packed, dense, atol=1e-5)
    for g, w in zip(grads, [w for p in learners.values() for w in p.actor.parameters()], strict=True):
        assert torch.allclose(w.grad, g, atol=1e-5)


def test_update_on_varying_columns_matches_the_dense_update():
    """``pqn.obs_columns`` changes how the first layer is computed, not what the update does: two
    cores from the same weights, rollout and minibatch draws end at the same weights (float rounding)."""
    import copy

    torch.manual_seed(4)
    spec = _spec()
    spec["model"]["bf16"] = False
    base = {f"q{i}": QPolicy(spec) for i in range(2)}
    cores = []
    for on in (True, False):
        over = ["run.algo=vdn", "pqn.rollout_length=4", "env.num_envs=6", f"pqn.obs_columns={on}"]
        cfg = resolve_config(preset="quick", overrides=over)
        env = SimpleNamespace(num_envs=6, num_agents=2, obs_shape=(3, 3, 6))
        core = PQNCore(copy.deepcopy(base), cfg, env, "cpu", algorithm=None)
        g = torch.Generator().manual_seed(5)
        core.obs.copy_(_sparse_obs(4, 6, 2, seed=6))
        core.actions.copy_(torch.randint(0, 6, core.actions.shape, generator=g))
        core.actor.copy_(torch.arange(2).expand_as(core.actor))
        core.rewards.copy_(torch.rand(core.rewards.shape, generator=g) * 20)
        core.next_max_q.copy_(torch.rand(core.next_max_q.shape, generator=g))
        assert (core.obs_columns(core.obs.reshape(24, 2, 3, 3, 6)) is not None) == on
        stats = core.update(0, torch.Generator().manual_seed(7))
        cores.append((core, stats))
    (on, s_on), (off, s_off) = cores
    assert s_on["loss"] == pytest.approx(s_off["loss"], rel=1e-5)
    for a, b in zip(on.policies, off.policies, strict=True):
        for (name, w), v in zip(a.actor.named_parameters(), b.actor.parameters(), strict=True):
            assert torch.allclose(w, v, atol=1e-5), name
    moved = [
        not torch.equal(w, v)
        for w, v in zip(on.policies[0].actor.parameters(), base["q0"].actor.parameters())
    ]
    assert all(moved)  # the update did change every weight
