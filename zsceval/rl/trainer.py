"""The training loop shared by every algorithm: collect, update, log, checkpoint, resume.

Glossary (see also :mod:`zsceval.rl.collector`): an **iteration** is one **rollout** of
T = ``ppo.rollout_length`` batched steps over B = ``env.num_envs`` games (T * B **env steps**)
followed by one PPO update per learner (``ppo.epochs`` **epochs** of ``ppo.num_minibatches``
**minibatches**). ``run.total_steps`` counts env steps; the loop stops after the first
iteration that reaches it.

Run directory (every file written to a temp file, then renamed):

* ``config.yaml``: the fully resolved config (what ``--resume`` reads back);
* ``metrics.csv``: one row per iteration (env steps, wall time, steps/s, returns, losses, ...);
* ``checkpoints/step_<env steps>/``: see :mod:`zsceval.rl.checkpoint`;
* ``eval.json``: the final self-play evaluation (mean sparse return, 95% CI, events);
* ``tensorboard/``: optional TensorBoard logs (``run.tensorboard``).

Exact resume. A checkpoint is *resumable* only when taken at a lockstep episode boundary (every
game has just been reset), which happens every lcm(T, horizon) steps per game. There the
trainer saves optimizer states, value normalizers, counters and the RNG states (torch global,
its three generators, the env generator, numpy), then resets the env; a resumed run restores
the same states and performs the same reset, so it continues bit-for-bit like the run that
was never stopped (same device and thread count).
"""

from __future__ import annotations

import csv
import io
import json
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
from zsceval.rl.checkpoint import (
    CheckpointError,
    atomic_write_text,
    list_checkpoints,
    load_checkpoint,
    policy_weights,
    save_checkpoint,
)
from zsceval.rl.collector import Collector
from zsceval.rl.config import ConfigError, TrainConfig, config_from_dict, config_to_dict, validate
from zsceval.rl.envs import make_env
from zsceval.rl.play import play, summarize
from zsceval.rl.policy import Policy, network_spec
from zsceval.rl.schedules import piecewise_linear, shaping_factor
from zsceval.rl.storage import RolloutBuffer
from zsceval.rl.update import PPOUpdater

__all__ = ["RunExistsError", "Trainer", "load_run_config"]

CONFIG = "config.yaml"
METRICS = "metrics.csv"
EVAL = "eval.json"


class RunExistsError(RuntimeError):
    """The output directory already holds a run (use ``--resume`` or another ``--out``)."""


def load_run_config(run_dir: str | Path) -> TrainConfig:
    """Read a run's resolved ``config.yaml``.

    Raises:
        CheckpointError: the directory holds no run.
    """
    path = Path(run_dir) / CONFIG
    if not path.is_file():
        raise CheckpointError(f"cannot resume: {run_dir} holds no run (no {CONFIG})")
    return config_from_dict(yaml.safe_load(path.read_text()) or {})


def resolve_device(name: str) -> torch.device:
    """``torch.device(name)``, refusing CUDA when it is not available (``envs.resolve_device``).

    Raises:
        ConfigError: unknown device string or CUDA missing.
    """
    try:
        return resolve_env_device(name)
    except (RuntimeError, ValueError) as exc:
        raise ConfigError(f"run.device: {exc}") from None


def env_generator(env) -> torch.Generator | None:
    """The env's ``generator`` attribute (a ``torch.Generator``; both shipped envs have one), or None."""
    g = getattr(env, "generator", None)
    return g if isinstance(g, torch.Generator) else None


