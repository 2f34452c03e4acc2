"""``benchmarks/perf/yokai_update.py`` runs end to end on a tiny configuration."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_update_benchmark_measures_a_tiny_run(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks" / "learning"))
    # the script imports the learning benchmark as `yokai`, a name this test package may hold
    before = sys.modules.pop("yokai", None)
    try:
        path = ROOT / "benchmarks" / "perf" / "yokai_update.py"
        spec = importlib.util.spec_from_file_location("zsceval_bench_yokai_update", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        tiny = ["env.num_envs=4", "ppo.rollout_length=8", "ppo.epochs=1", "ppo.num_minibatches=1"]
        r = module.measure([*tiny, *module.MODELS["relational"]], repeats=1)
    finally:
        sys.modules.pop("yokai", None)
        if before is not None:
            sys.modules["yokai"] = before
    assert r["env_steps_per_iteration"] == 4 * 8
    assert 0.3 < r["forced_fraction"] < 0.7  # the waiting seat's NOOPs
    assert r["update_s_skip_off"] > 0 and r["update_s_skip_on"] > 0
    assert r["env_steps_per_s_skip_on"] > 0
