"""Replay of the 2019 human-human trials: our engine reproduces every sampled recorded transition
that the reference simulator reproduces (in fact all of them), and the comparison is not vacuous
(wrong actions or rewards are caught, with the right reason)."""

import copy

import pytest
import torch

from zsceval.human.replay import (
    COLUMNS,
    _matches,
    canonical,
    reason,
    replay,
    replay_engine,
    replay_table,
    transitions,
)
from zsceval.human.trials import HUMAN_LAYOUTS

from . import cached_trials

SAMPLE = 300


def state(p0, p1, objects=(), held0=None):
    """A cramped_room state dict: players at p0, p1 facing north, given objects."""
    return {
        "players": [
            {"position": p0, "orientation": (0, -1), "held_object": held0},
            {"position": p1, "orientation": (0, -1), "held_object": None},
        ],
        "objects": list(objects),
    }


def test_canonical_ignores_object_order_only():
    onion = {"name": "onion", "position": (0, 2)}
    dish = {"name": "dish", "position": (4, 2)}
    a = state((1, 1), (3, 1), [onion, dish])
    assert canonical(a) == canonical(state((1, 1), (3, 1), [dish, onion]))
    assert canonical(a) != canonical(state((1, 1), (3, 1), [onion]))
    assert canonical(a) != canonical(state((1, 2), (3, 1), [onion, dish]))
    s19 = {"name": "soup", "position": (2, 0), "_ingredients": [{"name": "onion"}] * 3, "cooking_tick": 19}
    s20 = {**s19, "cooking_tick": 20}
    assert canonical(state((1, 1), (3, 1), [s19])) != canonical(state((1, 1), (3, 1), [s20]))
    assert canonical(state((1, 1), (3, 1), [s20]))[1] == (((2, 0), ("soup", ("onion",) * 3, 20)),)


def test_reason_labels():
    before = state((1, 1), (3, 1))
    moved = state((2, 1), (3, 1))
    assert reason(before, [4, 4], None, moved) == "not importable"
    assert reason(before, [4, 4], before, moved) == "moved without a move action"
    assert reason(before, [2, 4], moved, before) == "move action not applied"
    assert reason(before, [2, 4], moved, state((1, 2), (3, 1))) == "movement differs"
    onion = {"name": "onion", "position": (1, 1)}
    assert reason(before, [5, 4], before, state((1, 1), (3, 1), held0=onion)) == "held objects"
    assert reason(before, [5, 4], before, state((1, 1), (3, 1), [onion])) == "pots and counters"
    assert reason(before, [5, 4], before, before) == "reward only"


@pytest.fixture(scope="module")
def samples():
    """Per layout, SAMPLE train transitions: every delivery (up to 40) plus seeded random others."""
    trials = cached_trials("train", None)
    gen = torch.Generator().manual_seed(0)
    out = {}
    for name, tr in transitions(trials).items():
        rewarded = torch.nonzero(tr.rewards > 0).flatten()[:40]
        others = torch.nonzero(tr.rewards == 0).flatten()
        others = others[torch.randperm(len(others), generator=gen)[: SAMPLE - len(rewarded)]]
        out[name] = tr.subset(torch.cat([rewarded, others]).tolist())
    return out


def test_engine_reproduces_every_sampled_transition(samples):
    assert sorted(samples) == sorted(HUMAN_LAYOUTS.values())
    for name, tr in samples.items():
        assert len(tr) == SAMPLE and int((tr.rewards > 0).sum()) >= 20
        moves = sum(canonical(a)[0] != canonical(b)[0] for a, b in zip(tr.before, tr.after, strict=True))
        assert moves > SAMPLE // 4, name  # players move or pick up in many of them
        result = replay(tr, reference=False)
        assert int(result.engine.sum()) == SAMPLE, (name, result.reasons)


def test_wrong_actions_and_rewards_are_caught(samples):
    tr = samples["coordination_ring"]
    stay = copy.copy(tr)
    stay.actions = torch.full_like(tr.actions, 4)
    result = replay(stay, reference=False)
    missed = SAMPLE - int(result.engine.sum())
    moved = int((tr.actions != 4).any(1).sum())
    assert missed >= moved // 2 and missed > 50
    assert result.reasons["moved without a move action"] > 0 and result.reasons["held objects"] > 0
    no_reward = copy.copy(tr)
    no_reward.rewards = torch.zeros_like(tr.rewards)
    states, rewards = replay_engine(no_reward)
    caught = ~_matches(no_reward, states, rewards)
    assert torch.equal(caught, tr.rewards > 0)


@pytest.mark.reference
def test_reference_reproduces_nothing_the_engine_misses(samples):
    pytest.importorskip(
        "overcooked", reason="reference simulator not installed (pip install -e .[reference])"
    )
    for name, tr in samples.items():
        result = replay(tr, reference=True)
        counts = result.counts()
        assert counts["reference only"] == 0, name
        assert counts["engine reproduces"] >= counts["reference reproduces"], name
        assert counts["both"] == counts["reference reproduces"] == SAMPLE, (name, counts)


def test_replay_table_shape():
    cached_trials("test", ("cramped_room",))  # skips without the data
    table, reasons, seconds = replay_table(["test"], layouts=["cramped_room"], limit=40, reference=False)
    assert list(table.columns) == ["layout", "split", *COLUMNS]
    assert table["layout"].tolist() == ["cramped_room", "total"]
    row = table.iloc[0]
    assert (row["transitions"], row["engine reproduces"], row["reference reproduces"]) == (40, 40, -1)
    assert not reasons and seconds["total"] >= seconds["engine"] > 0
