"""The PPO update loop of one learner: GAE, value-target normalization, epochs of minibatches.

See :mod:`zsceval.rl.collector` for the glossary (iteration / rollout / epoch / minibatch).
Recurrent policies are trained with chunked truncated BPTT: each seat's T steps are cut into
T / L chunks of L = ``chunk_length`` steps; a minibatch is a random set of chunks, each replayed
from the GRU state recorded at its first step (MAPPO's ``data_chunk_length``). Feed-forward
policies use L = 1, i.e. independent samples.
"""

from __future__ import annotations

import torch

from zsceval.rl.config import PPOConfig
from zsceval.rl.gae import compute_gae
from zsceval.rl.loss import ppo_loss
from zsceval.rl.policy import Policy
from zsceval.rl.storage import RolloutBuffer

__all__ = ["PPOUpdater"]


def _chunks(x: torch.Tensor, L: int) -> torch.Tensor:
    """``[T, R, ...] -> [L, (T // L) * R, ...]``: sequence c*R + r is steps c*L..c*L+L-1 of row r."""
    T, R = x.shape[:2]
    C = T // L
    if L == 1:
        return x.reshape(1, T * R, *x.shape[2:])
    return x.reshape(C, L, R, *x.shape[2:]).transpose(0, 1).reshape(L, C * R, *x.shape[2:])


class PPOUpdater:
    """Adam optimizers and the PPO update of one learner policy (actor and critic separately).

    Args:
        policy: the learner.
        cfg: PPO hyper-parameters.
        chunk_length: BPTT chunk length L for a recurrent policy (must divide T).
    """

    def __init__(self, policy: Policy, cfg: PPOConfig, chunk_length: int) -> None:
        self.policy = policy
        self.cfg = cfg
        self.L = chunk_length if policy.recurrent else 1
        self.actor_opt = torch.optim.Adam(policy.actor.parameters(), lr=cfg.lr, eps=cfg.adam_eps)
        self.critic_opt = torch.optim.Adam(policy.critic.parameters(), lr=cfg.lr, eps=cfg.adam_eps)
        policy.use_value_norm = cfg.value_norm

    def advantages(self, buf: RolloutBuffer, rows: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """GAE advantages and returns ``float32 [T, R]`` for the learner's rows of ``buf``."""
        p, n = self.policy, buf.actions.shape[2]
        with torch.no_grad():
            values = p.denormalize(buf.rows(buf.values, rows))
            trunc_values = p.denormalize(buf.rows(buf.truncated_values, rows))
            term = buf.rows(buf.terminated.unsqueeze(-1).expand(-1, -1, n), rows)
            trunc = buf.rows(buf.truncated.unsqueeze(-1).expand(-1, -1, n), rows)
            rewards = buf.rows(buf.rewards, rows)
            return compute_gae(
                rewards, values, term, trunc, trunc_values, self.cfg.gamma, self.cfg.gae_lambda
            )

    def update(
        self, buf: RolloutBuffer, rows: torch.Tensor | None, entropy_coef: float, generator: torch.Generator
    ) -> dict[str, float]:
        """One PPO update on the learner's rows of a rollout.

        Args:
            buf: the collected rollout.
            rows: indices into the flattened ``B * n`` seats driven by this learner (None: all).
            entropy_coef: current entropy coefficient.
            generator: torch generator (on the buffer's device) for minibatch shuffling.

        Returns:
            Mean loss statistics over all minibatches (python floats) and the mean value target.
        """
        cfg, p, L = self.cfg, self.policy, self.L
        advantages, returns = self.advantages(buf, rows)
        if cfg.value_norm:
            p.value_norm.update(returns)
            targets = p.value_norm.normalize(returns)
        else:
            targets = returns
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-5)
        T = buf.T
        data = {
            "obs": buf.rows(buf.obs, rows),
            "critic_obs": buf.rows(buf.critic_obs, rows),
            "avail": buf.rows(buf.avail, rows),
            "actions": buf.rows(buf.actions, rows),
            "old_log_probs": buf.rows(buf.log_probs, rows),
            "old_values": buf.rows(buf.values[:T], rows),
            "starts": buf.rows(buf.starts, rows),
            "advantages": advantages,
            "targets": targets,
        }
        seq = {k: _chunks(v, L) for k, v in data.items()}
        h_actor, h_critic = (buf.rows(h, rows)[::L].flatten(0, 1) for h in (buf.h_actor, buf.h_critic))
        S = seq["actions"].shape[1]
        mb_size = -(-S // cfg.num_minibatches)
        sums: dict[str, torch.Tensor] = {}
        count = 0
        for _ in range(cfg.epochs):
            order = torch.randperm(S, generator=generator, device=buf.actions.device)
            for start in range(0, S, mb_size):
                idx = order[start : start + mb_size]
                mb = {k: v.index_select(1, idx) for k, v in seq.items()}
                logp, entropy, values = p.evaluate(
                    mb["obs"],
                    mb["critic_obs"],
                    mb["avail"],
                    mb["actions"],
                    h_actor.index_select(0, idx),
                    h_critic.index_select(0, idx),
                    mb["starts"],
                )
                loss = ppo_loss(
                    logp,
                    mb["old_log_probs"],
                    mb["advantages"],
                    entropy,
                    values,
                    mb["old_values"],
                    mb["targets"],
                    clip=cfg.clip,
                    entropy_coef=entropy_coef,
                    value_coef=cfg.value_loss_coef,
                    huber_delta=cfg.huber_delta,
                    clip_value_loss=cfg.clip_value_loss,
                )
                self.actor_opt.zero_grad(set_to_none=True)
                self.critic_opt.zero_grad(set_to_none=True)
                loss.total.backward()
                actor_norm = torch.nn.utils.clip_grad_norm_(p.actor.parameters(), cfg.max_grad_norm)
                critic_norm = torch.nn.utils.clip_grad_norm_(p.critic.parameters(), cfg.max_grad_norm)
                self.actor_opt.step()
                self.critic_opt.step()
                step_stats = {
                    "policy_loss": loss.policy,
                    "value_loss": loss.value,
                    "entropy": loss.entropy,
                    "approx_kl": loss.approx_kl,
                    "clip_fraction": loss.clip_fraction,
                    "actor_grad_norm": actor_norm.detach(),
                    "critic_grad_norm": critic_norm.detach(),
                }
                for k, v in step_stats.items():
                    sums[k] = sums.get(k, 0.0) + v
                count += 1
        out = {k: float(v) / count for k, v in sums.items()}
        out["value_target_mean"] = float(returns.mean())
        return out

    def state_dict(self) -> dict:
        """Optimizer states (for checkpoints)."""
        return {"actor_opt": self.actor_opt.state_dict(), "critic_opt": self.critic_opt.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        """Restore optimizer states."""
        self.actor_opt.load_state_dict(state["actor_opt"])
        self.critic_opt.load_state_dict(state["critic_opt"])
