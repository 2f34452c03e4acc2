"""Constructive interdependence (Biswas et al., "Who is Helping Whom?").

A cooperation metric computed from a trajectory: states and actions are mapped to a STRIPS trace
(:mod:`.predicates`), then every pair of actions in which one agent's effect satisfies a
precondition of the other agent's later action is detected and classified as constructive,
looping or irrelevant (:mod:`.detect`). :mod:`.probe` holds the scripted onion-passing partner
used as a probe (paper Sec. 6.1). See docs/interdependence.md.

Examples:
    >>> from zsceval.interdependence import interdependence, summarize
    >>> counts = interdependence(states, actions, "forced_coordination")   # doctest: +SKIP
    >>> counts.constructive, counts.to_dict()["seats"][1]["triggered"]      # doctest: +SKIP
"""

from .detect import (
    CATEGORIES,
    InterdependenceCounts,
    Interdependency,
    detect,
    interdependence,
    interdependence_of_file,
    interdependence_of_trajectory,
    summarize,
)
from .predicates import ObjectState, Operator, Pred, SymbolicTrace, TraceError, map_trajectory
from .probe import ScriptedProbe  # registers agent class "interdep_probe"

__all__ = [
    "CATEGORIES",
    "InterdependenceCounts",
    "Interdependency",
    "ObjectState",
    "Operator",
    "Pred",
    "ScriptedProbe",
    "SymbolicTrace",
    "TraceError",
    "detect",
    "interdependence",
    "interdependence_of_file",
    "interdependence_of_trajectory",
    "map_trajectory",
    "summarize",
]
