"""Generating evaluation-partner sets (ZSC-Eval Alg. 1, steps 1-5): the behavior-preferring reward
space and its grids (:mod:`~zsceval.generation.reward_space`, ``grids/``), the candidates
(:mod:`~zsceval.generation.candidates`), BR-Div selection (:mod:`~zsceval.generation.selection`),
the pipeline's jobs (:mod:`~zsceval.generation.pipeline`), agent export
(:mod:`~zsceval.generation.export`) and adding a set to a collection
(:mod:`~zsceval.generation.set_export`). Playing, scoring and the set format are
:mod:`zsceval.evaluation`'s, one layer below."""
