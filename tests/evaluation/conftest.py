"""Fixtures of the evaluation tests."""

import pytest

from tests.evaluation.tiny_bench import write_suite


@pytest.fixture(scope="session")
def tiny_bench(tmp_path_factory):
    """The tiny suite (:mod:`tests.evaluation.tiny_bench`) run once: ``(suite, out folder, tables)``.

    Its algorithms include ``pecan``, a ZSC-Eval name treated as not implemented (the skip path).
    Tests that change the output work on a copy of it.
    """
    from zsceval.bench import run as bench_mod

    root = tmp_path_factory.mktemp("bench")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bench_mod, "ZSC_ALGORITHMS", (*bench_mod.ZSC_ALGORITHMS, "pecan"))
        suite = bench_mod.load_suite(write_suite(root))
        tables = bench_mod.run_bench(suite, root / "out", progress=False, log=lambda *_: None)
    return suite, root / "out", tables
