"""Plug-ins are installed packages: every registry is filled from entry points.

A tiny third-party distribution is built and installed by pip from a temporary directory (into a
private ``--target`` folder, so the shared environment never sees it) with entry points in the
groups ``zsceval.algorithms``, ``zsceval.agents``, ``zsceval.jobs`` and ``zsceval.suites``. It is
then trained, evaluated and benchmarked through the CLI without any change to the core: the
algorithm subclasses the built-in self-play, its ego is an agent class that only the entry point
registers, its jobs include a job kind of its own, and the suite ships in the package.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from zsceval.plugins import EntryPointsMissingError, PluginGroup, UnknownPluginError

ROOT = Path(__file__).resolve().parent.parent

PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "zsceval-testplug"
version = "0.1"

[project.entry-points."zsceval.algorithms"]
plugsp = "zsceval_testplug:PlugSelfPlay"

[project.entry-points."zsceval.agents"]
plug-policy = "zsceval_testplug:PlugPolicy"

[project.entry-points."zsceval.jobs"]
"plug.note" = "zsceval_testplug:note_job"

[project.entry-points."zsceval.suites"]
testplug = "zsceval_testplug.suites"

[project.entry-points."zsceval.report_sections"]
plug-notes = "zsceval_testplug:NoteSection"

[tool.setuptools]
packages = ["zsceval_testplug", "zsceval_testplug.suites"]

[tool.setuptools.package-data]
"zsceval_testplug.suites" = ["*.yaml"]
"""

PLUGIN = '''
"""A third-party plug-in: none of its names is registered by a decorator."""

from zsceval.algorithms.sp import SelfPlay
from zsceval.execution.jobs import Job
from zsceval.plugins import ReportSection
from zsceval.rl.policy import Policy


class PlugPolicy(Policy):
    """A PPO policy saved under the plug-in's own agent class."""


class PlugSelfPlay(SelfPlay):
    """Plug-in self-play: the ego is a PlugPolicy; a note job runs before it."""

    def build_learners(self, make_policy):
        policy = make_policy()
        ego = PlugPolicy(policy.spec).to(next(policy.parameters()).device)
        ego.load_state_dict(policy.state_dict())
        return {"ego": ego}

    @classmethod
    def jobs(cls, ctx):
        note = f"{ctx.layout}/plug_notes/s{ctx.seed}"
        job = Job(note, "plug.note", {"algo": ctx.algo, "seed": ctx.seed}, out=note)
        return [job, ctx.train_job(needs=(note,))]


def note_job(params, out, needs):
    (out / "note.txt").write_text(f"{params['algo']} seed {params['seed']}")
    return {"noted": params["algo"]}


class NoteSection(ReportSection):
    """The plug-in's notes (plug_notes/*/note.txt) as a block of zsceval report."""

    def gather(self, directory, options):
        notes = sorted(p.read_text() for p in directory.rglob("plug_notes/*/note.txt"))
        return notes or None

    def to_json(self, data):
        return {"plug_notes": data}

    def to_text(self, data, options):
        return "plug-in notes: " + "; ".join(data)
'''

SUITE = """
name: plug-tiny
seed: 0
layouts: [cramped_room]
algorithms: [plugsp]
ego_seeds: 1
ego_steps: 800
preset: quick
overrides: [env.num_envs=8, env.horizon=100, run.eval_episodes=2, ppo.epochs=1, ppo.num_minibatches=1]
partners: {candidates: 2, candidate_steps: 1600, checkpoints: 2, feature_episodes: 2, k: 1,
           mid_br_steps: 800, dpp_samples: 20, min_return: -1}
evaluation: {episodes: 2}
"""

TINY = ["--preset", "quick", "--steps", "800", "--no-progress", "--set", "env.num_envs=8",
        "--set", "env.horizon=100", "--set", "run.eval_episodes=2", "--set", "ppo.epochs=1",
        "--set", "ppo.num_minibatches=1"]  # fmt: skip


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory):
    """The plug-in distribution built and installed by pip into a private folder (its site)."""
    src = tmp_path_factory.mktemp("plugsrc")
    (src / "pyproject.toml").write_text(PYPROJECT)
    (src / "zsceval_testplug" / "suites").mkdir(parents=True)
    (src / "zsceval_testplug" / "__init__.py").write_text(PLUGIN)
    (src / "zsceval_testplug" / "suites" / "__init__.py").write_text("")
    (src / "zsceval_testplug" / "suites" / "plug-tiny.yaml").write_text(SUITE)
    site = tmp_path_factory.mktemp("plugsite")
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
           "--no-index", "--disable-pip-version-check", "--target", str(site), str(src)]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert (site / "zsceval_testplug-0.1.dist-info" / "entry_points.txt").is_file()
    return site