class Trainer:
    """Trains the learners of one algorithm plug-in with MAPPO and manages the run directory.

    Args:
        cfg: resolved config (for a resume, the run's saved config).
        run_dir: output directory.
        resume: continue from the latest resumable checkpoint in ``run_dir``.
        progress: show a tqdm progress bar (env steps/s, recent sparse return).

    Raises:
        RunExistsError: ``run_dir`` already has a run and ``resume`` is False.
        CheckpointError: ``resume`` without a run or a resumable checkpoint, or a corrupt one.
        ConfigError: invalid config (unknown layout, device, algorithm options).
        registry.UnknownAlgorithmError, registry.PluginLoadError: bad ``run.algo``.
    """

    def __init__(
        self, cfg: TrainConfig, run_dir: str | Path, *, resume: bool = False, progress: bool = True
    ) -> None:
        validate(cfg)
        self.cfg, self.run_dir, self.progress = cfg, Path(run_dir), progress
        if not resume and (self.run_dir / CONFIG).exists():
            raise RunExistsError(f"{self.run_dir} already holds a run; pass --resume or choose another --out")
        resume_from = self._resume_checkpoint() if resume else None
        if cfg.run.tensorboard:
            self._tensorboard_writer_class()  # fail before anything is written
        algo_cls = registry.get(cfg.run.algo)
        self.device = resolve_device(cfg.run.device)
        if cfg.run.num_threads > 0:
            torch.set_num_threads(cfg.run.num_threads)
        seed = cfg.run.seed
        torch.manual_seed(seed)
        self.np_rng = np.random.default_rng(seed)
        self.env = make_env(cfg.env, device=self.device, seed=seed)
        self.algorithm = algo_cls(cfg, self.env.num_envs, self.env.num_agents, self.device)
        self.algorithm.np_rng = self.np_rng
        own_critic = cfg.model.critic_obs == "own"
        critic_shape = self.env.obs_shape if own_critic else self.env.critic_obs_shape
        spec = network_spec(cfg.model, self.env.obs_shape, critic_shape, self.env.num_actions)

        def make_policy() -> Policy:
            return Policy(spec).to(self.device)

        self.learners = self.algorithm.build_learners(make_policy)
        self.partners = self.algorithm.build_partners(make_policy)
        if not self.learners:
            raise ConfigError(f"algorithm '{cfg.run.algo}' built no learner policy")
        for p in self.partners.values():
            p.requires_grad_(False).eval()
        self.updaters = {k: PPOUpdater(p, cfg.ppo, cfg.model.chunk_length) for k, p in self.learners.items()}
        self.policy_list = [*self.learners.values(), *self.partners.values()]
        self.act_gen = torch.Generator(self.device).manual_seed(seed + 1)
        self.update_gen = torch.Generator(self.device).manual_seed(seed + 2)
        self.algo_gen = torch.Generator(self.device).manual_seed(seed + 3)
        self.collector = Collector(
            self.env,
            self.policy_list,
            len(self.learners),
            self.algorithm.training_reward,
            self.act_gen,
            own_critic_obs=own_critic,
        )
        hidden = max(p.hidden_size for p in self.learners.values())
        self.buffer = RolloutBuffer.allocate(
            cfg.ppo.rollout_length,
            self.env.num_envs,
            self.env.num_agents,
            tuple(self.env.obs_shape),
            tuple(critic_shape),
            self.env.num_actions,
            hidden,
            self.device,
            critic_is_obs=own_critic,
        )
        self.iteration = 0
        self.env_steps = 0
        self.wall_time = 0.0
        self.next_checkpoint = cfg.run.checkpoint_every
        self.metrics: list[dict[str, Any]] = []
        self.recent_returns: deque[float] = deque(maxlen=10)
        if resume_from is not None:
            self._restore(resume_from)

    # -- run directory ------------------------------------------------------------------------------
    @property
    def env_spec(self) -> dict:
        """Observation spec of the training env (stored in every checkpoint)."""
        return json.loads(json.dumps(self.env.spec_dict()))

    def _resume_checkpoint(self) -> Path:
        if not (self.run_dir / CONFIG).is_file():
            raise CheckpointError(f"cannot resume: {self.run_dir} holds no run (no {CONFIG})")
        ckpts = list_checkpoints(self.run_dir)
        for ckpt in reversed(ckpts):
            meta_path = ckpt / "meta.json"
            try:
                resumable = json.loads(meta_path.read_text()).get("resumable")
            except (OSError, json.JSONDecodeError):
                resumable = True  # let load_checkpoint report the corruption
            if resumable:
                return ckpt
        raise CheckpointError(f"cannot resume: {self.run_dir} has no resumable checkpoint yet")

    def _meta(self) -> dict[str, Any]:
        return {
            "algo": self.cfg.run.algo,
            "layout": self.env.layout.name,
            "env_spec": self.env_spec,
            "ego": next(iter(self.learners)),
            "iteration": self.iteration,
            "seed": self.cfg.run.seed,
            "device": str(self.device),
            "config": config_to_dict(self.cfg),
        }

    def _write_metrics(self) -> None:
        if not self.metrics:
            return
        columns: list[str] = []
        for row in self.metrics:
            columns += [c for c in row if c not in columns]
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=columns)
        writer.writeheader()
        writer.writerows(self.metrics)
        atomic_write_text(self.run_dir / METRICS, out.getvalue())

    def _read_metrics(self, upto_steps: int) -> list[dict[str, Any]]:
        path = self.run_dir / METRICS
        if not path.is_file():
            return []
        rows = list(csv.DictReader(path.open()))
        return [r for r in rows if int(float(r["env_steps"])) <= upto_steps]

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
        g = env_generator(self.env)
        if g is not None:
            rng["env"] = g.get_state()
        return {
            "iteration": self.iteration,
            "env_steps": self.env_steps,
            "wall_time": self.wall_time,
            "next_checkpoint": self.next_checkpoint,
            "optimizers": {k: u.state_dict() for k, u in self.updaters.items()},
            "rng": rng,
            "algorithm": json.dumps(self.algorithm.state_dict()),
        }

    def _restore(self, ckpt: Path) -> None:
        ckpt, meta, weights, state = load_checkpoint(ckpt, with_train_state=True)
        if meta.get("env_spec") != self.env_spec:
            raise CheckpointError(f"cannot resume from {ckpt}: it was trained on another env spec")
        for name, p in self.learners.items():
            p.load_state_dict(policy_weights(weights, name))
        for name, u in self.updaters.items():
            u.load_state_dict(state["optimizers"][name])
        self.iteration = int(state["iteration"])
        self.env_steps = int(state["env_steps"])
        self.wall_time = float(state["wall_time"])
        self.next_checkpoint = int(state["next_checkpoint"])
        self.algorithm.load_state_dict(json.loads(state["algorithm"]))
        rng = state["rng"]
        torch.set_rng_state(rng["torch"])
        self.act_gen.set_state(rng["act"])
        self.update_gen.set_state(rng["update"])
        self.algo_gen.set_state(rng["algo"])
        g = env_generator(self.env)
        if g is not None and "env" in rng:
            g.set_state(rng["env"])
        if "cuda" in rng and self.device.type == "cuda":
            torch.cuda.set_rng_state(rng["cuda"], self.device)
        ng = rng["numpy_global"]
        np.random.set_state((ng[0], np.array(ng[1], dtype=np.uint32), int(ng[2]), int(ng[3]), float(ng[4])))
        self.np_rng.bit_generator.state = json.loads(rng["numpy"])
        self.collector.reset()
        self.metrics = self._read_metrics(self.env_steps)

    def save_checkpoint(self, resumable: bool) -> Path:
        """Save the learners (and the training state if ``resumable``); prune old checkpoints."""
        state = self._train_state() if resumable else None
        path = save_checkpoint(
            self.run_dir / "checkpoints", self.env_steps, self.learners, self._meta(), state
        )
        self._write_metrics()
        keep = max(self.cfg.run.keep_checkpoints, 1)
        for old in list_checkpoints(self.run_dir)[:-keep]:
            for f in old.iterdir():
                f.unlink()
            old.rmdir()
        return path

    # -- the loop -----------------------------------------------------------------------------------
    def _iteration(self) -> dict[str, Any]:
        cfg = self.cfg
        t0 = time.perf_counter()
        assignment = self.algorithm.assign_seats(self.iteration, self.algo_gen)
        self.collector.set_assignment(assignment)
        episodes = self.collector.collect(
            self.buffer,
            self.env_steps,
            lambda steps: shaping_factor(steps, cfg.shaping.initial_factor, cfg.shaping.horizon),
        )
        t_collect = time.perf_counter() - t0
        ent_coef = piecewise_linear(self.env_steps, cfg.ppo.entropy_milestones, cfg.ppo.entropy_coefs)
        row: dict[str, Any] = {}
        multi = len(self.learners) > 1
        for k, (name, updater) in enumerate(self.updaters.items()):
            stats = updater.update(self.buffer, self.collector.rows[k], ent_coef, self.update_gen)
            row.update({(f"{name}/{s}" if multi else s): v for s, v in stats.items()})
        steps = cfg.steps_per_iteration
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
            "shaping_factor": shaping_factor(self.env_steps, cfg.shaping.initial_factor, cfg.shaping.horizon),
            "entropy_coef": ent_coef,
        }
        ep = episodes.cat()
        if ep is not None:
            sparse, shaped, events = ep
            head["episodes"] = int(sparse.numel())
            head["sparse_return"] = float(sparse.mean())
            head["shaped_return"] = float(shaped.sum(-1).mean())
            for e, name in enumerate(self.env.event_names):
                head[f"events/{name}"] = float(events[:, :, e].sum(-1).mean())
            self.recent_returns.append(head["sparse_return"])
        else:
            head["episodes"] = 0
        return {**head, **row}

    def train(self, on_iteration: Callable[[Trainer, dict], None] | None = None) -> dict[str, Any]:
        """Run until ``run.total_steps`` env steps, then save the final checkpoint and evaluation.

        Args:
            on_iteration: called after every iteration with the trainer and the metrics row.

        Returns:
            The final evaluation summary (also written to ``eval.json``).
        """
        cfg = self.cfg
        self.run_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.run_dir / CONFIG, yaml.safe_dump(config_to_dict(cfg), sort_keys=False))
        writer = self._tensorboard()
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
                self.metrics.append(row)
                session_steps += cfg.steps_per_iteration
                bar.update(min(cfg.steps_per_iteration, cfg.run.total_steps - bar.n))
                recent = (
                    sum(self.recent_returns) / len(self.recent_returns)
                    if self.recent_returns
                    else float("nan")
                )
                bar.set_postfix(
                    ret=f"{recent:.1f}", sps=f"{session_steps / (time.perf_counter() - session_start):,.0f}"
                )
                if writer is not None:
                    for key, value in row.items():
                        writer.add_scalar(key, value, self.env_steps)
                self.algorithm.after_iteration(self.iteration, self.env_steps, row)
                if self.env_steps >= self.next_checkpoint and self.collector.at_episode_boundary:
                    every = max(cfg.run.checkpoint_every, 1)
                    self.next_checkpoint = (self.env_steps // every + 1) * every
                    self.save_checkpoint(resumable=True)
                    self.collector.reset()
                else:
                    self._write_metrics()
                if on_iteration is not None:
                    on_iteration(self, row)
        finally:
            bar.close()
            if writer is not None:
                writer.close()
        final = list_checkpoints(self.run_dir)
        if not final or final[-1].name != f"step_{self.env_steps:012d}":
            self.save_checkpoint(resumable=self.collector.at_episode_boundary)
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
            summary["eval_seats"] = seats
            training = {name: p.training for name, p in policies.items()}
            for p in policies.values():
                p.eval()
            result = play(env, [policies[name] for name in seats], episodes, gen)
            summary["self_play"] = summarize(result)
            for name, p in policies.items():
                p.train(training[name])
        atomic_write_text(self.run_dir / EVAL, json.dumps(summary, indent=2))
        return summary

    def _tensorboard(self):
        if not self.cfg.run.tensorboard:
            return None
        return self._tensorboard_writer_class()(str(self.run_dir / "tensorboard"))

    @staticmethod
    def _tensorboard_writer_class():
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            raise ConfigError(
                "run.tensorboard needs the 'tensorboard' package: pip install tensorboard "
                "(or pip install zsceval[tensorboard]), or pass --no-tensorboard"
            ) from None
        return SummaryWriter
