"""The ``pqn`` learning core: value-based learners trained with PQN-VDN (JaxMARL), as TBS does.

TBS trains its partner pool with VDN and its best responses with DQN; its hyper-parameters are
JaxMARL's PQN-VDN field for field (docs/reference-protocol.md "PQN-VDN"): no replay buffer, no target network,
Q(lambda) targets from the Q-values recorded while acting, epsilon-greedy exploration annealed
linearly, RAdam with a linearly decaying learning rate, LayerNorm networks.

**VDN over the learner seats of a game.** The learners are :class:`~zsceval.rl.qpolicy.QPolicy`
networks. In every game, the seats driven by learners form one VDN group:
``Q_tot(s, a) = sum_{learner seats i} Q_{actor(i)}(o_i, a_i)``; seats of frozen partners are part
of the environment. So one learner in both seats is shared-parameter PQN-VDN (JaxMARL's setting),
two learners in the two seats are a VDN pair with one network per seat (TBS's pool pairs, whose
agents are cross-played seat by seat, TBS Eq. 5), and one learner with a frozen partner is a DQN
best response (TBS Eq. 7). The group's reward is the plug-in's
:meth:`~zsceval.rl.algorithm.Algorithm.team_reward` (default: team sparse reward + shaping factor x
the shaped rewards of all seats, JaxMARL's).

**Targets** (computed backward over the T-step rollout, per game), with
``M_t = sum_i max_a Q_i(o_{t,i}, a)`` over the available actions, recorded while acting:

* ``G_t = r_t + gamma * [lambda * G_{t+1} + (1 - lambda) * M_{t+1}]`` inside an episode;
* ``G_{T-1} = r_{T-1} + gamma * M_T`` at the rollout's end;
* ``G_t = r_t`` when the episode terminates at t; at a time limit (Overcooked's only end),
  ``G_t = r_t + gamma * M(final observation)`` (JaxMARL treats the time limit as terminal:
  docs/differences.md).

**Loss**: ``0.5 * mean((Q_tot(s_t, a_t) - G_t)^2)`` over minibatches of (step, game) samples, epochs
x minibatches per rollout, each learner's gradient clipped to ``max_grad_norm`` and stepped by its
own RAdam.

**Static shapes**: the targets (:func:`lambda_returns`), the minibatch loss
(:meth:`PQNCore.minibatch_loss`: seats of other actors masked, not selected), the per-learner
clipping and the optimizer step each trace to one ``torch.compile`` graph; the host reads the
minibatch indices and which learners sit in each once per update, and the logged statistics once
at its end.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.func import functional_call, vmap

from zsceval.rl.config import ConfigError, TrainConfig
from zsceval.rl.cores import LearningCore
from zsceval.rl.networks import ObsColumns, compress_observation, observation_columns
from zsceval.rl.population.functional import Layout, StepForward, static_slots
from zsceval.rl.qpolicy import QPolicy, epsilon_greedy
from zsceval.rl.rollout import Rollout
from zsceval.rl.runner import EpisodeRunner, EpisodeTable, StepHooks
from zsceval.rl.schedules import shaping_factor

__all__ = ["PQNCore", "epsilon_at", "lambda_returns", "pqn_preset"]


def pqn_preset(preset: str, cfg: TrainConfig, *, shaping_horizon: float | None = None) -> dict[str, Any]:
    """Config sections of the value-based algorithms (``vdn``, TBS's pools and best responses) for a
    preset (what their :meth:`~zsceval.rl.algorithm.Algorithm.preset_config` returns).

    ``paper``: TBS Table 4 / JaxMARL ``pqn_vdn_cnn_overcooked.yaml`` (64 games, 16 steps, 4 x 16
    minibatches, lr 7.5e-5, CNN 32-32-32 + 2 x Dense 512, LayerNorm, 5e6 steps, shaping horizon 4e6).
    ``quick``: MLP 2 x 128 with LayerNorm, 128 games x 16 steps, 2 x 4 minibatches, lr 1e-3,
    shaping annealed over the whole run (2 CPU cores).

    Both run in float32 (``model.bf16`` false, whatever the preset file says): a greedy agent acts
    on the arg-max of its Q-values, whose gaps between actions are small next to the values
    themselves. Measured on a quick coordination_ring pool: Q-values near 30, a median gap of 0.2
    between the two best actions, and bfloat16 (8-bit mantissa: steps of 0.125 between 16 and
    32) tied the two best actions in 16% of the states and changed the greedy action in 8%.
    """
    if preset == "paper":
        return {
            "run": {"total_steps": 5_000_000},
            "env": {"num_envs": 64},
            "model": {
                "kind": "cnn", "cnn_channels": [32, 32, 32], "hidden_size": 512, "mlp_layers": 1,
                "layer_norm": True, "recurrent": False, "critic_obs": "own", "bf16": False,
            },
            "pqn": {"rollout_length": 16, "epochs": 4, "num_minibatches": 16, "lr": 7.5e-5},
            "shaping": {"horizon": shaping_horizon or 4_000_000},
        }  # fmt: skip
    return {
        "env": {"num_envs": 128},
        "model": {
            "kind": "mlp",
            "hidden_size": 128,
            "mlp_layers": 2,
            "layer_norm": True,
            "recurrent": False,
            "bf16": False,
        },
        "pqn": {"rollout_length": 16, "epochs": 2, "num_minibatches": 4, "lr": 1e-3},
        "shaping": {"horizon": shaping_horizon or cfg.run.total_steps},
    }


def lambda_returns(
    rewards: torch.Tensor,
    next_max_q: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    final_max_q: torch.Tensor,
    gamma: float,
    lam: float,
) -> torch.Tensor:
    """Q(lambda) targets of PQN (JaxMARL ``pqn_vdn``), backward over T steps.

    Args:
        rewards: ``float32 [T, B]`` group reward of each step.
        next_max_q: ``float32 [T, B]``: ``M_{t+1}``, the summed greedy values of the next observation
            (of the same episode when the step did not end it).
        terminated: ``bool [T, B]`` the episode terminated at this step (no bootstrap).
        truncated: ``bool [T, B]`` the episode hit its time limit at this step.
        final_max_q: ``float32 [T, B]`` summed greedy values of the final (pre-reset) observation,
            read where ``truncated``.
        gamma: discount; lam: lambda.

    Returns:
        ``float32 [T, B]`` targets ``G_t``.
    """
    T = rewards.shape[0]
    out = torch.empty_like(rewards)
    nonterm = (~terminated).float()
    g = next_max_q[T - 1]
    for t in range(T - 1, -1, -1):
        if t == T - 1:
            boot = next_max_q[t]
        else:
            boot = lam * g + (1.0 - lam) * next_max_q[t]
        boot = torch.where(truncated[t], final_max_q[t], boot)
        g = rewards[t] + gamma * nonterm[t] * boot
        out[t] = g
    return out


def epsilon_at(update: int, num_updates: int, start: float, finish: float, decay: float) -> float:
    """Exploration of update ``update``: linear from ``start`` to ``finish`` over the first
    ``decay * num_updates`` updates, then ``finish`` (JaxMARL PQN's ``EPS_DECAY``)."""
    span = decay * num_updates
    if span <= 0:
        return finish
    frac = min(update / span, 1.0)
    return start + (finish - start) * frac


class PQNCore(LearningCore):
    """PQN-VDN learner group (see the module docstring).

    Args:
        learners: :class:`~zsceval.rl.qpolicy.QPolicy` networks by name (actor indices 0..L-1).
        cfg: the run config (``pqn``, ``shaping``, ``run.total_steps``).
        env: the training env.
        device: the learners' device.
        algorithm: the plug-in (``team_reward``).

    Raises:
        ConfigError: a learner that is not a Q-network.
    """

    name = "pqn"
    rollout_fields = frozenset({"obs", "actions", "actor", "team_rewards", "terminated", "truncated"})
    """The :class:`~zsceval.rl.rollout.Rollout` fields this core fills."""
    policy_class = QPolicy
    """The learners' class: the trainer's ``make_policy`` builds this."""

    def __init__(self, learners: dict[str, QPolicy], cfg: TrainConfig, env, device, algorithm) -> None:
        for name, p in learners.items():
            if not isinstance(p, QPolicy):
                raise ConfigError(
                    f"learner '{name}' is a {type(p).__qualname__}; the pqn core trains QPolicy"
                )
        self.learners, self.cfg, self.algorithm = learners, cfg, algorithm
        self.policies = list(learners.values())
        self.device = torch.device(device)
        q = cfg.pqn
        self.rollout_length = q.rollout_length
        T, B, n = q.rollout_length, env.num_envs, env.num_agents
        self.T, self.B, self.n, self.N = T, B, n, B * n
        space = getattr(env, "single_observation_space", None)
        obs_dtype = getattr(torch, str(space.dtype)) if space is not None else torch.uint8
        d = self.device
        self.obs = torch.zeros(T, B, n, *env.obs_shape, dtype=obs_dtype, device=d)
        self.actions = torch.zeros(T, B, n, dtype=torch.int64, device=d)
        self.actor = torch.zeros(T, B, n, dtype=torch.int64, device=d)
        self.rewards = torch.zeros(T, B, device=d)
        self.terminated = torch.zeros(T, B, dtype=torch.bool, device=d)
        self.truncated = torch.zeros(T, B, dtype=torch.bool, device=d)
        self.next_max_q = torch.zeros(T, B, device=d)
        self.final_max_q = torch.zeros(T, B, device=d)
        self.rollout = Rollout(
            T, B, n, obs=self.obs, actions=self.actions, actor=self.actor, team_rewards=self.rewards,
            terminated=self.terminated, truncated=self.truncated,
        )  # fmt: skip
        """The plug-in hooks' view of the last rollout (:mod:`zsceval.rl.rollout`): per-game
        ``team_rewards [T, B]`` (a bonus may change them in place), no per-seat rewards."""
        self.num_updates = max(1, -(-cfg.run.total_steps // (T * B)))
        self.total_grad_steps = self.num_updates * q.epochs * q.num_minibatches
        self.grad_steps = 0
        self.updates = 0
        opt_cls = {"radam": torch.optim.RAdam, "adam": torch.optim.Adam}[q.optimizer]
        # One optimizer over every learner's parameters: RAdam / Adam are elementwise with a step
        # count per parameter, so this equals one optimizer per learner (a learner without samples
        # in a minibatch has no gradient and is skipped); gradient clipping stays per learner.
        self.optimizer = opt_cls(
            [w for p in self.policies for w in p.actor.parameters()], lr=q.lr, foreach=True
        )
        self._forward = StepForward(QPolicy(self.policies[0].spec).to("meta"))
        """Weightless template of the vmapped forward over several learners (:meth:`q_rows`)."""
        self._keys = [k for k, _ in self.policies[0].named_parameters() if k.startswith("actor.")]
        self._params = [dict(p.named_parameters()) for p in self.policies]
        self.num_actions = int(self.policies[0].spec["num_actions"])

    # -- collection -----------------------------------------------------------------------------------
    @property
    def epsilon(self) -> float:
        """Exploration of the next rollout."""
        q = self.cfg.pqn
        return epsilon_at(self.updates, self.num_updates, q.epsilon_start, q.epsilon_finish, q.epsilon_decay)

    def q_rows(
        self, obs: torch.Tensor, actor: torch.Tensor, capacity: int | None = None,
        columns: ObsColumns | None = None,
    ) -> torch.Tensor:  # fmt: skip
        """``Q(o, .) float32 [R, A]`` of rows ``obs [R, ...]`` each with its learner ``actor int64
        [R]``, with gradients. Rows with ``actor >= L`` (driven by someone else) get values of no
        meaning: callers mask them. With ``columns``, ``obs`` is ``float32 [R, S]``, the rows'
        varying entries (:meth:`obs_columns`).

        One learner: its network on every row. Several: one vmapped forward over the learners'
        stacked weights with ``capacity`` rows per learner
        (:func:`~zsceval.rl.population.functional.static_slots`: static shapes, no host
        synchronization; by default R inside ``torch.compile``). Eagerly without a capacity, the
        group sizes are read once (:class:`~zsceval.rl.population.functional.Layout`) to use the
        largest learner group as the capacity, or a loop over learners where padding or the device
        makes that faster.
        """
        L = len(self.policies)
        if L == 1:
            return self.policies[0].q_values(obs, columns=columns)
        R = obs.shape[0]
        actor = actor.clamp(max=L)  # L: not a learner's row
        if capacity is None and not torch.compiler.is_compiling():
            full = Layout.of(actor, L + 1)  # the one host read of the group sizes
            counts = full.counts[:L]
            present = [m for m in range(L) if counts[m]]
            layout = Layout(counts, full.order, present, max(counts, default=0))
            if layout.strategy(self.policies[0].spec["model"]["kind"], obs.device) == "loop":
                out = None
                for m, rows in layout.rows_of():
                    q = self.policies[m].q_values(obs.index_select(0, rows), columns=columns)
                    out = q.new_zeros(R, q.shape[-1]) if out is None else out
                    out = out.index_copy(0, rows, q)
                return out if out is not None else obs.new_zeros((R, self.num_actions), dtype=torch.float32)
            capacity = max(layout.largest, 1)
        C = R if capacity is None else int(capacity)
        params = {k: torch.stack([prm[k] for prm in self._params]) for k in self._keys}
        idx, pos = static_slots(actor, L, C)
        x = obs.index_select(0, idx).view(L, C, *obs.shape[1:])
        h = obs.new_zeros((L, C, 0), dtype=torch.float32)
        starts = torch.zeros(L, C, dtype=torch.bool, device=obs.device)

        def one(prm, xi, hi, si):
            return functional_call(self._forward, prm, ("actor", xi, hi, si), {"columns": columns})[0]

        with self.policies[0]._autocast():
            q = vmap(one)(params, x, h, starts)
        # rows of no learner point past the L * C slots: clamped, then masked by the callers
        return q.float().reshape(L * C, -1).index_select(0, pos.clamp(max=L * C - 1))

    @torch.no_grad()
    def _learner_q(self, seat_actor: torch.Tensor, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(learner bool [N], q float32 [N, A])``: the rows learners drive (``seat_actor int64
        [B, n]``) and the Q-values of every row of ``obs`` (meaningless where ``learner`` is False)."""
        actor = seat_actor.reshape(-1)
        columns = self.obs_columns(obs) if obs.device.type == "cpu" else None  # a host read: CPU only
        x = self.varying(obs, columns)
        q = self.q_rows(x.reshape(self.N, *x.shape[2:]), actor, columns=columns)
        return actor < len(self.policies), q

    def _sum_max(self, learner: torch.Tensor, q: torch.Tensor, avail: torch.Tensor) -> torch.Tensor:
        """``float32 [B]``: per game, the sum over its learner rows (``learner bool [N]``) of
        ``max_a Q`` (available a)."""
        best = q.masked_fill(~avail.reshape(self.N, -1), float("-inf")).amax(-1)
        return torch.where(learner, best, 0.0).view(self.B, self.n).sum(-1)

    @torch.no_grad()
    def collect(self, runner: EpisodeRunner, env_steps: int) -> EpisodeTable:
        """One rollout of T steps with epsilon-greedy learners; returns the finished episodes.

        The runner steps (:meth:`EpisodeRunner.rollout <zsceval.rl.runner.EpisodeRunner.rollout>`);
        each step runs one forward over all learner rows (acting, and ``M`` of the previous step)
        and the partners' own forwards (the runner's, with the learners skipped). When every arm
        seats learners only, the learners' part of a step has static shapes and reads nothing
        back to the host; with partners in some seats, the exploration draws are taken for the
        learner rows only (as before), which reads their rows once per seating (per episode with
        an env in lockstep, see :attr:`EpisodeRunner.static_seating`).
        """
        L = len(self.policies)
        hooks = _PQNStep(self, runner.seats_only(L), env_steps)  # one host read per rollout
        return runner.table(runner.rollout(self.T, hooks))

    # -- update ---------------------------------------------------------------------------------------
    def targets(self) -> torch.Tensor:
        """``float32 [T, B]`` Q(lambda) targets of the last rollout (:func:`lambda_returns`)."""
        q = self.cfg.pqn
        return lambda_returns(
            self.rewards, self.next_max_q, self.terminated, self.truncated, self.final_max_q,
            q.gamma, q.td_lambda,
        )  # fmt: skip

    def q_taken(
        self, obs: torch.Tensor, actions: torch.Tensor, actor: torch.Tensor, capacity: int | None = None,
        columns: ObsColumns | None = None,
    ) -> torch.Tensor:  # fmt: skip
        """``Q_tot float32 [S]``: per sample, the sum over learner seats of ``Q(o_i, a_i)`` (with
        gradients). ``obs [S, n, ...]`` (``float32 [S, n, S_cols]`` with ``columns``), ``actions
        int64 [S, n]``, ``actor int64 [S, n]``; ``capacity``, ``columns``: as :meth:`q_rows`. Static
        shapes: seats of other actors are masked out."""
        S = obs.shape[0]
        flat_actor = actor.reshape(-1)
        q = self.q_rows(obs.reshape(S * self.n, *obs.shape[2:]), flat_actor, capacity, columns)
        taken = q.gather(-1, actions.reshape(-1, 1)).squeeze(-1)
        return torch.where(flat_actor < len(self.policies), taken, 0.0).view(S, self.n).sum(-1)

    def minibatch_loss(
        self, obs: torch.Tensor, actions: torch.Tensor, actor: torch.Tensor, targets: torch.Tensor,
        capacity: int | None = None, columns: ObsColumns | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        """The VDN loss of a minibatch of S samples (each with at least one learner seat).

        A function of tensors with static shapes and no host synchronization: inside
        ``torch.compile`` it traces as one graph (the gradient step around it: :meth:`update`).

        Args:
            obs: ``[S, n, *obs_shape]``; actions ``int64 [S, n]``; actor ``int64 [S, n]``.
            targets: ``float32 [S]`` the samples' ``G_t``.
            capacity: as :meth:`q_rows`.
            columns: with ``obs`` as ``float32 [S, n, S_cols]``, its columns (:meth:`obs_columns`).

        Returns:
            ``(loss float32 [], q_taken float32 [S])``: ``0.5 * mean((Q_tot - G)^2)`` and ``Q_tot``.
        """
        qt = self.q_taken(obs, actions, actor, capacity, columns)
        return 0.5 * (qt - targets).pow(2).mean(), qt

    def obs_columns(self, obs: torch.Tensor) -> ObsColumns | None:
        """The varying and constant entries of a rollout's observations ``obs [S, n, *obs_shape]``
        (:func:`~zsceval.rl.networks.observation_columns`), for an update that feeds the first layer
        only the varying ones; None where ``pqn.obs_columns`` is off, the model is not an MLP with a
        hidden layer, inside ``torch.compile`` (the compiled loss has static shapes), or more than
        half the entries vary (little to gain)."""
        model = self.policies[0].spec["model"]
        if not self.cfg.pqn.obs_columns or model["kind"] != "mlp" or not model["mlp_layers"]:
            return None
        if torch.compiler.is_compiling():
            return None
        rows = obs.reshape(obs.shape[0] * obs.shape[1], -1)
        columns = observation_columns(rows, float(model["obs_scale"]))
        return None if columns.varying.numel() > rows.shape[1] // 2 else columns

    def varying(self, obs: torch.Tensor, columns: ObsColumns | None) -> torch.Tensor:
        """``obs [S, n, *obs_shape]`` reduced to its varying entries, ``float32 [S, n, S_cols]``
        scaled like the encoder's input (:func:`~zsceval.rl.networks.compress_observation`); ``obs``
        itself without ``columns``."""
        if columns is None:
            return obs
        scale = float(self.policies[0].spec["model"]["obs_scale"])
        return compress_observation(obs.reshape(*obs.shape[:2], -1), columns, scale)

    def clip_gradients(self) -> None:
        """Clip each learner's gradient to L2 norm ``pqn.max_grad_norm`` (learners without gradients
        are skipped); no host synchronization."""
        for p in self.policies:
            grads = [w for w in p.actor.parameters() if w.grad is not None]
            if grads:
                torch.nn.utils.clip_grad_norm_(grads, self.cfg.pqn.max_grad_norm)

    def _lr(self) -> float:
        q = self.cfg.pqn
        if not q.lr_linear_decay:
            return q.lr
        return q.lr * max(0.0, 1.0 - self.grad_steps / self.total_grad_steps)

    def _minibatches(self, actor: torch.Tensor, generator: torch.Generator) -> tuple[list, list]:
        """Host work, once per update: the shuffled minibatches of every epoch over the samples with
        a learner seat, and which learners have seats in each.

        Returns:
            ``(minibatches, present)``: ``int64 [S_j]`` sample indices per non-empty minibatch, in
            order, and per minibatch the learners with seats in it (``None``: every learner).
        """
        q, L = self.cfg.pqn, len(self.policies)
        has_learner = (actor < L).any(-1)  # [TB]
        count = int(has_learner.sum())  # one host read
        # the samples with a learner seat in ascending order (what nonzero gives), static shapes
        valid = torch.argsort((~has_learner).to(torch.int8), stable=True)[:count]
        batches = []
        for _ in range(q.epochs):
            perm = valid[torch.randperm(count, generator=generator, device=valid.device)]
            batches += [idx for idx in perm.tensor_split(q.num_minibatches) if idx.numel()]
        if L == 1 or not batches:
            return batches, [None] * len(batches)
        learners = torch.arange(L, device=actor.device)
        seats = torch.stack([
            (actor.index_select(0, idx).reshape(-1, 1) == learners).any(0) for idx in batches
        ]).tolist()  # fmt: skip  # one host read
        return batches, [None if all(row) else row for row in seats]

    def update(self, env_steps: int, generator: torch.Generator) -> dict[str, Any]:
        """Epochs x minibatches of the VDN loss on the last rollout.

        The minibatches are drawn on the host once per update (:meth:`_minibatches`); each
        gradient step is :meth:`minibatch_loss`, backward, :meth:`clip_gradients` and the optimizer
        step, none of which reads a value back (the statistics are read once at the end). A
        learner without seats in a minibatch gets no gradient there, so its optimizer skips it.

        Returns:
            ``loss``, ``q_taken`` (mean Q_tot of the samples), ``target`` (mean target),
            ``epsilon`` (of the rollout) and ``lr``.
        """
        targets = self.targets().reshape(-1)
        obs = self.obs.reshape(self.T * self.B, self.n, *self.obs.shape[3:])
        actions = self.actions.reshape(self.T * self.B, self.n)
        actor = self.actor.reshape(self.T * self.B, self.n)
        eps = self.epsilon
        batches, present = self._minibatches(actor, generator)
        columns = self.obs_columns(obs)  # one host read per update
        logged = []
        for idx, seated in zip(batches, present):
            g = targets.index_select(0, idx)
            x = self.varying(obs.index_select(0, idx), columns)
            loss, qt = self.minibatch_loss(
                x, actions.index_select(0, idx), actor.index_select(0, idx), g, columns=columns
            )
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if seated is not None:
                for p, has_seat in zip(self.policies, seated):
                    if not has_seat:
                        for w in p.actor.parameters():
                            w.grad = None
            self.clip_gradients()
            for group in self.optimizer.param_groups:
                group["lr"] = self._lr()
            self.optimizer.step()
            self.grad_steps += 1
            logged.append(torch.stack([loss.detach(), qt.detach().mean(), g.mean()]))
        self.updates += 1
        stats = {"loss": 0.0, "q_taken": 0.0, "target": 0.0}
        for row in torch.stack(logged).tolist() if logged else []:  # one host read
            for key, value in zip(stats, row):
                stats[key] += value
        row = {k: v / max(len(logged), 1) for k, v in stats.items()}
        row.update({"epsilon": eps, "lr": self._lr()})
        return row

    # -- resumable state ----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Optimizer state and the update / gradient-step counters (schedules resume exactly)."""
        return {
            "optimizer": self.optimizer.state_dict(),
            "grad_steps": self.grad_steps,
            "updates": self.updates,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.optimizer.load_state_dict(state["optimizer"])
        self.grad_steps = int(state["grad_steps"])
        self.updates = int(state["updates"])


class _PQNStep(StepHooks):
    """The PQN core's part of each rollout step: store the step, act epsilon-greedily for the
    learners (one forward over their rows), the group reward, and ``M`` of the final and the
    next observations (:meth:`PQNCore.collect`)."""

    acts_for_learners = True

    def __init__(self, core: PQNCore, all_learners: bool, env_steps: int) -> None:
        self.core, self.all_learners, self.env_steps = core, all_learners, env_steps
        self.learners = len(core.policies)
        self.eps = core.epsilon
        self.learner: torch.Tensor | None = None
        """``bool [N]`` the rows learners drive at the current observation (with :attr:`q`)."""
        self.q: torch.Tensor | None = None
        """``float32 [N, A]`` Q-values of the current observation: computed at the rollout's first
        step, then after each step (where they also give ``M_{t+1}``)."""
        self.seated: torch.Tensor | None = None
        self.rows: torch.Tensor | None = None
        """The learner rows, read for the seating :attr:`seated`."""

    def observe(self, t, s, seating, starts):
        core = self.core
        if self.q is None:
            self.learner, self.q = core._learner_q(seating.actor, s.obs)
        core.obs[t].copy_(s.obs)
        core.actor[t].copy_(seating.actor)
        return None

    def act(self, t, s, seating, actions, generator):
        core = self.core
        avail = s.avail_actions.reshape(core.N, -1)
        if self.all_learners:
            actions, _ = epsilon_greedy(self.q, avail, self.eps, generator)
        else:  # the generator's draws for the learner rows only, as the runs before
            if seating.actor is not self.seated:  # re-seated: once per episode, not per step
                self.seated, self.rows = seating.actor, self.learner.nonzero().squeeze(-1)
            drawn, _ = epsilon_greedy(self.q.index_select(0, self.rows), avail.index_select(0, self.rows),
                                      self.eps, generator)  # fmt: skip
            actions.index_copy_(0, self.rows, drawn)
        core.actions[t].view(core.N).copy_(actions)
        return actions

    def stepped(self, t, step, seating):
        core, cfg = self.core, self.core.cfg
        rsf = shaping_factor(self.env_steps + t * core.B, cfg.shaping.initial_factor, cfg.shaping.horizon)
        core.rewards[t].copy_(core.algorithm.team_reward(step, rsf, seating))
        core.terminated[t].copy_(step.terminated)
        core.truncated[t].copy_(step.truncated)
        if step.final_obs is not None:  # some game ended; the seating of the ended episode
            # (read by lambda_returns only where truncated)
            l_final, q_final = core._learner_q(seating.actor, step.final_obs)
            core.final_max_q[t].copy_(core._sum_max(l_final, q_final, step.avail_actions))

    def advanced(self, t, s, seating):
        core = self.core
        self.learner, self.q = core._learner_q(seating.actor, s.obs)
        core.next_max_q[t].copy_(core._sum_max(self.learner, self.q, s.avail_actions))
