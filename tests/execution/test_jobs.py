"""Jobs are idempotent and resumable: finished work is never redone; failures leave no marker."""

import json

import pytest

from zsceval.execution import Job, JobError, job_kind, order_jobs, read_result, run_jobs

CALLS: list[str] = []


@job_kind("test.write")
def _write(params, out, needs):
    CALLS.append(params["name"])
    total = params["value"] + sum(json.loads((p / "value.json").read_text()) for p in needs.values())
    (out / "value.json").write_text(json.dumps(total))
    if params.get("fail"):
        raise RuntimeError("boom")
    return {"value": total}


@job_kind("test.square")
def _square(params, out, needs):
    return params["x"] ** 2


def jobs(fail_c=False):
    return [
        Job("c", "test.write", {"name": "c", "value": 100, "fail": fail_c}, needs=("a", "b"), out="c"),
        Job("a", "test.write", {"name": "a", "value": 1}, out="a"),
        Job("b", "test.write", {"name": "b", "value": 10}, needs=("a",), out="b"),
    ]


def test_dependency_order_and_results(tmp_path):
    CALLS.clear()
    assert [j.id for j in order_jobs(jobs())] == ["a", "b", "c"]
    results = run_jobs(jobs(), tmp_path, progress=False)
    assert CALLS == ["a", "b", "c"]
    # b = 10 + a(1); c = 100 + a(1) + b(11)
    assert results == {"a": {"value": 1}, "b": {"value": 11}, "c": {"value": 112}}
    assert read_result(jobs()[0], tmp_path) == {"value": 112}


def test_killed_run_resumes_without_redoing_finished_jobs(tmp_path):
    CALLS.clear()
    with pytest.raises(JobError, match="boom"):
        run_jobs(jobs(fail_c=True), tmp_path, progress=False)
    assert CALLS == ["a", "b", "c"]
    assert not (tmp_path / "c" / "DONE.json").exists()
    CALLS.clear()
    results = run_jobs(jobs(), tmp_path, progress=False)
    assert CALLS == ["c"]  # a and b were finished and are not run again
    assert results["c"] == {"value": 112}


def test_changed_parameters_rerun_the_job(tmp_path):
    CALLS.clear()
    run_jobs(jobs(), tmp_path, progress=False)
    changed = jobs()
    changed[1] = Job("a", "test.write", {"name": "a", "value": 2}, out="a")
    CALLS.clear()
    results = run_jobs(changed, tmp_path, progress=False)
    # b and c read a's output: they are redone although their own params did not change
    assert CALLS == ["a", "b", "c"]
    assert results == {"a": {"value": 2}, "b": {"value": 12}, "c": {"value": 114}}
    CALLS.clear()
    run_jobs(changed, tmp_path, progress=False)
    assert CALLS == []


def test_changed_job_starts_from_a_clean_directory_a_killed_one_resumes(tmp_path):
    CALLS.clear()
    run_jobs(jobs(), tmp_path, progress=False)
    (tmp_path / "a" / "leftover.bin").write_text("old weights")
    changed = [Job("a", "test.write", {"name": "a", "value": 2}, out="a")]
    run_jobs(changed, tmp_path, progress=False)
    assert not (tmp_path / "a" / "leftover.bin").exists()  # stale work of other inputs is gone
    # A killed run of the same job (STARTED.json, no DONE.json) keeps its files to resume from.
    (tmp_path / "a" / "DONE.json").unlink()
    (tmp_path / "a" / "partial.bin").write_text("checkpoint")
    run_jobs(changed, tmp_path, progress=False)
    assert (tmp_path / "a" / "partial.bin").exists()


def test_bad_job_graphs_are_refused(tmp_path):
    with pytest.raises(JobError, match="unknown job"):
        order_jobs([Job("x", "test.square", {"x": 1}, needs=("nope",), out="x")])
    with pytest.raises(JobError, match="cycle"):
        order_jobs(
            [Job("x", "test.square", needs=("y",), out="x"), Job("y", "test.square", needs=("x",), out="y")]
        )
    with pytest.raises(JobError, match="duplicate"):
        order_jobs([Job("x", "test.square", out="x"), Job("x", "test.square", out="y")])
    with pytest.raises(JobError, match="Did you mean 'test.square'"):
        run_jobs([Job("x", "test.sqare", {"x": 1}, out="x")], tmp_path, progress=False)
    with pytest.raises(ValueError, match="valid: local, process, ray, slurm"):
        run_jobs([], tmp_path, executor="pbs")


def test_process_pool_executor(tmp_path):
    js = [Job(f"sq{i}", "test.square", {"x": i}, out=f"sq{i}") for i in range(4)]
    results = run_jobs(
        js, tmp_path, executor="process", workers=2, modules=("tests.execution.test_jobs",), progress=False
    )
    assert results == {f"sq{i}": i * i for i in range(4)}


def test_process_pool_retries_a_failed_job_and_reports_one_that_keeps_failing(tmp_path):
    from tests.execution.ray_kinds import MODULE

    def flaky(name, fail_times):
        return Job(name, "raytest.flaky", {"value": 1, "fail_times": fail_times}, out=name)

    runs = lambda name: len((tmp_path / name / "runs.txt").read_text().splitlines())  # noqa: E731
    results = run_jobs([flaky("once", 1)], tmp_path, executor="process", workers=2, modules=(MODULE,),
                       progress=False)  # fmt: skip
    assert results["once"] == {"value": 1, "runs": 2} and runs("once") == 2  # default: 1 retry
    with pytest.raises(JobError, match=r"job 'always' \(raytest.flaky\) failed after 2 attempts") as info:
        run_jobs([flaky("once", 1), flaky("always", 99)], tmp_path, executor="process", workers=2,
                 modules=(MODULE,), progress=False)  # fmt: skip
    assert info.value.job == "always" and runs("always") == 2 and runs("once") == 2  # not redone


def test_local_executor_retries_only_when_asked(tmp_path):
    CALLS.clear()
    with pytest.raises(JobError, match="boom") as info:
        run_jobs([Job("f", "test.write", {"name": "f", "value": 1, "fail": True}, out="f")], tmp_path,
                 progress=False)  # fmt: skip
    assert CALLS == ["f"] and "attempts" not in str(info.value)  # local default: no retry
    CALLS.clear()
    with pytest.raises(JobError, match=r"job 'f' \(test.write\) failed after 3 attempts"):
        run_jobs([Job("f", "test.write", {"name": "f", "value": 1, "fail": True}, out="f")], tmp_path,
                 retries=2, progress=False)  # fmt: skip
    assert CALLS == ["f", "f", "f"]
    with pytest.raises(ValueError, match="retries must be >= 0"):
        run_jobs([Job("f", "test.write", {"name": "f", "value": 1}, out="f")], tmp_path, retries=-1)


def test_process_pool_survives_a_worker_that_dies(tmp_path):
    from tests.execution.ray_kinds import MODULE

    job = Job("c", "raytest.crash", {"crash_times": 1}, out="c")
    results = run_jobs([job], tmp_path, executor="process", workers=2, modules=(MODULE,), progress=False)
    assert results["c"] == {"runs": 2}  # the pool broke on the first run; a new one ran the retry
    with pytest.raises(JobError, match=r"job .d. .raytest.crash. failed after 2 attempts.*process died"):
        run_jobs([Job("d", "raytest.crash", {"crash_times": 9}, out="d")], tmp_path, executor="process",
                 workers=2, modules=(MODULE,), progress=False)  # fmt: skip
