"""Bases of the two-stage population methods (FCP, MEP, TrajeDi, HSP; ZSC-Eval Sec. 3):
:mod:`~zsceval.algorithms.base.stage1` trains a population together, and
:mod:`~zsceval.algorithms.base.stage2` trains an ego against a frozen pool of its checkpoints."""
