"""Fixtures of the play tests: saved agents (see helpers.save_agent)."""

from pathlib import Path

import pytest

from .helpers import save_agent


@pytest.fixture(scope="session")
def gru_run(tmp_path_factory) -> Path:
    """A recurrent PPO agent on cramped_room, horizon 12."""
    return save_agent(tmp_path_factory.mktemp("gru_run"))


@pytest.fixture(scope="session")
def mixture_run(tmp_path_factory) -> Path:
    """A composite agent (two-member mixture of MLP policies) on cramped_room, horizon 12."""
    return save_agent(tmp_path_factory.mktemp("mixture_run"), recurrent=False, mixture=True)


@pytest.fixture(scope="session")
def stay_run(tmp_path_factory) -> Path:
    """A PPO agent on cramped_room (horizon 60) that always stays: the person plays alone."""
    return save_agent(tmp_path_factory.mktemp("stay_run"), horizon=60, recurrent=False, stay=True)
