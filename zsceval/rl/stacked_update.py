"""The vmapped update of a stacked phase (``zsceval bench --stack --stack-vmap``): the PPO gradient
steps of all members' learners taken together, one forward, one backward and one Adam step per
minibatch for all, instead of one per learner and member.

Each member draws its update as alone (:meth:`PPOCore.update_plan <zsceval.rl.ppo.PPOCore.update_plan>`:
its samples, its value normalizers' updates and its minibatch permutations from its own generator);
:meth:`VmappedUpdate.update` then walks the epochs and minibatches in lockstep. The learners' weights
and the Adam moments of each member's own optimizers are stacked on a slot axis (one slot per member
and learner) before the steps and written back after them, so checkpoints, resumes and a later
update without vmapping see each member's own optimizer state. As in population stage 1
(:class:`~zsceval.rl.learner_group.StackedLearners`): each slot's loss is its own weighted mean, the
summed loss gives every slot its own gradient, clipping is per slot and Adam is elementwise, so each
slot's step is its step alone, up to float rounding (the stacked forward's matmuls; with
``ppo.obs_columns`` an MLP reads the entries that vary in any member's rollout, see
``VmappedUpdate._compress``, where alone it reads its own rollout's). The statistics row of a
member holds the same keys, in the same order, as its update alone.

Members whose update cannot be stacked update alone: not a PPO core with separate, uncompiled
learners; a plug-in with its own loss terms or parameters (``extra_loss``, ``extra_parameters``) or
critic features; learners of another network spec or another ``ppo`` config than the first
stacked member's. An iteration in which a learner has an empty minibatch, or in which the members'
optimizers stand at different step counts, updates each member alone too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from zsceval.rl.config import config_to_dict
from zsceval.rl.learner_group import SeparateLearners
from zsceval.rl.loss import ppo_terms
from zsceval.rl.networks import ObsColumns, columns_of_range, compress_observation

__all__ = ["VmappedUpdate"]

_SIDES = ("actor", "critic")


class VmappedUpdate:
    """One stacked gradient step per minibatch for a stacked phase's eligible members (see the
    module docstring).

    Args:
        members: the phase's :class:`~zsceval.rl.trainer.Trainer` members, built.
    """

    def __init__(self, members: Sequence) -> None:
        from zsceval.rl.population import StackedPolicies

        self.slots: dict[tuple[int, int], int] = {}
        """(member index, learner index) -> slot of the stacked weights."""
        self.members = list(members)
        policies = []
        ref = None
        for m, tr in enumerate(members):
            key = self._key(tr)
            if key is None or (ref is not None and key != ref):
                continue
            ref = key
            for k, p in enumerate(tr.core.group.policies):
                self.slots[(m, k)] = len(policies)
                policies.append(p)
        self.policies = policies
        self.stacked = None
        self.optimizers: dict[str, torch.optim.Optimizer] = {}
        if policies:
            cfg = self.members[next(iter(self.slots))[0]].cfg.ppo
            self.stacked = StackedPolicies.from_policies(policies)
            self.optimizers = {
                "actor": torch.optim.Adam(self.stacked.actor_parameters(), lr=cfg.lr, eps=cfg.adam_eps),
                "critic": torch.optim.Adam(self.stacked.critic_parameters(), lr=cfg.lr, eps=cfg.adam_eps),
            }

    @staticmethod
    def _key(tr) -> str | None:
        """What members whose updates stack share (their learners' spec and ``ppo`` config), or
        None when member ``tr``'s update cannot be stacked."""
        from zsceval.rl.algorithm import Algorithm

        core, algo = tr.core, tr.algorithm
        if getattr(core, "name", None) != "ppo" or core.E or not isinstance(core.group, SeparateLearners):
            return None
        if core.group.compiled or any("extra" in opts for opts in core.group.optimizers.values()):
            return None
        if type(algo).extra_loss is not Algorithm.extra_loss:
            return None
        specs = {repr(p.spec) for p in core.group.policies}
        if len(specs) != 1:
            return None
        return repr((specs.pop(), sorted(config_to_dict(tr.cfg)["ppo"].items())))

    def holds(self, m: int) -> bool:
        """Whether member ``m``'s update is stacked."""
        return (m, 0) in self.slots

    # -- one update -----------------------------------------------------------------------------------
    def update(self, plans: dict[int, tuple[Any, dict[str, Any]]]) -> dict[int, dict[str, Any]]:
        """The gradient steps of every member's plan (member index -> ``(its PPO core, its
        update_plan)``); returns each member's statistics row (:meth:`PPOCore.run_update
        <zsceval.rl.ppo.PPOCore.run_update>`'s keys). Falls back to each member's own
        ``run_update`` where the steps cannot be stacked (see the module docstring)."""
        slots = [(m, k) for m in plans for k in plans[m][1]["batches"]]
        if not self._stackable(plans, slots):
            return {m: core.run_update(plan) for m, (core, plan) in plans.items()}
        self._begin()
        try:
            return self._steps(plans, slots)
        finally:
            self._end()

    def _stackable(self, plans, slots) -> bool:
        if sorted(slots) != sorted(self.slots):  # every stacked learner has samples (absent slots
            return False  # would take Adam steps with zero gradients)
        nm = self.members[slots[0][0]].cfg.ppo.num_minibatches
        for m, k in slots:
            n = plans[m][1]["batches"][k]["seq"]["actions"].shape[1]
            if (nm - 1) * -(-n // nm) >= n:  # a minibatch would be empty
                return False
        steps = {self._step_count(m, k, side) for m, k in slots for side in _SIDES}
        return len(steps) == 1

    def _member_param(self, m: int, k: int, key: str) -> torch.nn.Parameter:
        return dict(self.members[m].core.group.policies[k].named_parameters())[key]

    def _member_opt(self, m: int, k: int, side: str) -> torch.optim.Optimizer:
        group = self.members[m].core.group
        return group.optimizers[group.names[k]][side]

    def _step_count(self, m: int, k: int, side: str) -> float:
        opt = self._member_opt(m, k, side)
        state = opt.state.get(opt.param_groups[0]["params"][0], {})
        return float(state["step"]) if "step" in state else 0.0

    def _keys(self, side: str) -> list[str]:
        return [k for k in self.stacked._param_keys if k.startswith(side + ".")]

    @torch.no_grad()
    def _begin(self) -> None:
        """Stack the learners' weights (and value normalizers) and their own Adam states."""
        states = [p.state_dict() for p in self.policies]
        for key, t in self.stacked.stacked().items():
            t.copy_(torch.stack([sd[key] for sd in states]))
        order = sorted(self.slots, key=self.slots.get)
        stacked = self.stacked.stacked()
        for side in _SIDES:
            opt = self.optimizers[side]
            opt.param_groups[0]["lr"] = self._member_opt(*order[0], side).param_groups[0]["lr"]
            for key in self._keys(side):
                big = stacked[key]
                own = [
                    self._member_opt(m, k, side).state.get(self._member_param(m, k, key), {})
                    for m, k in order
                ]
                if not own[0]:
                    opt.state.pop(big, None)
                    continue
                opt.state[big] = {
                    "step": own[0]["step"].clone(),
                    "exp_avg": torch.stack([s["exp_avg"] for s in own]),
                    "exp_avg_sq": torch.stack([s["exp_avg_sq"] for s in own]),
                }

    @torch.no_grad()
    def _end(self) -> None:
        """Write the stacked weights and Adam states back to each member's learners and optimizers."""
        order = sorted(self.slots, key=self.slots.get)
        stacked = self.stacked.stacked()
        for i, p in enumerate(self.policies):
            for key, v in p.state_dict().items():
                v.copy_(stacked[key][i])
        for side in _SIDES:
            opt = self.optimizers[side]
            for key in self._keys(side):
                state = opt.state.get(stacked[key])
                if not state:
                    continue
                for i, (m, k) in enumerate(order):
                    self._member_opt(m, k, side).state[self._member_param(m, k, key)] = {
                        "step": state["step"].clone(),
                        "exp_avg": state["exp_avg"][i].clone(),
                        "exp_avg_sq": state["exp_avg_sq"][i].clone(),
                    }

    def _steps(self, plans, slots) -> dict[int, dict[str, Any]]:
        """``ppo.epochs`` x ``ppo.num_minibatches`` stacked steps; each member's row as its own
        ``run_update`` would hold it."""
        first = self.members[slots[0][0]]
        cfg = first.cfg.ppo
        ent_coef = plans[slots[0][0]][1]["ent_coef"]
        device = first.core.device
        sizes = {(m, k): -(-plans[m][1]["batches"][k]["seq"]["actions"].shape[1] // cfg.num_minibatches)
                 for m, k in slots}  # fmt: skip
        columns = self._compress(plans, slots)
        sums: dict[tuple[int, int], dict[str, torch.Tensor]] = {s: {} for s in slots}
        count = 0
        for epoch in range(cfg.epochs):
            for j in range(cfg.num_minibatches):
                parts = []
                for m, k in slots:
                    core, plan = plans[m]
                    idx = plan["perms"][k][epoch][j * sizes[(m, k)] : (j + 1) * sizes[(m, k)]]
                    mb = core._minibatch(plan["batches"][k], idx)
                    mb.pop("active", None)  # forced samples: policy terms are 0 either way
                    parts.append(mb)
                ids = [self.slots[s] for s in slots]
                for s, stats in zip(slots, self._step(parts, ids, ent_coef, cfg, device, columns)):
                    for key, v in stats.items():
                        sums[s][key] = sums[s].get(key, 0.0) + v
                count += 1
        rows: dict[int, dict[str, Any]] = {}
        for m, k in slots:
            core, plan = plans[m]
            row = rows.setdefault(m, {"entropy_coef": plan["ent_coef"]})
            prefix = core.group.prefix([k])
            out = {key: float(v) / max(count, 1) for key, v in sums[(m, k)].items()}
            out["value_target_mean"] = float(plan["batches"][k]["returns"].mean())
            row.update({prefix + key: v for key, v in out.items()})
        return rows

    def _compress(self, plans, slots) -> ObsColumns | None:
        """With ``ppo.obs_columns`` and an MLP (as :meth:`PPOCore._compressed_obs
        <zsceval.rl.ppo.PPOCore._compressed_obs>`): replace every slot's observations by the
        entries that vary in any member's rollout (float32 ``[L, S, V]``), and return those columns;
        else None. The members' rollouts are combined by their column-wise ranges."""
        first = self.members[slots[0][0]]
        model = first.cfg.model
        if not first.cfg.ppo.obs_columns or model.kind != "mlp" or not model.mlp_layers:
            return None
        his, los = [], []
        for core, _ in plans.values():
            obs = core.buffer.obs
            rows = obs.reshape(-1, obs[0, 0, 0].numel())
            his.append(rows.amax(0))
            los.append(rows.amin(0))
        columns = columns_of_range(torch.stack(his).amax(0), torch.stack(los).amin(0), model.obs_scale)
        if columns.varying.numel() > columns.width // 2:  # little to gain (as alone)
            return None
        for m, k in slots:
            seq = plans[m][1]["batches"][k]["seq"]
            obs = seq["obs"]
            seq["obs"] = compress_observation(obs.reshape(*obs.shape[:2], -1), columns, model.obs_scale)
        return columns

    def _step(self, parts: list[dict], slot_ids: list[int], ent_coef: float, cfg, device,
              columns: ObsColumns | None = None) -> list[dict]:  # fmt: skip
        """One stacked gradient step on one minibatch per slot; each slot's statistics (0-dim
        tensors, :func:`~zsceval.rl.loss.ppo_terms`' then the gradient norms). The loss is the sum
        of the slots' own weighted means (``ppo_terms``' groups), so each slot gets its own gradient.
        ``columns``: the observations hold these entries only (:meth:`_compress`)."""
        stacked = self.stacked
        weights, members, groups = [], [], []
        for i, (mb, sid) in enumerate(zip(parts, slot_ids)):
            weights.append(mb["weight"] if mb["weight"] is not None else torch.ones_like(mb["advantages"]))
            width = mb["actions"].shape[1]
            members.append(torch.full((width,), sid, dtype=torch.int64, device=device))
            groups.append(torch.full((width,), i, dtype=torch.int64, device=device))
        shared = all(mb["critic_obs"] is mb["obs"] for mb in parts)
        skip = {"weight", "critic_obs", "obs_columns"} if shared else {"weight", "obs_columns"}
        mb = {key: torch.cat([p[key] for p in parts], dim=0 if key.startswith("h_") else 1)
              for key in parts[0] if key not in skip}  # fmt: skip
        if shared:
            mb["critic_obs"] = mb["obs"]
        logp, entropy, values = stacked.evaluate(
            mb["obs"], mb["critic_obs"], mb["avail"], mb["actions"],
            mb["h_actor"], mb["h_critic"], mb["starts"], torch.cat(members), columns=columns,
        )  # fmt: skip
        weight, group = torch.cat(weights, 1), (torch.cat(groups), len(parts))
        total, stats = ppo_terms(mb, logp, entropy, values, ent_coef, weight, cfg, groups=group)
        for opt in self.optimizers.values():
            opt.zero_grad(set_to_none=True)
        total.backward()
        norms = {side: stacked.clip_grad_norm_per_member(cfg.max_grad_norm, side + ".") for side in _SIDES}
        for opt in self.optimizers.values():
            opt.step()
        out = []
        for i, sid in enumerate(slot_ids):
            slot = {key: v[i].detach() for key, v in stats.items()}
            slot["actor_grad_norm"] = norms["actor"][sid]
            slot["critic_grad_norm"] = norms["critic"][sid]
            out.append(slot)
        return out
