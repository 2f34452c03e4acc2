"""The plug-in interface: what an algorithm decides on top of the shared learning cores.

An algorithm (SP, FCP, MEP, HSP, COLE, E3T, TBS, ...) is a subclass of :class:`Algorithm`
registered by name (:func:`zsceval.registry.register`). The :class:`~zsceval.rl.trainer.Trainer`
owns the loop (collect, update, checkpoints, resume); the algorithm answers:

1. *With which core does it learn?* :attr:`Algorithm.core` names a registered learning core
   (``ppo``; the value-based core registers the same way).
2. *Which policies are trained?* :meth:`Algorithm.build_learners` (names -> fresh policies).
3. *Who else acts?* :meth:`Algorithm.build_partners` (names -> agents: frozen policies, policy
   pools, or wrappers that share a learner's weights, which keep training).
4. *Who sits where?* :meth:`Algorithm.arms` lists the seatings (:class:`~zsceval.rl.seating.Arm`);
   :meth:`Algorithm.assign` picks one per game at every episode start.
5. *What reward does each seat learn from?* :meth:`Algorithm.training_reward`, and
   :meth:`Algorithm.on_rollout` may add bonuses to the whole rollout before GAE; value-based
   learners learn from :meth:`Algorithm.team_reward` of their game.
6. *Anything else in the loss?* :meth:`Algorithm.extra_loss` and :meth:`Algorithm.extra_parameters`.
7. *What did it see?* :meth:`Algorithm.after_iteration` receives the episode table (game, arm,
   seat, partner, returns, events of every finished episode) for prioritized sampling.
8. *Which jobs make a result?* :meth:`Algorithm.jobs` (default: one training run).

Everything else (rollout storage, GAE, losses, schedules, checkpoints, resume) is shared.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import torch

from zsceval.envs.base import Step
from zsceval.rl.config import ConfigError, TrainConfig
from zsceval.rl.policy import Policy
from zsceval.rl.rollout import Rollout
from zsceval.rl.runner import EpisodeTable
from zsceval.rl.seating import Arm, Seating, self_play_arm

__all__ = ["Algorithm", "JobContext", "default_training_reward"]


def default_training_reward(step: Step, shaping_factor: float) -> torch.Tensor:
    """ZSC-Eval's per-agent reward: ``team_sparse + rsf * own_shaped`` (docs/overcooked-rules.md §3.3).

    An env that defines its own per-agent reward returns it as ``step.infos["reward_by_agent"]``
    and it is used as is, without the shaping factor (Football: 5 x own goal + own checkpoint
    reward, not shared; docs/reference-protocol.md "Football", ZSC-Eval ``Rewarder.calc_reward``).

    Args:
        step: the env step (``reward float32 [B]``, ``shaped_by_agent float32 [B, n]``).
        shaping_factor: current rsf (docs/overcooked-rules.md §3.6).

    Returns:
        ``float32 [B, n]``: every agent gets the full team sparse reward plus its own shaped reward.
    """
    own = step.infos.get("reward_by_agent")
    if own is not None:
        return own
    return step.reward.unsqueeze(-1) + shaping_factor * step.shaped_by_agent


@dataclasses.dataclass(frozen=True)
class JobContext:
    """What a plug-in needs to declare the jobs that produce one ego agent (:meth:`Algorithm.jobs`).

    Attributes:
        algo: the algorithm's registry name.
        layout: canonical layout name.
        seed: the ego's seed.
        steps: the ego's env-step budget (None: the preset's).
        ego_id: id (and output folder) of the job that trains the ego; exactly one declared job
            has this id, and ``ego.evaluate`` reads its ``run`` folder.
        common: parameters every training job of the suite shares (``layout``, ``preset``,
            ``device``, ``overrides``).
        partners: in ``zsceval bench``, the ids of the evaluation pipeline's jobs:
            ``{"train": [candidate train ids], "evaluate": [candidate.evaluate ids], "select": id}``
            (HSP trains with the candidates that were not selected); None elsewhere.
        partner_set: in ``zsceval bench``, the shipped partner set the layout is scored on
            (``layout_partner_sets``, e.g. ``zsceval:counter_circuit@2``; HSP may draw its biased
            agents from its validation split); None elsewhere.
    """

    algo: str
    layout: str
    seed: int
    steps: int | None
    ego_id: str
    common: dict[str, Any]
    partners: dict[str, Any] | None = None
    partner_set: str | None = None
    ego_options: dict[str, Any] = dataclasses.field(default_factory=dict)
    """``algo.*`` values the user gave (``zsceval train --set algo.x=...`` of a multi-stage
    algorithm): :meth:`train_job` puts them into the ego's job, and the chain then moves each to the
    training jobs whose algorithm declares it (:func:`zsceval.bench.algo_options.route_chain_options`)."""

    def train_job(
        self,
        id: str | None = None,
        *,
        algo: str | None = None,
        seed: int | None = None,
        steps: int | None = None,
        algo_options: dict[str, Any] | None = None,
        algo_inputs: dict[str, str | list[str]] | None = None,
        algo_job_dirs: dict[str, str | list[str]] | None = None,
        needs: tuple[str, ...] = (),
    ):
        """A ``train`` job (:func:`zsceval.training.jobs.train_job`).

        Args:
            id: job id and output folder (default: ``ego_id``, the ego's own run).
            algo: algorithm to train (default: this one).
            seed, steps: default: the ego's.
            algo_options: ``algo.*`` config values.
            algo_inputs: ``{algo option: job id or [job ids]}``: the option receives the run
                folder(s) of those jobs (e.g. a stage-1 population); the jobs become inputs.
            algo_job_dirs: the same, but the option receives the jobs' own folders (their
                ``DONE.json`` results, for jobs that are not training runs).
            needs: further input jobs.

        Returns:
            a :class:`zsceval.execution.jobs.Job`.
        """
        from zsceval.execution.jobs import Job

        jid = id or self.ego_id
        inputs = dict(algo_inputs or {})
        job_dirs = dict(algo_job_dirs or {})
        deps = [j for v in [*inputs.values(), *job_dirs.values()] for j in ([v] if isinstance(v, str) else v)]
        params = {
            **self.common,
            "algo": algo or self.algo,
            "seed": self.seed if seed is None else seed,
            "steps": self.steps if steps is None else steps,
        }
        options = {**(self.ego_options if jid == self.ego_id else {}), **(algo_options or {})}
        if options:
            params["algo_options"] = options
        if inputs:
            params["algo_inputs"] = inputs
        if job_dirs:
            params["algo_job_dirs"] = job_dirs
        return Job(jid, "train", params, needs=tuple(dict.fromkeys([*deps, *needs])), out=jid)


class Algorithm:
    """Base class of algorithm plug-ins; the defaults implement self-play with one shared policy.

    Every attribute a plug-in has is declared here: the class attributes a plug-in sets (or the
    registry sets), the instance attributes :meth:`__init__` sets, and the ones the
    :class:`~zsceval.rl.trainer.Trainer` gives it once they exist (:attr:`learners`,
    :attr:`num_arms`, :attr:`np_rng`, :attr:`learning_core`).

    Args:
        config: the resolved run config.
        num_envs: B, games per batch.
        num_agents: n, seats per game.
        device: torch device of env and networks.
    """

    name: ClassVar[str] = ""
    """Registry name, what ``--algo`` takes (set by :func:`zsceval.registry.register`)."""
    description: ClassVar[str] = ""
    """One line shown by ``zsceval algos`` (set by :func:`zsceval.registry.register`)."""
    Options: ClassVar[type | None] = None
    """Optional frozen dataclass validating the ``algo:`` config section (:meth:`parse_options`);
    None: the algorithm takes no ``algo.*`` options."""
    core: ClassVar[str] = "ppo"
    """Name of the learning core (:mod:`zsceval.rl.cores`)."""
    critic_feature_size: ClassVar[int] = 0
    """Extra float features of the learners' critic input, given by :meth:`critic_features`
    (e.g. the partners' policy ids, ZSC-Eval's ``use_agent_policy_id``); 0: none."""
    default_population_size: ClassVar[int] = 0
    """Population size when ``population.size`` is 0 (:func:`zsceval.rl.config.population_size`);
    0: the algorithm trains no population."""
    rollout_fields: ClassVar[tuple[str, ...]] = ()
    """The :class:`~zsceval.rl.rollout.Rollout` fields :meth:`on_rollout` reads (e.g. ``("obs",
    "actions", "rewards")``); a run whose core does not provide one fails when it is built, naming
    the field and the core."""
    stack_learners: ClassVar[bool] = False
    """Train same-spec learners as one stacked network (one forward and backward per minibatch
    for all of them, per-member Adam and clipping; population stage 1). Each member's update
    equals training it alone."""
    preset_derived: ClassVar[tuple[str, ...]] = ()
    """Config keys (``section.key``) whose :meth:`preset_config` value is computed from the user's
    own value of the key (a stage-1 population stretches the shaping horizon it is given over its N
    members): the user's override is then that addition's input and does not replace it."""

    def __init__(self, config: TrainConfig, num_envs: int, num_agents: int, device: torch.device) -> None:
        self.config = config
        """The resolved run config."""
        self.num_envs = num_envs
        """B, games per batch."""
        self.num_agents = num_agents
        """n, seats per game."""
        self.device = torch.device(device)
        """Torch device of env and networks."""
        self.options = self.parse_options(config.algo)
        """The ``algo:`` section as an :attr:`Options` instance (None without :attr:`Options`)."""
        self.np_rng: np.random.Generator | None = None
        """The trainer's numpy generator (seeded with ``run.seed``, saved in checkpoints), set by
        the trainer before :meth:`build_learners`: draws a plug-in makes on the host (COLE's
        replacement slot) use it, so a resumed run repeats them."""
        self.learners: dict[str, Policy] = {}
        """The learners, set by the trainer after :meth:`build_learners`."""
        self.num_arms = 1
        """How many arms :meth:`arms` returned, set by the trainer."""
        self.learning_core: Any = None
        """The learning core (:attr:`core`), set by the trainer once built; a plug-in that steps the
        learners' optimizers itself uses it (TrajeDi: ``PPOCore.actor_step``)."""

    @classmethod
    def preset_config(cls, preset: str, cfg: TrainConfig) -> dict[str, Any]:
        """Config sections this algorithm adds to a preset, applied right after the preset (the
        user's ``--config``, ``--set`` and flags still win), e.g. a recurrent ego and the
        population-size-dependent budget of a stage-2 run.

        Args:
            preset: the preset name (``quick``, ``paper``).
            cfg: the config resolved without these additions (user values included), so the
                additions may depend on e.g. ``population.size``.

        Returns:
            ``{"model": {...}, "run": {...}, "algo": {...}}``; default: nothing.
        """
        return {}

    @classmethod
    def parse_options(cls, values: dict[str, Any]) -> Any:
        """Validate the ``algo:`` section against :attr:`Options`.

        Raises:
            ConfigError: an unknown key (closest valid one named) or an unexpected section.
        """
        if cls.Options is None:
            if values:
                raise ConfigError(f"algorithm '{cls.name}' takes no 'algo.*' options, got {sorted(values)}")
            return None
        names = [f.name for f in dataclasses.fields(cls.Options)]
        for key in values:
            if key not in names:
                close = difflib.get_close_matches(key, names, n=1)
                hint = f"; did you mean 'algo.{close[0]}'?" if close else ""
                raise ConfigError(
                    f"unknown config key 'algo.{key}' for algorithm '{cls.name}'{hint} (its options: "
                    f"{', '.join(names) or 'none'})"
                )
        from zsceval.rl.config import coerce_value

        try:
            hints = typing.get_type_hints(cls.Options)
        except (NameError, TypeError):
            return cls.Options(**values)
        return cls.Options(**{k: coerce_value(v, hints[k], f"algo.{k}") for k, v in values.items()})

    # -- policies ---------------------------------------------------------------------------------
    def build_learners(self, make_policy: Callable[[], Policy]) -> dict[str, Policy]:
        """Trainable policies by name; the first one is the *ego* policy that gets evaluated."""
        return {"ego": make_policy()}

    def build_partners(self, make_policy: Callable[[], Policy]) -> dict[str, Any]:
        """Other actors by name: frozen policies, policy pools, or agents sharing a learner's
        weights (``self.learners`` is set). They act without gradients; only learners are
        updated, and a partner that wraps a learner sees its weights change. Default: none."""
        return {}

    # -- seating ----------------------------------------------------------------------------------
    def arms(self) -> list[Arm]:
        """The seatings games are drawn from (:mod:`zsceval.rl.seating`). Default: the ego policy
        in every seat (self-play)."""
        return [self_play_arm(next(iter(self.learners)), self.num_agents)]

    def assign(self, games: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        """Arm of each game in ``games`` for its new episode (called at every episode start).

        Args:
            games: ``int64 [k]`` indices of the games that start an episode.
            generator: the trainer's torch generator on ``device``.

        Returns:
            ``int64 [k]`` arm indices into :meth:`arms`. Default: uniform.
        """
        num = self.num_arms
        if num == 1:
            return torch.zeros_like(games)
        return torch.randint(0, num, games.shape, generator=generator, device=games.device)

    # -- rewards and losses -----------------------------------------------------------------------
    def training_reward(self, step: Step, shaping_factor: float, seating: Seating) -> torch.Tensor:
        """``float32 [B, n]`` reward each seat learns from.

        Args:
            step: the env step.
            shaping_factor: current rsf (docs/overcooked-rules.md §3.6).
            seating: who drove each seat in this step (:class:`~zsceval.rl.seating.Seating`:
                actor index ``[B, n]``, learners first; pool member ``[B, n]``; arm ``[B]``).

        Default: :func:`default_training_reward`.
        """
        return default_training_reward(step, shaping_factor)

    def team_reward(self, step: Step, shaping_factor: float, seating: Seating) -> torch.Tensor:
        """``float32 [B]`` reward of each game's VDN group of learner seats (value-based cores).

        Default (JaxMARL PQN-VDN, docs/reference-protocol.md "PQN-VDN"): the team sparse reward plus
        ``shaping_factor`` times the shaped rewards of all seats.
        """
        own = step.infos.get("reward_by_agent")
        if own is not None:
            return own.sum(-1)
        return step.reward + shaping_factor * step.shaped_by_agent.sum(-1)

    def model_spec(self, num_actions: int) -> dict[str, Any]:
        """Extra keys of the learners' network spec (``spec["model"]``), e.g. ``{"partner_model":
        num_actions}`` for an actor that predicts its partner's action (E3T). Default: none."""
        return {}

    def critic_features(self, seating: Seating) -> torch.Tensor:
        """``float32 [B, n, critic_feature_size]`` extra critic input of every seat for the current
        seating (who sits where; constant within an episode). Only called when
        :attr:`critic_feature_size` > 0."""
        raise NotImplementedError(f"algorithm '{self.name}' sets critic_feature_size but no critic_features")

    def on_rollout(self, rollout: Rollout, episodes: EpisodeTable) -> None:
        """Called after each rollout, before GAE: may change ``rollout.rewards`` (or a value-based
        core's ``rollout.team_rewards``) in place, e.g. reward bonuses that need the pre-step
        observations and all actors' actions. Declare the fields it reads in :attr:`rollout_fields`.

        Args:
            rollout: the core's read-only view of the rollout (:class:`~zsceval.rl.rollout.Rollout`).
            episodes: the episodes that ended in the rollout.
        """

    def extra_loss(self, name: str, minibatch: dict, outputs: dict) -> tuple[torch.Tensor, dict] | None:
        """An extra loss term for learner ``name`` on one minibatch, or None.

        Args:
            name: the learner.
            minibatch: ``[L, S, ...]`` tensors (``obs``, ``actions``, ``advantages``, ``starts``,
                ``weight``, ``h_actor [S, hidden]``, ``other_actions int64 [L, S, n - 1]``: the
                other seats' actions at the same step, own seat + 1 first, ...) of the sampled chunks.
                With an MLP model ``obs`` is ``float32 [L, S, S_cols]``, the rollout's varying
                entries, and ``obs_columns`` says which (``ppo.obs_columns``): pass it on, e.g.
                ``policy.actor.trunk.sequence(obs, h, starts, columns=minibatch.get("obs_columns"))``.
            outputs: ``log_probs``, ``entropy``, ``values`` (with gradients) and ``policy``.

        Returns:
            ``(scalar loss added to the PPO loss, {stat name: value})`` or None.
        """
        return None

    def extra_parameters(self, name: str) -> list[torch.nn.Parameter]:
        """Parameters of plug-in modules trained by learner ``name``'s optimizer (e.g. E3T's
        partner model). Save them in :meth:`state_dict`."""
        return []

    def eval_seats(self, learners: list[str], partners: list[str]) -> list[str]:
        """Actor names seated in the final evaluation (``eval.json``), one per seat.

        Default: the ego (first learner) in every seat, i.e. self-play.
        """
        return [learners[0]] * self.num_agents

    def after_iteration(self, iteration: int, env_steps: int, stats: dict[str, float], episodes: Any) -> None:
        """Hook called after each update.

        Args:
            iteration: iterations done.
            env_steps: env steps done.
            stats: the iteration's metrics row.
            episodes: :class:`~zsceval.rl.runner.EpisodeTable` of the episodes that ended in the
                rollout (game, arm, seat, partner, sparse/shaped returns, events).
        """

    # -- jobs -------------------------------------------------------------------------------------
    @classmethod
    def jobs(cls, ctx: JobContext) -> list:
        """The jobs that produce one ego agent, run by ``zsceval bench`` and the executors.

        A multi-stage method (FCP, MEP, HSP, ...) lists its stage-1 jobs (e.g. a population) and
        a final job with id ``ctx.ego_id`` that reads them through ``algo_inputs``. Jobs that
        several algorithms declare with the same id and parameters run once (a shared
        population). Default: one training run of this algorithm.

        Returns:
            :class:`zsceval.execution.jobs.Job` list; exactly one has id ``ctx.ego_id``.
        """
        return [ctx.train_job()]

    @classmethod
    def job_options(cls, params: dict[str, Any], needs: dict[str, Any]) -> dict[str, Any]:
        """``algo.*`` values a ``train`` job of this algorithm (:func:`zsceval.training.jobs.train_job`)
        reads from its finished input jobs, beyond the generic ``algo_inputs`` / ``algo_job_dirs``
        (e.g. the BR plug-in's partner checkpoint from the partner pipeline's jobs).

        Args:
            params: the job's parameters.
            needs: ``{input job id: its output folder}``.

        Returns:
            ``{option: value}`` (default: nothing).
        """
        return {}

    @classmethod
    def trains_with_evaluation_partners(cls, params: dict[str, Any]) -> bool:
        """Whether the ``train`` job with these parameters belongs to the partner pipeline itself
        (a BR reference trains with the partner it measures), and so runs without the training
        guard (:func:`zsceval.evaluation.exclusion.training_guard`); every other job refuses the
        layout's evaluation partners. Default: False."""
        return False

    # -- resumable plug-in state -----------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Plug-in state saved with every checkpoint: nested dicts/lists of tensors, numbers and
        strings (default: nothing)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
