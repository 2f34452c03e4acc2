"""Job kinds for the executor tests, in their own module so that Ray and process-pool workers can
import them (``modules=("tests.execution.ray_kinds",)``).

Every kind appends a line to ``runs.txt`` in its output directory on each call, so tests can count
how often a job really ran (retries included) without sharing memory with the workers.
"""

import json
import os

from zsceval.execution import job_kind

MODULE = __name__


def _count_run(out) -> int:
    with open(out / "runs.txt", "a") as f:
        f.write(f"{os.getpid()}\n")
    return len((out / "runs.txt").read_text().splitlines())


@job_kind("raytest.flaky")
def flaky(params, out, needs):
    """Adds ``value`` to its needs' values; raises on its first ``fail_times`` runs."""
    run = _count_run(out)
    (out / "partial.txt").write_text(f"attempt {run}")  # left behind by failed attempts
    if run <= params.get("fail_times", 0):
        raise RuntimeError(f"planned failure {run} of {params['fail_times']}")
    total = params["value"] + sum(json.loads((p / "value.json").read_text()) for p in needs.values())
    (out / "value.json").write_text(json.dumps(total))
    return {"value": total, "runs": run}


@job_kind("raytest.where")
def where(params, out, needs):
    """Reports which files the worker imported zsceval and this module from."""
    import zsceval

    _count_run(out)
    return {"zsceval": zsceval.__file__, "kinds": __file__, "pid": os.getpid()}


@job_kind("raytest.crash")
def crash(params, out, needs):
    """Kills its worker process outright on its first ``crash_times`` runs (like the OOM killer)."""
    run = _count_run(out)
    if run <= params["crash_times"]:
        os._exit(3)
    return {"runs": run}


@job_kind("raytest.wait")
def wait(params, out, needs):
    """Waits until the file ``release`` exists in its output directory (a job that runs until the
    test lets it end; its params do not change, so a rerun is the same job)."""
    import time

    run = _count_run(out)
    while not (out / "release").exists():
        time.sleep(0.1)
    return {"runs": run}
