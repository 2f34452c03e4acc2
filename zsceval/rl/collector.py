"""Rollout collection: step the batched env with a set of policies and fill a RolloutBuffer.

Glossary (shared with :mod:`zsceval.rl.trainer` and :mod:`zsceval.rl.update`):

* **env step**: one joint action in one game. A batched call ``env.step`` on B games is B env
  steps; budgets, schedules and throughput are all counted in env steps.
* **rollout**: T consecutive batched calls (T * B env steps), collected without updating any
  policy. Seat assignments are fixed for a rollout.
* **iteration**: one rollout followed by one PPO update of every learner.
* **epoch**: one pass of the PPO update over all samples of the rollout.
* **minibatch**: a slice of an epoch's samples giving one gradient step.
* **sample**: one (env step, seat) pair driven by a learner.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from zsceval.rl.policy import Policy
from zsceval.rl.storage import RolloutBuffer

__all__ = ["Collector", "EpisodeStats"]


@dataclass
class EpisodeStats:
    """Per-episode totals of the episodes that ended during a rollout (all on ``device``).

    Attributes:
        sparse: ``float32 [M]`` team sparse return of each finished episode.
        shaped: ``float32 [M, n]`` base shaped return per seat.
        events: ``float32 [M, n, E]`` event counts per seat.
    """

    sparse: list[torch.Tensor] = field(default_factory=list)
    shaped: list[torch.Tensor] = field(default_factory=list)
    events: list[torch.Tensor] = field(default_factory=list)

    def cat(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
        """Concatenated ``(sparse [M], shaped [M, n], events [M, n, E])``, or None if M = 0."""
        if not self.sparse:
            return None
        return torch.cat(self.sparse), torch.cat(self.shaped), torch.cat(self.events)


class Collector:
    """Steps a batched env (``zsceval.envs.base`` protocol) with several policies at once.

    Each seat of each game is driven by one policy (``assignment``); each policy runs one batched
    forward per env step over the rows it drives. Learners (the first ``num_learners``
    policies) also get critic values, which are stored for GAE.

    Args:
        env: batched environment.
        policies: learners first, then frozen partners.
        num_learners: how many of ``policies`` are trained.
        reward_fn: ``(step, shaping_factor) -> float32 [B, n]`` training reward.
        generator: torch generator on the env device used for action sampling.
        own_critic_obs: the critic sees each agent's own observation instead of the joint
            critic observation (``model.critic_obs: own``).
    """

    def __init__(
        self,
        env,
        policies: list[Policy],
        num_learners: int,
        reward_fn,
        generator,
        own_critic_obs: bool = False,
    ) -> None:
        self.env = env
        self.policies = policies
        self.num_learners = num_learners
        self.reward_fn = reward_fn
        self.generator = generator
        self.own_critic_obs = own_critic_obs
        self.device = torch.device(env.device)
        self.B, self.n = env.num_envs, env.num_agents
        self.rows: list[torch.Tensor | None] = [None] * len(policies)
        self.assignment = torch.zeros(self.B, self.n, dtype=torch.int64, device=self.device)
        self.reset()

    def reset(self) -> None:
        """Reset every game and every recurrent state (used at start and at resume points)."""
        self.step_out = self.env.reset()
        self.starts = torch.ones(self.B * self.n, dtype=torch.bool, device=self.device)
        self.h_actor = [p.initial_state(self.B * self.n, self.device) for p in self.policies]
        self.h_critic = [p.initial_state(self.B * self.n, self.device) for p in self.policies]
        E = len(self.env.event_names)
        self.ep_sparse = torch.zeros(self.B, device=self.device)
        self.ep_shaped = torch.zeros(self.B, self.n, device=self.device)
        self.ep_events = torch.zeros(self.B, self.n, E, device=self.device)

    def set_assignment(self, assignment: torch.Tensor) -> None:
        """Fix which policy drives each seat (``int64 [B, n]``) for the next rollout.

        Rows whose policy changed start from a zero recurrent state.
        """
        assignment = assignment.to(self.device)
        flat = assignment.reshape(-1)
        changed = flat != self.assignment.reshape(-1)
        if bool(changed.any()):
            for h in (*self.h_actor, *self.h_critic):
                h[changed] = 0.0
        self.assignment = assignment
        for k in range(len(self.policies)):
            mask = flat == k
            self.rows[k] = None if bool(mask.all()) else mask.nonzero().squeeze(-1)

    @property
    def at_episode_boundary(self) -> bool:
        """True when every game has just been reset (all start a new episode)."""
        return bool(self.starts.all())

    def _select(self, x: torch.Tensor, k: int) -> torch.Tensor:
        rows = self.rows[k]
        return x if rows is None else x.index_select(0, rows)

    def collect(self, buf: RolloutBuffer, env_steps: int, shaping_factor_fn) -> EpisodeStats:
        """Fill ``buf`` with one rollout.

        Args:
            buf: storage with T = ``buf.T``.
            env_steps: env steps done before this rollout (for the shaping schedule).
            shaping_factor_fn: ``env_steps -> rsf``.

        Returns:
            Totals of the episodes that ended in this rollout.
        """
        B, n, N = self.B, self.n, self.B * self.n
        stats = EpisodeStats()
        buf.assignment.copy_(self.assignment)
        for t in range(buf.T):
            s = self.step_out
            obs = s.obs.reshape(N, *s.obs.shape[2:])
            critic_obs = self._critic_obs(s).reshape(N, *buf.critic_obs.shape[3:])
            avail = s.avail_actions.reshape(N, -1)
            buf.obs[t].copy_(s.obs)
            if not self.own_critic_obs:
                buf.critic_obs[t].view(N, *critic_obs.shape[1:]).copy_(critic_obs)
            buf.avail[t].copy_(s.avail_actions)
            buf.starts[t].view(N).copy_(self.starts)
            actions = torch.empty(N, dtype=torch.int64, device=self.device)
            for k, policy in enumerate(self.policies):
                rows = self.rows[k]
                if rows is not None and rows.numel() == 0:
                    continue
                starts_k = self._select(self.starts, k)
                h_a = self._select(self.h_actor[k], k)
                a, logp, h_a2 = policy.act(
                    self._select(obs, k), self._select(avail, k), h_a, starts_k, self.generator
                )
                if k < self.num_learners:
                    h_c = self._select(self.h_critic[k], k)
                    v, h_c2 = policy.value(self._select(critic_obs, k), h_c, starts_k)
                    self._store(buf.h_actor[t].view(N, buf.h_actor.shape[-1]), rows, h_a)
                    self._store(buf.h_critic[t].view(N, buf.h_critic.shape[-1]), rows, h_c)
                    self._store(buf.log_probs[t].view(N), rows, logp)
                    self._store(buf.values[t].view(N), rows, v)
                    self._store(self.h_critic[k], rows, h_c2)
                self._store(actions, rows, a)
                self._store(self.h_actor[k], rows, h_a2)
            buf.actions[t].view(N).copy_(actions)
            rsf = shaping_factor_fn(env_steps + t * B)
            s = self.env.step(actions.view(B, n))
            buf.rewards[t].copy_(self.reward_fn(s, rsf))
            buf.terminated[t].copy_(s.terminated)
            buf.truncated[t].copy_(s.truncated)
            done = s.done
            self.ep_sparse += s.reward
            self.ep_shaped += s.shaped_by_agent
            self.ep_events += s.events
            if bool(done.any()):
                if s.final_obs is not None and bool(s.truncated.any()):
                    final = s.final_obs if self.own_critic_obs else s.final_critic_obs
                    self._truncated_values(buf, t, final.reshape(N, *critic_obs.shape[1:]))
                stats.sparse.append(self.ep_sparse[done])
                stats.shaped.append(self.ep_shaped[done])
                stats.events.append(self.ep_events[done])
                keep = (~done).to(torch.float32)
                self.ep_sparse *= keep
                self.ep_shaped *= keep.unsqueeze(-1)
                self.ep_events *= keep.view(B, 1, 1)
            self.starts = done.repeat_interleave(n)
            self.step_out = s
        self._bootstrap(buf)
        return stats

    def _critic_obs(self, s) -> torch.Tensor:
        """``uint8 [B, n, H, W, C']``: what the critics see in step ``s``."""
        return s.obs if self.own_critic_obs else s.critic_obs

    @staticmethod
    def _store(dst: torch.Tensor, rows: torch.Tensor | None, src: torch.Tensor) -> None:
        if rows is None:
            dst.copy_(src)
        else:
            dst.index_copy_(0, rows, src)

    def _truncated_values(self, buf: RolloutBuffer, t: int, final_critic_obs: torch.Tensor) -> None:
        """V of the cut-off states, with the critic state carried into them (no episode start)."""
        N = self.B * self.n
        no_start = torch.zeros(N, dtype=torch.bool, device=self.device)
        for k in range(self.num_learners):
            rows = self.rows[k]
            if rows is not None and rows.numel() == 0:
                continue
            v, _ = self.policies[k].value(
                self._select(final_critic_obs, k),
                self._select(self.h_critic[k], k),
                self._select(no_start, k),
            )
            self._store(buf.truncated_values[t].view(N), rows, v)

    def _bootstrap(self, buf: RolloutBuffer) -> None:
        """V(s_T) for the state after the rollout (the recurrent state is not advanced)."""
        s, N = self.step_out, self.B * self.n
        critic_obs = self._critic_obs(s).reshape(N, *buf.critic_obs.shape[3:])
        for k in range(self.num_learners):
            rows = self.rows[k]
            if rows is not None and rows.numel() == 0:
                continue
            v, _ = self.policies[k].value(
                self._select(critic_obs, k), self._select(self.h_critic[k], k), self._select(self.starts, k)
            )
            self._store(buf.values[buf.T].view(N), rows, v)
