"""The agent protocol: anything that acts, and the registry that loads agents from checkpoints.

An **agent** maps a batch of observations to actions. It may be a PPO :class:`~zsceval.rl.policy.
Policy`, a value-based Q-network, a :class:`~zsceval.rl.population.pool.PolicyPool` member, or a
composite agent (a selector over several networks, TBS). Every agent implements:

* ``initial_state(rows, device) -> state``: the recurrent state of ``rows`` fresh rows, a tensor
  with leading dimension ``rows`` (``[rows, 0]`` for a memoryless agent);
* ``act(obs, avail, state, starts, generator=None, deterministic=False) -> ActOutput``.

Rows are agent slots in games (one row = one seat of one game). ``starts bool [rows]`` marks rows
whose episode begins at this step: the agent resets their state before acting.

Checkpoints store, for each saved agent, ``{"class": <registry name>, "spec": <JSON spec>}``; the
class's ``from_spec(spec)`` rebuilds the module and ``load_state_dict`` its weights
(:func:`zsceval.rl.checkpoint.load_agent`). The registry of agent classes is filled from the
entry-point group ``zsceval.agents`` (:mod:`zsceval.plugins`; the built-ins are declared in
``setup.py``): the entry point's name is the class's registry name and its value the class,
``module:Class``. Importing the module may register it with :func:`register_agent`; otherwise it
is registered under the entry point's name (:data:`AGENT_CLASSES`, a
:class:`zsceval.plugins.Registry`). :func:`agent_class` loads the entry point of the name
it is asked for, and only that one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import torch
from torch.nn import functional as F

from zsceval.plugins import Registry, UnknownPluginError

__all__ = [
    "AGENT_CLASSES",
    "AGENT_GROUP",
    "ActOutput",
    "Agent",
    "UnknownAgentClassError",
    "agent_class",
    "agent_class_name",
    "agent_class_names",
    "register_agent",
    "sample_actions",
]


@dataclass
class ActOutput:
    """What :meth:`Agent.act` returns for N rows.

    Attributes:
        actions: ``int64 [N]`` chosen actions.
        log_probs: ``float32 [N]`` log-probability of each chosen action under the acting policy
            (0 for a greedy value-based agent).
        state: the agent's state after this step (same structure as ``initial_state``).
        extras: optional per-row tensors (``[N, ...]``) an agent exposes, e.g. ``logits``.
    """

    actions: torch.Tensor
    log_probs: torch.Tensor
    state: torch.Tensor
    extras: dict[str, torch.Tensor] = field(default_factory=dict)

    def __iter__(self):
        """Unpack as ``actions, log_probs, state``."""
        return iter((self.actions, self.log_probs, self.state))


@runtime_checkable
class Agent(Protocol):
    """Anything that acts (see the module docstring)."""

    def initial_state(self, rows: int, device: torch.device | str) -> torch.Tensor:
        """Zero state of ``rows`` rows: a tensor with leading dimension ``rows``."""
        ...

    def act(
        self,
        obs: torch.Tensor,
        avail: torch.Tensor | None,
        state: torch.Tensor,
        starts: torch.Tensor,
        generator: torch.Generator | None = None,
        deterministic: bool = False,
    ) -> ActOutput:
        """Actions for N rows (``obs [N, ...]``, ``avail bool [N, A]``, ``starts bool [N]``)."""
        ...


def sample_actions(
    logits: torch.Tensor,
    avail: torch.Tensor | None,
    generator: torch.Generator | None = None,
    deterministic: bool = False,
    noise: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample from masked categorical logits with the Gumbel-max trick.

    One uniform draw of shape ``[N, A]`` is taken from ``generator`` (also when ``deterministic``
    is False only), so any code that computes the same logits for the same rows draws the same
    actions from the same generator state: a pool acting for many members at once and each member
    acting alone give identical actions.

    Args:
        logits: ``float32 [N, A]`` unmasked logits.
        avail: ``bool [N, A]`` available actions (others get probability 0), or None.
        generator: torch generator on ``logits.device``; None uses the global one.
        deterministic: arg-max instead of sampling (no random draw).
        noise: ``float32 [N, A]`` uniform draws in [0, 1) to use instead of drawing from
            ``generator`` (``torch.rand(N, A, generator=g)`` gives the same actions): a compiled
            acting graph takes its randomness as an input, since ``torch.compile`` cannot trace a
            generator object.

    Returns:
        ``(actions int64 [N], log_probs float32 [N])``.
    """
    if avail is not None:
        logits = logits.masked_fill(~avail, -1e9)
    logp_all = F.log_softmax(logits.float(), dim=-1)
    if deterministic:
        actions = logp_all.argmax(-1)
    else:
        if noise is None:
            noise = torch.rand(logp_all.shape, generator=generator, device=logp_all.device)
        u = noise.clamp(min=1e-20)
        actions = (logp_all - torch.log(-torch.log(u))).argmax(-1)
    return actions, logp_all.gather(-1, actions.unsqueeze(-1)).squeeze(-1)


# -- registry of agent classes --------------------------------------------------------------------
class UnknownAgentClassError(UnknownPluginError, KeyError):
    """A checkpoint names an agent class that is not registered (the message lists the known ones)."""


AGENT_GROUP = "zsceval.agents"


def _mark(name: str, cls: type, description: str) -> None:
    """Give the class its registry name (``cls.agent_class``, what checkpoints store)."""
    cls.agent_class = name


AGENT_CLASSES = Registry(
    AGENT_GROUP,
    "agent class",
    plural="agent classes",
    kind="class",
    on_register=_mark,
    unknown_error=UnknownAgentClassError,
    advice=f"Install the plug-in that declares it in the entry-point group '{AGENT_GROUP}'.",
)
"""The registry of agent classes (:class:`zsceval.plugins.Registry`)."""


def register_agent(name: str):
    """Class decorator: register an agent class under ``name`` for checkpoints.

    The class must provide ``from_spec(spec) -> instance``, a JSON-able ``spec`` attribute, and
    ``state_dict``/``load_state_dict`` (an ``nn.Module`` does).

    Raises:
        zsceval.plugins.DuplicatePluginError: ``name`` is already registered by another class (a
            ``ValueError``).
    """
    return AGENT_CLASSES.register(name)


def agent_class_names() -> list[str]:
    """Sorted names of the agent classes: registered ones and declared entry points (none imported)."""
    return AGENT_CLASSES.names()


def agent_class(name: str) -> type:
    """The agent class registered as ``name``, loading its entry point (only) if needed.

    Raises:
        UnknownAgentClassError: unknown name (registered names listed, closest suggested).
        zsceval.plugins.PluginLoadError: the entry point of ``name`` could not be loaded (it and the
            exception are named).
    """
    return AGENT_CLASSES.get(name)


def agent_class_name(agent: Any) -> str:
    """Registry name of an agent's class. A class that its module does not register (an entry
    point registers it) is looked up by its entry point's value, which loads that entry point.

    Raises:
        TypeError: the class is neither registered with :func:`register_agent` nor declared in the
            entry-point group ``zsceval.agents``.
    """
    cls = type(agent)
    name = getattr(cls, "agent_class", None)
    if name is None or AGENT_CLASSES.objects.get(name) is not cls:
        name = AGENT_CLASSES.name_of(cls)
    if name is None:
        raise TypeError(
            f"{cls.__qualname__} is not a registered agent class (use @register_agent, or declare it in "
            f"the entry-point group '{AGENT_GROUP}')"
        )
    return name
