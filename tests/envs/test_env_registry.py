"""The env registry: lookup errors, duplicate names, options, laziness, and ``make_env`` on top."""

from __future__ import annotations

import subprocess
import sys

import pytest

from zsceval.envs import registry
from zsceval.envs.registry import (
    DuplicateEnvError,
    UnknownEnvError,
    describe,
    env_names,
    env_options,
    make,
    register_env,
)
from zsceval.rl.config import ConfigError, EnvConfig
from zsceval.rl.envs import make_env


@pytest.fixture
def scratch_registry():
    """Registrations made in a test are forgotten afterwards."""
    with registry.ENVS.scratch():
        yield


def test_builtin_envs_are_listed_with_descriptions():
    assert {"football", "overcooked", "toy"} <= set(env_names()) and env_names() == sorted(env_names())
    rows = dict(describe())
    assert "Overcooked" in rows["overcooked"] and "cue" in rows["toy"]
    assert set(env_options("overcooked")) == {
        "layout", "horizon", "randomize_seats", "random_start_prob", "view_radius",
    }  # fmt: skip
    assert env_options("toy") == {"num_agents": 2, "horizon": 8, "obs_dtype": "uint8"}


def test_unknown_name_lists_valid_names_and_suggests_the_closest():
    expected = r"'overcoked'.*football, overcooked, toy, yokai.*Did you mean 'overcooked'\?"
    with pytest.raises(UnknownEnvError, match=expected):
        make("overcoked", num_envs=1)
    with pytest.raises(ValueError, match=r"Registered envs: football, overcooked, toy, yokai\.$"):
        make("cricket", num_envs=1)


def test_unknown_option_lists_the_env_options():
    with pytest.raises(ValueError, match=r"\['horizn'\].*horizon, num_agents, obs_dtype.*'horizon'"):
        make("toy", num_envs=1, horizn=3)
    with pytest.raises(ValueError, match="layout"):
        make("toy", num_envs=1, layout="cramped_room")


def test_duplicate_registration_is_refused(scratch_registry):
    def factory(*, num_envs, device, seed, size: int = 3):
        """A dummy env."""
        return (num_envs, size)

    with pytest.raises(DuplicateEnvError, match="'toy' is already registered"):
        register_env("toy", factory)
    register_env("dummy", factory)
    assert "dummy" in env_names() and dict(describe())["dummy"] == "A dummy env."
    assert make("dummy", num_envs=4, size=5) == (4, 5)
    register_env("dummy", factory)  # the same factory again (a module imported twice) changes nothing

    def another(*, num_envs, device, seed):
        return num_envs

    with pytest.raises(DuplicateEnvError, match="'dummy' is already registered"):
        register_env("dummy", another)

    @register_env("dummy2", description="via the decorator")
    def other(*, num_envs, device, seed):
        return num_envs

    assert other(num_envs=2, device="cpu", seed=0) == 2 and dict(describe())["dummy2"] == "via the decorator"


def test_bad_registrations_are_refused(scratch_registry):
    with pytest.raises(ValueError, match="invalid env name"):
        register_env("two words", lambda *, num_envs, device, seed: None)
    with pytest.raises(ValueError, match=r"lacks \['seed'\]"):
        register_env("noseed", lambda *, num_envs, device: None)


def test_importing_the_registry_does_not_import_the_engine():
    code = (
        "import sys, zsceval.envs.registry as r; r.env_names(); "
        "assert 'zsceval.envs.overcooked' not in sys.modules; "
        "r.make('toy', num_envs=1); assert 'zsceval.envs.overcooked' not in sys.modules; "
        "r.make('overcooked', num_envs=1); assert 'zsceval.envs.overcooked' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_make_env_passes_config_fields_the_env_takes():
    toy = make_env(EnvConfig(name="toy", num_agents=3, horizon=5, num_envs=4))
    assert (toy.num_envs, toy.num_agents, toy.horizon) == (4, 3, 5)
    cfg = EnvConfig(layout="random3_m", horizon=50, randomize_seats=True, random_start_prob=0.5)
    train = make_env(cfg, num_envs=2, seed=3)
    assert (train.layout.name, train.horizon, train.num_envs) == ("counter_circuit_mr", 50, 2)
    assert train.randomize_seats and train.random_start_prob == 0.5
    assert make_env(cfg, evaluation=True).random_start_prob == 0.0


def test_make_env_refuses_unknown_names_and_unused_or_inconsistent_fields():
    with pytest.raises(ConfigError, match="Did you mean 'toy'"):
        make_env(EnvConfig(name="tyo"))
    with pytest.raises(ConfigError, match="Did you mean 'cramped_room'"):
        make_env(EnvConfig(layout="cramped_rom"))
    with pytest.raises(ConfigError, match="does not use env.randomize_seats"):
        make_env(EnvConfig(name="toy", horizon=8, randomize_seats=True))
    with pytest.raises(ConfigError, match="layout 'cramped_room' has 2 agents"):
        make_env(EnvConfig(num_agents=3))
