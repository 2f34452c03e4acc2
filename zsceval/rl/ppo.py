"""The ``ppo`` learning core: a learner group that collects rollouts for its MAPPO learners and
updates them together (GAE, value-target normalization, epochs of minibatches).

See :mod:`zsceval.rl.runner` for the glossary (row / actor / arm / rollout / iteration). A
learner's samples are the (step, row) pairs it drove (``buffer.actor == its index``); seatings
change only at episode starts, so GAE never mixes two actors' steps. Recurrent policies are trained
with chunked truncated BPTT: each row's T steps are cut into T / L chunks of L = ``chunk_length``
steps; a minibatch is a random set of chunks, each replayed from the GRU state recorded at its
first step (MAPPO's ``data_chunk_length``); steps of a chunk that another actor drove get weight 0.
Feed-forward policies use L = 1, i.e. independent samples.

Plug-in hooks (:class:`~zsceval.rl.algorithm.Algorithm`): ``training_reward`` builds each step's
reward; ``extra_loss(name, minibatch, outputs)`` adds a term to a learner's loss and
``extra_parameters(name)`` gives parameters that this learner's optimizer also trains. A plug-in
reaches the core as ``algorithm.learning_core``: :meth:`PPOCore.actor_step` steps the learners'
PPO actor optimizers on a loss of its own (TrajeDi's JSD step).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from zsceval.rl.config import TrainConfig
from zsceval.rl.cores import LearningCore
from zsceval.rl.gae import compute_gae
from zsceval.rl.learner_group import LearnerGroup, SeparateLearners, learner_group
from zsceval.rl.networks import ObsColumns, compress_observation, observation_columns
from zsceval.rl.policy import Policy
from zsceval.rl.rollout import Rollout
from zsceval.rl.runner import EpisodeRunner, EpisodeTable, StepHooks, _Episodes
from zsceval.rl.schedules import piecewise_linear, shaping_factor
from zsceval.rl.storage import RolloutBuffer

__all__ = ["PPOCore"]


def _chunks(x: torch.Tensor, L: int) -> torch.Tensor:
    """``[T, R, ...] -> [L, (T // L) * R, ...]``: sequence c*R + r is steps c*L..c*L+L-1 of row r."""
    T, R = x.shape[:2]
    C = T // L
    if L == 1:
        return x.reshape(1, T * R, *x.shape[2:])
    return x.reshape(C, L, R, *x.shape[2:]).transpose(0, 1).reshape(L, C * R, *x.shape[2:])


class PPOCore(LearningCore):
    """The MAPPO learner group: rollout storage, collection with critic values, and the update.

    Args:
        learners: the trained policies by name (actor indices 0..len-1 in the runner).
        cfg: the run config (``ppo``, ``model.chunk_length``, ``model.critic_obs``, ``shaping``).
        env: the training env (shapes, dtype).
        device: the learners' device.
        algorithm: the plug-in (``training_reward``, ``extra_loss``, ``extra_parameters``).
    """

    name = "ppo"
    rollout_fields = frozenset(
        {"obs", "actions", "actor", "avail", "starts", "log_probs", "rewards", "terminated", "truncated"}
    )
    """The :class:`~zsceval.rl.rollout.Rollout` fields this core fills (per-seat ``rewards``)."""

    def __init__(self, learners: dict[str, Policy], cfg: TrainConfig, env, device, algorithm) -> None:
        self.learners, self.cfg, self.algorithm = learners, cfg, algorithm
        self.policies = list(learners.values())
        self.names = list(learners)
        """Learner names by actor index."""
        self.device = torch.device(device)
        self.own_critic = cfg.model.critic_obs == "own"
        B, n = env.num_envs, env.num_agents
        self.B, self.n, self.N = B, n, B * n
        critic_shape = env.obs_shape if self.own_critic else env.critic_obs_shape
        space = getattr(env, "single_observation_space", None)
        obs_dtype = getattr(torch, str(space.dtype)) if space is not None else torch.uint8
        hidden = max(p.hidden_size for p in self.policies)
        self.buffer = RolloutBuffer.allocate(
            cfg.ppo.rollout_length, B, n, tuple(env.obs_shape), tuple(critic_shape), env.num_actions,
            hidden, self.device, critic_is_obs=self.own_critic, obs_dtype=obs_dtype,
        )  # fmt: skip
        buf = self.buffer
        self.rollout = Rollout(
            buf.T, B, n, obs=buf.obs, actions=buf.actions, actor=buf.actor, avail=buf.avail,
            starts=buf.starts, log_probs=buf.log_probs, rewards=buf.rewards, terminated=buf.terminated,
            truncated=buf.truncated,
        )  # fmt: skip
        """The plug-in hooks' view of the buffer (:mod:`zsceval.rl.rollout`)."""
        self.L = [cfg.model.chunk_length if p.recurrent else 1 for p in self.policies]
        self.E = int(getattr(algorithm, "critic_feature_size", 0))
        self.group: LearnerGroup = learner_group(learners, cfg, algorithm, self.device, self.E)
        """The learners' optimizers and gradient steps: separate, or stacked (``stack_learners``)."""
        self.h_critic = [p.initial_state(self.N, self.device) for p in self.policies]
        self.critic_extra = (
            torch.zeros(cfg.ppo.rollout_length + 1, B, n, self.E, device=self.device) if self.E else None
        )
        """``float32 [T + 1, B, n, E]`` the critic's extra features at each s_t (plug-in
        :meth:`~zsceval.rl.algorithm.Algorithm.critic_features`), or None."""
        self.sync_free = self.device.type == "cuda"
        """Collect without reading a tensor on the host inside the step loop: the critic's value of
        the final observation is computed every step instead of after ``truncated.any()`` (one
        more critic forward per step, cheaper on a GPU than a synchronization; on a CPU a sync
        costs nothing, so it is off there). Needs an env whose step sets ``final_obs`` every step
        (a compiled Overcooked step). Results are the same either way."""
        self.rollout_graph = None
        """The collection as compiled graphs of K steps (``run.compile: rollout``,
        :class:`~zsceval.rl.rollout_graph.RolloutGraph`), or None: eager steps."""

    # -- one iteration ----------------------------------------------------------------------------------
    def iteration(
        self, runner: EpisodeRunner, env_steps: int, generator: torch.Generator,
        on_rollout: Callable[[Rollout, EpisodeTable], None],
        collected: tuple[EpisodeTable, float] | None = None,
        update: Callable[[PPOCore, dict[str, Any]], dict[str, Any]] | None = None,
    ) -> tuple[EpisodeTable, dict[str, Any], float]:  # fmt: skip
        """One PPO iteration, top to bottom in CleanRL's order (``ppo.py``); the trainer logs it.

        1. collect ``T`` steps of the ``B`` games (:meth:`collect`): observations, actions and
           log-probabilities, critic values ``V(s_t)``, training rewards;
        2. bootstrap ``V(s_T)`` (:meth:`bootstrap`); then the plug-in's hook sees the rollout
           (``on_rollout``: MEP's reward bonus, TrajeDi's JSD actor step), before GAE;
        3. GAE advantages and returns of every row, each with its driver's critic (:meth:`advantages`);
        4. ``ppo.epochs`` epochs of ``ppo.num_minibatches`` shuffled minibatches per learner, or for
           all learners at once when they are stacked (:meth:`learn`).

        Args:
            runner: the episode runner (its env and seated actors).
            env_steps: env steps done before this iteration (schedules).
            generator: the minibatch-shuffling generator.
            on_rollout: the plug-in hook, ``Algorithm.on_rollout``.
            collected: ``(episodes, seconds)`` of a rollout already in the buffer (step 1 done
                elsewhere: :class:`~zsceval.rl.stacked_phase.StackedPhase`), or None.
            update: takes step 4's gradient steps instead of this core (:meth:`learn`).

        Returns:
            ``(episodes that ended in the rollout, loss statistics, seconds of steps 1-2 and the hook)``.
        """
        t0 = time.perf_counter()
        if collected is None:
            episodes = self.collect(runner, env_steps)  # 1
        else:
            episodes, t0 = collected[0], t0 - collected[1]
        self.bootstrap(runner)  # 2
        on_rollout(self.rollout, episodes)
        collect_s = time.perf_counter() - t0
        advantages, returns = self.advantages()  # 3
        stats = self.learn(advantages, returns, env_steps, generator, update)  # 4
        return episodes, stats, collect_s

    # -- collection -----------------------------------------------------------------------------------
    def _critic_obs(self, s) -> torch.Tensor:
        return s.obs if self.own_critic else s.critic_obs

    def _features(self, seating, t: int) -> torch.Tensor | None:
        """The critic's extra features of ``seating``, stored at row t: ``[N, E]`` or None."""
        if not self.E:
            return None
        feats = self.algorithm.critic_features(seating)
        self.critic_extra[t].copy_(feats)
        return self.critic_extra[t].view(self.N, self.E)

    @torch.no_grad()
    def _values(self, runner: EpisodeRunner, critic_obs: torch.Tensor, starts: torch.Tensor,
                out: torch.Tensor, keep_h: bool, extra: torch.Tensor | None = None) -> None:  # fmt: skip
        """Write each active learner's value of its rows into ``out [N]`` (the runner gathers and
        scatters each learner's rows); with ``keep_h``, its new critic state into :attr:`h_critic`.
        ``extra [N, E]``: the critic's extra features."""
        group = self.group

        def value(k: int, every_row: bool, *rows):
            return group.value(k, every_row)(*rows)

        inputs = [critic_obs, self.h_critic, starts, extra]
        runner.per_actor(len(self.policies), value, inputs, [out, self.h_critic if keep_h else None])

    def collect(self, runner: EpisodeRunner, env_steps: int) -> EpisodeTable:
        """Fill the buffer with one rollout of T steps (observations, actions and their
        log-probabilities, critic values ``V(s_t)``, training rewards); returns the episodes that
        ended in it. :meth:`bootstrap` adds ``V(s_T)``.

        The steps (:meth:`collect_steps`) are tensor work; the episode table is built after them,
        once per rollout (host work)."""
        return runner.table(self.collect_steps(runner, env_steps))

    @torch.no_grad()
    def collect_steps(self, runner: EpisodeRunner, env_steps: int) -> _Episodes:
        """The T steps of :meth:`collect` (:meth:`EpisodeRunner.rollout
        <zsceval.rl.runner.EpisodeRunner.rollout>` with this core's :class:`_PPOStep`); returns the
        episode records (``_Episodes``).

        With :attr:`sync_free`, an env step that sets ``final_obs`` every step and a runner with
        :attr:`~zsceval.rl.runner.EpisodeRunner.static_seating` (SP), no op in here reads a tensor
        on the host (tests/rl/test_sync_free_rollout.py). Plug-in hooks called per step
        (``training_reward``, ``critic_features``) must keep it so."""
        if self.rollout_graph is not None:
            return self.rollout_graph.collect(env_steps)
        return runner.rollout(self.buffer.T, _PPOStep(self, runner, env_steps))

    @torch.no_grad()
    def bootstrap(self, runner: EpisodeRunner) -> None:
        """``V(s_T)`` of every row into ``buffer.values[T]``, with the seating at ``s_T`` in
        ``buffer.actor[T]`` (GAE bootstraps each row with the critic of the learner that drives it
        next)."""
        buf, N = self.buffer, self.N
        s, seating = runner.step_out, runner.seating
        buf.actor[buf.T].copy_(seating.actor)
        critic_obs = self._critic_obs(s).reshape(N, *buf.critic_obs.shape[3:])
        extra = self._features(seating, buf.T)
        self._values(runner, critic_obs, runner.starts, buf.values[buf.T].view(N), False, extra)

    # -- update ---------------------------------------------------------------------------------------
    def advantages(self) -> tuple[torch.Tensor, torch.Tensor]:
        """GAE advantages and returns ``float32 [T, N]`` for every row (each with its driver's critic).

        Rows driven by partners get meaningless numbers; they are never trained on.
        """
        buf, cfg = self.buffer, self.cfg.ppo
        flat = buf.flat
        owner = flat(buf.actor)
        values = flat(buf.values).clone()
        trunc_values = flat(buf.truncated_values).clone()
        with torch.no_grad():
            for k, p in enumerate(self.policies):
                m = owner == k
                values[m] = p.denormalize(values[m])
                mt = m[: buf.T]
                trunc_values[mt] = p.denormalize(trunc_values[mt])
            n = self.n
            term = flat(buf.terminated.unsqueeze(-1).expand(-1, -1, n))
            trunc = flat(buf.truncated.unsqueeze(-1).expand(-1, -1, n))
            return compute_gae(
                flat(buf.rewards), values, term, trunc, trunc_values, cfg.gamma, cfg.gae_lambda
            )

    def update(self, env_steps: int, generator: torch.Generator) -> dict[str, Any]:
        """GAE, then epochs of minibatches for every learner (steps 3 and 4 of :meth:`iteration`).

        Args:
            env_steps: env steps done before this rollout (entropy schedule).
            generator: torch generator (on the buffer's device) for minibatch shuffling.

        Returns:
            Mean loss statistics per learner (keys prefixed ``<name>/`` when there are several;
            ``stacked/`` for stacked learners), plus ``entropy_coef``.
        """
        advantages, returns = self.advantages()
        return self.learn(advantages, returns, env_steps, generator)

    def learn(
        self, advantages: torch.Tensor, returns: torch.Tensor, env_steps: int, generator: torch.Generator,
        update: Callable[[PPOCore, dict[str, Any]], dict[str, Any]] | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        """Epochs of minibatches: each learner's samples, shuffled, in one loop over learner groups.

        A group is one learner, or every learner when they are stacked (``stack_learners``: one
        forward and backward per minibatch for all). The permutations are drawn learner by
        learner, then epoch by epoch, before any step, so a stacked member sees exactly the
        minibatches it would see alone.

        Args:
            advantages, returns: ``float32 [T, N]`` from :meth:`advantages`.
            env_steps: env steps done before this rollout (entropy schedule).
            generator: torch generator (on the buffer's device) for minibatch shuffling.
            update: ``update(core, plan)`` takes the gradient steps of :meth:`update_plan`'s plan
                (drawn with the observations uncompressed) and returns the statistics row, as
                :meth:`run_update` would (a stacked phase's vmapped update,
                :mod:`zsceval.rl.stacked_update`); None: :meth:`run_update`.
        """
        plan = self.update_plan(advantages, returns, env_steps, generator, compress=update is None)
        return self.run_update(plan) if update is None else update(self, plan)

    def update_plan(self, advantages: torch.Tensor, returns: torch.Tensor, env_steps: int,
                    generator: torch.Generator, compress: bool = True) -> dict[str, Any]:  # fmt: skip
        """What :meth:`learn`'s gradient steps use: ``ent_coef`` (float), ``batches`` (learner index ->
        its samples, :meth:`_samples`; each learner's value normalizer updated) and ``perms``
        (learner index -> one permutation of its sequences per epoch). ``compress``: the
        observations as their varying entries where ``ppo.obs_columns`` applies."""
        cfg = self.cfg.ppo
        ent_coef = piecewise_linear(env_steps, cfg.entropy_milestones, cfg.entropy_coefs)
        owner = self.buffer.flat(self.buffer.actor)[: self.buffer.T]
        others = self.other_actions()  # once per update, shared by every learner
        compressed = self._compressed_obs() if compress else None  # once per update, shared by every learner
        batches = {}
        for k in range(len(self.policies)):
            mask = owner == k
            if bool(mask.any()):
                batches[k] = self._samples(k, mask, advantages, returns, others, compressed)
        perms = {
            k: [torch.randperm(b["seq"]["actions"].shape[1], generator=generator, device=self.device)
                for _ in range(cfg.epochs)]
            for k, b in batches.items()
        }  # fmt: skip
        return {"ent_coef": ent_coef, "batches": batches, "perms": perms}

    def run_update(self, plan: dict[str, Any]) -> dict[str, Any]:
        """The gradient steps of :meth:`update_plan`'s ``plan``, one learner group at a time;
        returns the statistics row (``entropy_coef``, then each group's, prefixed)."""
        ent_coef, batches, perms = plan["ent_coef"], plan["batches"], plan["perms"]
        row: dict[str, Any] = {"entropy_coef": ent_coef}
        for group in self.group.groups(list(batches)):
            if not group:
                continue
            stats = self._train_group(group, batches, perms, ent_coef)
            row.update({self.group.prefix(group) + key: v for key, v in stats.items()})
        return row

    def _train_group(self, group: list[int], batches: dict, perms: dict, ent_coef: float) -> dict[str, float]:
        """``ppo.epochs`` x ``ppo.num_minibatches`` gradient steps of one learner group; returns the
        mean of each step statistic and the group's mean value target."""
        cfg = self.cfg.ppo
        sizes = {k: -(-batches[k]["seq"]["actions"].shape[1] // cfg.num_minibatches) for k in group}
        self.group.begin()
        sums: dict[str, torch.Tensor] = {}
        count = 0
        for epoch in range(cfg.epochs):
            for j in range(cfg.num_minibatches):
                parts = {}
                for k in group:
                    idx = perms[k][epoch][j * sizes[k] : (j + 1) * sizes[k]]
                    if idx.numel():
                        parts[k] = self._minibatch(batches[k], idx)
                if not parts:
                    continue
                self._accumulate(sums, self.group.step(parts, ent_coef))
                count += 1
        self.group.end()
        out = {key: float(v) / max(count, 1) for key, v in sums.items()}
        if len(group) == 1:
            out["value_target_mean"] = float(batches[group[0]]["returns"].mean())
        else:
            pooled = torch.cat([batches[k]["returns"].reshape(-1) for k in group])
            out["value_target_mean"] = float(pooled.mean())
        return out

    def other_actions(self) -> torch.Tensor | None:
        """``int64 [T, B * n, n - 1]``: at each step, the actions of the other seats of the row's game,
        own seat + 1 first (for partner models, e.g. E3T's); None for one seat."""
        if self.n == 1:
            return None
        acts = self.buffer.actions
        return self.buffer.flat(torch.stack([acts.roll(-j, dims=2) for j in range(1, self.n)], -1))

    def _compressed_obs(self) -> tuple[torch.Tensor, ObsColumns] | None:
        """The rollout's observations reduced to their varying entries, once per update
        (``ppo.obs_columns``, :class:`~zsceval.rl.networks.ObsColumns`): ``(float32 [T, B*n, S],
        columns)``, or None for CNN models, MLPs without hidden layers, compiled steps or with the
        option off."""
        model = self.cfg.model
        if not self.cfg.ppo.obs_columns or model.kind != "mlp" or not model.mlp_layers:
            return None
        if self.group.compiled:
            return None
        obs = self.buffer.obs
        rows = obs.reshape(-1, obs[0, 0, 0].numel())
        columns = observation_columns(rows, model.obs_scale)
        if columns.varying.numel() > rows.shape[1] // 2:  # little to gain, and float32 rows of more
            return None  # than half the width would outgrow the uint8 buffer twice over
        x = compress_observation(rows, columns, model.obs_scale)
        return x.view(obs.shape[0], obs.shape[1] * obs.shape[2], -1), columns

    def _samples(self, k: int, mask: torch.Tensor, advantages, returns, others=None,
                 compressed: tuple[torch.Tensor, ObsColumns] | None = None) -> dict[str, Any]:  # fmt: skip
        """Learner k's chunks of the rollout (its value normalizer updated with its returns).

        Returns:
            ``seq`` (``[L, S, ...]`` tensors; no ``critic_obs`` when the critic reads ``obs``, which
            :meth:`_minibatch` then aliases), ``h_actor``/``h_critic`` (``[S, hidden]``),
            ``weight`` (``float32 [L, S]`` or None when every step is the learner's) and
            ``returns`` (the learner's returns, for logging). ``others``: :meth:`other_actions`,
            chunked into ``seq["other_actions"]``. ``compressed``: :meth:`_compressed_obs`; then
            ``seq["obs"]`` is ``float32 [L, S, S_cols]`` and ``columns`` its columns.
        """
        cfg, p, L, buf = self.cfg.ppo, self.policies[k], self.L[k], self.buffer
        full = bool(mask.all())
        own_returns = returns if full else returns[mask]
        if cfg.value_norm:
            p.value_norm.update(own_returns)
            targets = p.value_norm.normalize(returns)
        else:
            targets = returns
        own_adv = advantages if full else advantages[mask]
        advantages = (advantages - own_adv.mean()) / (own_adv.std() + 1e-5)
        T, flat = buf.T, buf.flat
        data = {
            "obs": flat(buf.obs) if compressed is None else compressed[0],
            "avail": flat(buf.avail),
            "actions": flat(buf.actions),
            "old_log_probs": flat(buf.log_probs),
            "old_values": flat(buf.values)[:T],
            "starts": flat(buf.starts),
            "advantages": advantages,
            "targets": targets,
        }
        if buf.critic_obs is not buf.obs:  # with `critic_obs: own` minibatches alias obs (_minibatch)
            data["critic_obs"] = flat(buf.critic_obs)
        if self.E:
            data["critic_extra"] = flat(self.critic_extra)[:T]
        if others is not None:
            data["other_actions"] = others
        forced = self._forced()
        if forced is not None:
            data["active"] = ~forced
        seq = {key: _chunks(v, L) for key, v in data.items()}
        h_actor, h_critic = (flat(h)[::L].flatten(0, 1) for h in (buf.h_actor, buf.h_critic))
        weight = None
        if not full:
            chunk_mask = _chunks(mask, L)
            keep = chunk_mask.any(0).nonzero().squeeze(-1)
            seq = {key: v.index_select(1, keep) for key, v in seq.items()}
            h_actor, h_critic = h_actor.index_select(0, keep), h_critic.index_select(0, keep)
            weight = chunk_mask.index_select(1, keep).float()
            if bool(weight.all()):
                weight = None
        return {
            "seq": seq,
            "h_actor": h_actor,
            "h_critic": h_critic,
            "weight": weight,
            "returns": own_returns,
            "columns": None if compressed is None else compressed[1],
        }

    def _forced(self) -> torch.Tensor | None:
        """``bool [T, N]``: the rollout's samples with exactly one available action, when there are
        any and ``ppo.skip_forced`` applies (separate, eager learners); else None. Their policy
        terms are exactly 0 (:meth:`Policy.evaluate <zsceval.rl.policy.Policy.evaluate>`'s
        ``active``), so the update skips the actor's work on them."""
        if (
            not self.cfg.ppo.skip_forced
            or self.group.compiled
            or not isinstance(self.group, SeparateLearners)
        ):
            return None
        buf = self.buffer
        forced = buf.flat(buf.avail).sum(-1) == 1
        return forced if bool(forced.any()) else None

    @staticmethod
    def _minibatch(batch: dict, idx: torch.Tensor) -> dict[str, Any]:
        mb = {key: v.index_select(1, idx) for key, v in batch["seq"].items()}
        if "critic_obs" not in mb:  # the critic reads the agent's own observation: one copy for both
            mb["critic_obs"] = mb["obs"]
        w = batch["weight"]
        mb["weight"] = None if w is None else w.index_select(1, idx)
        if batch.get("columns") is not None:  # mb["obs"] holds the varying entries only
            mb["obs_columns"] = batch["columns"]
        mb["h_actor"], mb["h_critic"] = (
            batch["h_actor"].index_select(0, idx),
            batch["h_critic"].index_select(0, idx),
        )
        return mb

    @staticmethod
    def _accumulate(sums: dict, stats: dict) -> None:
        for key, v in stats.items():
            sums[key] = sums.get(key, 0.0) + (v.detach() if isinstance(v, torch.Tensor) else v)

    # -- compiled graphs (run.compile: full) ----------------------------------------------------------
    def compile(self, backend: str = "inductor", mode: str | None = None) -> list[str]:
        """Compile the update's hot paths with ``torch.compile(fullgraph=True, dynamic=False)``
        (``run.compile: full``): each learner's critic value (collection) and its
        minibatch step (:mod:`zsceval.rl.ppo_compile`). ``ppo.obs_columns`` is off when compiled
        (its width changes every update). Stacked learners stay eager.

        Args:
            backend: ``torch.compile`` backend (``inductor``; ``aot_eager`` in tests).
            mode: ``torch.compile`` mode of the value graphs (``"reduce-overhead"``: CUDA graphs, on
                CUDA only); the minibatch step uses the default mode.

        Returns:
            Notes on what stays eager.
        """
        return self.group.compile(backend, mode)

    def compile_rollout(self, runner: EpisodeRunner, steps: int, backend: str = "inductor",
                        mode: str | None = None) -> list[str]:  # fmt: skip
        """Collect in compiled graphs of ``steps`` env steps (``run.compile: rollout``,
        :mod:`zsceval.rl.rollout_graph`) where the run allows it; the update stays eager.

        Returns:
            Notes saying why the rollout stays eager, if it does.
        """
        from zsceval.rl.rollout_graph import RolloutGraph, rollout_graph_blockers

        why = rollout_graph_blockers(self, runner)
        if why:
            return [f"run.compile=rollout: the rollout stays eager ({'; '.join(why)})"]
        self.rollout_graph = RolloutGraph(self, runner, steps, backend, mode)
        return []

    # -- plug-in steps -------------------------------------------------------------------------------
    def actor_step(self, loss: torch.Tensor) -> torch.Tensor:
        """One step of every learner's PPO actor optimizer on a plug-in's ``loss`` (TrajeDi's JSD
        step): :meth:`LearnerGroup.actor_step <zsceval.rl.learner_group.LearnerGroup.actor_step>`.

        Returns:
            ``float32 [K]`` each learner's actor gradient norm before clipping.
        """
        return self.group.actor_step(loss)

    # -- resumable state ------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Optimizer states and the critics' recurrent states (for checkpoints)."""
        return {**self.group.state_dict(), "h_critic": list(self.h_critic)}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` (after the learners' weights are loaded)."""
        self.h_critic = [h.to(self.device) for h in state["h_critic"]]
        self.group.load_state_dict(state)


class _PPOStep(StepHooks):
    """The PPO core's part of each rollout step (:meth:`PPOCore.collect_steps`): store s_t and
    the learners' states and log-probabilities, the critic values ``V(s_t)``, the training reward
    and the ends, and ``V`` of the final observation where an episode was cut."""

    def __init__(self, core: PPOCore, runner: EpisodeRunner, env_steps: int) -> None:
        self.core, self.runner, self.env_steps = core, runner, env_steps
        self.learners = len(core.policies)
        self.starts: torch.Tensor | None = None
        self.extra: torch.Tensor | None = None
        """The critic's extra features of the current step (:meth:`PPOCore._features`)."""

    def observe(self, t, s, seating, starts):
        core, buf, N = self.core, self.core.buffer, self.core.N
        buf.obs[t].copy_(s.obs)
        if not core.own_critic:
            buf.critic_obs[t].copy_(core._critic_obs(s))
        buf.avail[t].copy_(s.avail_actions)
        buf.starts[t].view(N).copy_(starts)
        buf.actor[t].copy_(seating.actor)
        self.starts = starts
        return buf.h_actor[t].view(N, buf.h_actor.shape[-1]), buf.log_probs[t].view(N)

    def act(self, t, s, seating, actions, generator):
        critic_obs = self.critic_input(t, s, seating)
        self.core._values(self.runner, critic_obs, self.starts, self.values_at(t), True, self.extra)
        self.store_actions(t, actions)
        return actions

    def critic_input(self, t, s, seating) -> torch.Tensor:
        """Store the learners' critic states of step t and the critic's extra features; returns the
        critic's observation of s_t, ``[N, ...]`` (the values themselves: :meth:`act`, or a stacked
        phase's vmapped critics)."""
        core, buf, N = self.core, self.core.buffer, self.core.N
        h_critic_t = buf.h_critic[t].view(N, buf.h_critic.shape[-1])
        self.runner.per_actor(self.learners, lambda k, every_row, h: (h,), [core.h_critic], [h_critic_t])
        self.extra = core._features(seating, t)
        return core._critic_obs(s).reshape(N, *buf.critic_obs.shape[3:])

    def values_at(self, t: int) -> torch.Tensor:
        """``float32 [N]``, the buffer's critic values ``V(s_t)`` (written in place)."""
        return self.core.buffer.values[t].view(self.core.N)

    def store_actions(self, t: int, actions: torch.Tensor) -> None:
        """Store a_t (``int64 [N]``)."""
        self.core.buffer.actions[t].view(self.core.N).copy_(actions)

    def stepped(self, t, step, seating):
        core, buf, N, cfg = self.core, self.core.buffer, self.core.N, self.core.cfg
        rsf = shaping_factor(self.env_steps + t * core.B, cfg.shaping.initial_factor, cfg.shaping.horizon)
        buf.rewards[t].copy_(core.algorithm.training_reward(step, rsf, seating))
        buf.terminated[t].copy_(step.terminated)
        buf.truncated[t].copy_(step.truncated)
        # V(final obs) where an episode was cut: every step without reading `truncated` on the
        # host when sync-free (the values of other rows are never read), else where needed
        if step.final_obs is not None and (core.sync_free or bool(step.truncated.any())):
            final = step.final_obs if core.own_critic else step.final_critic_obs
            no_start = torch.zeros(N, dtype=torch.bool, device=core.device)
            core._values(self.runner, final.reshape(N, *final.shape[2:]), no_start,
                         buf.truncated_values[t].view(N), False, self.extra)  # fmt: skip
