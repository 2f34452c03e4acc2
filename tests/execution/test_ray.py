"""The Ray executor on a local Ray instance: a tiny bench end to end, retries, no finished job redone.

Skipped when Ray is not installed (``pip install -e ".[ray]"``; CI installs it). Ray is started
once for the module (a few seconds) by the same code path ``run_jobs(executor="ray")`` uses.
"""

import os
import shutil
from pathlib import Path

import pytest
import yaml

ray = pytest.importorskip("ray")

import zsceval  # noqa: E402
from tests.execution import ray_kinds  # noqa: E402
from zsceval.execution import Job, JobError, run_jobs  # noqa: E402
from zsceval.execution.executors import _import_roots, ensure_ray  # noqa: E402

KINDS = (ray_kinds.MODULE,)


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    if ray.is_initialized():  # another module's instance: start ours as run_jobs would
        ray.shutdown()
    ensure_ray(num_cpus=2, paths=tuple(_import_roots(KINDS)))
    assert ray.is_initialized() and ray.cluster_resources().get("CPU") == 2
    yield
    ray.shutdown()


def runs(root: Path, job: str) -> int:
    """How many times a job's function was called (ray_kinds appends a line per call)."""
    path = root / job / "runs.txt"
    return len(path.read_text().splitlines()) if path.exists() else 0


def done_times(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("DONE.json")}


def flaky(name, value=1, fail_times=0, needs=()):
    return Job(name, "raytest.flaky", {"value": value, "fail_times": fail_times}, needs=needs, out=name)


def test_workers_import_the_drivers_zsceval_and_the_test_kinds(tmp_path):
    results = run_jobs([Job("w", "raytest.where", out="w")], tmp_path, executor="ray", workers=2,
                       modules=KINDS, progress=False)  # fmt: skip
    assert results["w"]["pid"] != os.getpid()  # it ran in a Ray worker, not in this process
    assert results["w"]["zsceval"] == zsceval.__file__  # the same source tree as the driver's
    assert results["w"]["kinds"] == ray_kinds.__file__


def test_failed_job_is_retried_and_finished_jobs_are_never_redone(tmp_path):
    jobs = [flaky("a", 1, fail_times=1), flaky("b", 10, needs=("a",)), flaky("c", 100)]
    results = run_jobs(jobs, tmp_path, executor="ray", workers=2, modules=KINDS, retries=1, progress=False)
    assert results == {
        "a": {"value": 1, "runs": 2},
        "b": {"value": 11, "runs": 1},
        "c": {"value": 100, "runs": 1},
    }
    assert [runs(tmp_path, j) for j in "abc"] == [2, 1, 1]  # a failed once and was retried
    stamps = done_times(tmp_path)
    assert set(stamps) == {"a/DONE.json", "b/DONE.json", "c/DONE.json"}
    # Run again, plus a new job that needs a: only the new job runs, nothing finished is redone.
    more = [*jobs, flaky("d", 1000, needs=("a", "b"))]
    results = run_jobs(more, tmp_path, executor="ray", workers=2, modules=KINDS, progress=False)
    assert results["d"] == {"value": 1012, "runs": 1}
    assert [runs(tmp_path, j) for j in "abcd"] == [2, 1, 1, 1]
    assert {k: v for k, v in done_times(tmp_path).items() if k != "d/DONE.json"} == stamps


def test_job_failing_every_attempt_raises_job_error_naming_it(tmp_path):
    jobs = [flaky("ok", 1), flaky("bad", 2, fail_times=99), flaky("after", 3, needs=("bad",))]
    with pytest.raises(JobError, match=r"job 'bad' \(raytest.flaky\) failed after 3 attempts") as info:
        run_jobs(jobs, tmp_path, executor="ray", workers=2, modules=KINDS, retries=2, progress=False)
    assert info.value.job == "bad"
    assert "planned failure 3 of 99" in str(info.value)  # the last attempt's error, from the worker
    assert runs(tmp_path, "bad") == 3 and not (tmp_path / "bad" / "DONE.json").exists()
    assert runs(tmp_path, "after") == 0  # its input never finished: it never started
    assert (tmp_path / "ok" / "DONE.json").exists()  # independent work is kept


