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

import inspect
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch

from zsceval.rl.config import PPOConfig, TrainConfig
from zsceval.rl.cores import LearningCore
from zsceval.rl.gae import compute_gae
from zsceval.rl.loss import ppo_loss
from zsceval.rl.networks import ObsColumns, compress_observation, observation_columns
from zsceval.rl.policy import Policy
from zsceval.rl.rollout import Rollout
from zsceval.rl.runner import EpisodeRunner, EpisodeTable, _Episodes
from zsceval.rl.schedules import piecewise_linear, shaping_factor
from zsceval.rl.storage import RolloutBuffer

__all__ = ["PPOCore", "clip_and_step", "minibatch_loss"]


def _chunks(x: torch.Tensor, L: int) -> torch.Tensor:
    """``[T, R, ...] -> [L, (T // L) * R, ...]``: sequence c*R + r is steps c*L..c*L+L-1 of row r."""
    T, R = x.shape[:2]
    C = T // L
    if L == 1:
        return x.reshape(1, T * R, *x.shape[2:])
    return x.reshape(C, L, R, *x.shape[2:]).transpose(0, 1).reshape(L, C * R, *x.shape[2:])


def minibatch_loss(policy: Policy, mb: dict[str, Any], entropy_coef: float | torch.Tensor, cfg: PPOConfig
                   ) -> tuple[torch.Tensor, dict[str, torch.Tensor], dict[str, torch.Tensor]]:  # fmt: skip
    """PPO loss of one minibatch: re-evaluate its actions, clipped policy and value losses, entropy.

    A function of tensors with static shapes (no host read, no data-dependent shape), so
    ``torch.compile(fullgraph=True, dynamic=False)`` traces it as one graph (``run.compile: full``;
    pass ``entropy_coef`` as a 0-dim tensor there, or each new value compiles anew).

    Args:
        policy: the learner.
        mb: the minibatch (:meth:`PPOCore._minibatch`): ``obs``/``critic_obs`` ``[L, S, ...]``,
            ``avail bool [L, S, A]``, ``actions int64 [L, S]``, ``old_log_probs``,
            ``old_values``, ``advantages``, ``targets`` ``float32 [L, S]``, ``starts bool [L, S]``,
            ``h_actor``/``h_critic`` ``float32 [S, hidden]``, ``weight float32 [L, S]`` or None;
            optionally ``critic_extra float32 [L, S, E]`` and ``obs_columns``.
        entropy_coef: the entropy bonus coefficient.
        cfg: ``ppo`` (clip, value coefficient, Huber delta, value clipping).

    Returns:
        ``(total loss, statistics, outputs)``: statistics are 0-dim tensors (``policy_loss``,
        ``value_loss``, ``entropy``, ``approx_kl``, ``clip_fraction``); outputs ``log_probs``,
        ``entropy``, ``values`` ``float32 [L, S]`` (for a plug-in's extra loss).
    """
    logp, entropy, values = policy.evaluate(
        mb["obs"], mb["critic_obs"], mb["avail"], mb["actions"],
        mb["h_actor"], mb["h_critic"], mb["starts"], mb.get("critic_extra"), mb.get("obs_columns"),
    )  # fmt: skip
    total, stats = _ppo_terms(mb, logp, entropy, values, entropy_coef, mb["weight"], cfg)
    return total, stats, {"log_probs": logp, "entropy": entropy, "values": values}


