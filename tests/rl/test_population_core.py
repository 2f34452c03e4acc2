"""The population-ready core: per-episode seating from a pool, the episode table, loss hooks,
shared-weight partners, composite agents through `zsceval eval`, n-agent training."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from zsceval import registry
from zsceval.cli import main
from zsceval.rl.agent import ActOutput
from zsceval.rl.algorithm import Algorithm
from zsceval.rl.checkpoint import CheckpointError, load_agent, save_checkpoint
from zsceval.rl.config import resolve_config
from zsceval.rl.learner_group import SeparateLearners, StackedLearners
from zsceval.rl.policy import Policy
from zsceval.rl.population import MixtureAgent, PolicyPool
from zsceval.rl.seating import Arm, ego_partner_arms
from zsceval.rl.trainer import Trainer

TOY = [
    "env.name=toy",
    "env.num_envs=16",
    "ppo.epochs=1",
    "ppo.num_minibatches=2",
    "run.eval_episodes=2",
    "run.checkpoint_every=100000",
]


@pytest.fixture
def plugin():
    """Register a test plug-in class for the duration of a test."""
    names = []

    def add(name, cls):
        registry.register(name, cls=cls)
        names.append(name)
        return cls

    yield add
    for name in names:
        registry._registry.pop(name, None)


def _config(*overrides):
    return resolve_config(preset="quick", overrides=[*TOY, *overrides])


# -- per-episode seating from an 8-member pool ---------------------------------------------------
class PoolPartners(Algorithm):
    """The ego with one of 8 frozen pool members, member and seat drawn per game and episode."""

    pool_seed = 123

    def build_partners(self, make_policy):
        torch.manual_seed(self.pool_seed)
        return {"pool": PolicyPool.from_policies([make_policy() for _ in range(8)])}

    def arms(self):
        return ego_partner_arms("ego", "pool", self.num_agents, members=range(8))

    def training_reward(self, step, shaping_factor, seating):
        self.steps.append((seating.arm.clone(), seating.member.clone(), step.done.clone()))
        return super().training_reward(step, shaping_factor, seating)

    def after_iteration(self, iteration, env_steps, stats, episodes):
        self.tables.append(episodes)


def test_pool_partners_are_seated_per_game_and_per_episode(plugin, tmp_path):
    plugin("pool_partners_test", PoolPartners)
    # horizon 6 and rollouts of 4 steps: episodes end in the middle of rollouts
    cfg = _config(
        "run.algo=pool_partners_test", "env.horizon=6", "ppo.rollout_length=4", "run.total_steps=1536"
    )
    tr = Trainer(cfg, tmp_path / "run", progress=False)
    tr.algorithm.steps, tr.algorithm.tables = [], []
    tr.train()
    tables = tr.algorithm.tables
    arm = torch.cat([t.arm for t in tables])
    game = torch.cat([t.game for t in tables])
    seat = torch.cat([t.ego_seat for t in tables])
    arms = tables[0].arms
    # every (member, seat) arm was played, and the table's labels and seats match the arms
    assert sorted(set(arm.tolist())) == list(range(16))
    assert all(arms[a].partner == f"pool/{a // 2}" and arms[a].ego_seat == a % 2 for a in range(16))
    assert torch.equal(seat, torch.tensor([arms[int(a)].ego_seat for a in arm]))
    # per step: the arm of each game stays fixed within an episode and is what the table records
    B = cfg.env.num_envs
    current = [[] for _ in range(B)]
    episodes_seen = [[] for _ in range(B)]
    for step_arm, step_member, done in tr.algorithm.steps:
        for g in range(B):
            current[g].append(int(step_arm[g]))
            ego = arms[int(step_arm[g])].ego_seat
            assert int(step_member[g, 1 - ego]) == int(step_arm[g]) // 2  # the partner seat's member
            if bool(done[g]):
                assert len(set(current[g])) == 1, f"game {g} changed partner within an episode"
                episodes_seen[g].append(current[g][0])
                current[g] = []
    for g in range(B):
        recorded = arm[game == g].tolist()
        assert recorded == episodes_seen[g]
    # games switch partners between episodes (16 arms, 16 games x 16 episodes)
    assert sum(len(set(e)) > 1 for e in episodes_seen) == B
    # the run refers to its pool by checksum; the artifact holds the members' weights
    meta = json.loads(next((tmp_path / "run" / "checkpoints").glob("step_*/meta.json")).read_text())
    entry = meta["partners"]["pool"]
    saved = PolicyPool.load(tmp_path / "run" / entry["pool"])
    assert saved.sha256 == entry["sha256"] and entry["members"] == 8
    for k, v in tr.partners["pool"].stacked.items():
        assert torch.equal(saved.stacked[k], v.cpu()), k
    # resuming with another population is refused (the plug-in seeds its pool with 123)
    PoolPartners.pool_seed = 7
    try:
        with pytest.raises(CheckpointError, match="partner pool 'pool' differs"):
            Trainer(cfg, tmp_path / "run", resume=True, progress=False)
    finally:
        PoolPartners.pool_seed = 123


# -- an extra loss term changes the gradient by its hand-computed gradient -----------------------
class ExtraLogProb(Algorithm):
    """Adds ``coef * mean(log pi(a|o))`` to the loss and records the minibatch."""

    coef = 0.0

    def extra_loss(self, name, minibatch, outputs):
        self.minibatch = {k: v for k, v in minibatch.items() if isinstance(v, torch.Tensor)}
        if self.coef == 0.0:
            return None
        return self.coef * outputs["log_probs"].mean(), {"extra": outputs["log_probs"].mean().detach()}


def _head_grad_after_update(tmp_path, coef, name):
    cfg = _config(
        "run.algo=extra_logprob_test", "env.horizon=4", "ppo.rollout_length=4", "ppo.num_minibatches=1",
        "model.mlp_layers=0", "model.bf16=false", "ppo.max_grad_norm=1e9", "model.critic_obs=own",
    )  # fmt: skip
    tr = Trainer(cfg, tmp_path / name, progress=False)
    tr.algorithm.coef = coef
    policy = tr.learners["ego"]
    weight0 = policy.actor.head.weight.detach().clone()
    bias0 = policy.actor.head.bias.detach().clone()
    grads = {}
    opt = tr.core.group.optimizers["ego"]["actor"]
    opt.step = lambda *a, **k: grads.update(
        w=policy.actor.head.weight.grad.clone(), b=policy.actor.head.bias.grad.clone()
    )
    tr.core.collect(tr.runner, 0)
    tr.core.bootstrap(tr.runner)
    tr.core.update(0, tr.update_gen)
    return grads, tr.algorithm.minibatch, weight0, bias0


def test_extra_loss_term_adds_its_hand_computed_gradient(plugin, tmp_path):
    plugin("extra_logprob_test", ExtraLogProb)
    coef = 0.7
    base, mb, w, b = _head_grad_after_update(tmp_path, 0.0, "base")
    with_term, mb2, w2, b2 = _head_grad_after_update(tmp_path, coef, "extra")
    assert torch.equal(w, w2) and torch.equal(mb["actions"], mb2["actions"])  # same seed, same batch
    # by hand: the actor is logits = W x + b over the flattened observation (no hidden layer);
    # d/dW mean_i log softmax(W x_i + b)[a_i] = mean_i (onehot(a_i) - p_i) x_i^T, masked actions p = 0
    x = mb["obs"].reshape(-1, w.shape[1]).double().numpy()
    a = mb["actions"].reshape(-1).numpy()
    avail = mb["avail"].reshape(-1, w.shape[0]).numpy()
    logits = x @ w.double().numpy().T + b.double().numpy()
    logits[~avail] = -np.inf
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    onehot = np.eye(w.shape[0])[a]
    grad_w = coef * (onehot - p).T @ x / len(a)
    grad_b = coef * (onehot - p).mean(0)
    # the loss is minimized, so the term's gradient enters with its sign: total = ppo + coef * mean logp
    np.testing.assert_allclose((with_term["w"] - base["w"]).double().numpy(), grad_w, atol=2e-5)
    np.testing.assert_allclose((with_term["b"] - base["b"]).double().numpy(), grad_b, atol=2e-5)
    assert np.abs(grad_w).max() > 1e-3  # the term is not negligible


# -- a partner sharing the learner's weights trains with it --------------------------------------
class Shadow(torch.nn.Module):
    """Acts with a learner's weights (E3T-style partner built from the ego)."""

    def __init__(self, policy):
        super().__init__()
        self.policy = policy

    def initial_state(self, rows, device):
        return self.policy.initial_state(rows, device)

    def act(self, obs, avail, state, starts, generator=None, deterministic=False) -> ActOutput:
        return self.policy.act(obs, avail, state, starts, generator, deterministic)