def test_errors_a_retry_cannot_fix_are_not_retried(tmp_path):
    with pytest.raises(JobError, match="unknown job kind 'raytest.flakey'") as info:
        run_jobs([Job("x", "raytest.flakey", out="x")], tmp_path, executor="ray", workers=2, modules=KINDS,
                 retries=3, progress=False)  # fmt: skip
    assert "attempts" not in str(info.value) and info.value.job == "x"


MINI_OVERRIDES = ["env.num_envs=8", "run.eval_episodes=1", "env.horizon=100"]


def mini_suite(tmp_path: Path):
    """The pipeline tests' TINY suite with smaller budgets (one ego seed, two candidates)."""
    from tests.evaluation.test_pipeline import TINY
    from zsceval.bench.suite import load_suite

    data = yaml.safe_load(TINY)
    data.update(algorithms=["sp", "pecan"], ego_seeds=1, ego_steps=800, overrides=MINI_OVERRIDES)
    data["partners"].update(candidates=2, candidate_steps=1600, feature_episodes=1, k=1, mid_br_steps=800)
    data["partners"]["dpp_samples"] = 10
    data["evaluation"]["episodes"] = 1
    path = tmp_path / "mini.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_suite(path)


@pytest.mark.slow
def test_tiny_bench_on_ray_matches_the_local_executors_tables(tmp_path, monkeypatch):
    from zsceval.bench import suite as bench_mod_suite
    from zsceval.bench.report import read_tables
    from zsceval.bench.run import run_bench

    algos = (*bench_mod_suite.ZSC_ALGORITHMS, "pecan")  # not implemented
    monkeypatch.setattr(bench_mod_suite, "ZSC_ALGORITHMS", algos)
    suite = mini_suite(tmp_path)
    out = tmp_path / "ray"
    quiet = dict(progress=False, log=lambda *_: None)
    tables = run_bench(suite, out, executor="ray", workers=2, **quiet)
    assert tables["skipped_algorithms"] == ["pecan"]
    results, br, features = read_tables(out)
    # 1 ego seed x 2k=2 partners (final + mid) x 2 seats x 1 episode
    assert len(results) == 2 * 2 and set(results["seat"]) == {0, 1} and set(results["algorithm"]) == {"sp"}
    assert set(results["partner_level"]) == {"moderate", "expert"}
    assert set(br["partner"]) == set(results["partner"])
    assert len(features) == 2 and features["selected"].sum() == 1
    stamps = done_times(out)
    run_bench(suite, out, executor="ray", workers=2, **quiet)
    assert done_times(out) == stamps  # a finished bench redoes nothing

    # The local executor, redoing the evaluation jobs on the same partners and egos, writes tables
    # of the same structure (rows, columns, dtypes, keys); values may differ in the last bits
    # (Ray workers run torch with one thread).
    local = tmp_path / "local"
    shutil.copytree(out, local)
    shutil.rmtree(local / "cramped_room" / "evaluation")
    for name in ("results", "br_returns", "features"):
        (local / f"{name}.parquet").unlink()
    run_bench(suite, local, executor="local", **quiet)
    redone = {k for k, v in done_times(local).items() if stamps.get(k) != v}
    assert redone == {"cramped_room/evaluation/sp/s0/DONE.json"}
    keys = ["layout", "partner", "partner_level", "seat", "episode", "algorithm", "ego_seed"]
    for ray_table, local_table in zip((results, br, features), read_tables(local)):
        assert list(ray_table.columns) == list(local_table.columns)
        assert list(ray_table.dtypes) == list(local_table.dtypes) and len(ray_table) == len(local_table)
        common = [k for k in keys if k in ray_table.columns]
        if common:
            by_key = [t[common].sort_values(common).reset_index(drop=True) for t in (ray_table, local_table)]
            assert by_key[0].equals(by_key[1])


def test_a_job_whose_ray_worker_dies_is_retried(tmp_path):
    results = run_jobs([Job("c", "raytest.crash", {"crash_times": 1}, out="c")], tmp_path, executor="ray",
                       workers=2, modules=KINDS, progress=False)  # fmt: skip
    assert results["c"] == {"runs": 2}
    with pytest.raises(JobError, match=r"job .d. .raytest.crash. failed after 2 attempts.*Ray worker failed"):
        run_jobs([Job("d", "raytest.crash", {"crash_times": 9}, out="d")], tmp_path, executor="ray",
                 workers=2, modules=KINDS, progress=False)  # fmt: skip
