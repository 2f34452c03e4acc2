"""The ids of a bench's jobs, built and parsed here and nowhere else.

A job's id is also its folder under the bench's output folder (POSIX separators). The kinds
(ZSC-Eval Alg. 1 for the partner pipeline; ``I`` is an ego seed's index, ``cNNN`` a candidate):

==========================================  =====================================================
``<layout>/candidates/cNNN/train``          a behavior-preferring candidate (biased agent + its BR)
``<layout>/candidates/cNNN/evaluate``       its behavior features and mid checkpoint
``<layout>/hsp_candidates/cNNN/...``        the same, trained by HSP for itself (no bench candidates)
``<layout>/partners/select``                BR-Div selection of the evaluation partners
``<layout>/partners/mid_br/cNNN``           the BR of a selected candidate's mid checkpoint
``<layout>/partners/set_br/A+B``            the BR of a pair of partners (games of n > 2 players)
``<layout>/partners/set``                   the partner-set manifest (generated or shipped)
``<layout>/partners/human-proxy``           the layout's human proxy (behavior cloning)
``<layout>/stage1/<algo>``                  a stage-1 population (FCP, MEP, TrajeDi)
``<layout>/egos/<algo>/sI``                 an ego training run
``<layout>/egos/<algo>/sI/<stage>``         a stage of that ego's own chain (a plug-in's, e.g. TBS)
``<layout>/evaluation/<algo>/sI``           that ego against the partner set
``<layout>/human-proxy/<algo>/sI``          that ego with the human proxy
``<layout>/unhelpful/<algo>/sI``            that ego with the unhelpful partners
==========================================  =====================================================

:func:`parse` reads any of them back into a :class:`JobId`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CANDIDATES",
    "HSP_CANDIDATES",
    "JobId",
    "candidate_evaluate",
    "candidate_name",
    "candidate_train",
    "ego",
    "ego_evaluation",
    "ego_human_proxy",
    "ego_unhelpful",
    "human_proxy",
    "mid_br",
    "parse",
    "partner_set",
    "select",
    "set_br",
    "stage1",
]

CANDIDATES = "candidates"
"""Folder of a bench's candidates."""
HSP_CANDIDATES = "hsp_candidates"
"""Folder of the candidates HSP trains for itself (alone, or beside a shipped set)."""


def candidate_name(index: int) -> str:
    """``c000``, ``c001``, ...: candidate ``index`` (its weight vector is row ``index``)."""
    return f"c{index:03d}"


def candidate_train(layout: str, cid: str, group: str = CANDIDATES) -> str:
    """The training job of candidate ``cid``."""
    return f"{layout}/{group}/{cid}/train"


def candidate_evaluate(layout: str, cid: str, group: str = CANDIDATES) -> str:
    """The ``candidate.evaluate`` job (features, mid checkpoint) of candidate ``cid``."""
    return f"{layout}/{group}/{cid}/evaluate"


def select(layout: str) -> str:
    """The ``partners.select`` job (BR-Div)."""
    return f"{layout}/partners/select"


def mid_br(layout: str, cid: str) -> str:
    """The BR of selected candidate ``cid``'s mid checkpoint."""
    return f"{layout}/partners/mid_br/{cid}"


def set_br(layout: str, key: str) -> str:
    """The BR of a set of partners, ``key`` = their ids joined by ``+`` (sorted)."""
    return f"{layout}/partners/set_br/{key}"


def partner_set(layout: str) -> str:
    """The job that writes (or copies, for a shipped set) the layout's partner set."""
    return f"{layout}/partners/set"


def human_proxy(layout: str) -> str:
    """The job that trains the layout's human proxy."""
    return f"{layout}/partners/human-proxy"


def stage1(layout: str, algo: str) -> str:
    """A stage-1 population of ``algo`` (e.g. ``mep-stage1``), shared by the egos that use it."""
    return f"{layout}/stage1/{algo}"


def ego(layout: str, algo: str, index: int) -> str:
    """Ego seed ``index`` (0, 1, ...) of ``algo``."""
    return f"{layout}/egos/{algo}/s{index}"


def ego_evaluation(layout: str, algo: str, index: int) -> str:
    """That ego against the partner set (``ego.evaluate``)."""
    return f"{layout}/evaluation/{algo}/s{index}"


def ego_human_proxy(layout: str, algo: str, index: int) -> str:
    """That ego with the human proxy (``ego.human_proxy``)."""
    return f"{layout}/human-proxy/{algo}/s{index}"


def ego_unhelpful(layout: str, algo: str, index: int) -> str:
    """That ego with the unhelpful partners (``ego.unhelpful``)."""
    return f"{layout}/unhelpful/{algo}/s{index}"


_EGO_KINDS = {
    "egos": "ego",
    "evaluation": "evaluation",
    "human-proxy": "human_proxy",
    "unhelpful": "unhelpful",
}
_PARTNER_KINDS = {
    "select": "select",
    "set": "set",
    "human-proxy": "proxy",
    "mid_br": "mid_br",
    "set_br": "set_br",
}


@dataclass(frozen=True)
class JobId:
    """A job id read back (:func:`parse`).

    Attributes:
        layout: the layout (the id's first part).
        kind: ``candidate``, ``select``, ``mid_br``, ``set_br``, ``set``, ``proxy``, ``stage1``,
            ``ego``, ``ego_stage`` (a job of an ego's own chain, below its folder), ``evaluation``,
            ``human_proxy``, ``unhelpful``, or ``other``.
        group: a candidate's folder (``candidates`` or ``hsp_candidates``).
        candidate: ``cNNN`` of a candidate or mid BR.
        step: a candidate's ``train`` or ``evaluate``.
        algo: the algorithm of an ego, its evaluations or a stage-1 population.
        index: the ego seed's index.
        key: the partner pair of a set BR; the rest of an ``ego_stage`` id.
    """

    layout: str
    kind: str
    group: str | None = None
    candidate: str | None = None
    step: str | None = None
    algo: str | None = None
    index: int | None = None
    key: str | None = None


def parse(job_id: str) -> JobId:
    """Read a job id of the kinds in the module docstring.

    Returns:
        its :class:`JobId`; an id of another shape is ``kind="other"`` with its first part as layout.
    """
    parts = str(job_id).split("/")
    layout, rest = parts[0], parts[1:]
    if len(rest) == 3 and rest[0] in (CANDIDATES, HSP_CANDIDATES) and rest[2] in ("train", "evaluate"):
        return JobId(layout, "candidate", group=rest[0], candidate=rest[1], step=rest[2])
    if len(rest) == 3 and rest[0] in _EGO_KINDS and rest[2][:1] == "s" and rest[2][1:].isdigit():
        return JobId(layout, _EGO_KINDS[rest[0]], algo=rest[1], index=int(rest[2][1:]))
    if len(rest) > 3 and rest[0] == "egos" and rest[2][:1] == "s" and rest[2][1:].isdigit():
        return JobId(layout, "ego_stage", algo=rest[1], index=int(rest[2][1:]), key="/".join(rest[3:]))
    if len(rest) == 2 and rest[0] == "stage1":
        return JobId(layout, "stage1", algo=rest[1])
    if len(rest) == 2 and rest[0] == "partners" and rest[1] in _PARTNER_KINDS:
        return JobId(layout, _PARTNER_KINDS[rest[1]])
    if len(rest) == 3 and rest[0] == "partners" and rest[1] == "mid_br":
        return JobId(layout, "mid_br", candidate=rest[2])
    if len(rest) == 3 and rest[0] == "partners" and rest[1] == "set_br":
        return JobId(layout, "set_br", key=rest[2])
    return JobId(layout, "other")
