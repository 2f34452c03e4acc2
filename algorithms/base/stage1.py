"""Stage 1 of the population methods: N self-play members trained together (FCP, MEP, TrajeDi).

Each member is a separate policy that plays with itself; members never meet during training. The
N members are the run's learners and train as one stacked network (``stack_learners``: one forward
and backward per minibatch for all of them, each member's gradient, clipping and Adam step equal to
training it alone). Game ``g`` of the batch always plays member ``g mod N``, so every member gets
the same share of the env steps (ZSC-Eval's TrajeDi assigns env threads the same way,
docs/reference-protocol.md "TrajeDi"; its MEP trains members round robin instead, "MEP").

A run's logged curve per member (``member_03/sparse_return`` in ``metrics.csv``) and its checkpoint
trail (the first after one update, ``run.checkpoint_first``) are what
:mod:`zsceval.rl.population.checkpoints` reads to pick each member's init / mid / final checkpoints.

Subclasses add what makes a population diverse: a reward bonus (:meth:`Algorithm.on_rollout`,
MEP) or a diversity loss (TrajeDi).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import torch

from zsceval.rl.algorithm import Algorithm
from zsceval.rl.config import ConfigError, TrainConfig, layout_dynamics, load_preset, population_size
from zsceval.rl.policy import Policy
from zsceval.rl.seating import Arm, self_play_arm

__all__ = ["DEFAULT_SIZE", "PopulationSelfPlay", "member_name", "stage1_size", "member_log_probs"]

STAGE1_CHECKPOINTS = 20
"""Checkpoints a stage-1 run keeps (besides the first): the trail the mid checkpoint is chosen from."""


def member_name(i: int) -> str:
    """Learner name of stage-1 member ``i`` (``member_00``, ...)."""
    return f"member_{i:02d}"


DEFAULT_SIZE = 12
"""Stage-2 population of the co-play methods when ``population.size`` is 0 (ZSC-Eval's smallest;
:func:`zsceval.rl.config.population_size`)."""


def stage1_size(cfg: TrainConfig) -> int:
    """Members of one stage-1 run: ``population.stage1_size``, or ``ceil(size / 3 * 5 / 4)`` (ZSC-Eval
    trains 5 / 10 / 15 runs for populations 12 / 24 / 36, docs/reference-protocol.md "FCP").

    Raises:
        ValueError: ``population.size`` below 3.
    """
    if cfg.population.stage1_size > 0:
        return cfg.population.stage1_size
    size = population_size(cfg)
    if size < 3:
        raise ConfigError(f"population.size must be >= 3 (3 checkpoints a member), got {size}")
    return math.ceil(size / 3 * 5 / 4)


def member_log_probs(
    policies: Sequence[Policy],
    obs: torch.Tensor,
    avail: torch.Tensor | None,
    actions: torch.Tensor,
    starts: torch.Tensor,
    *,
    grad: bool = False,
    chunk: int = 16384,
) -> torch.Tensor:
    """``log pi_k(a_t | o_t)`` of every member k on every stored step.

    Args:
        policies: the K members (feed-forward; a recurrent member would need its own hidden state
            on rows it did not drive, which a rollout does not have).
        obs: ``[T, R, *obs_shape]``; avail ``bool [T, R, A]`` or None; actions ``int64 [T, R]``;
            starts ``bool [T, R]``.
        grad: keep gradients (TrajeDi's loss); without, rows are processed in chunks of ``chunk``.

    Returns:
        ``float32 [K, T, R]``.

    Raises:
        ValueError: a recurrent member.
    """
    if any(p.recurrent for p in policies):
        raise ValueError("member_log_probs needs feed-forward members (model.recurrent: false)")
    T, R = actions.shape
    if grad:
        return torch.stack([p.action_log_probs(obs, avail, actions, starts) for p in policies])
    out = torch.empty(len(policies), T * R, device=actions.device)
    flat = obs.reshape(1, T * R, *obs.shape[2:])
    fa = None if avail is None else avail.reshape(1, T * R, -1)
    fact, fst = actions.reshape(1, T * R), starts.reshape(1, T * R)
    with torch.no_grad():
        for k, p in enumerate(policies):
            for s in range(0, T * R, chunk):
                e = min(s + chunk, T * R)
                part = None if fa is None else fa[:, s:e]
                out[k, s:e] = p.action_log_probs(flat[:, s:e], part, fact[:, s:e], fst[:, s:e])[0]
    return out.reshape(len(policies), T, R)


class PopulationSelfPlay(Algorithm):
    """N self-play members as the learners, trained population-batched (stage 1).

    The population size is :func:`stage1_size` of the config. The ego (first learner) is member 0.
    """

    default_population_size = DEFAULT_SIZE

    stack_learners = True
    preset_derived = ("shaping.horizon", "ppo.entropy_milestones")
    """A member's schedules: ``--set shaping.horizon=H`` gives each member H over its own steps (the
    population's run N x H), as the preset's value does (:meth:`preset_config`)."""
    paper_entropy_milestones: ClassVar[tuple[float, ...] | None] = None
    """Per-member entropy milestones of the ``paper`` preset when they differ from SP's (ZSC-Eval's
    MEP and TrajeDi stage 1: 0, 6e6, 1e7)."""

    @classmethod
    def preset_config(cls, preset: str, cfg: TrainConfig) -> dict[str, Any]:
        """Each member trains like one run of the preset: ``N * env.num_envs`` games (a member's
        batch is the preset's), ``N * population.stage1_steps`` env steps, and the entropy and
        shaping schedules stretched N times, so that they follow each member's own steps (ZSC-Eval's
        MEP: entropy over total steps // N, shaping over the member's steps); a checkpoint after the
        first update and :data:`STAGE1_CHECKPOINTS` more, all kept (the mid-checkpoint trail).
        An ``env.num_envs`` the user sets is the population's total."""
        n = stage1_size(cfg)
        total = n * cfg.population.stage1_steps
        milestones = cfg.ppo.entropy_milestones
        if preset == "paper" and cls.paper_entropy_milestones is not None:
            given = load_preset(preset, None, layout_dynamics(cfg.env)).ppo.entropy_milestones
            if tuple(milestones) == tuple(given):  # milestones the user set stay theirs
                milestones = cls.paper_entropy_milestones
        return {
            "env": {"num_envs": n * cfg.env.num_envs},
            "ppo": {"entropy_milestones": [n * m for m in milestones]},
            "shaping": {"horizon": n * cfg.shaping.horizon},
            "run": {
                "total_steps": total,
                "checkpoint_first": True,
                "checkpoint_every": max(total // STAGE1_CHECKPOINTS, 1),
                "keep_checkpoints": STAGE1_CHECKPOINTS + 2,
            },
        }

    def build_learners(self, make_policy: Callable[[], Policy]) -> dict[str, Policy]:
        """``population`` fresh members (independent initialisations)."""
        n = stage1_size(self.config)
        if n > self.num_envs:
            raise ValueError(f"a population of {n} members needs env.num_envs >= {n}, got {self.num_envs}")
        return {member_name(i): make_policy() for i in range(n)}

    def arms(self) -> list[Arm]:
        """Arm k: member k in every seat."""
        return [self_play_arm(name, self.num_agents) for name in self.learners]

    def assign(self, games: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        """Game g plays member ``g mod N`` (equal env steps per member)."""
        return games % self.num_arms

    def after_iteration(self, iteration: int, env_steps: int, stats: dict[str, float], episodes: Any) -> None:
        """Log each member's mean sparse return of the episodes that ended (``<member>/sparse_return``):
        the training curve the mid checkpoint is chosen on."""
        if not len(episodes):
            return
        arm = episodes.arm
        for k, name in enumerate(self.learners):
            mask = arm == k
            if bool(mask.any()):
                stats[f"{name}/sparse_return"] = float(episodes.sparse[mask].mean())
