"""Algorithm registry: lookup errors, duplicates, entry-point plug-ins trained through the CLI."""

import json
import textwrap

import pytest
from click.testing import CliRunner

from zsceval import registry
from zsceval.cli import main
from zsceval.rl.algorithm import Algorithm

PLUGIN = '''
from zsceval.rl.algorithm import Algorithm
from zsceval.rl.seating import Arm


class SeparateSeats(Algorithm):
    """Independent learners: one policy per seat (toy plug-in for the tests)."""

    def build_learners(self, make_policy):
        return {f"seat{k}": make_policy() for k in range(self.num_agents)}

    def arms(self):
        return [Arm.of(*(f"seat{k}" for k in range(self.num_agents)))]
'''


@pytest.fixture
def fresh_registry():
    registry.reset()
    yield
    registry.reset()


@pytest.fixture
def plugin_dist(tmp_path, monkeypatch, fresh_registry):
    """A fake installed distribution declaring two `zsceval.algorithms` entry points."""
    (tmp_path / "toyplug.py").write_text(PLUGIN)
    (tmp_path / "brokenplug.py").write_text("import nonexistent_pkg_xyz  # noqa\n")
    info = tmp_path / "toyplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toyplug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        textwrap.dedent(
            """\
            [zsceval.algorithms]
            sep_seats = toyplug:SeparateSeats
            broken = brokenplug:Broken
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_unknown_algorithm_lists_names_and_suggests(fresh_registry):
    with pytest.raises(
        registry.UnknownAlgorithmError,
        match=r"unknown algorithm 'spp'. Registered algorithms: .*\bsp\b.*Did you mean 'sp'",
    ):
        registry.get("spp")


def test_duplicate_name_is_rejected(fresh_registry):
    assert registry.get("sp").name == "sp"

    class Other(Algorithm):
        """Another one."""

    with pytest.raises(registry.DuplicateAlgorithmError, match="'sp' is already registered"):
        registry.register("sp", "dup", Other)


def test_register_decorator_and_description(fresh_registry):
    @registry.register("toy_test_algo")
    class ToyAlgo(Algorithm):
        """First docstring line is the description."""

    assert registry.get("toy_test_algo") is ToyAlgo
    assert ("toy_test_algo", "First docstring line is the description.") in registry.describe()


def test_entry_point_plugin_is_listed_and_trains_through_cli(plugin_dist, tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["algos"])
    assert res.exit_code == 0, res.output
    assert "sep_seats" in res.output and "Independent learners" in res.output and "sp " in res.output
    assert "broken" in res.output and "failed to load" in res.output
    out = tmp_path / "run"
    args = ["train", "--algo", "sep_seats", "--steps", "512", "--out", str(out), "--no-progress",
            "--set", "env.name=toy", "--set", "env.horizon=8", "--set", "env.num_envs=16",
            "--set", "ppo.rollout_length=8", "--set", "run.eval_episodes=4"]  # fmt: skip
    res = runner.invoke(main, args)
    assert res.exit_code == 0, res.output
    meta = json.loads(next((out / "checkpoints").glob("step_*/meta.json")).read_text())
    assert meta["algo"] == "sep_seats" and sorted(meta["agents"]) == ["seat0", "seat1"]
    assert meta["ego"] == "seat0"


def test_broken_plugin_error_names_missing_package(plugin_dist):
    with pytest.raises(registry.PluginLoadError, match="nonexistent_pkg_xyz"):
        registry.get("broken")
    res = CliRunner().invoke(
        main, ["train", "--algo", "broken", "--steps", "100", "--out", str(plugin_dist / "x")]
    )
    assert res.exit_code != 0 and "nonexistent_pkg_xyz" in res.output and "toyplug" in res.output
    assert not (plugin_dist / "x").exists()
