"""The agent protocol: anything that acts, and the registry that loads agents from checkpoints.

An **agent** maps a batch of observations to actions. It may be a PPO :class:`~zsceval.rl.policy.
Policy`, a value-based Q-network, a :class:`~zsceval.population.pool.PolicyPool` member, or a
composite agent (a selector over several networks, TBS). Every agent implements:

* ``initial_state(rows, device) -> state``: the recurrent state of ``rows`` fresh rows, a tensor
  with leading dimension ``rows`` (``[rows, 0]`` for a memoryless agent);
* ``act(obs, avail, state, starts, generator=None, deterministic=False) -> ActOutput``.

Rows are agent slots in games (one row = one seat of one game). ``starts bool [rows]`` marks rows
whose episode begins at this step: the agent resets their state before acting.

Checkpoints store, for each saved agent, ``{"class": <registry name>, "spec": <JSON spec>}``; the
class's ``from_spec(spec)`` rebuilds the module and ``load_state_dict`` its weights
(:func:`zsceval.rl.checkpoint.load_agent`). Register a class with :func:`register_agent`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import torch
from torch.nn import functional as F

__all__ = [
    "ActOutput",
    "Agent",
    "UnknownAgentClassError",
    "agent_class",
    "agent_class_name",
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

    Returns:
        ``(actions int64 [N], log_probs float32 [N])``.
    """
    if avail is not None:
        logits = logits.masked_fill(~avail, -1e9)
    logp_all = F.log_softmax(logits.float(), dim=-1)
    if deterministic:
        actions = logp_all.argmax(-1)
    else:
        u = torch.rand(logp_all.shape, generator=generator, device=logp_all.device).clamp_(min=1e-20)
        actions = (logp_all - torch.log(-torch.log(u))).argmax(-1)
    return actions, logp_all.gather(-1, actions.unsqueeze(-1)).squeeze(-1)


# -- registry of agent classes --------------------------------------------------------------------
class UnknownAgentClassError(KeyError):
    """A checkpoint names an agent class that is not registered (the message lists the known ones)."""

    def __str__(self) -> str:
        return str(self.args[0])


_classes: dict[str, type] = {}


def register_agent(name: str):
    """Class decorator: register an agent class under ``name`` for checkpoints.

    The class must provide ``from_spec(spec) -> instance``, a JSON-able ``spec`` attribute, and
    ``state_dict``/``load_state_dict`` (an ``nn.Module`` does).

    Raises:
        ValueError: ``name`` is already registered by another class.
    """

    def decorator(cls: type) -> type:
        existing = _classes.get(name)
        same = existing is not None and (existing.__module__, existing.__qualname__) == (
            cls.__module__,
            cls.__qualname__,
        )  # a plug-in module imported again (fresh registry) re-registers its own class
        if existing is not None and existing is not cls and not same:
            raise ValueError(f"agent class '{name}' is already registered by {existing.__qualname__}")
        _classes[name] = cls
        cls.agent_class = name
        return cls

    return decorator


def _import_builtin_agents() -> None:
    import zsceval.human.proxy  # noqa: F401  (registers "human-proxy")
    import zsceval.interdependence  # noqa: F401  (registers the scripted probe "interdep_probe")
    import zsceval.population  # noqa: F401  (registers pool-backed agents)
    import zsceval.rl.policy  # noqa: F401  (registers "ppo")
    import zsceval.rl.qpolicy  # noqa: F401  (registers "q")
    import zsceval.tbs.agents  # noqa: F401  (registers "tbs", "tbs-random", "tbs-cbpr", "tbs-cem")
    import zsceval.tbs.tom  # noqa: F401  (registers "tbs-tom")


def agent_class(name: str) -> type:
    """The agent class registered as ``name``.

    Raises:
        UnknownAgentClassError: unknown name (registered names listed, closest suggested).
    """
    if name not in _classes:
        _import_builtin_agents()
    if name in _classes:
        return _classes[name]
    valid = sorted(_classes)
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    raise UnknownAgentClassError(
        f"unknown agent class '{name}' (registered: {', '.join(valid)}); the plug-in that defines it "
        f"must be imported before loading.{hint}"
    )


def agent_class_name(agent: Any) -> str:
    """Registry name of an agent's class.

    Raises:
        TypeError: the class was never registered with :func:`register_agent`.
    """
    name = getattr(type(agent), "agent_class", None)
    if name is None or _classes.get(name) is not type(agent):
        raise TypeError(f"{type(agent).__qualname__} is not a registered agent class (use @register_agent)")
    return name
