"""The training loop shared by every algorithm: collect, update, log, checkpoint, resume.

Glossary (see also :mod:`zsceval.rl.runner`): an **iteration** is one **rollout** of
T = the core's ``rollout_length`` batched steps over B = ``env.num_envs`` games (T * B **env
steps**) followed by the core's update (PPO: ``ppo.epochs`` **epochs** of ``ppo.num_minibatches``
**minibatches** per learner). ``run.total_steps`` counts env steps; the loop stops after the first
iteration that reaches it. One iteration is :meth:`LearningCore.iteration
<zsceval.rl.cores.LearningCore.iteration>` (for PPO, :meth:`zsceval.rl.ppo.PPOCore.iteration`
reads top to bottom in CleanRL's order); the trainer logs it (:meth:`Trainer._iteration`).

Building a trainer (:meth:`Trainer._build`): the run folder (:class:`~zsceval.rl.run_dir.RunDirectory`:
a fresh run or the checkpoint to resume from), the config made concrete for this machine, the
seeds, the env, the plug-in with its learners and partners, the runner, the core.

The run folder's files are listed in :mod:`zsceval.rl.run_dir`; policy-pool partners are saved once
per content under ``pools/<sha256>/`` (:meth:`zsceval.rl.population.PolicyPool.save`) and named in
each checkpoint's ``meta.json`` ``partners`` entry.

Exact resume. Every checkpoint is *resumable*, wherever the games are in their episodes: it holds
the learners, the core's optimizer and critic states, the runner's state (env state, the last
observation, recurrent states, seating, episode totals), the plug-in's state and every RNG state
(torch global, the trainer's three generators, numpy). A resumed run continues bit-for-bit like
the run that was never stopped (same device and thread count).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import shutil
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml
from tqdm.auto import tqdm

from zsceval import registry
from zsceval.envs.overcooked.env import resolve_device as resolve_env_device
from zsceval.execution.locks import FolderLock
from zsceval.rl.algorithm import Algorithm
from zsceval.rl.checkpoint import (
    CheckpointError,
    atomic_write_text,
    list_checkpoints,
    load_checkpoint,
    policy_weights,
    save_checkpoint,
)
from zsceval.rl.config import ConfigError, TrainConfig, compile_mode, config_to_dict, validate
from zsceval.rl.cores import get_core
from zsceval.rl.envs import make_env
from zsceval.rl.hardware import MAX_THREADS_ENV, resolve_bf16, resolve_threads  # noqa: F401 (re-exported)
from zsceval.rl.loggers import LoggerGroup, check_loggers, open_loggers, resolve_logger_names
from zsceval.rl.play import play, summarize
from zsceval.rl.policy import Policy, network_spec
from zsceval.rl.rollout import check_rollout_fields
from zsceval.rl.run_dir import RunDirectory, RunExistsError, load_run_config
from zsceval.rl.runner import EpisodeRunner
from zsceval.rl.schedules import shaping_factor

__all__ = ["NonFiniteError", "RunExistsError", "Trainer", "load_run_config"]


class NonFiniteError(RuntimeError):
    """Training produced a NaN or infinite loss, gradient norm or weight: the run stopped there and is
    not marked done (no ``eval.json``); its earlier checkpoints hold finite weights."""


def resolve_device(name: str) -> torch.device:
    """``torch.device(name)``, refusing CUDA when it is not available (``envs.resolve_device``).

    Raises:
        ConfigError: unknown device string or CUDA missing.
    """
    try:
        return resolve_env_device(name)
    except (RuntimeError, ValueError) as exc:
        raise ConfigError(f"run.device: {exc}") from None


def choose_threads(requested: int | str) -> tuple[int, str | None]:
    """The torch thread count of a new run and a note for the user, if any
    (:func:`zsceval.rl.hardware.resolve_threads`: ``auto``, or a count capped by
    ``ZSCEVAL_MAX_THREADS``). The result is recorded in the run's config so a resume uses the same
    count (results depend on it)."""
    return resolve_threads(requested)


MIN_MINIBATCH = 64
"""Samples per PPO minibatch below which a run gets a note (the gradients are mostly noise)."""


def minibatch_note(cfg: TrainConfig) -> str | None:
    """A note when ``ppo.num_minibatches`` splits a rollout into minibatches of fewer than
    :data:`MIN_MINIBATCH` samples (``env.num_envs * ppo.rollout_length * env.num_agents`` samples a
    rollout, all learners together); None otherwise and for other cores."""
    if getattr(registry.get(cfg.run.algo), "core", "ppo") != "ppo":
        return None
    samples = cfg.env.num_envs * cfg.ppo.rollout_length * cfg.env.num_agents
    size = samples // cfg.ppo.num_minibatches
    if size >= MIN_MINIBATCH:
        return None
    return (
        f"note: ppo.num_minibatches={cfg.ppo.num_minibatches} splits each rollout of {samples:,} samples "
        f"(env.num_envs x ppo.rollout_length x agents) into minibatches of about {size}: lower "
        f"ppo.num_minibatches to at most {max(1, samples // MIN_MINIBATCH)} for minibatches of "
        f">= {MIN_MINIBATCH}"
    )


def resolve_hardware(cfg: TrainConfig, device: torch.device) -> tuple[TrainConfig, list[str]]:
    """``cfg`` with ``model.bf16`` and ``run.num_threads`` made concrete for this machine and device
    (``auto`` resolved, :mod:`zsceval.rl.hardware`), and the notes that say what was chosen.

    Raises:
        ConfigError: a value other than a boolean / count or ``auto``.
    """
    notes = []
    try:
        threads, note = resolve_threads(cfg.run.num_threads)
        bf16, bf16_note = resolve_bf16(cfg.model.bf16, device)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    notes += [n for n in (note, bf16_note) if n]
    cfg = dataclasses.replace(
        cfg,
        run=dataclasses.replace(cfg.run, num_threads=threads),
        model=dataclasses.replace(cfg.model, bf16=bf16),
    )
    return cfg, notes


class Trainer:
    """Trains the learners of one algorithm plug-in with its learning core; manages the run directory.

    Args:
        cfg: resolved config (for a resume, the run's saved config).
        run_dir: output directory.
        resume: continue from the latest checkpoint in ``run_dir``.
        progress: show a tqdm progress bar (env steps/s, recent sparse return).

    Raises:
        RunExistsError: ``run_dir`` already has a run and ``resume`` is False.
        CheckpointError: ``resume`` without a run or a checkpoint, or a corrupt one.
        ConfigError: invalid config (unknown layout, device, algorithm options).
        registry.UnknownAlgorithmError, registry.PluginLoadError: bad ``run.algo``.
    """

    def __init__(
        self, cfg: TrainConfig, run_dir: str | Path, *, resume: bool = False, progress: bool = True
    ) -> None:
        validate(cfg)
        check_loggers(self.logger_names(cfg))  # fail before anything is written
        self.lock = FolderLock(run_dir, "run").acquire()
        """One writer per run folder (:mod:`zsceval.execution.locks`), released by :meth:`train`
        and :meth:`close`."""
        try:
            self._build(cfg, run_dir, resume, progress)
        except BaseException:
            self.lock.release()
            raise

    def _build(self, cfg: TrainConfig, run_dir: str | Path, resume: bool, progress: bool) -> None:
        self.notes: list[str] = []
        """Things the user should know (threads lowered or oversubscribed); the CLI prints them."""
        self.run = RunDirectory(run_dir)
        self.cfg = cfg = self._resolve_config(cfg, resume)
        self.run_dir, self.progress = self.run.path, progress
        if resume:
            self.resumed_from = self.run.resume_checkpoint(self.notes)
        else:
            self.run.check_fresh()
            self.resumed_from = None
        """The checkpoint this trainer continues from; None for a fresh start (also a ``resume``
        of a run stopped before its first checkpoint, which starts over from scratch)."""
        check_loggers(self.logger_names(cfg))  # a resume reads the run's saved config
        algo_cls = registry.get(cfg.run.algo)
        self.device = resolve_device(cfg.run.device)
        self._seed(cfg)
        self.env = make_env(cfg.env, device=self.device, seed=cfg.run.seed)
        self._compile_env(cfg)
        self._build_actors(cfg, algo_cls)
        self._build_runner(cfg)
        check_rollout_fields(cfg.run.algo, self.algorithm.rollout_fields, self.core_cls.name,
                             getattr(self.core_cls, "rollout_fields", ()))  # fmt: skip
        self.core = self.core_cls(self.learners, cfg, self.env, self.device, self.algorithm)
        self.algorithm.learning_core = self.core
        self.steps_per_iteration = cfg.steps_per_iteration(self.algorithm.core)
        """Env steps of one iteration: ``env.num_envs`` times the ``rollout_length`` of the
        algorithm's core (:meth:`TrainConfig.steps_per_iteration
        <zsceval.rl.config.TrainConfig.steps_per_iteration>`)."""
        self._compile_core(cfg)
        self.iteration = 0
        self.env_steps = 0
        self.wall_time = 0.0
        self.next_checkpoint = (
            self.steps_per_iteration if cfg.run.checkpoint_first else cfg.run.checkpoint_every
        )
        self.metrics: list[dict[str, Any]] = []
        self.recent_returns: deque[float] = deque(maxlen=10)
        if self.resumed_from is not None:
            self._restore(self.resumed_from)
        else:
            self.runner.reset()
        self.resume = resume

    def _resolve_config(self, cfg: TrainConfig, resume: bool) -> TrainConfig:
        """``cfg`` with what is still ``auto`` made concrete for this machine (:func:`resolve_hardware`);
        a resumed run keeps its recorded threads and bf16 (results depend on them), also when the
        caller passes a config that still says ``auto``. Notes of a new run go to :attr:`notes`."""
        if resume and self.run.holds_run():
            saved = load_run_config(self.run.path)
            if not isinstance(cfg.run.num_threads, int):
                cfg = dataclasses.replace(
                    cfg, run=dataclasses.replace(cfg.run, num_threads=saved.run.num_threads)
                )
            if not isinstance(cfg.model.bf16, bool):
                cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, bf16=saved.model.bf16))
        cfg, notes = resolve_hardware(cfg, resolve_device(cfg.run.device))
        if not resume:
            self.notes += notes
            small = minibatch_note(cfg)
            if small:
                self.notes.append(small)
        return cfg

    def _seed(self, cfg: TrainConfig) -> None:
        """Thread count, then the torch and numpy seeds (before anything random is built)."""
        if cfg.run.num_threads > 0:
            torch.set_num_threads(cfg.run.num_threads)
        torch.manual_seed(cfg.run.seed)
        self.np_rng = np.random.default_rng(cfg.run.seed)

    def _build_actors(self, cfg: TrainConfig, algo_cls: type) -> None:
        """The plug-in, its learners (built by its core's policy class) and its partners.

        Raises:
            ConfigError: no learner, or a name used by a learner and a partner.
        """
        self.algorithm = algo_cls(cfg, self.env.num_envs, self.env.num_agents, self.device)
        self.algorithm.np_rng = self.np_rng
        own_critic = cfg.model.critic_obs == "own"
        critic_shape = self.env.obs_shape if own_critic else self.env.critic_obs_shape
        spec = network_spec(
            cfg.model, self.env.obs_shape, critic_shape, self.env.num_actions,
            self.algorithm.critic_feature_size,
        )  # fmt: skip
        spec["model"].update(self.algorithm.model_spec(self.env.num_actions))
        self.core_cls = get_core(self.algorithm.core)
        policy_cls = getattr(self.core_cls, "policy_class", Policy)

        def make_policy() -> Policy:
            return policy_cls(spec).to(self.device)

        self.learners = self.algorithm.build_learners(make_policy)
        if not self.learners:
            raise ConfigError(f"algorithm '{cfg.run.algo}' built no learner policy")
        self.algorithm.learners = self.learners
        self.partners = self.algorithm.build_partners(make_policy)
        clash = sorted(set(self.learners) & set(self.partners))
        if clash:
            raise ConfigError(
                f"algorithm '{cfg.run.algo}' uses the names {clash} for a learner and a partner"
            )
        learner_ids = {id(p) for p in self.learners.values()}
        for p in self.partners.values():
            if id(p) not in learner_ids and hasattr(p, "eval"):
                p.eval()

    def _build_runner(self, cfg: TrainConfig) -> None:
        """The trainer's three generators (acting, minibatches, the plug-in's arm draws) and the
        episode runner over learners and partners with the plug-in's arms."""
        seed = cfg.run.seed
        self.act_gen = torch.Generator(self.device).manual_seed(seed + 1)
        self.update_gen = torch.Generator(self.device).manual_seed(seed + 2)
        self.algo_gen = torch.Generator(self.device).manual_seed(seed + 3)
        arms = self.algorithm.arms()
        self.algorithm.num_arms = len(arms)
        algo_gen = self.algo_gen

        def assign(games: torch.Tensor, _generator) -> torch.Tensor:
            return self.algorithm.assign(games, algo_gen)

        # the base draw returns zeros for one arm without drawing: a one-arm run (SP) never re-seats
        assign.zeros_for_one_arm = type(self.algorithm).assign is Algorithm.assign

        self.runner = EpisodeRunner(
            self.env,
            {**self.learners, **self.partners},
            arms,
            assign=assign,
            generator=self.act_gen,
            device=self.device,
        )

    # -- run directory ------------------------------------------------------------------------------
    @property
    def env_spec(self) -> dict:
        """Observation spec of the training env (stored in every checkpoint)."""
        return json.loads(json.dumps(self.env.spec_dict()))

    def _save_pools(self) -> dict[str, Any]:
        """Save every policy-pool partner once per content under ``run/pools/<sha256>/`` (one
        checksummed artifact, :meth:`PolicyPool.save`) and describe every partner for ``meta.json``."""
        from zsceval.rl.population import PolicyPool

        out: dict[str, Any] = {}
        for name, partner in self.partners.items():
            if not isinstance(partner, PolicyPool):
                out[name] = {"class": getattr(type(partner), "agent_class", type(partner).__qualname__)}
                continue
            root = self.run_dir / "pools"
            if partner.sha256 is None or not (root / partner.sha256).is_dir():
                staging = root / f".staging-{name}"
                digest = partner.save(staging)
                if (root / digest).is_dir():
                    shutil.rmtree(staging)
                else:
                    os.replace(staging, root / digest)
            out[name] = {"pool": f"pools/{partner.sha256}", "sha256": partner.sha256, "members": len(partner)}
        return out

    def _meta(self) -> dict[str, Any]:
        return {
            "partners": self._save_pools(),
            "algo": self.cfg.run.algo,
            "layout": self.env.layout.name,
            "env_spec": self.env_spec,
            "ego": next(iter(self.learners)),
            "iteration": self.iteration,
            "seed": self.cfg.run.seed,
            "device": str(self.device),
            "config": config_to_dict(self.cfg),
        }

    @staticmethod
    def logger_names(cfg: TrainConfig) -> list[str]:
        """The run's loggers (:func:`zsceval.rl.loggers.resolve_logger_names`): ``csv``, then
        ``run.loggers``, ``tensorboard`` with ``run.tensorboard``, and those of ``ZSCEVAL_LOGGERS``."""
        return resolve_logger_names(cfg.run.loggers, cfg.run.tensorboard)

    def _open_loggers(self) -> LoggerGroup:
        """Open the run's loggers; a resumed run's CSV keeps its rows up to the checkpoint (all are
        dropped when the run had none: it starts over)."""
        cfg = self.cfg
        name = f"{cfg.run.algo} {self.env.layout.name} seed {cfg.run.seed}"
        return open_loggers(
            self.logger_names(cfg), self.run_dir, run_name=name, config=config_to_dict(cfg),
            resume_step=self.env_steps if self.resume else None,
        )  # fmt: skip

    def _read_metrics(self, upto_steps: int) -> list[dict[str, Any]]:
        path = self.run.metrics
        if not path.is_file():
            return []
        rows = []
        for r in csv.DictReader(path.open()):
            try:
                if int(float(r["env_steps"])) <= upto_steps:
                    rows.append(r)
            except (KeyError, TypeError, ValueError):  # a line cut by a kill mid-write
                continue
        return rows

    # -- resumable state ------------------------------------------------------------------------------
    def _train_state(self) -> dict[str, Any]:
        np_state = np.random.get_state()
        rng = {
            "torch": torch.get_rng_state(),
            "act": self.act_gen.get_state(),
            "update": self.update_gen.get_state(),
            "algo": self.algo_gen.get_state(),
            "numpy_global": [np_state[0], [int(v) for v in np_state[1]], *[float(v) for v in np_state[2:]]],
            "numpy": json.dumps(self.np_rng.bit_generator.state),
        }
        if torch.cuda.is_available() and self.device.type == "cuda":
            rng["cuda"] = torch.cuda.get_rng_state(self.device)
        return {
            "iteration": self.iteration,
            "env_steps": self.env_steps,
            "wall_time": self.wall_time,
            "next_checkpoint": self.next_checkpoint,
            "core": self.core.state_dict(),
            "runner": self.runner.state_dict(),
            "rng": rng,
            "algorithm": self.algorithm.state_dict(),
        }

    def _restore(self, ckpt: Path) -> None:
        ckpt, meta, weights, state = load_checkpoint(ckpt, with_train_state=True)
        if meta.get("env_spec") != self.env_spec:
            raise CheckpointError(f"cannot resume from {ckpt}: it was trained on another env spec")
        if "runner" not in state:
            raise CheckpointError(
                f"cannot resume from {ckpt}: it was written by an older zsceval (format without the "
                "runner state); start a new run with another --out"
            )
        for name, p in self.learners.items():
            p.load_state_dict(policy_weights(weights, name))
        self.core.load_state_dict(state["core"])
        self.iteration = int(state["iteration"])
        self.env_steps = int(state["env_steps"])
        self.wall_time = float(state["wall_time"])
        self.next_checkpoint = int(state["next_checkpoint"])
        self.algorithm.load_state_dict(state["algorithm"])
        rng = state["rng"]
        torch.set_rng_state(rng["torch"])
        self.act_gen.set_state(rng["act"])
        self.update_gen.set_state(rng["update"])
        self.algo_gen.set_state(rng["algo"])
        if "cuda" in rng and self.device.type == "cuda":
            torch.cuda.set_rng_state(rng["cuda"], self.device)
        ng = rng["numpy_global"]
        np.random.set_state((ng[0], np.array(ng[1], dtype=np.uint32), int(ng[2]), int(ng[3]), float(ng[4])))
        self.np_rng.bit_generator.state = json.loads(rng["numpy"])
        self.runner.set_arms(self.algorithm.arms())  # a restored plug-in may hold more arms
        self.algorithm.num_arms = len(self.runner.arm_table)
        try:
            self.runner.load_state_dict(state["runner"])
        except ValueError as exc:  # the env (e.g. a .layout file edited since) is not the run's
            raise CheckpointError(
                f"cannot resume from {ckpt}: {exc}. The run's env has changed since it was trained (a "
                f"layout file edited?): restore it, or start a new run with another --out"
            ) from None
        current = self._save_pools()
        for name, entry in meta.get("partners", {}).items():
            if "sha256" in entry and current.get(name, {}).get("sha256") != entry["sha256"]:
                raise CheckpointError(
                    f"cannot resume from {ckpt}: partner pool '{name}' differs from the one the run "
                    f"trained with ({entry['pool']}); restore its inputs or start a new run with "
                    "another --out"
                )
        self.metrics = self._read_metrics(self.env_steps)

    def save_checkpoint(self) -> Path:
        """Save the learners and the whole training state; prune old checkpoints."""
        path = save_checkpoint(
            self.run_dir / "checkpoints", self.env_steps, self.learners, self._meta(), self._train_state()
        )
        keep = max(self.cfg.run.keep_checkpoints, 1)
        for old in list_checkpoints(self.run_dir)[:-keep]:
            for f in old.iterdir():
                f.unlink()
            old.rmdir()
        return path

    def _refresh_arms(self) -> None:
        """Re-read the plug-in's arms (a growing pool adds arms) and give them to the runner."""
        arms = self.algorithm.arms()
        if arms != self.runner.arm_table.arms:
            self.runner.set_arms(arms)
            self.algorithm.num_arms = len(arms)

    # -- the loop -----------------------------------------------------------------------------------
    def _iteration(self, collected: tuple[Any, float] | None = None, update=None) -> dict[str, Any]:
        """One iteration of the core; ``collected``: ``(episode table, seconds)`` of a rollout
        already in the core's buffer (a stacked phase collects its members' rollouts together);
        ``update``: the PPO core's gradient steps taken elsewhere (:meth:`PPOCore.learn
        <zsceval.rl.ppo.PPOCore.learn>`; a stacked phase's vmapped update)."""
        cfg = self.cfg
        t0, c0 = time.perf_counter(), time.process_time()
        if collected is None:
            episodes, row, t_collect = self.core.iteration(
                self.runner, self.env_steps, self.update_gen, self.algorithm.on_rollout
            )
        else:
            t0 -= collected[1]
            more = {} if update is None else {"update": update}
            episodes, row, t_collect = self.core.iteration(
                self.runner, self.env_steps, self.update_gen, self.algorithm.on_rollout, collected=collected,
                **more,
            )  # fmt: skip
        steps = self.steps_per_iteration
        self.env_steps += steps
        self.iteration += 1
        dt = time.perf_counter() - t0
        self.wall_time += dt
        head = {
            "iteration": self.iteration,
            "env_steps": self.env_steps,
            "wall_time_s": round(self.wall_time, 3),
            "env_steps_per_s": steps / dt,
            "collect_s": t_collect,
            "update_s": dt - t_collect,
            "cpu_s": time.process_time() - c0,  # this process's CPU seconds, all threads
            "shaping_factor": shaping_factor(self.env_steps, cfg.shaping.initial_factor, cfg.shaping.horizon),
        }
        head["episodes"] = len(episodes)
        if len(episodes):
            head["sparse_return"] = float(episodes.sparse.mean())
            head["shaped_return"] = float(episodes.shaped.sum(-1).mean())
            for e, name in enumerate(self.env.event_names):
                head[f"events/{name}"] = float(episodes.events[:, :, e].sum(-1).mean())
            self.recent_returns.append(head["sparse_return"])
        self.last_episodes = episodes
        return {**head, **row}

    def _check_finite(self, row: dict[str, Any]) -> None:
        """Stop a diverged run: every loss statistic of the iteration's row and every learner weight
        must be finite (one host synchronization per iteration).

        Raises:
            NonFiniteError: names the iteration, the quantity, the last checkpoint and a hint; the
                row is logged (``metrics.csv``) by the loop, no checkpoint is saved.
        """
        bad = [f"{k} = {v}" for k, v in row.items() if isinstance(v, float) and not np.isfinite(v)]
        if not bad:
            params = [(f"{name}.{p_name}", p) for name, learner in self.learners.items()
                      for p_name, p in learner.named_parameters()]  # fmt: skip
            finite = torch.stack([torch.isfinite(p).all() for _, p in params]) if params else None
            if finite is not None and not bool(finite.all()):
                bad = [f"weight {n}" for (n, _), ok in zip(params, finite.tolist(), strict=True) if not ok]
        if not bad:
            return
        saved = list_checkpoints(self.run_dir)
        last = (
            f"the last checkpoint, {saved[-1]}, holds finite weights" if saved else "no checkpoint was saved"
        )
        section = "pqn" if getattr(self.core, "name", "ppo") == "pqn" else "ppo"  # the core's config section
        lr = getattr(getattr(self.cfg, section, None), "lr", None)
        hint = (
            f"lower the learning rate ({section}.lr = {lr:g})"
            if lr is not None
            else "lower the learning rate"
        )
        raise NonFiniteError(
            f"training diverged at iteration {self.iteration} ({self.env_steps:,} env steps): "
            f"{', '.join(bad[:3])}{' ...' if len(bad) > 3 else ''} is not finite. The run stops and is not "
            f"marked done; {last}. Try again in a new --out and {hint}."
        )

    def train(self, on_iteration: Callable[[Trainer, dict], None] | None = None) -> dict[str, Any]:
        """Run until ``run.total_steps`` env steps, then save the final checkpoint and evaluation.

        Args:
            on_iteration: called after every iteration with the trainer and the metrics row.

        Returns:
            The final evaluation summary (also written to ``eval.json``).
        """
        try:
            return self._train(on_iteration)
        finally:
            self.lock.release()

    def _train(self, on_iteration: Callable[[Trainer, dict], None] | None) -> dict[str, Any]:
        cfg = self.cfg
        self.run_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.run.config, yaml.safe_dump(config_to_dict(cfg), sort_keys=False))
        loggers = self._open_loggers()
        bar = tqdm(
            total=cfg.run.total_steps,
            initial=min(self.env_steps, cfg.run.total_steps),
            unit="step",
            unit_scale=True,
            dynamic_ncols=True,
            disable=not self.progress,
            desc=f"{cfg.run.algo} {self.env.layout.name}",
        )
        session_start, session_steps = time.perf_counter(), 0
        try:
            while self.env_steps < cfg.run.total_steps:
                row = self._iteration()
                self.record_iteration(row, loggers)
                session_steps += self.steps_per_iteration
                bar.update(min(self.steps_per_iteration, cfg.run.total_steps - bar.n))
                recent = (
                    sum(self.recent_returns) / len(self.recent_returns)
                    if self.recent_returns
                    else float("nan")
                )
                bar.set_postfix(
                    ret=f"{recent:.1f}", sps=f"{session_steps / (time.perf_counter() - session_start):,.0f}"
                )
                if on_iteration is not None:
                    on_iteration(self, row)
        finally:
            bar.close()
            loggers.close()
        return self.finish()

    def record_iteration(self, row: dict[str, Any], loggers: LoggerGroup) -> None:
        """After an iteration: stop a diverged run (its row logged first), run the plug-in's
        ``after_iteration``, log ``row`` with its entries to ``loggers`` and save a checkpoint when
        one is due (also :class:`~zsceval.rl.stacked_phase.StackedPhase`'s members)."""
        cfg = self.cfg
        self.metrics.append(row)
        try:
            self._check_finite(row)
        except NonFiniteError:
            loggers.log_row(row, self.env_steps)  # the diverged row is logged too
            raise
        self.algorithm.after_iteration(self.iteration, self.env_steps, row, self.last_episodes)
        loggers.log_row(row, self.env_steps)  # with the plug-in's entries, before a checkpoint
        self._refresh_arms()
        if self.env_steps >= self.next_checkpoint:
            every = max(cfg.run.checkpoint_every, 1)
            self.next_checkpoint = (self.env_steps // every + 1) * every
            self.save_checkpoint()

    def finish(self) -> dict[str, Any]:
        """After the last iteration: the final checkpoint (unless the last one is it) and the final
        evaluation (:meth:`evaluate`); returns its summary."""
        final = list_checkpoints(self.run_dir)
        if not final or final[-1].name != f"step_{self.env_steps:012d}":
            self.save_checkpoint()
        return self.evaluate()

    def evaluate(self) -> dict[str, Any]:
        """Final evaluation with the plug-in's ``eval_seats`` (default: the ego in self-play);
        writes and returns ``eval.json``'s content (its ``self_play`` entry)."""
        cfg = self.cfg
        ego_name = next(iter(self.learners))
        summary: dict[str, Any] = {
            "algo": cfg.run.algo,
            "layout": self.env.layout.name,
            "seed": cfg.run.seed,
            "env_steps": self.env_steps,
            "train_wall_time_s": self.wall_time,
            "train_env_steps_per_s": self.env_steps / self.wall_time if self.wall_time else None,
            "ego": ego_name,
        }
        if cfg.run.eval_episodes > 0:
            episodes = cfg.run.eval_episodes
            env = make_env(
                cfg.env,
                num_envs=min(episodes, 1024),
                device=self.device,
                seed=cfg.run.seed + 10_000,
                evaluation=True,
            )
            gen = torch.Generator(self.device).manual_seed(cfg.run.seed + 10_001)
            policies = {**self.learners, **self.partners}
            seats = self.algorithm.eval_seats(list(self.learners), list(self.partners))
            unknown = [name for name in seats if name not in policies]
            if unknown:
                raise ConfigError(f"eval_seats names unknown actors {unknown}; actors: {sorted(policies)}")
            summary["eval_seats"] = seats
            training = {name: p.training for name, p in policies.items()}
            for p in policies.values():
                p.eval()
            try:
                result = play(env, [policies[name] for name in seats], episodes, gen)
            finally:
                _close(env)
            summary["self_play"] = summarize(result)
            for name, p in policies.items():
                p.train(training[name])
        atomic_write_text(self.run.eval, json.dumps(summary, indent=2))
        return summary

    def _compile_env(self, cfg: TrainConfig) -> None:
        """``run.compile`` ``step`` or ``full``: compile the env step (``compile_step``) where the
        env has one."""
        mode = compile_mode(cfg, self.device)
        if mode in ("off", "rollout"):  # rollout: the rollout graph steps the env (graph_step)
            return
        if not hasattr(self.env, "compile_step"):
            self.notes.append(
                f"run.compile={mode}: env '{cfg.env.name}' has no compiled step; it stays eager"
            )
            return
        try:
            self.env.compile_step(backend=cfg.run.compile_backend, mode=self._cuda_graphs_mode(cfg))
        except ValueError as exc:
            self.notes.append(f"run.compile={mode}: the env step stays eager ({exc})")

    def _cuda_graphs_mode(self, cfg: TrainConfig) -> str | None:
        """``"reduce-overhead"`` with ``run.cuda_graphs`` under ``run.compile: full`` or ``rollout`` on
        CUDA, else None."""
        full = compile_mode(cfg, self.device) in ("full", "rollout")
        return "reduce-overhead" if full and cfg.run.cuda_graphs and self.device.type == "cuda" else None

    def _compile_core(self, cfg: TrainConfig) -> None:
        """``run.compile: full``: compile acting (the runner) and the core's values and minibatch
        step, and collect without host syncs where the seating allows (``PPOCore.sync_free``);
        ``run.compile: rollout``: collect in compiled graphs of K steps (``PPOCore.compile_rollout``)."""
        mode = compile_mode(cfg, self.device)
        if mode == "rollout":
            if not hasattr(self.core, "compile_rollout"):
                self.notes.append(f"run.compile=rollout: the '{self.core_cls.name}' core collects eagerly")
                return
            self.notes += self.core.compile_rollout(
                self.runner, cfg.run.rollout_graph_steps, cfg.run.compile_backend, self._cuda_graphs_mode(cfg)
            )
            return
        if mode != "full":
            return
        backend, mode = cfg.run.compile_backend, self._cuda_graphs_mode(cfg)
        self.notes += self.runner.compile_acting(backend, mode)
        if not hasattr(self.core, "compile"):  # a core that does not subclass LearningCore
            self.notes.append(f"run.compile=full: the '{self.core_cls.name}' core stays eager")
            return
        self.notes += self.core.compile(backend, mode)
        if getattr(self.env, "_compiled_step", None) is not None:  # final_obs on every step
            self.core.sync_free = True

    def close(self) -> None:
        """Stop the training env's worker processes, if it has any (Football), and release the run
        folder's lock; idempotent."""
        _close(self.env)
        self.lock.release()


def _close(env) -> None:
    """Close an env that holds worker processes (``ProcessBatchedEnv``); others have no ``close``."""
    close = getattr(env, "close", None)
    if callable(close):
        close()
