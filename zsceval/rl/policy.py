"""A MAPPO policy: actor, centralized critic and value normalizer, described by a JSON-able spec."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from zsceval.rl.agent import ActOutput, register_agent, sample_actions
from zsceval.rl.networks import (
    ObsColumns,
    build_networks,
    cast_shared,
    categorical_entropy,
    input_dtype,
    masked_logits,
)
from zsceval.rl.valuenorm import ValueNorm

__all__ = ["Policy", "network_spec"]


def network_spec(
    model_cfg: Any, obs_shape, critic_obs_shape, num_actions: int, critic_extra: int = 0
) -> dict[str, Any]:
    """JSON-able description from which :meth:`Policy.from_spec` rebuilds the networks.

    Args:
        model_cfg: a :class:`~zsceval.rl.config.ModelConfig` (or a dict with the same keys).
        obs_shape: ``(H, W, C)`` of the actor observation.
        critic_obs_shape: ``(H, W, C')`` of the critic observation.
        num_actions: A.
        critic_extra: extra float features of the critic's input
            (:attr:`~zsceval.rl.algorithm.Algorithm.critic_feature_size`); 0 leaves the spec as before.
    """
    model = dataclasses.asdict(model_cfg) if dataclasses.is_dataclass(model_cfg) else dict(model_cfg)
    model["cnn_channels"] = list(model["cnn_channels"])
    if not isinstance(model.get("bf16", False), bool):  # ``auto`` outside a Trainer: decide for the CPU
        from zsceval.rl.hardware import resolve_bf16

        model["bf16"] = resolve_bf16(model["bf16"], "cpu")[0]
    if critic_extra:
        model["critic_extra"] = int(critic_extra)
    if not model.get("layer_norm", False):
        model.pop("layer_norm", None)  # specs (and pools of checkpoints) from before the option match
    return {
        "obs_shape": list(obs_shape),
        "critic_obs_shape": list(critic_obs_shape),
        "num_actions": int(num_actions),
        "model": model,
    }


@register_agent("ppo")
class Policy(nn.Module):
    """Actor (decentralized, own observation) and critic (centralized, critic observation).

    A policy may drive any number of seats; a frozen policy only acts. All methods take batches
    of N rows (one row = one agent slot in one game) on the policy's device. Implements the
    :class:`~zsceval.rl.agent.Agent` protocol; registered as agent class ``ppo``.

    Args:
        spec: from :func:`network_spec`.
    """

    def __init__(self, spec: dict[str, Any]) -> None:
        super().__init__()
        self.spec = spec
        model = spec["model"]
        self.actor, self.critic = build_networks(spec)
        self.value_norm = ValueNorm()
        self.use_value_norm = True
        self.bf16 = bool(model.get("bf16", False))

    def _autocast(self):
        """bfloat16 autocast context when the spec asks for it (``model.bf16``), else a no-op."""
        device_type = next(self.parameters()).device.type
        return torch.autocast(device_type, dtype=torch.bfloat16, enabled=self.bf16)

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> Policy:
        """Build an untrained policy from a spec (e.g. read from checkpoint metadata)."""
        return cls(spec)

    @property
    def recurrent(self) -> bool:
        """Whether actor and critic carry a GRU state."""
        return self.actor.trunk.gru is not None

    @property
    def hidden_size(self) -> int:
        """GRU state width (0 if feed-forward)."""
        return self.actor.trunk.hidden_size

    def initial_state(self, n: int, device: torch.device | str) -> torch.Tensor:
        """Zero recurrent state ``float32 [n, hidden]`` (``[n, 0]`` when feed-forward)."""
        return torch.zeros(n, self.hidden_size, device=device)

    def _h(self, h: torch.Tensor | None) -> torch.Tensor | None:
        return h if self.recurrent else None

    @torch.no_grad()
    def logits(
        self, obs: torch.Tensor, h: torch.Tensor, starts: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Unmasked action logits of N rows: ``(logits float32 [N, A], h float32 [N, hidden])``.

        Args:
            obs: ``[N, *obs_shape]`` in the env's dtype.
            h: ``float32 [N, hidden]`` actor state before this step.
            starts: ``bool [N]`` rows whose episode starts at this step (state is zeroed).
        """
        with self._autocast():
            feats, h_new = self.actor.trunk.step(obs, self._h(h), starts)
            logits = self.actor.out(feats)
        return logits.float(), (h if h_new is None else h_new.float())

    @torch.no_grad()
    def act(
        self,
        obs: torch.Tensor,
        avail: torch.Tensor | None,
        h: torch.Tensor,
        starts: torch.Tensor,
        generator: torch.Generator | None = None,
        deterministic: bool = False,
        noise: torch.Tensor | None = None,
    ) -> ActOutput:
        """Sample actions for N rows (:func:`~zsceval.rl.agent.sample_actions`).

        Args:
            obs: ``[N, *obs_shape]`` in the env's dtype (uint8 for Overcooked).
            avail: ``bool [N, A]`` available actions (masked logits), or None.
            h: ``float32 [N, hidden]`` actor state before this step.
            starts: ``bool [N]`` the row's episode starts at this step (state is zeroed).
            generator: torch generator for sampling (Gumbel-max); None uses the global one.
            deterministic: take the arg-max action instead of sampling.
            noise: ``float32 [N, A]`` uniform draws used instead of ``generator`` (a compiled
                acting graph: ``torch.compile(policy.act, fullgraph=True)`` traces with it).

        Returns:
            :class:`~zsceval.rl.agent.ActOutput`: ``actions int64 [N]``, ``log_probs float32 [N]``,
            ``state float32 [N, hidden]`` (unpacks as a 3-tuple).
        """
        logits, h_new = self.logits(obs, h, starts)
        actions, logp = sample_actions(logits, avail, generator, deterministic, noise)
        return ActOutput(actions, logp, h_new)

    @property
    def critic_extra(self) -> int:
        """Width of the critic's extra input features (0: none)."""
        return int(self.spec["model"].get("critic_extra", 0))

    @torch.no_grad()
    def value(
        self,
        critic_obs: torch.Tensor,
        h: torch.Tensor,
        starts: torch.Tensor,
        extra: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Normalized value of N rows: ``(value float32 [N], h float32 [N, hidden])``; ``extra
        float32 [N, E]`` for a critic with extra features (:attr:`critic_extra`)."""
        with self._autocast():
            feats, h_new = self.critic.trunk.step(critic_obs, self._h(h), starts, extra)
            v = self.critic.out(feats)
        return v.float().squeeze(-1), (h if h_new is None else h_new.float())

    def denormalize(self, v: torch.Tensor) -> torch.Tensor:
        """Normalized value -> return scale (identity without value normalization)."""
        return self.value_norm.denormalize(v) if self.use_value_norm else v

    def action_log_probs(
        self, obs: torch.Tensor, avail: torch.Tensor | None, actions: torch.Tensor, starts: torch.Tensor,
        h: torch.Tensor | None = None,
    ) -> torch.Tensor:  # fmt: skip
        """``log pi(a_t | o_t)`` of stored actions over L steps of N sequences, with gradients
        through the actor only (population bonuses and diversity losses).

        Args:
            obs: ``[L, N, *obs_shape]`` in the env's dtype; avail ``bool [L, N, A]`` or None;
                actions ``int64 [L, N]``; starts ``bool [L, N]``.
            h: ``float32 [N, hidden]`` actor state at the first step (recurrent actors; None: zeros).

        Returns:
            ``float32 [L, N]``.
        """
        if self.recurrent and h is None:
            h = self.initial_state(obs.shape[1], obs.device)
        with self._autocast():
            logits = self.actor.out(self.actor.trunk.sequence(obs, self._h(h), starts))
        logits = logits.float() if avail is None else masked_logits(logits.float(), avail)
        return F.log_softmax(logits, dim=-1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)

    def evaluate(
        self,
        obs: torch.Tensor,
        critic_obs: torch.Tensor,
        avail: torch.Tensor,
        actions: torch.Tensor,
        h_actor: torch.Tensor,
        h_critic: torch.Tensor,
        starts: torch.Tensor,
        critic_extra: torch.Tensor | None = None,
        columns: ObsColumns | None = None,
        active: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Re-evaluate stored actions over chunks of L steps for N sequences (with gradients).

        Args:
            obs: ``uint8 [L, N, H, W, C]``; critic_obs ``uint8 [L, N, H, W, C']``.
            avail: ``bool [L, N, A]``; actions ``int64 [L, N]``.
            h_actor, h_critic: ``float32 [N, hidden]`` states at the chunk start.
            starts: ``bool [L, N]`` episode starts.
            critic_extra: ``float32 [L, N, E]`` for a critic with extra features.
            columns: with an ``mlp`` model, ``obs`` may be ``float32 [L, N, S]``, its varying
                entries (:func:`~zsceval.rl.networks.compress_observation`); then these are its
                columns, and ``critic_obs`` is compressed alike when it is ``obs`` itself.
            active: ``bool [L, N]``, the samples with more than one available action (``ppo.
                skip_forced``), or None (all). The actor's output is computed for these only (a
                feed-forward actor runs only on these; a recurrent one still steps its GRU through
                every step); the others get log-probability and entropy 0, which is what a
                single available action gives exactly (and a zero policy gradient).

        Returns:
            ``(log_probs [L, N], entropy [L, N], values [L, N])``, float32; values normalized.
        """
        with self._autocast():
            mlp = self.spec["model"]["kind"] == "mlp"
            critic_columns = columns if critic_obs is obs else None
            if columns is None:
                obs, critic_obs = cast_shared(obs, critic_obs, input_dtype(obs), contiguous=mlp)
            if active is None:
                logits = self.actor.out(
                    self.actor.trunk.sequence(obs, self._h(h_actor), starts, columns=columns)
                )
            else:
                rows = active.reshape(-1).nonzero().squeeze(-1)
                logits = self._active_logits(obs, h_actor, starts, columns, rows)
            feats = self.critic.trunk.sequence(
                critic_obs, self._h(h_critic), starts, critic_extra, columns=critic_columns
            )
            values = self.critic.out(feats)
        if active is not None:
            avail, actions = avail.reshape(-1, avail.shape[-1])[rows], actions.reshape(-1)[rows]
        logp_all = F.log_softmax(masked_logits(logits.float(), avail), dim=-1)
        logp = logp_all.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
        entropy = categorical_entropy(logp_all)
        if active is not None:  # forced samples: log-probability and entropy exactly 0
            logp = logp.new_zeros(active.numel()).index_copy(0, rows, logp).view(active.shape)
            entropy = entropy.new_zeros(active.numel()).index_copy(0, rows, entropy).view(active.shape)
        return logp, entropy, values.float().squeeze(-1)

    def _active_logits(
        self, obs: torch.Tensor, h_actor: torch.Tensor, starts: torch.Tensor, columns: ObsColumns | None,
        rows: torch.Tensor,
    ) -> torch.Tensor:  # fmt: skip
        """Logits ``[R, A]`` of the flattened ``[L * N]`` sample indices ``rows`` (:meth:`evaluate`'s
        ``active``): a feed-forward actor runs on those samples only; a recurrent one runs its trunk
        over every step (the GRU state passes through them) and its output layer on those only."""
        L, N = obs.shape[:2]
        if self.recurrent:
            feats = self.actor.trunk.sequence(obs, self._h(h_actor), starts, columns=columns)
            return self.actor.out(feats.reshape(L * N, -1).index_select(0, rows))
        picked = obs.reshape(L * N, *obs.shape[2:]).index_select(0, rows)
        feats = self.actor.trunk.sequence(picked[None], None, starts.reshape(-1)[rows][None], columns=columns)
        return self.actor.out(feats[0])
