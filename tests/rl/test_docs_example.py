"""The complete plug-in example of docs/adding-an-algorithm.md runs as written."""

import re
import sys
import types
from pathlib import Path

import torch

from zsceval import registry
from zsceval.rl.algorithm import JobContext
from zsceval.rl.config import resolve_config
from zsceval.rl.trainer import Trainer

DOC = Path(__file__).resolve().parents[2] / "docs" / "adding-an-algorithm.md"
TOY = ["env.name=toy", "env.horizon=8", "env.num_envs=16", "ppo.rollout_length=8", "ppo.epochs=1",
       "run.eval_episodes=2"]  # fmt: skip


def _example_module() -> dict:
    code = re.search(r"Save it as `my_zsc/pbr.py`:\n\n```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    module = types.ModuleType("my_zsc_pbr_doc")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    registry.names()
    exec(compile(code, str(DOC), "exec"), module.__dict__)
    return module.__dict__


def test_documented_population_plugin_trains_prioritizes_and_declares_its_jobs(tmp_path):
    try:
        ns = _example_module()
        cls = registry.get("pbr")
        ctx = JobContext(
            "pbr", "cramped_room", 7, 1000, "cramped_room/egos/pbr/s0", {"layout": "cramped_room"}
        )
        jobs = cls.jobs(ctx)
        assert [j.id for j in jobs][-1] == ctx.ego_id and len(jobs) == 5
        assert jobs[-1].params["algo_inputs"]["population"] == [j.id for j in jobs[:4]]
        runs = []
        for seed in (0, 1):
            cfg = resolve_config(preset="quick", overrides=[*TOY, f"run.seed={seed}", "run.total_steps=128"])
            Trainer(cfg, tmp_path / f"sp{seed}", progress=False).train()
            runs.append(str(tmp_path / f"sp{seed}"))
        cfg = resolve_config(
            preset="quick",
            overrides=[
                *TOY,
                "run.algo=pbr",
                "run.total_steps=640",
                f"algo.population=[{runs[0]}, {runs[1]}]",
            ],
        )
        tr = Trainer(cfg, tmp_path / "pbr", progress=False)
        assert isinstance(tr.algorithm, ns["PrioritizedBR"]) and len(tr.runner.arm_table) == 4
        tr.train()
        assert bool((tr.algorithm.returns != 0).all())  # both partners were played and prioritized
        resumed = Trainer(cfg, tmp_path / "pbr", resume=True, progress=False)
        assert torch.equal(resumed.algorithm.returns, tr.algorithm.returns)
    finally:
        registry._registry.pop("pbr", None)
