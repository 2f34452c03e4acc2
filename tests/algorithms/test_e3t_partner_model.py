"""E3T's partner-modelling option: the core gives each sample the other seats' actions,
the actor's prediction head is trained by its cross-entropy only, and the policy reads it."""

import torch

from zsceval.rl.config import resolve_config
from zsceval.rl.policy import Policy, network_spec
from zsceval.rl.trainer import Trainer

TINY = [
    "env.num_envs=4",
    "ppo.rollout_length=20",
    "run.eval_episodes=0",
    "run.num_threads=1",
    "model.bf16=false",
]


def test_samples_carry_the_other_seats_actions(tmp_path):
    cfg = resolve_config(preset="quick", overrides=TINY, **{"run.algo": "sp", "run.total_steps": 80})
    tr = Trainer(cfg, tmp_path / "sp", progress=False)
    tr.core.collect(tr.runner, 0)
    tr.core.bootstrap(tr.runner)
    buf = tr.core.buffer
    adv, ret = tr.core.advantages()
    owner = buf.flat(buf.actor)[: buf.T]
    batch = tr.core._samples(0, owner == 0, adv, ret, tr.core.other_actions())
    other = batch["seq"]["other_actions"][0].reshape(buf.T, 4, 2, 1)  # MLP: chunks of one step
    assert torch.equal(other[..., 0], buf.actions.flip(2))  # seat 0 gets seat 1's action and back


def _e3t(tmp_path, **algo):
    overrides = [*TINY, "algo.partner_model=true", *[f"algo.{k}={v}" for k, v in algo.items()]]
    cfg = resolve_config(preset="quick", overrides=overrides, **{"run.algo": "e3t", "run.total_steps": 160})
    return Trainer(cfg, tmp_path / "e3t", progress=False)


def test_partner_model_option_builds_a_recurrent_ego_with_a_prediction_head(tmp_path):
    tr = _e3t(tmp_path)
    ego = tr.learners["ego"]
    assert ego.recurrent and ego.spec["model"]["partner_model"] == 6
    assert ego.actor.partner is not None and ego.actor.head.in_features == ego.actor.trunk.out_size + 6
    tr.train()
    row = tr.metrics[-1]
    assert 0.0 < row["e3t/partner_ce"] and 0.0 <= row["e3t/partner_accuracy"] <= 1.0


def test_prediction_head_learns_from_its_cross_entropy_only(tmp_path):
    tr = _e3t(tmp_path)
    algo, ego = tr.algorithm, tr.learners["ego"]
    L, S = 4, 32
    obs = torch.randint(0, 2, (L, S, *ego.spec["obs_shape"]), dtype=torch.uint8)
    mb = {"obs": obs, "starts": torch.zeros(L, S, dtype=torch.bool), "weight": None,
          "h_actor": torch.zeros(S, ego.hidden_size), "other_actions": torch.full((L, S, 1), 2)}  # fmt: skip
    # the policy's own loss does not reach the prediction head (its input is gradient-stopped)
    logits = ego.actor.out(ego.actor.trunk.sequence(obs, mb["h_actor"], mb["starts"]))
    logits.sum().backward()
    assert ego.actor.partner.weight.grad is None or not ego.actor.partner.weight.grad.any()
    ego.zero_grad()
    opt = torch.optim.Adam(ego.actor.parameters(), lr=1e-2)
    first = None
    for _ in range(30):
        loss, stats = algo.extra_loss("ego", mb, {"policy": ego})
        first = float(stats["e3t/partner_ce"]) if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(stats["e3t/partner_ce"]) < 0.2 * first and float(stats["e3t/partner_accuracy"]) == 1.0
    # and the policy reads the prediction: changing the head's output changes the action logits
    feats = ego.actor.trunk.sequence(obs, mb["h_actor"], mb["starts"])
    before = ego.actor.out(feats)
    with torch.no_grad():
        ego.actor.partner.bias.add_(torch.tensor([5.0, 0, 0, 0, 0, -5.0]))
    assert not torch.allclose(before, ego.actor.out(feats))


def test_policies_without_the_option_keep_their_spec():
    spec = network_spec(resolve_config(preset="quick").model, (5, 4, 26), (5, 4, 26), 6)
    assert "partner_model" not in spec["model"] and Policy(spec).actor.partner is None