def zsceval(site: Path, *args, cwd: Path) -> subprocess.CompletedProcess:
    """Run the CLI in a fresh process that sees the plug-in's site (as an installed package)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    code = "import sys; from zsceval.cli import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip


def test_a_plugin_package_trains_and_evaluates_through_its_entry_points(plugin_site, tmp_path):
    res = zsceval(plugin_site, "algos", cwd=tmp_path)
    assert res.returncode == 0 and "plugsp" in res.stdout and "Plug-in self-play" in res.stdout, res.stderr

    run = tmp_path / "run"
    res = zsceval(plugin_site, "train", "--algo", "plugsp", "--out", run, *TINY, cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    meta = json.loads(sorted((run / "checkpoints").glob("step_*/meta.json"))[-1].read_text())
    assert meta["algo"] == "plugsp" and meta["agents"]["ego"]["class"] == "plug-policy", meta["agents"]

    # a fresh process loads the ego's class by its name: the zsceval.agents entry point
    res = zsceval(plugin_site, "eval", "--agent", run, "--partner", run, "--layout", "cramped_room",
                  "--episodes", "2", "--json", cwd=tmp_path)  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.slow
def test_a_plugin_package_benches_its_own_suite_and_job_kind(plugin_site, tmp_path):
    out = tmp_path / "bench"
    res = zsceval(plugin_site, "bench", "--suite", "plug-tiny", "--out", out, "--no-progress", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    (note,) = (out / "cramped_room" / "plug_notes").glob("s*")  # the plug-in's own job kind ran
    assert (note / "note.txt").read_text() == f"plugsp seed {note.name[1:]}"
    assert json.loads((note / "DONE.json").read_text())["result"] == {"noted": "plugsp"}
    (ego,) = (out / "cramped_room" / "egos" / "plugsp").glob("s*/run/checkpoints/*/meta.json")
    assert json.loads(ego.read_text())["agents"]["ego"]["class"] == "plug-policy"
    results = pd.read_parquet(out / "results.parquet")
    assert set(results["algorithm"]) == {"plugsp"} and len(results) > 0
    res = zsceval(plugin_site, "report", out, "--no-figures", "--reps", "50", cwd=tmp_path)
    assert res.returncode == 0 and "BR-Prox" in res.stdout, res.stdout + res.stderr
    assert f"plug-in notes: plugsp seed {note.name[1:]}" in res.stdout  # the section beside the tables


def test_a_plugin_package_adds_a_report_section(plugin_site, tmp_path):
    """``zsceval report`` names no plug-in: a section of the entry-point group shows its block."""
    for seed in (0, 1):
        (tmp_path / "run" / "plug_notes" / f"s{seed}").mkdir(parents=True)
        (tmp_path / "run" / "plug_notes" / f"s{seed}" / "note.txt").write_text(f"seed {seed}")
    res = zsceval(plugin_site, "report", tmp_path / "run", "--json", "--no-figures", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads(res.stdout) == {"plug_notes": ["seed 0", "seed 1"]}  # a folder of its results only
    res = zsceval(plugin_site, "report", tmp_path / "run", cwd=tmp_path)
    assert res.returncode == 0 and res.stdout.strip() == "plug-in notes: seed 0; seed 1", res.stderr
    res = zsceval(plugin_site, "report", "--help", cwd=tmp_path)  # the names, from the metadata
    names = "plug-notes, tbs, yokai, yokai-games: each adds its block"
    assert names in " ".join(res.stdout.split()), res.stdout


def test_the_config_loads_no_plugin_and_a_lookup_loads_only_its_algorithm():
    """``TrainConfig`` reads no registry (its caller names the core); ``registry.get`` imports the
    plug-in it names alone."""
    code = textwrap.dedent(
        """
        import sys
        from zsceval import registry
        from zsceval.rl.config import TrainConfig
        cfg = TrainConfig()
        assert cfg.rollout_length("ppo") == cfg.ppo.rollout_length
        assert cfg.steps_per_iteration("pqn") == cfg.env.num_envs * cfg.pqn.rollout_length
        assert not [m for m in sys.modules if m.startswith("zsceval.algorithms.")]
        assert registry.get("sp").core == "ppo"
        loaded = sorted(m for m in sys.modules if m.startswith("zsceval.algorithms."))
        assert loaded == ["zsceval.algorithms.sp"], loaded
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


def test_every_builtin_entry_point_loads_and_registers_its_name():
    """setup.py's entry points and the code agree (a moved module would fail here, by name)."""
    from zsceval import registry
    from zsceval.bench import suite as bench_suite
    from zsceval.envs import registry as envs
    from zsceval.execution import jobs
    from zsceval.rl import agent, cores, loggers, networks

    dist = importlib.metadata.distribution("zsceval")
    declared = {}
    for ep in dist.entry_points:
        declared.setdefault(ep.group, set()).add(ep.name)
    lookups = {
        "zsceval.algorithms": registry.get,
        "zsceval.agents": agent.agent_class,
        "zsceval.cores": cores.get_core,
        "zsceval.envs": envs.env_options,
        "zsceval.jobs": jobs.job_function,
        "zsceval.models": networks.model_class,
        "zsceval.loggers": loggers.logger_class,
    }
    for group, lookup in lookups.items():
        assert declared.get(group), f"setup.py declares no {group} entry point"
        for name in sorted(declared[group]):
            lookup(name)  # raises, naming the entry point, when it cannot be loaded
    assert {"sp", "fcp", "tbs"} <= declared["zsceval.algorithms"]
    assert {"overcooked", "overcooked-quick"} <= set(bench_suite.list_suites())


def test_missing_entry_points_say_how_to_install():
    group = PluginGroup("zsceval.no-such-group", "widget")
    with pytest.raises(
        EntryPointsMissingError, match=r"zsceval's entry points are missing.*pip install -e \."
    ):
        group.names()


def test_unknown_names_list_the_declared_ones():
    from zsceval.execution.jobs import job_function
    from zsceval.rl.agent import UnknownAgentClassError, agent_class
    from zsceval.rl.cores import get_core

    with pytest.raises(
        UnknownAgentClassError, match=r"'ppp'.*human-proxy.*\bppo\b.*tbs-tom.*Did you mean 'ppo'"
    ):
        agent_class("ppp")
    with pytest.raises(
        ValueError, match=r"unknown learning core 'pqm'. Registered learning cores: ppo, pqn.*'pqn'"
    ):
        get_core("pqm")
    with pytest.raises(KeyError, match=r"unknown job kind 'tbs.eg'.*train.*Did you mean 'tbs.ego'"):
        job_function("tbs.eg")
    for lookup in (agent_class, get_core, job_function):  # one error type behind every registry
        with pytest.raises(UnknownPluginError):
            lookup("no-such-name")