def _ppo_terms(mb: dict[str, Any], logp: torch.Tensor, entropy: torch.Tensor, values: torch.Tensor,
              entropy_coef: float | torch.Tensor, weight: torch.Tensor | None, cfg: PPOConfig
              ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:  # fmt: skip
    """:func:`~zsceval.rl.loss.ppo_loss` of a minibatch's re-evaluated ``logp``, ``entropy`` and
    ``values`` (``float32 [L, S]``) against its stored ``old_log_probs``, ``advantages``,
    ``old_values`` and ``targets``, with ``cfg``'s clip, value coefficient and Huber delta.

    Returns:
        ``(total loss, statistics)``: 0-dim tensors ``policy_loss``, ``value_loss``, ``entropy``,
        ``approx_kl``, ``clip_fraction``.
    """
    loss = ppo_loss(
        logp, mb["old_log_probs"], mb["advantages"], entropy, values, mb["old_values"],
        mb["targets"], clip=cfg.clip, entropy_coef=entropy_coef, value_coef=cfg.value_loss_coef,
        huber_delta=cfg.huber_delta, clip_value_loss=cfg.clip_value_loss, weight=weight,
    )  # fmt: skip
    stats = {
        "policy_loss": loss.policy,
        "value_loss": loss.value,
        "entropy": loss.entropy,
        "approx_kl": loss.approx_kl,
        "clip_fraction": loss.clip_fraction,
    }
    return loss.total, stats


def clip_and_step(groups: Sequence[Sequence[torch.nn.Parameter]], optimizers: Iterable[torch.optim.Optimizer],
                  max_norm: float, *, raw_step: bool = False) -> list[torch.Tensor]:  # fmt: skip
    """Clip the gradients of each parameter group at ``max_norm`` apart, then step every optimizer.

    Args:
        groups: parameter groups clipped separately (the actor's, the critic's).
        optimizers: stepped in order after clipping.
        max_norm: gradient-norm limit of each group.
        raw_step: call the optimizer's step function without ``Optimizer.step``'s wrapper, whose
            deliberate ``torch._dynamo.graph_break()`` (around its no-grad switch) would split a
            compiled graph; the wrapper's profiler record and step hooks are skipped. Set for
            ``torch.compile(fullgraph=True)``; the eager update keeps ``opt.step()``.

    Returns:
        ``float32 []`` gradient norm of each group before clipping.
    """
    with torch.no_grad():
        norms = [torch.nn.utils.clip_grad_norm_(g, max_norm) for g in groups]
        for opt in optimizers:
            if raw_step:
                inspect.unwrap(type(opt).step)(opt)
            else:
                opt.step()
    return norms


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
        self.optimizers: dict[str, dict[str, torch.optim.Optimizer]] = {}
        for name, p in learners.items():
            p.use_value_norm = cfg.ppo.value_norm
            opts = {
                "actor": torch.optim.Adam(p.actor.parameters(), lr=cfg.ppo.lr, eps=cfg.ppo.adam_eps),
                "critic": torch.optim.Adam(p.critic.parameters(), lr=cfg.ppo.lr, eps=cfg.ppo.adam_eps),
            }
            extra = list(algorithm.extra_parameters(name))
            if extra:
                opts["extra"] = torch.optim.Adam(extra, lr=cfg.ppo.lr, eps=cfg.ppo.adam_eps)
            self.optimizers[name] = opts
        self.h_critic = [p.initial_state(self.N, self.device) for p in self.policies]
        self.E = int(getattr(algorithm, "critic_feature_size", 0))
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
        self._compiled_steps: dict[int, tuple[Callable, Callable]] = {}
        """Learner index -> compiled ``(minibatch loss, clip and step)`` (:meth:`compile`)."""
        self._compiled_values: dict[int, Callable] = {}
        """Learner index -> compiled ``Policy.value`` (:meth:`compile`)."""
        self.stacked = None
        if getattr(algorithm, "stack_learners", False) and len(self.policies) > 1:
            self._build_stacked()

    def _build_stacked(self) -> None:
        """Same-spec learners train as one :class:`~zsceval.rl.population.StackedPolicies`.

        Raises:
            ConfigError: the learners' specs differ, or a plug-in adds extra parameters.
        """
        from zsceval.rl.config import ConfigError
        from zsceval.rl.population import StackedPolicies

        if any(p.spec != self.policies[0].spec for p in self.policies):
            raise ConfigError("stack_learners needs learners of one network spec")
        if any("extra" in opts for opts in self.optimizers.values()):
            raise ConfigError("stack_learners does not support extra_parameters")
        if self.E:
            raise ConfigError("stack_learners does not support critic features")
        cfg = self.cfg.ppo
        self.optimizers = {}  # one Adam over the stacked parameters is each member's own Adam
        self.stacked = StackedPolicies.from_policies(self.policies)
        self.stacked_optimizers = {
            "actor": torch.optim.Adam(self.stacked.actor_parameters(), lr=cfg.lr, eps=cfg.adam_eps),
            "critic": torch.optim.Adam(self.stacked.critic_parameters(), lr=cfg.lr, eps=cfg.adam_eps),
        }

    # -- one iteration ----------------------------------------------------------------------------------
    def iteration(
        self, runner: EpisodeRunner, env_steps: int, generator: torch.Generator,
        on_rollout: Callable[[Rollout, EpisodeTable], None],
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

        Returns:
            ``(episodes that ended in the rollout, loss statistics, seconds of steps 1-2 and the hook)``.
        """
        t0 = time.perf_counter()
        episodes = self.collect(runner, env_steps)  # 1
        self.bootstrap(runner)  # 2
        on_rollout(self.rollout, episodes)
        collect_s = time.perf_counter() - t0
        advantages, returns = self.advantages()  # 3
        stats = self.learn(advantages, returns, env_steps, generator)  # 4
        return episodes, stats, collect_s

    # -- collection -----------------------------------------------------------------------------------
    def _critic_obs(self, s) -> torch.Tensor:
        return s.obs if self.own_critic else s.critic_obs

    def _features(self, runner: EpisodeRunner, t: int) -> torch.Tensor | None:
        """The critic's extra features of the current seating, stored at row t: ``[N, E]`` or None."""
        if not self.E:
            return None
        feats = self.algorithm.critic_features(runner.seating)
        self.critic_extra[t].copy_(feats)
        return self.critic_extra[t].view(self.N, self.E)

    @torch.no_grad()
    def _values(self, runner: EpisodeRunner, critic_obs: torch.Tensor, starts: torch.Tensor, out, keep_h,
                extra: torch.Tensor | None = None):  # fmt: skip
        """Write each active learner's value of its rows into ``out [N]``; optionally its new state.
        ``extra [N, E]``: the critic's extra features."""
        for k, p in enumerate(self.policies):
            if not runner.active(k):
                continue
            value = self._compiled_values.get(k) if runner.rows[k] is None else None  # static shape
            v, h2 = (value or p.value)(
                runner.select(critic_obs, k), runner.select(self.h_critic[k], k), runner.select(starts, k),
                None if extra is None else runner.select(extra, k),
            )  # fmt: skip
            runner.put(out, k, v)
            if keep_h is not None:
                keep_h(k, h2)

    def collect(self, runner: EpisodeRunner, env_steps: int) -> EpisodeTable:
        """Fill the buffer with one rollout of T steps (observations, actions and their
        log-probabilities, critic values ``V(s_t)``, training rewards); returns the episodes that
        ended in it. :meth:`bootstrap` adds ``V(s_T)``.

        The steps (:meth:`collect_steps`) are tensor work; the episode table is built after them,
        once per rollout (host work)."""
        episodes = self.collect_steps(runner, env_steps)
        return episodes.table(runner.arm_table.arms, tuple(runner.env.event_names), self.n, runner.E)

    @torch.no_grad()
    def collect_steps(self, runner: EpisodeRunner, env_steps: int) -> _Episodes:
        """The T steps of :meth:`collect`; returns the episode records (``_Episodes``).

        With :attr:`sync_free`, an env step that sets ``final_obs`` every step and a runner with
        :attr:`~zsceval.rl.runner.EpisodeRunner.static_seating` (SP), no op in here reads a tensor
        on the host (tests/rl/test_sync_free_rollout.py). Plug-in hooks called per step
        (``training_reward``, ``critic_features``) must keep it so."""
        buf, cfg, N, B = self.buffer, self.cfg, self.N, self.B
        L = len(self.policies)
        episodes = _Episodes()
        h_actor_t = torch.empty(0)
        logp_t = torch.empty(0)

        def on_actor(k: int, h: torch.Tensor, logp: torch.Tensor) -> None:
            if k < L:
                runner.put(h_actor_t, k, h)
                runner.put(logp_t, k, logp)

        for t in range(buf.T):
            s = runner.step_out
            critic_obs = self._critic_obs(s).reshape(N, *buf.critic_obs.shape[3:])
            buf.obs[t].copy_(s.obs)
            if not self.own_critic:
                buf.critic_obs[t].copy_(self._critic_obs(s))
            buf.avail[t].copy_(s.avail_actions)
            buf.starts[t].view(N).copy_(runner.starts)
            buf.actor[t].copy_(runner.seat_actor)
            h_actor_t = buf.h_actor[t].view(N, buf.h_actor.shape[-1])
            logp_t = buf.log_probs[t].view(N)
            actions = runner.act(on_actor=on_actor)
            h_critic_t = buf.h_critic[t].view(N, buf.h_critic.shape[-1])
            for k in range(L):
                if runner.active(k):
                    runner.put(h_critic_t, k, runner.select(self.h_critic[k], k))
            extra = self._features(runner, t)
            self._values(
                runner, critic_obs, runner.starts, buf.values[t].view(N),
                lambda k, h2: runner.put(self.h_critic[k], k, h2), extra,
            )  # fmt: skip
            buf.actions[t].view(N).copy_(actions)
            rsf = shaping_factor(env_steps + t * B, cfg.shaping.initial_factor, cfg.shaping.horizon)
            s2, seating, done = runner.env_step(actions)
            buf.rewards[t].copy_(self.algorithm.training_reward(s2, rsf, seating))
            buf.terminated[t].copy_(s2.terminated)
            buf.truncated[t].copy_(s2.truncated)
            # V(final obs) where an episode was cut: every step without reading `truncated` on the
            # host when sync-free (the values of other rows are never read), else where needed
            if s2.final_obs is not None and (self.sync_free or bool(s2.truncated.any())):
                final = s2.final_obs if self.own_critic else s2.final_critic_obs
                no_start = torch.zeros(N, dtype=torch.bool, device=self.device)
                self._values(runner, final.reshape(N, *final.shape[2:]), no_start,
                             buf.truncated_values[t].view(N), None, extra)  # fmt: skip
            runner.finish_step(s2, done, episodes)
        return episodes

    @torch.no_grad()
    def bootstrap(self, runner: EpisodeRunner) -> None:
        """``V(s_T)`` of every row into ``buffer.values[T]``, with the seating at ``s_T`` in
        ``buffer.actor[T]`` (GAE bootstraps each row with the critic of the learner that drives it
        next)."""
        buf, N = self.buffer, self.N
        s = runner.step_out
        buf.actor[buf.T].copy_(runner.seat_actor)
        critic_obs = self._critic_obs(s).reshape(N, *buf.critic_obs.shape[3:])
        extra = self._features(runner, buf.T)
        self._values(runner, critic_obs, runner.starts, buf.values[buf.T].view(N), None, extra)

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

    def learn(self, advantages: torch.Tensor, returns: torch.Tensor, env_steps: int,
              generator: torch.Generator) -> dict[str, Any]:  # fmt: skip
        """Epochs of minibatches: each learner's samples, shuffled, in one loop over learner groups.

        A group is one learner, or every learner when they are stacked (``stack_learners``: one
        forward and backward per minibatch for all). The permutations are drawn learner by
        learner, then epoch by epoch, before any step, so a stacked member sees exactly the
        minibatches it would see alone.

        Args:
            advantages, returns: ``float32 [T, N]`` from :meth:`advantages`.
            env_steps: env steps done before this rollout (entropy schedule).
            generator: torch generator (on the buffer's device) for minibatch shuffling.
        """
        cfg = self.cfg.ppo
        ent_coef = piecewise_linear(env_steps, cfg.entropy_milestones, cfg.entropy_coefs)
        owner = self.buffer.flat(self.buffer.actor)[: self.buffer.T]
        others = self.other_actions()  # once per update, shared by every learner
        compressed = self._compressed_obs()  # once per update, shared by every learner
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
        groups = [[k] for k in batches] if self.stacked is None else [list(batches)]
        names = self.names
        multi = len(self.learners) > 1
        row: dict[str, Any] = {"entropy_coef": ent_coef}
        for group in groups:
            if not group:
                continue
            stats = self._train_group(group, batches, perms, ent_coef)
            if self.stacked is not None:
                prefix = "stacked/"
            else:
                prefix = f"{names[group[0]]}/" if multi else ""
            row.update({prefix + key: v for key, v in stats.items()})
        return row

    def _train_group(self, group: list[int], batches: dict, perms: dict, ent_coef: float) -> dict[str, float]:
        """``ppo.epochs`` x ``ppo.num_minibatches`` gradient steps of one learner group; returns the
        mean of each step statistic and the group's mean value target."""
        cfg = self.cfg.ppo
        sizes = {k: -(-batches[k]["seq"]["actions"].shape[1] // cfg.num_minibatches) for k in group}
        if self.stacked is not None:
            self._sync_stacked_from_policies()
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
                if self.stacked is None:
                    ((k, mb),) = parts.items()
                    step_stats = self._learner_step(k, mb, ent_coef)
                else:
                    step_stats = self._stacked_step(parts, ent_coef)
                self._accumulate(sums, step_stats)
                count += 1
        if self.stacked is not None:
            self._sync_policies_from_stacked()
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
        if self._compiled_steps:
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

    def _loss(self, name, mb, logp, entropy, values, ent_coef, policy, weight) -> tuple[torch.Tensor, dict]:
        """The stacked learners' PPO loss (+ the plug-in's extra loss) and its statistics."""
        total, stats = _ppo_terms(mb, logp, entropy, values, ent_coef, weight, self.cfg.ppo)
        outputs = {"log_probs": logp, "entropy": entropy, "values": values, "policy": policy}
        extra = self.algorithm.extra_loss(name, mb, outputs)
        if extra is not None:
            total = total + extra[0]
            stats.update(extra[1])
        return total, stats

    @staticmethod
    def _accumulate(sums: dict, stats: dict) -> None:
        for key, v in stats.items():
            sums[key] = sums.get(key, 0.0) + (v.detach() if isinstance(v, torch.Tensor) else v)

    def _learner_step(self, k: int, mb: dict, ent_coef: float) -> dict[str, torch.Tensor]:
        """One gradient step of learner ``k`` on one minibatch: PPO loss (+ the plug-in's extra
        loss), actor and critic gradients clipped at ``ppo.max_grad_norm`` apart, Adam.

        With :meth:`compile`, the loss (forward; its backward through AOT autograd) and the clip
        and Adam step run as two compiled graphs; ``backward()`` and the plug-in's extra loss
        run between them, eagerly."""
        cfg, p = self.cfg.ppo, self.policies[k]
        name = self.names[k]
        opts = self.optimizers[name]
        compiled = self._compiled_steps.get(k)
        if compiled is None:
            total, step_stats, outputs = minibatch_loss(p, mb, ent_coef, cfg)
        else:
            coef = torch.tensor(ent_coef, dtype=torch.float32, device=self.device)
            total, step_stats, outputs = compiled[0](mb, coef)
        extra = self.algorithm.extra_loss(name, mb, {**outputs, "policy": p})
        if extra is not None:
            total = total + extra[0]
            step_stats.update(extra[1])
        for opt in opts.values():
            opt.zero_grad(set_to_none=True)
        total.backward()
        groups = (list(p.actor.parameters()), list(p.critic.parameters()))
        if compiled is None:
            norms = clip_and_step(groups, opts.values(), cfg.max_grad_norm)
        else:
            norms = compiled[1]()
        step_stats["actor_grad_norm"], step_stats["critic_grad_norm"] = (n.detach() for n in norms)
        return step_stats

    # -- compiled graphs (run.compile: full) ----------------------------------------------------------
    def compile(self, backend: str = "inductor", mode: str | None = None) -> list[str]:
        """Compile the update's hot paths with ``torch.compile(fullgraph=True, dynamic=False)``
        (``run.compile: full``, issue 34): each learner's critic value (collection) and its
        minibatch step, as :func:`minibatch_loss` and :func:`clip_and_step` (two graphs: dynamo
        does not trace ``backward()``, which runs the loss graph's compiled backward between them).

        Shapes are static for a learner that drives every row (self-play): minibatches of
        ``ceil(S / num_minibatches)`` sequences (and a smaller last one if S does not divide).
        A learner whose row count changes per iteration (population seatings) recompiles per shape
        until dynamo's cache limit, then runs eagerly. ``ppo.obs_columns`` is off when compiled
        (its width changes every update). Stacked learners stay eager.

        Args:
            backend: ``torch.compile`` backend (``inductor``; ``aot_eager`` in tests).
            mode: ``torch.compile`` mode of the value graphs (``"reduce-overhead"``: CUDA graphs, on
                CUDA only); the minibatch step uses the default mode.

        Returns:
            Notes on what stays eager.
        """
        if self.stacked is not None:
            return ["run.compile=full: stacked learners update eagerly"]
        opts = dict(fullgraph=True, dynamic=False, backend=backend)
        for k, p in enumerate(self.policies):
            cfg, name = self.cfg.ppo, self.names[k]
            groups = (list(p.actor.parameters()), list(p.critic.parameters()))
            optimizers = list(self.optimizers[name].values())

            def loss(mb, coef, p=p, cfg=cfg):
                return minibatch_loss(p, mb, coef, cfg)

            def step(groups=groups, optimizers=optimizers, max_norm=cfg.max_grad_norm):
                return clip_and_step(groups, optimizers, max_norm, raw_step=True)

            self._compiled_steps[k] = (torch.compile(loss, **opts), torch.compile(step, **opts))
            self._compiled_values[k] = torch.compile(p.value, mode=mode, **opts)
        return []

    def _stacked_step(self, parts: dict[int, dict], ent_coef: float) -> dict[str, torch.Tensor]:
        """One gradient step of every stacked learner on its minibatch, in one forward and backward
        (:class:`StackedPolicies`).

        Member k's loss is its own weighted mean, so each member's gradient, clipping and Adam
        step equal training it alone.
        """
        cfg, stacked = self.cfg.ppo, self.stacked
        members, weights = [], []
        for k, mb in parts.items():
            w = mb["weight"] if mb["weight"] is not None else torch.ones_like(mb["advantages"])
            weights.append(w / w.sum())  # member k's loss is its own weighted mean
            members.append(torch.full((mb["actions"].shape[1],), k, dtype=torch.int64, device=self.device))
        parts = list(parts.values())
        shared = parts[0]["critic_obs"] is parts[0]["obs"]
        columns = parts[0].get("obs_columns")  # one rollout's: every member's obs hold its entries
        skip = {"weight", "critic_obs", "obs_columns"} if shared else {"weight", "obs_columns"}
        mb = {key: torch.cat([m[key] for m in parts], dim=0 if key.startswith("h_") else 1)
              for key in parts[0] if key not in skip}  # fmt: skip
        if shared:
            mb["critic_obs"] = mb["obs"]
        member = torch.cat(members)
        # each member's weights sum to 1: ppo_loss's weighted mean is the mean of the K
        # members' losses, and scaling it by K sums them (each gets its own gradient)
        weight = torch.cat(weights, 1)
        mb["weight"], mb["member"] = weight, member
        logp, entropy, values = stacked.evaluate(
            mb["obs"], mb["critic_obs"], mb["avail"], mb["actions"],
            mb["h_actor"], mb["h_critic"], mb["starts"], member, columns=columns,
        )  # fmt: skip
        if columns is not None:
            mb["obs_columns"] = columns
        total, step_stats = self._loss("stacked", mb, logp, entropy, values, ent_coef, stacked, weight)
        total = total * len(parts)  # sum of the members' losses
        for opt in self.stacked_optimizers.values():
            opt.zero_grad(set_to_none=True)
        total.backward()
        step_stats["actor_grad_norm"] = stacked.clip_grad_norm_per_member(cfg.max_grad_norm, "actor.").max()
        step_stats["critic_grad_norm"] = stacked.clip_grad_norm_per_member(cfg.max_grad_norm, "critic.").max()
        for opt in self.stacked_optimizers.values():
            opt.step()
        return step_stats

    # -- plug-in steps -------------------------------------------------------------------------------
    def actor_step(self, loss: torch.Tensor) -> torch.Tensor:
        """One step of every learner's PPO actor optimizer on a plug-in's ``loss`` (TrajeDi's JSD
        step; ZSC-Eval ``R_MAPPO.update_actor``). The step shares Adam's moments with PPO's updates,
        so its size scales with the loss against PPO's gradients.

        Gradients are zeroed before and after; each learner's actor gradient is clipped at
        ``ppo.max_grad_norm``. With stacked learners the learners' gradients are copied into the
        stacked parameters, stepped by the stacked actor Adam, and the weights copied back.

        Args:
            loss: scalar computed with the learners' own actor parameters (``Policy.actor``).

        Returns:
            ``float32 [K]`` each learner's actor gradient norm before clipping.
        """
        cfg = self.cfg.ppo
        if self.stacked is None:
            opts = [self.optimizers[name]["actor"] for name in self.learners]
        else:
            self._sync_stacked_from_policies()
            opts = [self.stacked_optimizers["actor"]]
        for opt in opts:
            opt.zero_grad(set_to_none=True)
        for p in self.policies:
            p.actor.zero_grad(set_to_none=True)
        loss.backward()
        if self.stacked is None:
            norms = torch.stack(
                [
                    torch.nn.utils.clip_grad_norm_(p.actor.parameters(), cfg.max_grad_norm)
                    for p in self.policies
                ]
            )
        else:
            named = [dict(p.named_parameters()) for p in self.policies]
            with torch.no_grad():
                for key, t in self.stacked.stacked("actor.").items():
                    if key not in named[0] or all(n[key].grad is None for n in named):
                        continue  # a buffer, or a parameter the loss does not use
                    t.grad = torch.stack(
                        [n[key].grad if n[key].grad is not None else torch.zeros_like(n[key]) for n in named]
                    ).to(t.dtype)
            norms = self.stacked.clip_grad_norm_per_member(cfg.max_grad_norm, "actor.")
        for opt in opts:
            opt.step()
            opt.zero_grad(set_to_none=True)
        for p in self.policies:
            p.actor.zero_grad(set_to_none=True)
        if self.stacked is not None:
            self._sync_policies_from_stacked()
        return norms.detach()

    @torch.no_grad()
    def _sync_stacked_from_policies(self) -> None:
        states = [p.state_dict() for p in self.policies]
        for key, t in self.stacked.stacked().items():
            t.copy_(torch.stack([sd[key] for sd in states]))

    @torch.no_grad()
    def _sync_policies_from_stacked(self) -> None:
        states = [p.state_dict() for p in self.policies]
        for key, t in self.stacked.stacked().items():
            for i, sd in enumerate(states):
                sd[key].copy_(t[i])

    # -- resumable state ------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Optimizer states and the critics' recurrent states (for checkpoints)."""
        if self.stacked is not None:
            return {
                "stacked_optimizers": {k: o.state_dict() for k, o in self.stacked_optimizers.items()},
                "h_critic": list(self.h_critic),
            }
        return {
            "optimizers": {
                n: {k: o.state_dict() for k, o in opts.items()} for n, opts in self.optimizers.items()
            },
            "h_critic": list(self.h_critic),
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` (after the learners' weights are loaded)."""
        self.h_critic = [h.to(self.device) for h in state["h_critic"]]
        if self.stacked is not None:
            self._sync_stacked_from_policies()
            for k, opt in self.stacked_optimizers.items():
                opt.load_state_dict(state["stacked_optimizers"][k])
            return
        for name, opts in self.optimizers.items():
            for key, opt in opts.items():
                opt.load_state_dict(state["optimizers"][name][key])