class SharedWeights(Algorithm):
    """The ego with a partner that shares its weights; only the ego's seats are trained."""

    def build_partners(self, make_policy):
        return {"shadow": Shadow(self.learners["ego"])}

    def arms(self):
        return ego_partner_arms("ego", "shadow", self.num_agents)


def test_partner_sharing_the_learners_weights_is_trained_not_frozen(plugin, tmp_path):
    plugin("shared_weights_test", SharedWeights)
    cfg = _config(
        "run.algo=shared_weights_test", "env.horizon=8", "ppo.rollout_length=8", "run.total_steps=1024"
    )
    tr = Trainer(cfg, tmp_path / "run", progress=False)
    before = {k: v.clone() for k, v in tr.learners["ego"].state_dict().items()}
    tr.train()
    ego, shadow = tr.learners["ego"], tr.partners["shadow"]
    assert shadow.policy is ego and all(p.requires_grad for p in ego.parameters())
    assert any(not torch.equal(before[k], v) for k, v in ego.state_dict().items())
    # only the ego's rows were trained on: the buffer marks the shadow's seat as actor 1
    actor = tr.core.buffer.actor
    assert bool((actor == 1).any()) and bool(((actor == 0).sum(-1) == 1).all())


# -- a composite agent saves, loads and plays through `zsceval eval` -----------------------------
def test_composite_agent_round_trips_and_plays_through_eval(tmp_path):
    overrides = ["env.layout=cramped_room", "env.num_envs=8", "run.total_steps=800",
                 "ppo.rollout_length=100", "run.eval_episodes=2"]  # fmt: skip
    cfg = resolve_config(preset="quick", overrides=overrides)
    sp = Trainer(cfg, tmp_path / "sp", progress=False)
    sp.train()
    policies = [sp.learners["ego"]] + [Policy(sp.learners["ego"].spec) for _ in range(2)]
    mixture = MixtureAgent(PolicyPool.from_policies(policies), probs=[0.5, 0.25, 0.25])
    meta = {k: v for k, v in sp._meta().items() if k != "ego"}
    ckpt = save_checkpoint(tmp_path / "mix" / "checkpoints", 0, {"mix": mixture}, {**meta, "ego": "mix"})
    loaded, loaded_meta = load_agent(ckpt)
    assert type(loaded) is MixtureAgent and loaded_meta["agents"]["mix"]["class"] == "mixture"
    assert loaded.spec == mixture.spec
    for k, v in mixture.state_dict().items():
        assert torch.equal(loaded.state_dict()[k], v), k
    res = CliRunner().invoke(main, ["eval", "--agent", str(ckpt), "--partner", str(tmp_path / "sp"),
                                    "--layout", "cramped_room", "--episodes", "4", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["pooled"]["episodes"] == 8 and len(out["seatings"]) == 2


# -- three agents end to end -----------------------------------------------------------------------
def test_three_agent_toy_env_trains_and_evaluates(tmp_path):
    out = tmp_path / "run3"
    args = ["train", "--algo", "sp", "--preset", "quick", "--steps", "2048", "--out", str(out),
            "--no-progress", "--set", "env.name=toy", "--set", "env.num_agents=3",
            "--set", "env.horizon=8", "--set", "env.num_envs=32", "--set", "ppo.rollout_length=8",
            "--set", "run.eval_episodes=6"]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "eval.json").read_text())
    assert summary["eval_seats"] == ["ego", "ego", "ego"]
    assert len(summary["self_play"]["shaped_return_mean_by_seat"]) == 3
    ev = CliRunner().invoke(main, ["eval", "--agent", str(out), "--partner", str(out),
                                   "--layout", "toy", "--episodes", "3", "--json"])  # fmt: skip
    assert ev.exit_code == 0, ev.output
    result = json.loads(ev.output)
    assert [s["agent_seat"] for s in result["seatings"]] == [0, 1, 2]
    assert result["pooled"]["episodes"] == 9


