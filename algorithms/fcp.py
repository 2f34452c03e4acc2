"""Fictitious Co-Play (FCP; Strouse et al., NeurIPS 2021), as ZSC-Eval trains it.

Method. Stage 1 trains N self-play agents independently (different seeds); each converges to its
own conventions. Their checkpoints at three skill levels, the first save (``init``), the point where
the training return first reaches about half of the final (``mid``) and the end (``final``), form a
frozen population of 3N partners of varied skill and convention (docs/reference-protocol.md "FCP"). Stage 2
trains one recurrent ego as a best response to the whole population: every game draws one of the
``2 * 3N`` (partner, ego seat) arms uniformly at each episode start, and the partners act by
sampling. The ego never trains with itself, so it cannot rely on a convention of its own.

ZSC-Eval trains 5 / 10 / 15 SP runs for populations 12 / 24 / 36 and gives each ego seed a sliding
window of 4 / 8 / 12 runs (``population.size``); stage 2 runs 5e7 / 8e7 / 1e8 env steps.
"""

from __future__ import annotations

from zsceval.algorithms.base.stage1 import PopulationSelfPlay
from zsceval.algorithms.base.stage2 import PopulationEgo
from zsceval.registry import register


@register("fcp-stage1", "FCP stage 1: N independent self-play members, trained population-batched.")
class FCPStage1(PopulationSelfPlay):
    """N self-play members, each with only its own game's reward (no diversity term)."""


@register("fcp", "FCP: recurrent ego vs init/mid/final checkpoints of self-play runs (Strouse et al. 2021).")
class FCP(PopulationEgo):
    """The FCP ego: uniform over the (partner, seat) arms of the frozen self-play population."""

    stage1_algo = "fcp-stage1"
