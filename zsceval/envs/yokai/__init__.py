"""The Yōkai Learning Environment (YLE; Ruhdorfer et al.), batched in torch.

Public API::

    from zsceval.envs.yokai import YokaiEnv
    env = YokaiEnv(num_envs=1024, num_agents=2, version="3x3", device="cpu", seed=0)
    step = env.reset()
    step = env.step(actions)  # int64 [num_envs, num_agents]; mask: step.avail_actions

Modules, one job each: :mod:`.rules` (versions, Table 4, phases, action layout), :mod:`.graph`
(adjacency, reachability, clusters, legal moves), :mod:`.state` (the state and the deal),
:mod:`.dynamics` (mask, transition, score, rewards), :mod:`.observe` (image and graph views),
:mod:`.env` (the ``BatchedEnv``). Rules as implemented and the differences from the paper:
docs/yokai.md.
"""

from .dynamics import EVENT_NAMES
from .env import YokaiEnv
from .rules import HINT_COUNTS, VERSIONS, ActionKind, ActionLayout, HintStatus, Phase, Rules

__all__ = [
    "EVENT_NAMES",
    "HINT_COUNTS",
    "VERSIONS",
    "ActionKind",
    "ActionLayout",
    "HintStatus",
    "Phase",
    "Rules",
    "YokaiEnv",
]
