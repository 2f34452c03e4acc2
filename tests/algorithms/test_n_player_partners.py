"""The evaluation pipeline's plug-ins in games of n > 2 players (Football's 3): the biased agent's
hidden reward and seats, and best responses to one or several partners."""

import pytest
import torch

from zsceval import registry
from zsceval.envs.base import Step
from zsceval.rl.config import ConfigError, resolve_config
from zsceval.rl.seating import Seating

FOOTBALL = ["env.name=football", "env.num_agents=3"]


def make(algo, overrides, n=3):
    cfg = resolve_config(preset="quick", overrides=[f"run.algo={algo}", *overrides])
    return registry.get(algo)(cfg, 2, n, "cpu")


def test_br_to_a_pair_of_partners_sits_them_in_every_pair_of_seats():
    br = make("br", [*FOOTBALL, "algo.partners=[a#biased, b#biased]"])
    arms = br.arms()
    seatings = sorted(tuple(name for name, _ in arm.seats) for arm in arms)
    assert seatings == sorted(
        [
            ("partner0", "partner1", "br"), ("partner0", "br", "partner1"), ("partner1", "partner0", "br"),
            ("br", "partner0", "partner1"), ("partner1", "br", "partner0"), ("br", "partner1", "partner0"),
        ]
    )  # fmt: skip
    assert all(arm.seats[arm.ego_seat][0] == "br" for arm in arms)


def test_br_to_one_partner_in_three_player_games_plays_two_seats():
    arms = make("br", [*FOOTBALL, "algo.partner=a"]).arms()
    assert sorted(tuple(n for n, _ in a.seats) for a in arms) == [
        ("br", "br", "partner"),
        ("br", "partner", "br"),
        ("partner", "br", "br"),
    ]
    two = make("br", ["algo.partner=a"], n=2).arms()  # two players: unchanged, the BR in seat 0 or 1
    assert [tuple(n for n, _ in a.seats) for a in two] == [("br", "partner"), ("partner", "br")]


def test_br_refuses_both_or_too_many_partners():
    with pytest.raises(ConfigError, match="not both"):
        make("br", [*FOOTBALL, "algo.partner=a", "algo.partners=[b]"])
    with pytest.raises(ConfigError, match="at most 2"):
        make("br", [*FOOTBALL, "algo.partners=[a, b, c]"])


def test_biased_football_reward_is_weighted_events_plus_checkpoints_and_the_br_keeps_its_own():
    w = [1, 0, -5, 0, 1, 0, 0, 5]  # pass, actual_pass, shot, slide, catch, assist, possession, score
    biased = make("biased", [*FOOTBALL, f"algo.weights={w}"])
    B, n = 2, 3
    events = torch.zeros(B, n, 8, dtype=torch.int16)
    events[0, 0] = torch.tensor([1, 0, 1, 0, 0, 0, 1, 0])  # game 0, seat 0: a pass, a shot, possession
    events[1, 2] = torch.tensor([0, 0, 0, 0, 1, 0, 1, 1])  # game 1, seat 2: a catch and a goal
    checkpoint = torch.tensor([[0.1, 0.0, 0.2], [0.0, 0.3, 0.4]])
    own = torch.tensor([[0.7, 0.8, 0.9], [1.0, 1.1, 1.2]])
    step = Step(
        obs=torch.zeros(B, n, 58), avail_actions=torch.ones(B, n, 19, dtype=torch.bool),
        reward=torch.tensor([0.0, 1.0]), sparse_by_agent=torch.zeros(B, n), shaped_by_agent=own,
        events=events, interactions=torch.zeros(B, n, dtype=torch.int64),
        interaction_cell=torch.full((B, n), -1), terminated=torch.tensor([False, True]),
        truncated=torch.zeros(B, dtype=torch.bool),
        infos={"checkpoint_reward": checkpoint, "reward_by_agent": own},
    )  # fmt: skip
    actor = torch.tensor([[0, 1, 1], [1, 1, 0]])  # pi_w (actor 0) in seat 0 of game 0, seat 2 of game 1
    seating = Seating(actor, torch.zeros_like(actor), torch.zeros(B, dtype=torch.int64))
    r = biased.training_reward(step, 0.5, seating)
    # by hand: game 0 seat 0: 1 (pass) - 5 (shot) + 0.1 = -3.9; game 1 seat 2: 1 (catch) + 5 (goal) + 0.4
    assert r[0, 0].item() == pytest.approx(-3.9) and r[1, 2].item() == pytest.approx(6.4)
    assert torch.equal(r[0, 1:], own[0, 1:]) and torch.equal(r[1, :2], own[1, :2])
    assert biased.eval_seats(["biased", "br"], []) == ["biased", "br", "br"]
    assert len(biased.arms()) == 3
    with pytest.raises(ConfigError, match="needs 8 entries for Football"):
        make("biased", [*FOOTBALL, "algo.weights=[1, 0, 0]"])
