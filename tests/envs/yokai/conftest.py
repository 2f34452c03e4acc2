"""Fixtures of the Yōkai tests."""

from __future__ import annotations

import pytest

from zsceval.envs.yokai import YokaiEnv


@pytest.fixture
def env2() -> YokaiEnv:
    """A 2-player 3x3 env with 2 games, reset."""
    env = YokaiEnv(2, num_agents=2, version="3x3", seed=0)
    env.reset()
    return env
