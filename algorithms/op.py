"""Other-play (OP): self-play in which partners see the game through random symmetries.

Method (Hu et al. 2020, "Other-Play for zero-shot coordination"; as used by the YLE paper, Sec. 5.4
and App. C.4). Self-play lets a policy break the symmetries of a game in arbitrary ways (which
colour goes where, which corner is "first") that an independently trained partner breaks
differently. OP removes these conventions by optimising

    J_OP(pi) = E_{phi ~ U(G)} J(pi^1, phi(pi^2)),

where G is a group of symmetries of the game and phi(pi)(a | o) = pi(phi(a) | phi(o)) is the
policy playing in the game seen through phi: its observation is mapped by phi before it acts and
its action is mapped back by phi^-1 before the env applies it. Here one policy, the ego, is
trained; in every game the ego sits in a seat drawn uniformly per episode (every seat equally
often) and plays in the env's own frame, and every other seat is driven by the *same* policy
(the same weights, updated as the ego learns) through a symmetry phi drawn uniformly from G per
episode and seat (:class:`SymmetryAgent`). The ego learns from its own seat's samples with the
ordinary MAPPO update and reward (team sparse reward plus its annealed shaped reward, like SP).

The env owns its symmetries: an env enables ``op`` by a method ``symmetries()`` returning an
object with ``elements(spec) -> int64 [k]`` (the elements of the subgroup named by
``algo.symmetries``), ``observation(obs, e)``, ``mask(avail, e)`` and ``action(actions, e,
inverse=False)`` (per-row element ``e int64 [N]``). Yōkai declares colour permutations ``C`` and
quarter-turns of the field ``R`` (:class:`zsceval.envs.yokai.symmetry.YokaiSymmetries`):
``algo.symmetries=C`` is the paper's OP+C, ``C+R`` its OP+C+R. An env without ``symmetries()``
makes the run fail when it is built, naming the env.

Differences from the YLE paper (docs/differences.md): the paper shows *each* agent its own
recolouring / rotation and trains on every seat; here the ego plays unmapped and only its seat
trains (the partners' samples would be in their mapped frames). The objective is the same,
since what matters is the relative symmetry between partners, and every relative symmetry is
drawn uniformly; it uses 1/n of the samples of a run for the update.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from zsceval.envs.base import Step
from zsceval.registry import register
from zsceval.rl.agent import ActOutput
from zsceval.rl.algorithm import Algorithm, default_training_reward
from zsceval.rl.config import ConfigError, TrainConfig
from zsceval.rl.policy import Policy
from zsceval.rl.seating import Arm, Seating, ego_partner_arms

__all__ = ["OP", "OPOptions", "SymmetryAgent", "env_symmetries"]


def env_symmetries(env: Any, name: str) -> Any:
    """The symmetries an env declares (its ``symmetries()``).

    Args:
        env: a batched env.
        name: the env's registry name, for the message.

    Raises:
        ConfigError: the env declares none.
    """
    declare = getattr(env, "symmetries", None)
    if not callable(declare):
        raise ConfigError(
            f"algorithm 'op' (other-play) needs the env's symmetries, but env '{name}' declares none "
            f"(no symmetries() method); envs with symmetries: yokai"
        )
    return declare()


class SymmetryAgent(nn.Module):
    """A policy playing the game seen through a symmetry drawn per row and episode (OP's partner).

    At every episode start of a row (``starts``) an element is drawn uniformly from ``elements``
    with ``generator``; the row keeps it for the episode. Each step the row's observation and mask
    are mapped by the element, the policy acts on them, and its action is mapped back by the
    element's inverse. The element is stored in the last column of the state, so a checkpointed
    runner resumes with the same symmetries.

    Args:
        policy: the wrapped policy (its weights as they are at each call: a learner keeps training).
        symmetries: the env's symmetries (``observation``, ``mask``, ``action``).
        elements: ``int64 [k]`` the elements to draw from.
    """

    def __init__(self, policy: Policy, symmetries: Any, elements: torch.Tensor) -> None:
        super().__init__()
        self.policy = policy
        self.symmetries = symmetries
        self.elements = elements.to(torch.int64)

    def initial_state(self, rows: int, device: torch.device | str) -> torch.Tensor:
        """``float32 [rows, hidden + 1]``: the policy's zero state and element 0 (drawn anew at the
        row's first step, which is an episode start)."""
        h = self.policy.initial_state(rows, device)
        return torch.cat([h, torch.zeros(rows, 1, device=device)], dim=1)

    @torch.no_grad()
    def act(
        self,
        obs: torch.Tensor,
        avail: torch.Tensor | None,
        state: torch.Tensor,
        starts: torch.Tensor,
        generator: torch.Generator | None = None,
        deterministic: bool = False,
    ) -> ActOutput:
        """Actions of N rows in the env's frame.

        From ``generator`` it takes N element draws (every call, used where ``starts``), then
        the policy's action draw.

        Args:
            obs: ``[N, *obs_shape]``; avail: ``bool [N, A]`` or None.
            state: ``float32 [N, hidden + 1]`` (:meth:`initial_state`).
            starts: ``bool [N]`` rows whose episode starts at this step.
            generator: torch generator on the rows' device.
            deterministic: arg-max actions of the policy.

        Returns:
            :class:`~zsceval.rl.agent.ActOutput`: ``actions int64 [N]`` (env frame),
            ``log_probs float32 [N]`` (of the mapped action under the policy in the mapped view),
            the new state, and ``extras["symmetry"] int64 [N]`` each row's element.
        """
        dev = obs.device
        elements = self.elements.to(dev)
        draw = elements[torch.randint(0, len(elements), starts.shape, generator=generator, device=dev)]
        e = torch.where(starts, draw, state[:, -1].round().long())
        view = self.symmetries.observation(obs, e)
        mask = None if avail is None else self.symmetries.mask(avail, e)
        out = self.policy.act(view, mask, state[:, :-1], starts, generator, deterministic)
        actions = self.symmetries.action(out.actions, e, inverse=True)
        new_state = torch.cat([out.state, e.to(out.state.dtype)[:, None]], dim=1)
        return ActOutput(actions, out.log_probs, new_state, {"symmetry": e})


@dataclass(frozen=True)
class OPOptions:
    """Options of the ``op`` algorithm (``algo.*`` config keys)."""

    symmetries: str = "C+R"
    """The symmetry groups the partners are drawn from, joined by '+': for Yōkai ``C`` (colour
    permutations: the YLE paper's OP+C) and ``R`` (quarter-turns of the field); ``C+R`` is OP+C+R
    (YLE Sec. 5.4)."""


@register(
    "op", "Other-play: self-play with partners seeing the game through random symmetries (Hu et al. 2020)."
)
class OP(Algorithm):
    """One learner (the ego) whose partners are itself seen through symmetries drawn per episode."""

    Options = OPOptions

    def __init__(self, config: TrainConfig, num_envs: int, num_agents: int, device) -> None:
        super().__init__(config, num_envs, num_agents, device)
        from zsceval.rl.envs import make_env

        probe = make_env(config.env, num_envs=1, device="cpu", seed=0)
        try:
            self.symmetries = env_symmetries(probe, config.env.name)
        finally:
            close = getattr(probe, "close", None)
            if close is not None:
                close()
        try:
            self.elements = self.symmetries.elements(self.options.symmetries)
        except ValueError as exc:
            raise ConfigError(f"algo.symmetries: {exc}") from None

    def build_learners(self, make_policy: Callable[[], Policy]) -> dict[str, Policy]:
        """The ego."""
        return {"ego": make_policy()}

    def build_partners(self, make_policy: Callable[[], Policy]) -> dict[str, Any]:
        """The ego's own weights seen through random symmetries (:class:`SymmetryAgent`)."""
        self.partner = SymmetryAgent(self.learners["ego"], self.symmetries, self.elements)
        return {"other": self.partner}

    def arms(self) -> list[Arm]:
        """The ego in each seat, its symmetric copies in the others (partner label ``other``)."""
        return ego_partner_arms("ego", "other", self.num_agents)

    def training_reward(self, step: Step, shaping_factor: float, seating: Seating) -> torch.Tensor:
        """``team_sparse + rsf * own_shaped``, as in SP (only the ego's seat is trained)."""
        return default_training_reward(step, shaping_factor)

    def eval_seats(self, learners: list[str], partners: list[str]) -> list[str]:
        """The ego with itself, unmapped (OP's policy is played as is at test time)."""
        return [learners[0]] * self.num_agents
