"""How the PPO core's learners take their gradient steps: a learner group, of two kinds.

* :class:`SeparateLearners`: each learner alone, with its own Adam for its actor and its critic
  (and one for a plug-in's ``extra_parameters``); a learner group of the core's update is one
  learner. Optionally compiled (:mod:`zsceval.rl.ppo_compile`).
* :class:`StackedLearners`: same-spec learners (a plug-in's ``stack_learners``, population stage 1)
  trained as one :class:`~zsceval.rl.population.StackedPolicies`, one forward and backward per
  minibatch for all; one Adam over the stacked parameters is each member's own Adam, and clipping
  is per member, so each member's step equals training it alone.

:meth:`PPOCore.learn <zsceval.rl.ppo.PPOCore.learn>` asks a group which learners train together
(:meth:`LearnerGroup.groups`), brackets their epochs with :meth:`LearnerGroup.begin` and
:meth:`LearnerGroup.end`, and calls :meth:`LearnerGroup.step` per minibatch. Plug-in hooks:
``extra_loss(name, minibatch, outputs)`` adds to a step's loss, ``extra_parameters(name)`` gives
parameters a learner's optimizer also trains; :meth:`LearnerGroup.actor_step` is TrajeDi's JSD step.
"""

from __future__ import annotations

from typing import Any

import torch

from zsceval.rl.config import ConfigError, TrainConfig
from zsceval.rl.loss import clip_and_step, minibatch_loss, ppo_terms
from zsceval.rl.policy import Policy
from zsceval.rl.ppo_compile import CompiledLearner, compile_learner

__all__ = ["LearnerGroup", "SeparateLearners", "StackedLearners", "learner_group"]


def learner_group(learners: dict[str, Policy], cfg: TrainConfig, algorithm, device,
                  critic_features: int = 0) -> LearnerGroup:  # fmt: skip
    """The learner group of a PPO core: :class:`StackedLearners` when the plug-in stacks
    (``stack_learners``) more than one learner, else :class:`SeparateLearners`.

    Raises:
        ConfigError: stacked learners that :class:`StackedLearners` refuses.
    """
    group = SeparateLearners(learners, cfg, algorithm, device)
    if getattr(algorithm, "stack_learners", False) and len(learners) > 1:
        return StackedLearners(group, critic_features)
    return group


