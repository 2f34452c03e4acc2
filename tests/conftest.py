"""Shared pytest configuration: tests run on CPU with one intra-op thread (CI has 2 cores), and the
tiny bench the evaluation and generation tests share (`tiny_bench`)."""

import json
import os

import pytest
import torch
from filelock import FileLock

from tests.evaluation.tiny_bench import write_suite

torch.set_num_threads(1)
# ``run.num_threads: auto`` (the presets) depends on the machine's load; tests cap it at one thread so
# that two fresh runs of one test resolve alike (tests of ``auto`` itself unset the cap).
os.environ.setdefault("ZSCEVAL_MAX_THREADS", "1")


@pytest.fixture(scope="module")
def unimplemented_zsc_algorithm():
    """``pecan``: a name the bench treats as a ZSC-Eval algorithm not implemented yet (all eight of
    ZSC-Eval's are), to exercise the skip path (``pytestmark = pytest.mark.usefixtures(...)``)."""
    from zsceval.bench import suite as bench_mod_suite

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bench_mod_suite, "ZSC_ALGORITHMS", (*bench_mod_suite.ZSC_ALGORITHMS, "pecan"))
        yield "pecan"


@pytest.fixture(scope="session")
def tiny_bench(tmp_path_factory):
    """The tiny suite (:mod:`tests.evaluation.tiny_bench`) run once: ``(suite, out folder, tables)``.

    Its algorithms include ``pecan``, a ZSC-Eval name treated as not implemented (the skip path).
    Tests that change the output work on a copy of it. Under pytest-xdist the workers share one
    run (in the session's common temp folder, under a file lock): the first worker to ask makes it,
    the others read its summary (``tables.json``) instead of training it again.
    """
    from zsceval.bench import run as bench_mod
    from zsceval.bench import suite as bench_mod_suite

    worker_id = os.environ.get("PYTEST_XDIST_WORKER", "master")  # pytest-xdist's name of this worker
    if worker_id == "master":  # one process (also without pytest-xdist): this session's own folder
        root = tmp_path_factory.mktemp("bench")
    else:  # the parent of a worker's base temp folder is shared by every worker of the session
        root = tmp_path_factory.getbasetemp().parent / "tiny_bench"
        root.mkdir(exist_ok=True)
    summary = root / "tables.json"
    with FileLock(str(root) + ".lock"), pytest.MonkeyPatch.context() as mp:
        mp.setattr(bench_mod_suite, "ZSC_ALGORITHMS", (*bench_mod_suite.ZSC_ALGORITHMS, "pecan"))
        suite = bench_mod_suite.load_suite(write_suite(root))
        if summary.is_file():
            tables = json.loads(summary.read_text())
        else:
            tables = bench_mod.run_bench(suite, root / "out", progress=False, log=lambda *_: None)
            summary.write_text(json.dumps(tables))
    return suite, root / "out", tables
