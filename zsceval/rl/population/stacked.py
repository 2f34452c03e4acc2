"""Trainable stacked learners: M same-spec policies trained as one network (population stage 1).

:class:`StackedPolicies` keeps every parameter of its members stacked on a leading member axis as
one ``nn.Parameter`` (``[M, ...]``). :meth:`StackedPolicies.evaluate` re-evaluates a minibatch in
which each sequence (column) belongs to one member, in one forward and one backward for all
members; the gradient of member ``i``'s slice equals the gradient of Policy ``i`` alone on its
columns. Adam is elementwise, so one Adam over the stacked parameters updates each member as its
own Adam would (with the same hyper-parameters and step count); gradient-norm clipping must be
per member (:meth:`StackedPolicies.clip_grad_norm_per_member`), not over the whole stack.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from torch.func import functional_call, vmap
from torch.nn import functional as F

from zsceval.rl.agent import ActOutput, sample_actions
from zsceval.rl.networks import ObsColumns, cast_shared, categorical_entropy, masked_logits
from zsceval.rl.policy import Policy
from zsceval.rl.population.functional import Layout, SequenceForward, StepForward, static_slots
from zsceval.rl.valuenorm import ValueNorm

__all__ = ["StackedPolicies"]


def _name(key: str) -> str:
    return "stack__" + key.replace(".", "__")


class StackedPolicies(nn.Module):
    """M same-spec learners with stacked trainable parameters.

    Parameters (actor, critic) are ``nn.Parameter``s ``[M, ...]``; the value normalizers' statistics
    are stacked buffers ``float64 [M]`` (update them per member with :meth:`value_norm_update`).

    Args:
        spec: the members' network spec (:func:`zsceval.rl.policy.network_spec`).
        count: number of members (all-zero weights; see :meth:`from_policies`).
    """

    def __init__(self, spec: dict[str, Any], count: int) -> None:
        super().__init__()
        self.spec = copy.deepcopy(spec)
        template = Policy(self.spec)
        self.count = int(count)
        self.bf16 = template.bf16
        self.hidden_size = template.hidden_size
        self.strategy = "auto"
        """``vmap``, ``loop`` or ``auto`` (as :attr:`PolicyPool.strategy`)."""
        self._param_keys = [k for k, _ in template.named_parameters()]
        self._buffer_keys = [k for k, _ in template.named_buffers()]
        for k, p in template.named_parameters():
            self.register_parameter(_name(k), nn.Parameter(torch.zeros(self.count, *p.shape, dtype=p.dtype)))
        for k, b in template.named_buffers():
            self.register_buffer(_name(k), torch.zeros(self.count, *b.shape, dtype=b.dtype))
        meta = template.to("meta")
        self._forward = [SequenceForward(meta)]
        self._step = [StepForward(meta)]

    @classmethod
    def from_policies(cls, policies: Sequence[Policy]) -> StackedPolicies:
        """Stack copies of ``policies``' weights (same spec), on the first policy's device.

        Raises:
            ValueError: no policies, or their specs differ.
        """
        if not policies:
            raise ValueError("from_policies needs at least one policy")
        spec = policies[0].spec
        if any(p.spec != spec for p in policies):
            raise ValueError("stacked learners must share one network spec")
        stacked = cls(spec, len(policies)).to(next(policies[0].parameters()).device)
        states = [p.state_dict() for p in policies]
        with torch.no_grad():
            for k in stacked._param_keys + stacked._buffer_keys:
                getattr(stacked, _name(k)).copy_(torch.stack([s[k] for s in states]))
        return stacked

    def to_policies(self) -> list[Policy]:
        """Standalone copies of the members (weights and value normalizers), on this device."""
        device = next(self.parameters()).device
        out = []
        for i in range(self.count):
            policy = Policy(self.spec)
            policy.load_state_dict({k: getattr(self, _name(k))[i].detach().clone() for k in self._keys()})
            out.append(policy.to(device))
        return out

    def _keys(self) -> list[str]:
        return self._param_keys + self._buffer_keys

    def stacked(self, prefix: str = "") -> dict[str, torch.Tensor]:
        """Stacked tensors ``{Policy state-dict key: [M, ...]}`` whose key starts with ``prefix``."""
        return {k: getattr(self, _name(k)) for k in self._keys() if k.startswith(prefix)}

    def actor_parameters(self) -> list[nn.Parameter]:
        """The stacked actor parameters (for the actor optimizer)."""
        return [getattr(self, _name(k)) for k in self._param_keys if k.startswith("actor.")]

    def critic_parameters(self) -> list[nn.Parameter]:
        """The stacked critic parameters (for the critic optimizer)."""
        return [getattr(self, _name(k)) for k in self._param_keys if k.startswith("critic.")]

    @torch.no_grad()
    def act(
        self,
        obs: torch.Tensor,
        avail: torch.Tensor | None,
        h: torch.Tensor,
        starts: torch.Tensor,
        member: torch.Tensor,
        generator: torch.Generator | None = None,
        deterministic: bool = False,
        noise: torch.Tensor | None = None,
        capacity: int | None = None,
    ) -> ActOutput:
        """Sample actions for N rows, row ``i`` with member ``member[i]``'s actor, in one vmapped
        forward over the stacked weights (the ``static`` strategy of
        :class:`~zsceval.rl.population.pool.PolicyPool`): static shapes and no host
        synchronization, so that with ``noise`` it traces as one graph. The actions and
        log-probabilities equal each member's ``Policy.act`` on its rows, with the logits of all
        rows sampled at once (:func:`~zsceval.rl.agent.sample_actions`).

        Args:
            obs: ``[N, *obs_shape]``; avail ``bool [N, A]`` or None; h ``float32 [N, hidden]``;
                starts ``bool [N]``; member ``int64 [N]`` in ``[0, count)``.
            generator, deterministic, noise: as :meth:`Policy.act`.
            capacity: rows computed per member, at least the largest group (default N: every
                member computes every row; see
                :func:`~zsceval.rl.population.functional.static_slots`).

        Returns:
            :class:`~zsceval.rl.agent.ActOutput` (``actions int64 [N]``, ``log_probs float32 [N]``,
            ``state float32 [N, hidden]``, ``extras["logits"] float32 [N, A]``).
        """
        logits, h_new = self._step_rows("actor", obs, h, starts, member, capacity)
        actions, logp = sample_actions(logits, avail, generator, deterministic, noise)
        return ActOutput(actions, logp, h_new, {"logits": logits})

    @torch.no_grad()
    def value(
        self,
        critic_obs: torch.Tensor,
        h: torch.Tensor,
        starts: torch.Tensor,
        member: torch.Tensor,
        capacity: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Normalized critic values of N rows, row ``i`` with member ``member[i]``'s critic, in one
        vmapped forward (as :meth:`act`); equals each member's ``Policy.value`` on its rows (within
        float tolerance; critics without extra features).

        Args:
            critic_obs: ``[N, *critic_obs_shape]``; h ``float32 [N, hidden]``; starts ``bool [N]``;
                member ``int64 [N]`` in ``[0, count)``; capacity: as :meth:`act`.

        Returns:
            ``(values float32 [N], h float32 [N, hidden])``.
        """
        values, h_new = self._step_rows("critic", critic_obs, h, starts, member, capacity)
        return values.squeeze(-1), h_new

    def _step_rows(
        self, side: str, obs: torch.Tensor, h: torch.Tensor, starts: torch.Tensor, member: torch.Tensor,
        capacity: int | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        """One step of every row's member's ``side`` (``actor`` or ``critic``) network, vmapped over
        the members with static shapes: ``(out float32 [N, D], h float32 [N, hidden])``."""
        N, M = obs.shape[0], self.count
        C = N if capacity is None else int(capacity)
        idx, pos = static_slots(member, M, C)
        dtype = torch.bfloat16 if self.bf16 else torch.float32
        prefix = side + "."
        weights = {k: getattr(self, _name(k)).to(dtype) for k in self._param_keys if k.startswith(prefix)}
        module = self._step[0]

        def call(params, o, h_, s):
            return functional_call(module, params, (side, o, h_, s))

        flat = obs.reshape(N, -1)
        with torch.autocast(obs.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            y, h_new = vmap(call)(
                weights,
                flat.index_select(0, idx).view(M, C, *obs.shape[1:]),
                h.index_select(0, idx).view(M, C, h.shape[-1]),
                starts.index_select(0, idx).view(M, C),
            )
        return y.flatten(0, 1).index_select(0, pos), h_new.flatten(0, 1).index_select(0, pos).float()

    def evaluate(
        self,
        obs: torch.Tensor,
        critic_obs: torch.Tensor,
        avail: torch.Tensor,
        actions: torch.Tensor,
        h_actor: torch.Tensor,
        h_critic: torch.Tensor,
        starts: torch.Tensor,
        member: torch.Tensor,
        columns: ObsColumns | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Re-evaluate chunks of L steps for N sequences, sequence ``j`` with member ``member[j]``.

        Equals ``Policy.evaluate`` of each member on its columns; gradients flow into the stacked
        parameters (one forward and one backward for all members).

        Args:
            obs: ``uint8 [L, N, H, W, C]``; critic_obs ``uint8 [L, N, H, W, C']``.
            avail: ``bool [L, N, A]``; actions ``int64 [L, N]``.
            h_actor, h_critic: ``float32 [N, hidden]`` states at the chunk start.
            starts: ``bool [L, N]`` episode starts.
            member: ``int64 [N]`` member of each sequence.
            columns: with an ``mlp`` model, ``obs`` may be ``float32 [L, N, S]``, its varying
                entries (:func:`~zsceval.rl.networks.compress_observation`); then these are its
                columns, and ``critic_obs`` is compressed alike when it is ``obs`` itself (as
                ``Policy.evaluate``).

        Returns:
            ``(log_probs [L, N], entropy [L, N], values [L, N])``, float32; values normalized.

        Raises:
            IndexError: a member index outside ``[0, count)``.
        """
        N = obs.shape[1]
        layout = Layout.of(member, self.count)
        strategy = self.strategy
        if strategy == "auto":
            strategy = layout.strategy(self.spec["model"]["kind"], obs.device)
        module = self._forward[0]
        dtype = torch.bfloat16 if self.bf16 else torch.float32
        weights = {k: getattr(self, _name(k)).to(dtype) for k in self._param_keys}

        shared = critic_obs is obs  # `critic_obs: own`: select and cast the observation once for both
        mlp = self.spec["model"]["kind"] == "mlp"
        kwargs = {"columns": columns, "critic_columns": columns if shared else None}

        def call(params, o, co, ha, hc, s):
            return functional_call(module, params, (o, co, ha, hc, s), kwargs)

        def inputs(select) -> tuple[torch.Tensor, torch.Tensor]:
            o = select(obs)
            if columns is not None:  # the varying entries, float32: the encoders take them as they are
                return o, o if shared else select(critic_obs)
            return cast_shared(o, o if shared else select(critic_obs), dtype, contiguous=mlp)

        with torch.autocast(obs.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            if strategy == "vmap":
                idx, pos = layout.padded()
                P, G = len(layout.present), layout.largest
                if P < self.count:
                    sel = torch.tensor(layout.present, device=obs.device)
                    weights = {k: v.index_select(0, sel) for k, v in weights.items()}

                def cols(x: torch.Tensor) -> torch.Tensor:  # [L, N, ...] -> [L, P, G, ...]
                    return x.index_select(1, idx).view(x.shape[0], P, G, *x.shape[2:])

                def rows(x: torch.Tensor) -> torch.Tensor:  # [N, hidden] -> [P, G, hidden]
                    return x.index_select(0, idx).view(P, G, x.shape[-1])

                o, co = inputs(cols)
                logits, values = vmap(call, in_dims=(0, 1, 1, 0, 0, 1), out_dims=1)(
                    weights, o, co, rows(h_actor), rows(h_critic), cols(starts)
                )
                logits = logits.flatten(1, 2).index_select(1, pos)
                values = values.flatten(1, 2).index_select(1, pos)
            else:
                outs = []
                for m, cols_m in layout.rows_of():
                    o, co = inputs(lambda x, cols_m=cols_m: x.index_select(1, cols_m))
                    outs.append(
                        call(
                            {k: v[m] for k, v in weights.items()},
                            o,
                            co,
                            h_actor.index_select(0, cols_m),
                            h_critic.index_select(0, cols_m),
                            starts.index_select(1, cols_m),
                        )
                    )
                inverse = torch.empty_like(layout.order)
                inverse[layout.order] = torch.arange(N, device=obs.device)
                logits = torch.cat([o[0] for o in outs], 1).index_select(1, inverse)
                values = torch.cat([o[1] for o in outs], 1).index_select(1, inverse)
        logp_all = F.log_softmax(masked_logits(logits.float(), avail), dim=-1)
        logp = logp_all.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
        entropy = categorical_entropy(logp_all)
        return logp, entropy, values.float()

    @torch.no_grad()
    def clip_grad_norm_per_member(self, max_norm: float, prefix: str = "") -> torch.Tensor:
        """Clip each member's gradient to L2 norm ``max_norm`` separately (as
        ``torch.nn.utils.clip_grad_norm_`` on that member's parameters alone).

        Args:
            max_norm: the largest allowed norm per member.
            prefix: only parameters whose Policy key starts with it (``"actor."``, ``"critic."``,
                or ``""`` for all).

        Returns:
            ``float32 [M]`` each member's total gradient norm before clipping.
        """
        grads = [
            getattr(self, _name(k)).grad
            for k in self._param_keys
            if k.startswith(prefix) and getattr(self, _name(k)).grad is not None
        ]
        if not grads:
            return torch.zeros(self.count)
        norms = torch.stack([g.flatten(1).float().pow(2).sum(1) for g in grads]).sum(0).sqrt()
        coef = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.view(-1, *([1] * (g.dim() - 1))).to(g.dtype))
        return norms

    @torch.no_grad()
    def value_norm_update(self, targets: torch.Tensor, member: torch.Tensor) -> None:
        """Fold each member's value targets into its value normalizer (``ValueNorm.update``).

        Args:
            targets: ``float32 [L, N]`` unnormalized targets; member ``int64 [N]``.
        """
        for m in member.unique().tolist():
            policy_norm = self.to_value_norm(m)
            policy_norm.update(targets[:, member == m])
            for k, v in policy_norm.state_dict().items():
                getattr(self, _name("value_norm." + k))[m] = v

    def to_value_norm(self, m: int) -> ValueNorm:
        """Member ``m``'s value normalizer as a standalone ``ValueNorm``."""
        norm = ValueNorm().to(getattr(self, _name("value_norm.running_mean")).device)
        norm.load_state_dict({k[len("value_norm.") :]: v[m] for k, v in self.stacked("value_norm.").items()})
        return norm
