"""Training jobs: the generic ``train`` job kind (:mod:`zsceval.training.jobs`), held away from the
layout's evaluation partners by :func:`zsceval.evaluation.exclusion.training_guard`."""
