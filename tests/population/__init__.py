"""Tests of zsceval.population (policy pools, mixture agent, stacked learners)."""
