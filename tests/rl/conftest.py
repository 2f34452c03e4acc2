"""Shared helpers for the training-core tests."""

import pytest

from zsceval.rl.config import resolve_config

TOY = [
    "env.name=toy",
    "env.horizon=8",
    "env.num_envs=32",
    "ppo.rollout_length=8",
    "ppo.epochs=2",
    "ppo.num_minibatches=2",
    "run.num_threads=0",
    "run.eval_episodes=8",
]


@pytest.fixture
def toy_config():
    """A resolved config for the toy cue-matching env (fast)."""

    def make(*overrides):
        return resolve_config(preset="quick", overrides=[*TOY, *overrides])

    return make
