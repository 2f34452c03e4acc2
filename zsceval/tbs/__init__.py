"""TBS: Theory-of-Mind-based Best-response Selection (paper 000; docs/tbs.md).

Modules: :mod:`~zsceval.tbs.shaping` (random reward shaping of the pool), :mod:`~zsceval.tbs.similarity`
(cross-play similarity, Eq. 5), :mod:`~zsceval.tbs.stsc` (self-tuning spectral clustering, Eq. 6),
:mod:`~zsceval.tbs.concepts` (partner concept labels), :mod:`~zsceval.tbs.tom` (ToM models),
:mod:`~zsceval.tbs.selection` (Eq. 8 / 9, CBPR, CEM rules) and :mod:`~zsceval.tbs.agents` (the TBS
agent and the baselines' selectors).
"""
