"""A stacked phase: several training runs that share a network shape and schedule, trained in one
process with one env batch over all their games (``zsceval bench --stack``).

Each member is a whole :class:`~zsceval.rl.trainer.Trainer` with its own run folder (config,
checkpoints, ``metrics.csv``, ``eval.json``), learners, partners, generators (acting, minibatches,
arm draws), seating and optimizers, so a member's training is, bit for bit on CPU, the training of
the same config alone (tests/rl/test_stacked_phase.py), and each member resumes from its own last
checkpoint. What is shared is the env: in every step of a rollout the members' ``B`` games each are
stepped as one batch of ``M * B`` games (one engine call instead of M); each member's actors act on
its own rows, with its own generator, in the same order as alone.

Per iteration (glossary: :mod:`zsceval.rl.runner`):

1. the members behind (fewest env steps; after a resume the members may stand at different
   checkpoints) collect one rollout together (:meth:`StackedPhase.collect`): their env states are
   gathered into one batch, stepped T times, and scattered back;
2. each of them finishes its iteration alone: bootstrap, the plug-in's hook, GAE and the PPO
   update, the metrics row and a checkpoint when due (:meth:`Trainer.record_iteration
   <zsceval.rl.trainer.Trainer.record_iteration>`).

With ``vmap`` (``zsceval bench --stack-vmap``) the members' actors act, and their learners' critics
give values, in one vmapped forward each per step (:mod:`zsceval.rl.stacked_acting`), and their PPO
updates take one stacked step per minibatch (:mod:`zsceval.rl.stacked_update`): equal to the above
within float rounding, not bit for bit; members that cannot be vmapped act and update as above.

Members must be PPO-core runs of Overcooked with deterministic resets (no seat randomization, no
random starts: a reset draws nothing), the same env config (layout, horizon, games), network,
``ppo.rollout_length``, device, threads and ``run.total_steps`` (:func:`stack_key`). With
``run.compile: step`` (``auto`` on CUDA) the batch's env step is compiled.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from zsceval.envs.base import Step
from zsceval.rl.config import ConfigError, TrainConfig, config_to_dict

__all__ = ["StackedPhase", "check_stackable", "stack_key"]


def stack_key(cfg: TrainConfig) -> str:
    """What members of one stacked phase must share: the env config (but its seed), the network,
    the rollout length, the device and the budget. Runs with equal keys can be stacked."""
    d = config_to_dict(cfg)
    keep = {
        "env": d["env"],
        "model": d["model"],
        "rollout_length": d["ppo"]["rollout_length"],
        "device": d["run"]["device"],
        "total_steps": d["run"]["total_steps"],
        "threads": d["run"]["num_threads"],
    }
    return repr(sorted((k, repr(v)) for k, v in keep.items()))


def check_stackable(cfgs: Sequence[TrainConfig]) -> None:
    """Raise ConfigError unless ``cfgs`` can train as one stacked phase (see the module docstring).

    Raises:
        ConfigError: fewer than one config, configs that differ in :func:`stack_key`, an env with
            random resets, or ``run.compile`` other than ``off``.
    """
    if not cfgs:
        raise ConfigError("a stacked phase needs at least one member")
    keys = {stack_key(c) for c in cfgs}
    if len(keys) > 1:
        raise ConfigError(
            "the members of a stacked phase must share env, model, ppo.rollout_length, run.device, "
            "run.total_steps and run.num_threads"
        )
    for c in cfgs:
        if c.env.name != "overcooked":
            raise ConfigError(f"a stacked phase steps Overcooked games; got env.name={c.env.name}")
        if c.env.randomize_seats or c.env.random_start_prob > 0:
            raise ConfigError(
                "a stacked phase needs deterministic resets (no randomize_seats, random_start_prob=0)"
            )
        if c.run.compile not in ("off", "auto"):
            raise ConfigError(f"a stacked phase runs eagerly; got run.compile={c.run.compile}")


def _slice_step(s: Step, lo: int, hi: int) -> Step:
    """Games ``lo:hi`` of a batched step (copies)."""
    out = {}
    for f in dataclasses.fields(s):
        v = getattr(s, f.name)
        if isinstance(v, torch.Tensor):  # copies: a checkpoint of a view would save the whole batch
            v = v[lo:hi].clone()
        elif isinstance(v, dict):
            v = {k: x[lo:hi].clone() if isinstance(x, torch.Tensor) else x for k, x in v.items()}
        out[f.name] = v
    return Step(**out)


class StackedPhase:
    """Train member runs together (see the module docstring).

    Args:
        cfgs: the members' configs (:func:`check_stackable`).
        out_dirs: each member's run folder.
        resume: continue each member from its folder (a member that never checkpointed starts over).
        vmap: the members' actors act, and their learners' critics give values, in one vmapped
            forward each per step (:mod:`zsceval.rl.stacked_acting`), and their PPO updates take
            one stacked step per minibatch (:mod:`zsceval.rl.stacked_update`); equal to the exact
            phase within float tolerance, not bit for bit; members it cannot vmap act and update as
            without it (:attr:`notes` names them).

    Raises:
        ConfigError: members that cannot be stacked; as :class:`~zsceval.rl.trainer.Trainer`.
    """

    def __init__(self, cfgs: Sequence[TrainConfig], out_dirs: Sequence[str | Path], *, resume: bool = False,
                 vmap: bool = False):  # fmt: skip
        from zsceval.rl.run_dir import RunDirectory
        from zsceval.rl.trainer import Trainer

        if len(cfgs) != len(out_dirs):
            raise ValueError(f"{len(cfgs)} configs but {len(out_dirs)} run folders")
        check_stackable(cfgs)
        self.members: list[Trainer] = []
        self._rng: dict[int, tuple] = {}
        """Each member's global RNG states (torch, numpy): a member alone owns the process's, so
        here each member's are swapped in around its work (:meth:`_own`)."""
        try:
            for cfg, out in zip(cfgs, out_dirs):
                held = resume and Path(out).is_dir() and RunDirectory(out).holds_run()
                tr = Trainer(cfg, out, resume=held, progress=False)
                self.members.append(tr)
                self._rng[id(tr)] = self._global_rng()  # as it stands after this member's build
                if tr.core_cls.name != "ppo":
                    raise ConfigError(
                        f"a stacked phase trains ppo-core runs; '{cfg.run.algo}' uses '{tr.core_cls.name}'"
                    )
        except BaseException:
            self.close()
            raise
        self._envs: dict[int, Any] = {}
        self.notes = [n for tr in self.members for n in tr.notes]
        self.vmapped = None
        """The vmapped acting (:class:`~zsceval.rl.stacked_acting.VmappedActing`), or None."""
        self.vmapped_update = None
        """The vmapped update (:class:`~zsceval.rl.stacked_update.VmappedUpdate`), or None."""
        if vmap:
            from zsceval.rl.stacked_acting import VmappedActing
            from zsceval.rl.stacked_update import VmappedUpdate

            self.vmapped = VmappedActing(self.members)
            left = [i for i in range(len(self.members)) if not self.vmapped.holds(i)]
            if left:
                self.notes.append(f"stacked phase: members {left} act one by one (not vmappable)")
            self.vmapped_update = VmappedUpdate(self.members)
            left = [i for i in range(len(self.members)) if not self.vmapped_update.holds(i)]
            if left:
                self.notes.append(f"stacked phase: members {left} update one by one (not vmappable)")

    @staticmethod
    def _global_rng() -> tuple:
        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
        return torch.get_rng_state(), np.random.get_state(), cuda

    @contextlib.contextmanager
    def _own(self, tr) -> Iterator[None]:
        """Run a block with member ``tr``'s global RNG states, kept for its next block."""
        torch_state, np_state, cuda = self._rng[id(tr)]
        torch.set_rng_state(torch_state)
        np.random.set_state(np_state)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)
        try:
            yield
        finally:
            self._rng[id(tr)] = self._global_rng()

    def close(self) -> None:
        """Release every member's run folder."""
        for tr in self.members:
            tr.close()

    def _batch_env(self, count: int):
        """An env of ``count * B`` games of the members' env config (one per member count)."""
        if count not in self._envs:
            from zsceval.rl.envs import make_env

            first = self.members[0]
            env = make_env(first.cfg.env, num_envs=count * first.env.num_envs, device=first.device,
                           seed=first.cfg.run.seed)  # fmt: skip
            if getattr(first.env, "_compiled_step", None) is not None:  # run.compile step (auto on CUDA)
                env.compile_step(backend=first.cfg.run.compile_backend)
            self._envs[count] = env
        return self._envs[count]

    # -- training -------------------------------------------------------------------------------------
    def train(self) -> list[dict[str, Any]]:
        """Train every member to ``run.total_steps``; returns each member's final evaluation."""
        import yaml

        from zsceval.io import atomic_write_text

        loggers = {}
        try:
            for tr in self.members:
                tr.run_dir.mkdir(parents=True, exist_ok=True)
                atomic_write_text(tr.run.config, yaml.safe_dump(config_to_dict(tr.cfg), sort_keys=False))
                loggers[id(tr)] = tr._open_loggers()
            while True:
                todo = [tr for tr in self.members if tr.env_steps < tr.cfg.run.total_steps]
                if not todo:
                    break
                low = min(tr.env_steps for tr in todo)
                group = [tr for tr in todo if tr.env_steps == low]
                t0 = time.perf_counter()
                tables = self.collect(group)
                share = (time.perf_counter() - t0) / len(group)
                if self.vmapped_update is None:
                    for tr, table in zip(group, tables):
                        with self._own(tr):
                            row = tr._iteration(collected=(table, share))
                            tr.record_iteration(row, loggers[id(tr)])
                    continue
                rows = self._iterate_vmapped(group, tables, share)
                for tr in group:
                    with self._own(tr):
                        tr.record_iteration(rows[id(tr)], loggers[id(tr)])
            for group in loggers.values():
                group.close()
            loggers = {}
            results = []
            for tr in self.members:
                with self._own(tr):
                    results.append(tr.finish())
            return results
        finally:
            for group in loggers.values():
                group.close()
            for tr in self.members:
                tr.lock.release()

    def _iterate_vmapped(self, group: list, tables: list, share: float) -> dict[int, dict[str, Any]]:
        """Each member's iteration after a collected rollout, the members of the vmapped update
        drawing their plans alone and taking their gradient steps together
        (:class:`~zsceval.rl.stacked_update.VmappedUpdate`); returns each member's metrics row (by
        ``id``), its times including its share of the joint steps."""
        vu = self.vmapped_update
        index = {id(tr): i for i, tr in enumerate(self.members)}
        plans: dict[int, tuple] = {}
        rows: dict[int, dict[str, Any]] = {}
        for tr, table in zip(group, tables):
            i = index[id(tr)]

            def later(core, plan, i=i):  # the steps come after every member's plan
                plans[i] = (core, plan)
                return {}

            with self._own(tr):
                rows[id(tr)] = tr._iteration(collected=(table, share), update=later if vu.holds(i) else None)
        if not plans:
            return rows
        t0, c0 = time.perf_counter(), time.process_time()
        stats = vu.update(plans)
        dt, dc = (time.perf_counter() - t0) / len(plans), (time.process_time() - c0) / len(plans)
        for tr in group:
            i = index[id(tr)]
            if i not in plans:
                continue
            row = rows[id(tr)]
            row.update(stats[i])
            tr.wall_time += dt
            row["wall_time_s"] = round(tr.wall_time, 3)
            row["update_s"] += dt
            row["cpu_s"] += dc
            row["env_steps_per_s"] = tr.steps_per_iteration / (
                tr.steps_per_iteration / row["env_steps_per_s"] + dt
            )
        return rows

    @torch.no_grad()
    def collect(self, group: list) -> list:
        """One rollout of every member in ``group`` with one env batch (step 1 of the module
        docstring); fills each member's buffer and returns each member's episode table."""
        from zsceval.rl.ppo import _PPOStep
        from zsceval.rl.runner import _Episodes

        env = self._batch_env(len(group))
        B = group[0].env.num_envs
        env.state = type(group[0].env.state)(
            **{f.name: torch.cat([getattr(tr.env.state, f.name) for tr in group])
               for f in dataclasses.fields(group[0].env.state)}
        )  # fmt: skip
        env._read_clock()
        hooks = [_PPOStep(tr.core, tr.runner, tr.env_steps) for tr in group]
        episodes = [_Episodes() for _ in group]
        T = group[0].core.buffer.T
        vm = self.vmapped
        index = {id(tr): i for i, tr in enumerate(self.members)}
        fused = [
            (index[id(tr)], tr, h)
            for tr, h in zip(group, hooks)
            if vm is not None and vm.holds(index[id(tr)])
        ]
        if fused:
            vm.refresh()  # the learners' weights of their last update
        for t in range(T):
            actions: dict[int, torch.Tensor] = vm.act(fused, t) if fused else {}
            if fused:
                vm.values([(i, tr, h, h.critic_input(t, tr.runner.step_out, tr.runner.seating))
                           for i, tr, h in fused], t)  # fmt: skip
                for i, _, h in fused:
                    h.store_actions(t, actions[i])
            for tr, h in zip(group, hooks):
                if index[id(tr)] not in actions:
                    with self._own(tr):
                        actions[index[id(tr)]] = self._act(tr, h, t)
            big = env.step(torch.cat([actions[index[id(tr)]].view(B, -1) for tr in group]))
            for m, (tr, h) in enumerate(zip(group, hooks)):
                with self._own(tr):
                    self._advance(tr, h, t, _slice_step(big, m * B, (m + 1) * B), episodes[m])
        for m, tr in enumerate(group):
            for f in dataclasses.fields(tr.env.state):
                getattr(tr.env.state, f.name).copy_(getattr(env.state, f.name)[m * B : (m + 1) * B])
        return [tr.runner.table(e) for tr, e in zip(group, episodes)]

    @staticmethod
    def _act(tr, h, t: int) -> torch.Tensor:
        """Member ``tr`` observes s_t and acts (the first half of :meth:`EpisodeRunner.rollout
        <zsceval.rl.runner.EpisodeRunner.rollout>`'s step): ``int64 [N]`` actions."""
        r = tr.runner
        s, seating = r.step_out, r.seating
        record = h.observe(t, s, seating, r.starts)

        def on_actor(k: int, hh: torch.Tensor, logp: torch.Tensor) -> None:
            if k < h.learners:
                r.put(record[0], k, hh)
                r.put(record[1], k, logp)

        a = r.act(on_actor=None if record is None else on_actor)
        return h.act(t, s, seating, a, r.generator)

    @staticmethod
    def _advance(tr, h, t: int, step: Step, episodes) -> None:
        """Member ``tr``'s games stepped (``step``): the second half of the runner's step."""
        r = tr.runner
        tr.env._tick()  # the member's host clock follows its games (lockstep re-seats)
        s2, seating, done = r.account(step)
        h.stepped(t, s2, seating)
        r.finish_step(s2, done, episodes)
        h.advanced(t, r.step_out, r.seating)