# -- stacked learners: one forward and backward for all members, each updated as if alone ------------
class FourSelfPlayers(Algorithm):
    """Four self-play learners, each in its own quarter of the games (population stage 1)."""

    def build_learners(self, make_policy):
        return {f"m{i}": make_policy() for i in range(4)}

    def arms(self):
        return [Arm.of(*[f"m{i}"] * self.num_agents, partner=f"m{i}") for i in range(4)]

    def assign(self, games, generator):
        return games % 4


class StackedFour(FourSelfPlayers):
    stack_learners = True


@pytest.mark.parametrize("recurrent", [False, True])
def test_stacked_learners_update_like_separate_learners(plugin, tmp_path, recurrent):
    plugin("four_sp_test", FourSelfPlayers)
    plugin("four_sp_stacked_test", StackedFour)
    common = ["env.horizon=8", "ppo.rollout_length=8", "run.total_steps=256", "model.bf16=false",
              "ppo.epochs=2", "ppo.num_minibatches=2", f"model.recurrent={str(recurrent).lower()}",
              "model.chunk_length=4"]  # fmt: skip
    runs = {}
    for algo in ("four_sp_test", "four_sp_stacked_test"):
        tr = Trainer(_config(f"run.algo={algo}", *common), tmp_path / algo, progress=False)
        before = {n: {k: v.clone() for k, v in p.state_dict().items()} for n, p in tr.learners.items()}
        tr.train()
        runs[algo] = (tr, before)
    separate, before = runs["four_sp_test"]
    stacked, _ = runs["four_sp_stacked_test"]
    assert isinstance(stacked.core.group, StackedLearners) and isinstance(
        separate.core.group, SeparateLearners
    )
    for name, policy in separate.learners.items():
        moved = max(float((policy.state_dict()[k] - before[name][k]).abs().max()) for k in before[name])
        assert moved > 1e-3  # the update did something
        for k, v in policy.state_dict().items():
            torch.testing.assert_close(stacked.learners[name].state_dict()[k], v, atol=2e-5, rtol=1e-4)
    # resume restores the stacked optimizer state
    resumed = Trainer(_config("run.algo=four_sp_stacked_test", *common), tmp_path / "four_sp_stacked_test",
                      resume=True, progress=False)  # fmt: skip
    a = resumed.core.group.optimizers["actor"].state_dict()["state"]
    b = stacked.core.group.optimizers["actor"].state_dict()["state"]
    assert all(torch.equal(a[i]["exp_avg"], b[i]["exp_avg"]) for i in b)