class LearnerGroup:
    """The learners of a PPO core and their optimizers (see the module docstring).

    Args:
        learners: the trained policies by name (learner index = position).
        cfg: the run config (``ppo``).
        algorithm: the plug-in (``extra_loss``, ``extra_parameters``).
        device: the learners' device.
    """

    prefix_all: str | None = None
    """The statistics' key prefix of every group, or None: the learner's name when there are several."""

    def __init__(self, learners: dict[str, Policy], cfg: TrainConfig, algorithm, device) -> None:
        self.learners, self.cfg, self.algorithm = learners, cfg, algorithm
        self.policies = list(learners.values())
        self.names = list(learners)
        self.device = torch.device(device)
        self.optimizers: dict[str, Any] = {}

    @property
    def compiled(self) -> bool:
        """Whether the minibatch steps are compiled (their shapes must stay static)."""
        return False

    def value(self, k: int, every_row: bool):
        """Learner k's critic value function for collection (``Policy.value``'s signature);
        ``every_row``: the learner drives every row (static shapes)."""
        return self.policies[k].value

    def groups(self, present: list[int]) -> list[list[int]]:
        """The learners (of ``present``, those with samples) that take their steps together."""
        raise NotImplementedError

    def prefix(self, group: list[int]) -> str:
        """The key prefix of a group's statistics: ``<name>/`` when there are several learners,
        ``stacked/`` for stacked learners."""
        if self.prefix_all is not None:
            return self.prefix_all
        return f"{self.names[group[0]]}/" if len(self.learners) > 1 else ""

    def begin(self) -> None:
        """Before a group's gradient steps (the stacked parameters take the learners' weights)."""

    def end(self) -> None:
        """After a group's gradient steps (the learners take the stacked weights)."""

    def step(self, parts: dict[int, dict], ent_coef: float) -> dict[str, torch.Tensor]:
        """One gradient step of the group on one minibatch per learner (``parts``: learner index ->
        minibatch, :meth:`PPOCore._minibatch <zsceval.rl.ppo.PPOCore._minibatch>`); returns the
        step's statistics (0-dim tensors)."""
        raise NotImplementedError

    def actor_optimizers(self) -> list[torch.optim.Optimizer]:
        """The optimizers of the learners' actors (:meth:`actor_step`)."""
        raise NotImplementedError

    def clip_actor_gradients(self) -> torch.Tensor:
        """Clip each learner's actor gradient at ``ppo.max_grad_norm``; ``float32 [K]`` the norms
        before clipping."""
        raise NotImplementedError

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
        self.begin()
        opts = self.actor_optimizers()
        for opt in opts:
            opt.zero_grad(set_to_none=True)
        for p in self.policies:
            p.actor.zero_grad(set_to_none=True)
        loss.backward()
        norms = self.clip_actor_gradients()
        for opt in opts:
            opt.step()
            opt.zero_grad(set_to_none=True)
        for p in self.policies:
            p.actor.zero_grad(set_to_none=True)
        self.end()
        return norms.detach()

    def compile(self, backend: str = "inductor", mode: str | None = None) -> list[str]:
        """``run.compile: full`` (:mod:`zsceval.rl.ppo_compile`); returns notes on what stays eager."""
        return []

    def state_dict(self) -> dict[str, Any]:
        """The optimizers' states (entries of the core's state)."""
        raise NotImplementedError

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` from the core's state (after the learners' weights are loaded)."""
        raise NotImplementedError


class SeparateLearners(LearnerGroup):
    """Each learner steps alone: ``optimizers[name]`` holds its ``actor`` and ``critic`` Adam (and
    ``extra``, over the plug-in's ``extra_parameters(name)``)."""

    def __init__(self, learners: dict[str, Policy], cfg: TrainConfig, algorithm, device) -> None:
        super().__init__(learners, cfg, algorithm, device)
        ppo = cfg.ppo
        self.optimizers: dict[str, dict[str, torch.optim.Optimizer]] = {}
        for name, p in learners.items():
            p.use_value_norm = ppo.value_norm
            opts = {
                "actor": torch.optim.Adam(p.actor.parameters(), lr=ppo.lr, eps=ppo.adam_eps),
                "critic": torch.optim.Adam(p.critic.parameters(), lr=ppo.lr, eps=ppo.adam_eps),
            }
            extra = list(algorithm.extra_parameters(name))
            if extra:
                opts["extra"] = torch.optim.Adam(extra, lr=ppo.lr, eps=ppo.adam_eps)
            self.optimizers[name] = opts
        self.compiled_learners: dict[int, CompiledLearner] = {}
        """Learner index -> its compiled graphs (:meth:`compile`)."""

    @property
    def compiled(self) -> bool:
        return bool(self.compiled_learners)

    def value(self, k: int, every_row: bool):
        compiled = self.compiled_learners.get(k) if every_row else None  # static shapes only
        return compiled.value if compiled is not None else self.policies[k].value

    def groups(self, present: list[int]) -> list[list[int]]:
        return [[k] for k in present]

    def step(self, parts: dict[int, dict], ent_coef: float) -> dict[str, torch.Tensor]:
        """One gradient step of one learner on one minibatch: PPO loss (+ the plug-in's extra
        loss), actor and critic gradients clipped at ``ppo.max_grad_norm`` apart, Adam.

        Compiled (:meth:`compile`), the loss (forward; its backward through AOT autograd) and the
        clip and Adam step run as two compiled graphs; ``backward()`` and the plug-in's extra loss
        run between them, eagerly."""
        ((k, mb),) = parts.items()
        cfg, p = self.cfg.ppo, self.policies[k]
        name = self.names[k]
        opts = self.optimizers[name]
        compiled = self.compiled_learners.get(k)
        if compiled is None:
            total, step_stats, outputs = minibatch_loss(p, mb, ent_coef, cfg)
        else:
            coef = torch.tensor(ent_coef, dtype=torch.float32, device=self.device)
            total, step_stats, outputs = compiled.loss(mb, coef)
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
            norms = compiled.step()
        step_stats["actor_grad_norm"], step_stats["critic_grad_norm"] = (n.detach() for n in norms)
        return step_stats

    def actor_optimizers(self) -> list[torch.optim.Optimizer]:
        return [self.optimizers[name]["actor"] for name in self.learners]

    def clip_actor_gradients(self) -> torch.Tensor:
        max_norm = self.cfg.ppo.max_grad_norm
        return torch.stack(
            [torch.nn.utils.clip_grad_norm_(p.actor.parameters(), max_norm) for p in self.policies]
        )

    def compile(self, backend: str = "inductor", mode: str | None = None) -> list[str]:
        """Compile each learner's critic value and minibatch step
        (:func:`~zsceval.rl.ppo_compile.compile_learner`). ``ppo.obs_columns`` is off when compiled
        (its width changes every update)."""
        for k, p in enumerate(self.policies):
            opts = self.optimizers[self.names[k]].values()
            self.compiled_learners[k] = compile_learner(p, opts, self.cfg.ppo, backend, mode)
        return []

    def state_dict(self) -> dict[str, Any]:
        return {
            "optimizers": {
                n: {k: o.state_dict() for k, o in opts.items()} for n, opts in self.optimizers.items()
            }
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for name, opts in self.optimizers.items():
            for key, opt in opts.items():
                opt.load_state_dict(state["optimizers"][name][key])


class StackedLearners(LearnerGroup):
    """Same-spec learners trained as one :class:`~zsceval.rl.population.StackedPolicies`
    (:attr:`stacked`), with one Adam over the stacked actor parameters and one over the critic's
    (``optimizers["actor"]``, ``optimizers["critic"]``).

    Args:
        separate: the learners as :class:`SeparateLearners` (their optimizers were made, and the
            plug-in's ``extra_parameters`` asked, learner by learner).
        critic_features: the plug-in's ``critic_feature_size``.

    Raises:
        ConfigError: the learners' specs differ, or a plug-in adds extra parameters or critic features.
    """

    prefix_all = "stacked/"

    def __init__(self, separate: SeparateLearners, critic_features: int = 0) -> None:
        from zsceval.rl.population import StackedPolicies

        super().__init__(separate.learners, separate.cfg, separate.algorithm, separate.device)
        if any(p.spec != self.policies[0].spec for p in self.policies):
            raise ConfigError("stack_learners needs learners of one network spec")
        if any("extra" in opts for opts in separate.optimizers.values()):
            raise ConfigError("stack_learners does not support extra_parameters")
        if critic_features:
            raise ConfigError("stack_learners does not support critic features")
        ppo = self.cfg.ppo
        self.stacked = StackedPolicies.from_policies(self.policies)
        self.optimizers = {  # one Adam over the stacked parameters is each member's own Adam
            "actor": torch.optim.Adam(self.stacked.actor_parameters(), lr=ppo.lr, eps=ppo.adam_eps),
            "critic": torch.optim.Adam(self.stacked.critic_parameters(), lr=ppo.lr, eps=ppo.adam_eps),
        }

    def groups(self, present: list[int]) -> list[list[int]]:
        return [list(present)]

    @torch.no_grad()
    def begin(self) -> None:
        states = [p.state_dict() for p in self.policies]
        for key, t in self.stacked.stacked().items():
            t.copy_(torch.stack([sd[key] for sd in states]))

    @torch.no_grad()
    def end(self) -> None:
        states = [p.state_dict() for p in self.policies]
        for key, t in self.stacked.stacked().items():
            for i, sd in enumerate(states):
                sd[key].copy_(t[i])

    def step(self, parts: dict[int, dict], ent_coef: float) -> dict[str, torch.Tensor]:
        """One gradient step of every stacked learner on its minibatch, in one forward and backward
        (:class:`~zsceval.rl.population.StackedPolicies`).

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
        total, step_stats = ppo_terms(mb, logp, entropy, values, ent_coef, weight, cfg)
        outputs = {"log_probs": logp, "entropy": entropy, "values": values, "policy": stacked}
        extra = self.algorithm.extra_loss("stacked", mb, outputs)
        if extra is not None:
            total = total + extra[0]
            step_stats.update(extra[1])
        total = total * len(parts)  # sum of the members' losses
        for opt in self.optimizers.values():
            opt.zero_grad(set_to_none=True)
        total.backward()
        step_stats["actor_grad_norm"] = stacked.clip_grad_norm_per_member(cfg.max_grad_norm, "actor.").max()
        step_stats["critic_grad_norm"] = stacked.clip_grad_norm_per_member(cfg.max_grad_norm, "critic.").max()
        for opt in self.optimizers.values():
            opt.step()
        return step_stats

    def actor_optimizers(self) -> list[torch.optim.Optimizer]:
        return [self.optimizers["actor"]]

    def clip_actor_gradients(self) -> torch.Tensor:
        """Copy the learners' actor gradients into the stacked parameters and clip them per member."""
        named = [dict(p.named_parameters()) for p in self.policies]
        with torch.no_grad():
            for key, t in self.stacked.stacked("actor.").items():
                if key not in named[0] or all(n[key].grad is None for n in named):
                    continue  # a buffer, or a parameter the loss does not use
                t.grad = torch.stack(
                    [n[key].grad if n[key].grad is not None else torch.zeros_like(n[key]) for n in named]
                ).to(t.dtype)
        return self.stacked.clip_grad_norm_per_member(self.cfg.ppo.max_grad_norm, "actor.")

    def compile(self, backend: str = "inductor", mode: str | None = None) -> list[str]:
        return ["run.compile=full: stacked learners update eagerly"]

    def state_dict(self) -> dict[str, Any]:
        return {"stacked_optimizers": {k: o.state_dict() for k, o in self.optimizers.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.begin()
        for k, opt in self.optimizers.items():
            opt.load_state_dict(state["stacked_optimizers"][k])
