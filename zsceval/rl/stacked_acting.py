"""The vmapped acting of a stacked phase (``zsceval bench --stack --stack-vmap``): in every step of a
stacked rollout, the actors of all members act in one vmapped forward, and all members' learners'
critics give ``V(s_t)`` in another, instead of one small forward per actor and member.

Every actor of a member must be a plain :class:`~zsceval.rl.policy.Policy` of one network spec, shared
by all vmapped members (SP egos, a candidate's biased agent and its BR, a mid-checkpoint BR and its
frozen partner); its critic without extra features, its acting not compiled. The others act as in
the exact stacked phase (:meth:`VmappedActing.eligible`). Their weights are stacked on a slot axis
(one slot per member and actor) by a :class:`~zsceval.rl.population.StackedPolicies`, refreshed from
the policies before every rollout (:meth:`VmappedActing.refresh`), so each learner acts with the
weights of its last update.

The random draws are the exact phase's: each actor's uniform draws (Gumbel-max,
:func:`~zsceval.rl.agent.sample_actions`) are taken from its member's generator in actor order and
passed in as noise, so an action differs from the exact phase's only where the vmapped logits round
differently (float tolerance; tests/rl/test_stacked_phase.py). What is saved: per step, ``2 x`` (members
x actors) small forwards become two vmapped ones (docs/performance.md, "Stacked phases").
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from zsceval.rl.policy import Policy

__all__ = ["VmappedActing"]


class VmappedActing:
    """One vmapped actor forward and one vmapped critic forward per step for a stacked phase's
    eligible members (see the module docstring).

    Args:
        members: the phase's :class:`~zsceval.rl.trainer.Trainer` members, built.
    """

    def __init__(self, members: Sequence) -> None:
        from zsceval.rl.population import StackedPolicies

        self.slots: dict[tuple[int, int], int] = {}
        """(member index, actor index) -> slot of the stacked weights."""
        policies: list[Policy] = []
        spec = None
        for m, tr in enumerate(members):
            if not self.eligible(tr, spec):
                continue
            spec = tr.runner.actors[0].spec
            for k, actor in enumerate(tr.runner.actors):
                self.slots[(m, k)] = len(policies)
                policies.append(actor)
        self.policies = policies
        self.stacked = StackedPolicies.from_policies(policies) if policies else None

    @staticmethod
    def eligible(tr, spec: dict | None = None) -> bool:
        """Whether member ``tr`` acts vmapped: PPO core, every actor a plain ``Policy`` of one spec
        (``spec`` when given), nothing compiled, no critic features, no actor that takes member
        indices or game states."""
        core, r = tr.core, tr.runner
        if getattr(core, "name", None) != "ppo" or core.E or core.rollout_graph is not None:
            return False
        if core.group.compiled or r.compiled_act or any(r.takes_member) or any(r.wants_states):
            return False
        first = r.actors[0]
        if not all(type(a) is Policy for a in r.actors):
            return False
        want = first.spec if spec is None else spec
        return all(a.spec == want for a in r.actors)

    def holds(self, m: int) -> bool:
        """Whether member ``m`` acts vmapped."""
        return (m, 0) in self.slots

    @torch.no_grad()
    def refresh(self) -> None:
        """Copy every slot's policy weights into the stacked weights (before a rollout)."""
        if self.stacked is None:
            return
        states = [p.state_dict() for p in self.policies]
        for key, t in self.stacked.stacked().items():
            t.copy_(torch.stack([sd[key] for sd in states]))

    @torch.no_grad()
    def act(self, members: Sequence[tuple[int, object, object]], t: int) -> dict[int, torch.Tensor]:
        """Step t's acting of the vmapped members: each member's hook observes s_t, its actors draw
        their noise in actor order from its generator, then all act in one forward; each member's
        learners' states and log-probabilities are stored as the runner's ``act`` stores them.

        Args:
            members: ``(member index, trainer, its PPO step hook)`` for each vmapped member of the
                rollout.
            t: the step.

        Returns:
            member index -> ``int64 [N]`` its actions (before its hook's ``act``).
        """
        obs, avail, h, starts, noise, slot, where = [], [], [], [], [], [], []
        actions: dict[int, torch.Tensor] = {}
        records = {}
        for m, tr, hook in members:
            r = tr.runner
            s = r.step_out
            records[m] = hook.observe(t, s, r.seating, r.starts)
            o = s.obs.reshape(r.N, *s.obs.shape[2:])
            av = s.avail_actions.reshape(r.N, -1)
            actions[m] = torch.empty(r.N, dtype=torch.int64, device=r.device)
            for k in range(len(r.actors)):
                if not r.active(k):
                    continue
                hk = r.select(r.state[k], k)
                rows = hk.shape[0]
                obs.append(r.select(o, k))
                avail.append(r.select(av, k))
                h.append(hk)
                starts.append(r.select(r.starts, k))
                noise.append(torch.rand(rows, av.shape[-1], generator=r.generator, device=r.device))
                slot.append(torch.full((rows,), self.slots[(m, k)], dtype=torch.int64, device=r.device))
                where.append((m, tr, hook, k, rows, hk))
        if not where:
            return actions
        capacity = max(w[4] for w in where)
        out = self.stacked.act(
            torch.cat(obs), torch.cat(avail), torch.cat(h), torch.cat(starts), torch.cat(slot),
            noise=torch.cat(noise), capacity=capacity,
        )  # fmt: skip
        lo = 0
        for m, tr, hook, k, rows, hk in where:
            r = tr.runner
            a, logp, h_new = (x[lo : lo + rows] for x in (out.actions, out.log_probs, out.state))
            lo += rows
            r.put(actions[m], k, a)
            record = records[m]
            if record is not None and k < hook.learners:  # as the runner's on_actor for learners
                r.put(record[0], k, hk)
                r.put(record[1], k, logp)
            r.put(r.state[k], k, h_new)
        return actions

    @torch.no_grad()
    def values(self, members: Sequence[tuple[int, object, object, torch.Tensor]], t: int) -> None:
        """Step t's critic values ``V(s_t)`` of the vmapped members' learners, in one forward, into
        each member's buffer, and their new critic states (as :meth:`PPOCore._values
        <zsceval.rl.ppo.PPOCore._values>` with ``keep_h``).

        Args:
            members: ``(member index, trainer, its PPO step hook, critic observation [N, ...])``,
                the observation from the hook's ``critic_input``.
            t: the step.
        """
        obs, h, starts, slot, where = [], [], [], [], []
        for m, tr, hook, critic_obs in members:
            r, core = tr.runner, tr.core
            for k in range(hook.learners):
                if not r.active(k):
                    continue
                hk = r.select(core.h_critic[k], k)
                obs.append(r.select(critic_obs, k))
                h.append(hk)
                starts.append(r.select(hook.starts, k))
                slot.append(
                    torch.full((hk.shape[0],), self.slots[(m, k)], dtype=torch.int64, device=r.device)
                )
                where.append((tr, hook, k, hk.shape[0]))
        if not where:
            return
        capacity = max(w[3] for w in where)
        v, h_new = self.stacked.value(
            torch.cat(obs), torch.cat(h), torch.cat(starts), torch.cat(slot), capacity
        )
        lo = 0
        for tr, hook, k, rows in where:
            r = tr.runner
            r.put(hook.values_at(t), k, v[lo : lo + rows])
            r.put(tr.core.h_critic[k], k, h_new[lo : lo + rows])
            lo += rows
