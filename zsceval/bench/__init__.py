"""Orchestration: benchmark suites (:mod:`~zsceval.bench.suite`: load and validate a suite;
:mod:`~zsceval.bench.plan`: its phases of jobs; :mod:`~zsceval.bench.budget`: their env steps and
hours; :mod:`~zsceval.bench.run`: run and resume them, its tables), an algorithm's job chain for
``zsceval train`` (:mod:`~zsceval.bench.chain`), and the report over a bench's tables
(:mod:`~zsceval.bench.report`, :mod:`~zsceval.bench.comparison`,
:mod:`~zsceval.bench.report_contents`, :mod:`~zsceval.bench.partner_runs`).

The layer above the algorithms and below the CLI: it composes jobs that the algorithms and the
evaluation pipeline declare, and runs them on an executor.
"""
