"""The rollout view: what a learning core shows the plug-in hooks of the last rollout.

Every core (``ppo``, ``pqn``, a third-party one) provides one :class:`Rollout` over its own
storage, so :meth:`~zsceval.rl.algorithm.Algorithm.on_rollout` is written against one type whatever
the core. A field a core does not store is None, and the core lists the fields it fills in
``Core.rollout_fields``. A plug-in lists the fields its hook reads in
:attr:`~zsceval.rl.algorithm.Algorithm.rollout_fields`; the trainer compares the two when it builds
the run (:func:`check_rollout_fields`), so a plug-in used with a core that lacks a field fails then,
with the field and the core named, instead of crashing in its first hook.

The view is read-only in the sense that its fields cannot be reassigned (a frozen dataclass) and
its tensors are the core's storage, not copies: a hook may change only the rewards, in place
(reward bonuses before GAE, e.g. MEP's population entropy bonus).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import torch

from zsceval.rl.config import ConfigError

__all__ = ["ROLLOUT_FIELDS", "Rollout", "RolloutFieldError", "check_rollout_fields"]


@dataclasses.dataclass(frozen=True)
class Rollout:
    """One rollout of ``T`` steps over ``B`` games with ``n`` seats, viewed without copying.

    Attributes (``t`` the step, ``b`` the game, ``k`` the seat; None where the core does not keep it):
        obs: ``[T, B, n, *obs_shape]`` actor observation of ``s_t`` in the env's dtype (uint8 for
            Overcooked's planes, float32 for vector observations).
        actions: ``int64 [T, B, n]`` the action taken at ``s_t``.
        actor: ``int64 [T(+1), B, n]`` index of the actor that drove each seat (learners first, so a
            learner's samples are where ``actor == its index``; partners follow); the PPO core keeps
            one more row, the seating at the bootstrap state, so read ``actor[:T]``.
        avail: ``bool [T, B, n, A]`` the available actions at ``s_t``.
        starts: ``bool [T, B, n]`` ``s_t`` is the first state of an episode.
        log_probs: ``float32 [T, B, n]`` log-probability of the action under the behaviour policy.
        rewards: ``float32 [T, B, n]`` each seat's training reward of step ``t`` (writable in place).
        team_rewards: ``float32 [T, B]`` each game's reward of step ``t`` (value-based VDN cores;
            writable in place).
        terminated, truncated: ``bool [T, B]`` the episode ended after step ``t``.
    """

    T: int
    B: int
    n: int
    obs: torch.Tensor
    actions: torch.Tensor
    actor: torch.Tensor
    avail: torch.Tensor | None = None
    starts: torch.Tensor | None = None
    log_probs: torch.Tensor | None = None
    rewards: torch.Tensor | None = None
    team_rewards: torch.Tensor | None = None
    terminated: torch.Tensor | None = None
    truncated: torch.Tensor | None = None

    def flat(self, x: torch.Tensor) -> torch.Tensor:
        """``[T, B, n, ...] -> [T, B * n, ...]`` (a view): one column per row ``game * n + seat``."""
        return x.reshape(x.shape[0], x.shape[1] * x.shape[2], *x.shape[3:])

    def fields(self) -> frozenset[str]:
        """The tensor fields this view holds (not None)."""
        return frozenset(f for f in ROLLOUT_FIELDS if getattr(self, f) is not None)


ROLLOUT_FIELDS = tuple(f.name for f in dataclasses.fields(Rollout) if f.name not in ("T", "B", "n"))
"""Every tensor field a core may provide, in declaration order."""


class RolloutFieldError(ConfigError):
    """A plug-in reads a rollout field that its learning core does not provide."""


def check_rollout_fields(algorithm: str, needed: Iterable[str], core: str, provided: Iterable[str]) -> None:
    """Check, when a run is built, that the core provides the rollout fields a plug-in reads.

    Args:
        algorithm: the plug-in's name (for the message).
        needed: the fields its hooks read (:attr:`Algorithm.rollout_fields`).
        core: the learning core's name.
        provided: the fields the core fills (``Core.rollout_fields``).

    Raises:
        RolloutFieldError: a needed field is unknown, or the core does not provide it; the message
            names the field, the core and what the core provides.
    """
    needed, provided = tuple(needed), frozenset(provided)
    unknown = [f for f in needed if f not in ROLLOUT_FIELDS]
    if unknown:
        raise RolloutFieldError(
            f"algorithm '{algorithm}' reads the rollout field(s) {unknown}, which no core provides; "
            f"valid: {', '.join(ROLLOUT_FIELDS)}"
        )
    missing = [f for f in needed if f not in provided]
    if missing:
        have = ", ".join(f for f in ROLLOUT_FIELDS if f in provided)
        names = ", ".join(repr(f) for f in missing)
        raise RolloutFieldError(
            f"algorithm '{algorithm}' reads the rollout field(s) {names}, which the '{core}' core does not "
            f"provide (it provides: {have})"
        )
