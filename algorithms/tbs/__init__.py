"""TBS: Theory-of-Mind-based Best-response Selection (TBS paper; docs/tbs.md).

Modules: :mod:`~.stages` (the plug-ins: pool, best responses, the whole chain), :mod:`~.shaping`
(random reward shaping of the pool), :mod:`~.similarity` (cross-play similarity, Eq. 5),
:mod:`~.stsc` (self-tuning spectral clustering, Eq. 6), :mod:`~.concepts` (partner concept labels),
:mod:`~.tom` (ToM models), :mod:`~.selection` (Eq. 8 / 9, CBPR, CEM rules), :mod:`~.agents` (the
TBS agent and the baselines' selectors), :mod:`~.hypothesis` (hypothesis scoring after Hypothetical
Minds, over the cluster ToM models and BRs), :mod:`~.jobs` (clustering, ToM and
evaluation jobs), :mod:`~.results` (the scaled-reward table) and :mod:`~.report` (pooled over runs).
"""
