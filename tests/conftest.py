"""Shared pytest configuration: tests run on CPU with one intra-op thread (CI has 2 cores)."""

import os

import pytest
import torch

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