def test_float_observations_are_stored_and_trained_in_the_envs_dtype(monkeypatch, tmp_path):
    from zsceval.envs import registry as envs

    def float_env(cfg, num_envs=None, device="cpu", seed=0, evaluation=False):
        B = cfg.num_envs if num_envs is None else num_envs
        return envs.make(
            "toy", num_envs=B, device=device, seed=seed, horizon=cfg.horizon, obs_dtype="float32"
        )

    monkeypatch.setattr("zsceval.rl.trainer.make_env", float_env)
    cfg = _config("env.horizon=8", "ppo.rollout_length=8", "run.total_steps=512")
    tr = Trainer(cfg, tmp_path / "run", progress=False)
    assert tr.core.buffer.obs.dtype == torch.float32
    tr.train()
    obs = tr.core.buffer.obs
    assert obs.dtype == torch.float32 and float(obs.max()) == 8.0  # steps-left plane, exact floats
    assert len(tr.metrics) == 4 and "policy_loss" in tr.metrics[-1]


# -- a pool that grows while training (COLE): arms follow, resume is exact ------------------------
class GrowingPool(Algorithm):
    """The ego with past snapshots of itself; a snapshot joins the pool after every iteration."""

    def build_partners(self, make_policy):
        self.pool = PolicyPool.from_policies([make_policy()])
        return {"pool": self.pool}

    def arms(self):
        return ego_partner_arms("ego", "pool", self.num_agents, members=range(len(self.pool)))

    def after_iteration(self, iteration, env_steps, stats, episodes):
        self.pool.add(self.learners["ego"])
        self.seen = getattr(self, "seen", set()) | set(episodes.arm.tolist())

    def state_dict(self):
        return {"count": len(self.pool), "pool": self.pool.state_dict()}

    def load_state_dict(self, state):
        while len(self.pool) < state["count"]:
            self.pool.add(self.pool.member(0))
        self.pool.load_state_dict(state["pool"])


def test_growing_pool_adds_arms_and_resumes_exactly(plugin, tmp_path):
    plugin("growing_pool_test", GrowingPool)
    cfg = _config("run.algo=growing_pool_test", "env.horizon=6", "ppo.rollout_length=4",
                  "run.total_steps=384", "run.checkpoint_every=64")  # fmt: skip
    full = Trainer(cfg, tmp_path / "full", progress=False)
    full.train()
    assert len(full.algorithm.pool) == 7 and len(full.runner.arm_table) == 14
    assert max(full.algorithm.seen) >= 4  # snapshots added during training were played

    def stop_after_3(trainer, row):
        if trainer.iteration == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Trainer(cfg, tmp_path / "cut", progress=False).train(stop_after_3)
    resumed = Trainer(cfg, tmp_path / "cut", resume=True, progress=False)
    assert len(resumed.algorithm.pool) == 4 and len(resumed.runner.arm_table) == 8
    resumed.train()
    for k, v in full.learners["ego"].state_dict().items():
        assert torch.equal(resumed.learners["ego"].state_dict()[k], v), k
    for k, v in full.algorithm.pool.stacked.items():
        assert torch.equal(resumed.algorithm.pool.stacked[k], v), k
