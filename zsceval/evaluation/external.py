"""Agents from outside zsceval, as ``zsceval eval --agent`` scores them: the loader lives in
:mod:`zsceval.rl.external` (a layer below render and interop, which play them too); re-exported."""

from zsceval.rl.external import (
    OVERCOOKED_AI_ACTIONS,
    ExternalAgent,
    ExternalAgentError,
    OvercookedAIAgent,
    is_external,
    load_ego,
    load_external,
    overcooked_ai_action_index,
)

__all__ = [
    "OVERCOOKED_AI_ACTIONS",
    "ExternalAgent",
    "ExternalAgentError",
    "OvercookedAIAgent",
    "is_external",
    "load_ego",
    "load_external",
    "overcooked_ai_action_index",
]
