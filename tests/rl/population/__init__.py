"""Tests of zsceval.rl.population (policy pools, mixture agent, stacked learners)."""
