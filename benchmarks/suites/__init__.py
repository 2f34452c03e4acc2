"""Benchmark suites for ``zsceval bench`` (data), installed as ``zsceval.suites``."""
