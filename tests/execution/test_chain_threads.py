"""`zsceval train` chains run every job with the chain's `run.num_threads` (not only training jobs)."""

import os

import pytest
import torch

from zsceval.bench import chain
from zsceval.rl import hardware
from zsceval.rl.hardware import MAX_THREADS_ENV


def params(*overrides, preset="quick"):
    return {"algo": "fcp", "layout": "cramped_room", "seed": 0, "steps": None, "preset": preset,
            "device": "cpu", "overrides": list(overrides)}  # fmt: skip


def test_chain_threads_from_overrides_preset_and_cap(monkeypatch):
    monkeypatch.delenv(MAX_THREADS_ENV, raising=False)
    monkeypatch.setattr(hardware, "auto_threads", lambda: (2, "two free cores"))
    assert chain.chain_threads(params()) == 2  # the quick preset's run.num_threads: auto
    assert chain.chain_threads(params("run.num_threads=1", "algo.population_size=4")) == 1
    assert chain.chain_threads(params("run.num_threads=1", "run.num_threads=3")) == 3  # the last wins
    assert chain.chain_threads(params("run.num_threads=0", preset="paper")) == 0  # torch's default
    monkeypatch.setenv(MAX_THREADS_ENV, "1")  # `zsceval bench` with 2 workers on 2 cores
    assert chain.chain_threads(params()) == 1


def test_run_chain_sets_the_threads_for_its_jobs_and_restores_them(monkeypatch, tmp_path):
    monkeypatch.delenv(MAX_THREADS_ENV, raising=False)
    seen = []

    def fake_run_jobs(jobs, out, **kwargs):
        seen.append(torch.get_num_threads())
        (out / chain.EGO / "run").mkdir(parents=True)
        (out / chain.EGO / "run" / "eval.json").write_text("{}")

    monkeypatch.setattr("zsceval.execution.executors.run_jobs", fake_run_jobs)
    before = torch.get_num_threads()
    want = 1 if before != 1 else 3
    chain.run_chain(params(f"run.num_threads={want}"), tmp_path / "run", progress=False)
    assert seen == [want]
    assert torch.get_num_threads() == before


def test_run_chain_with_workers_runs_jobs_in_processes_with_a_thread_cap(monkeypatch, tmp_path):
    monkeypatch.delenv(MAX_THREADS_ENV, raising=False)
    monkeypatch.setattr(hardware, "usable_cores", lambda: 8)
    seen = []

    def fake_run_jobs(jobs, out, **kwargs):
        seen.append((kwargs["executor"], kwargs["workers"], os.environ.get(MAX_THREADS_ENV)))
        (out / chain.EGO / "run").mkdir(parents=True, exist_ok=True)
        (out / chain.EGO / "run" / "eval.json").write_text("{}")

    monkeypatch.setattr("zsceval.execution.executors.run_jobs", fake_run_jobs)
    chain.run_chain(params("run.num_threads=1"), tmp_path / "run", progress=False, workers=3)
    chain.run_chain(params("run.num_threads=1"), tmp_path / "run", progress=False)  # resumed: another value
    monkeypatch.setenv(MAX_THREADS_ENV, "1")  # a smaller cap from outside is kept
    chain.run_chain(params("run.num_threads=1"), tmp_path / "run", progress=False, workers=2)
    assert seen == [("process", 3, "2"), ("local", 1, None), ("process", 2, "1")]  # 8 cores // 3 workers
    assert os.environ[MAX_THREADS_ENV] == "1"  # restored
    with pytest.raises(ValueError, match="workers must be >= 1, got 0"):
        chain.run_chain(params(), tmp_path / "other", workers=0)
    assert not (tmp_path / "other").exists()


def test_run_chain_on_slurm_gives_the_jobs_their_cpus_as_threads(monkeypatch, tmp_path):
    from zsceval.execution.slurm import SlurmOptions

    monkeypatch.delenv(MAX_THREADS_ENV, raising=False)
    seen = []

    def fake_run_jobs(jobs, out, **kwargs):
        seen.append((kwargs["executor"], kwargs["workers"], kwargs["slurm"], os.environ.get(MAX_THREADS_ENV)))
        (out / chain.EGO / "run").mkdir(parents=True, exist_ok=True)
        (out / chain.EGO / "run" / "eval.json").write_text("{}")

    monkeypatch.setattr("zsceval.execution.executors.run_jobs", fake_run_jobs)
    opts = SlurmOptions(partition="gpu", cpus=6)
    run = tmp_path / "run"
    chain.run_chain(params("run.num_threads=1"), run, progress=False, workers=4, executor="slurm", slurm=opts)
    assert seen == [("slurm", 4, opts, "6")]
    assert MAX_THREADS_ENV not in os.environ  # restored
