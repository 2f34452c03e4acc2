"""The unhelpful partners of the partner strata: one that only stays, one that acts
uniformly at random over its available actions."""

import torch

from zsceval.envs.overcooked import OvercookedEnv
from zsceval.envs.overcooked.constants import Action
from zsceval.evaluation.strata import STAY_ACTION, StayAgent, UniformRandomAgent
from zsceval.rl.agent import agent_class


def test_the_stay_partner_never_moves_in_a_whole_episode():
    env = OvercookedEnv("cramped_room", num_envs=8, seed=0, horizon=50)
    step = env.reset()
    stay, rand = StayAgent(), UniformRandomAgent()
    g = torch.Generator().manual_seed(0)
    start = step.obs[:, 1, ..., 0].clone()  # seat 1's own location plane
    for _ in range(49):
        a0 = rand.act(step.obs[:, 0], step.avail_actions[:, 0], rand.initial_state(8, "cpu"),
                      torch.zeros(8, dtype=torch.bool), g).actions  # fmt: skip
        a1 = stay.act(step.obs[:, 1], step.avail_actions[:, 1], stay.initial_state(8, "cpu"),
                      torch.zeros(8, dtype=torch.bool)).actions  # fmt: skip
        assert torch.all(a1 == STAY_ACTION) and STAY_ACTION == int(Action.STAY)
        step = env.step(torch.stack([a0, a1], 1))
        assert torch.equal(step.obs[:, 1, ..., 0], start)  # it stays where it started


def test_the_random_partner_is_uniform_over_available_actions_only():
    rand = UniformRandomAgent({"num_actions": 6})
    N = 60_000
    avail = torch.ones(N, 6, dtype=torch.bool)
    avail[:, 2] = False  # one action never available
    out = rand.act(torch.zeros(N, 1), avail, rand.initial_state(N, "cpu"), torch.zeros(N, dtype=torch.bool),
                   torch.Generator().manual_seed(3), deterministic=True)  # fmt: skip
    counts = torch.bincount(out.actions, minlength=6).float() / N
    assert counts[2] == 0
    assert torch.allclose(counts[[0, 1, 3, 4, 5]], torch.full((5,), 0.2), atol=0.01)  # 5 sigma ~ 0.008
    assert torch.allclose(out.log_probs, torch.full((N,), float(torch.log(torch.tensor(0.2)))))


def test_unhelpful_partners_are_registered_agent_classes():
    assert agent_class("unhelpful-stay") is StayAgent
    assert agent_class("unhelpful-random") is UniformRandomAgent


def test_the_stay_partner_takes_each_envs_no_op():
    """Overcooked's STAY is 4, Football's idle 0 (4 would run top-right there); an env whose no-op is
    not known is refused rather than given a moving "stay" partner."""
    import pytest

    from zsceval.envs.football.features import NO_OP
    from zsceval.evaluation.strata import stay_action

    assert stay_action("overcooked") == int(Action.STAY) == 4 and stay_action("football") == NO_OP == 0
    with pytest.raises(ValueError, match="no stay action known for env 'toy'"):
        stay_action("toy")
    stay = StayAgent({"num_actions": 19, "stay_action": stay_action("football")})
    out = stay.act(torch.zeros(5, 3), None, stay.initial_state(5, "cpu"), torch.zeros(5, dtype=torch.bool))
    assert torch.equal(out.actions, torch.zeros(5, dtype=torch.int64))
