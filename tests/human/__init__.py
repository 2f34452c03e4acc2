"""Tests of ``zsceval.human``. Tests that read the 2019 trials skip, naming the install command,
when the data is absent; :func:`cached_trials` loads each (split, layouts) once per session."""

import functools

import pytest

from zsceval.human.trials import INSTALL_HINT, HumanDataMissing, find_data_dir, load_trials


def require_data():
    """The data folder, or skip the test naming the install command."""
    try:
        return find_data_dir()
    except HumanDataMissing:
        pytest.skip(f"the 2019 human-human trials are not installed ({INSTALL_HINT})")


@functools.lru_cache(maxsize=8)
def cached_trials(split: str, layouts: tuple[str, ...] | None = None):
    """``load_trials(split, layouts)`` once per session (skips without the data)."""
    require_data()
    return load_trials(split, layouts)
