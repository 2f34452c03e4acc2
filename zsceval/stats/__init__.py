"""Evaluation statistics: BR-Prox and the other metrics (:mod:`~zsceval.stats.metrics`), IQM,
bootstrap confidence intervals, probability of improvement and performance profiles
(:mod:`~zsceval.stats.statistics`), and the result-record format (:mod:`~zsceval.stats.records`).

The layer above the RL core that needs only numpy, scipy and pandas: ``statistics`` may not import
torch (an ``.importlinter`` contract), so a report can be recomputed from tables alone.
"""
