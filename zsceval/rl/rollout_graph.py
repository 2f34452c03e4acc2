"""The rollout as one graph (``run.compile: rollout``): K env steps of the PPO core's collection
(acting and sampling, the critic's values, the env step, the training reward, the buffer writes and
the episode totals) traced by ``torch.compile(fullgraph=True, dynamic=False)`` into one graph with
no host synchronization inside.

The graph is a function of tensors: the env's state (copied inside, then stepped by
:meth:`~zsceval.envs.overcooked.OvercookedEnv.graph_step`, so the env state is an output, not a
mutated input), the current observation, the recurrent states, the episode totals, the sampling
draws of the K steps (``noise``: drawn from the runner's generator before the graph, in the
order the eager actors draw them, so the actions are the same), the K shaping factors and the
rollout index of the first step. The buffer writes are in-place writes at tensor indices (one
graph for every chunk of the rollout). After the graph the host copies the env state back,
advances the env's clock and records the K steps' episode ends (:class:`~zsceval.rl.runner.EpisodeRunner`'s
``_Episodes``); re-seating stays outside, so the graph is used only for static seatings (one arm:
self-play, or an ego with one fixed partner seat).

A rollout of T steps runs ``T // K`` graphs of K steps and one of ``T % K`` steps (a second
compilation). With the ``aot_eager`` backend the buffer, the episodes and therefore the training
are bit for bit those of ``run.compile: off`` on CPU (tests/rl/test_compiled_rollout.py); inductor
agrees within float tolerance (it may fuse the critic's and actor's arithmetic differently).
On CUDA with ``run.cuda_graphs`` the graph is compiled with ``mode="reduce-overhead"`` and the
buffer tensors are marked as static addresses, so inductor can capture it as a CUDA graph.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields

import torch

from zsceval.envs.base import Step, critic_view
from zsceval.rl.policy import Policy
from zsceval.rl.schedules import shaping_factor

__all__ = ["RolloutGraph", "rollout_graph_blockers"]


def rollout_graph_blockers(core, runner) -> list[str]:
    """Why the rollout of ``core`` (a :class:`~zsceval.rl.ppo.PPOCore`) with ``runner`` cannot run
    as one graph; empty when it can.

    Needs: an env with ``graph_step`` and deterministic starts, a static seating (one arm), every
    actor a :class:`~zsceval.rl.policy.Policy` acting by :meth:`Policy.act` (no policy pools), and
    no critic extra features.
    """
    env, why = runner.env, []
    if not hasattr(env, "graph_step"):
        why.append(f"the env '{type(env).__name__}' has no graph_step")
    elif getattr(env, "randomize_seats", False) or getattr(env, "random_start_prob", 0) > 0:
        why.append("the env draws seats or starts at resets (randomize_seats / random_start_prob)")
    if runner.device != runner.env_device:
        why.append("the env and the learners are on different devices")
    if not runner.static_seating:
        why.append("the seating changes per episode (more than one arm)")
    for k, actor in enumerate(runner.actors):
        if runner.takes_member[k] or getattr(type(actor), "act", None) is not Policy.act:
            why.append(f"actor '{runner.names[k]}' does not act by Policy.act")
    if core.E:
        why.append("the critic reads extra features")
    return why


class RolloutGraph:
    """The PPO core's collection in compiled chunks of K steps.

    Args:
        core: the :class:`~zsceval.rl.ppo.PPOCore` (buffer, learners, algorithm, config).
        runner: its :class:`~zsceval.rl.runner.EpisodeRunner` with a static seating (see
            :func:`rollout_graph_blockers`); it may be reset later, before the first :meth:`collect`.
        steps: K, env steps per graph (the last chunk of a rollout may be shorter).
        backend: ``torch.compile`` backend (``inductor``; ``aot_eager`` in tests).
        mode: ``torch.compile`` mode (``"reduce-overhead"``: CUDA graphs; CUDA only).
    """

    def __init__(self, core, runner, steps: int, backend: str = "inductor", mode: str | None = None) -> None:
        if steps < 1:
            raise ValueError(f"steps per rollout graph must be >= 1, got {steps}")
        self.core, self.runner, self.K = core, runner, steps
        env = runner.env
        env._graph_start(env.num_envs)  # build the cached start state outside any graph
        self.rows: list[torch.Tensor | None] | None = None
        """Each actor's rows (None: every row), fixed by the static seating; read at the first
        :meth:`collect` (the runner is reset then)."""
        if mode == "reduce-overhead":
            buf = core.buffer
            for f in fields(buf):
                x = getattr(buf, f.name)
                if isinstance(x, torch.Tensor):
                    torch._dynamo.mark_static_address(x)
        self.graph: Callable = torch.compile(
            self._chunk, fullgraph=True, dynamic=False, backend=backend, mode=mode
        )

    # -- host side --------------------------------------------------------------------------------------
    @torch.no_grad()
    def collect(self, env_steps: int):
        """Fill the core's buffer with one rollout of T steps (what
        :meth:`~zsceval.rl.ppo.PPOCore.collect_steps` does eagerly); returns the episode records."""
        from zsceval.rl.runner import _Episodes

        core, runner, env = self.core, self.runner, self.runner.env
        if self.rows is None:
            self.rows = [None if r is None else r.clone() for r in runner.rows]
            self.widths = [runner.N if r is None else int(r.numel()) for r in self.rows]
            self.actor_index = runner.seating.actor.clone()  # [B, n]
        T, B, cfg = core.buffer.T, core.B, core.cfg
        A = core.buffer.avail.shape[-1]
        episodes = _Episodes()
        for t0 in range(0, T, self.K):
            K = min(self.K, T - t0)
            # the draws of K steps in the eager order (step, then actor), in one call: a CPU
            # generator's stream does not depend on how it is cut into calls
            draws = torch.rand(K, sum(self.widths) * A, generator=runner.generator, device=core.device)
            noise = list(draws.view(K, -1, A).split(self.widths, dim=1))
            rsf = torch.tensor(
                [shaping_factor(env_steps + t * B, cfg.shaping.initial_factor, cfg.shaping.horizon)
                 for t in range(t0, t0 + K)],
                dtype=torch.float32, device=core.device,
            )  # fmt: skip
            s = runner.step_out
            out = self.graph(
                env.state, s.obs, s.avail_actions, s.infos.get("full_obs"), runner.starts, list(runner.state),
                list(core.h_critic), runner.ep_sparse, runner.ep_shaped, runner.ep_events, noise, rsf,
                torch.tensor(t0, device=core.device), core.buffer,
            )  # fmt: skip
            self._advance(out, K, episodes)
        return episodes

    def _advance(self, out: dict, K: int, episodes) -> None:
        """Copy the graph's outputs into the env, the runner and the core; record K steps' episodes."""
        core, runner, env = self.core, self.runner, self.runner.env
        for f in fields(env.state):
            getattr(env.state, f.name).copy_(out["state"][f.name])
        for _ in range(K):
            env._tick()
        for i in range(K):  # the totals at each step's end, as the eager finish_step records them
            episodes.add(
                out["done"][i], runner.game_arm, out["sparse"][i], out["shaped"][i], out["events"][i]
            )
        runner.state = list(out["h"])
        core.h_critic = list(out["h_critic"])
        runner.ep_sparse, runner.ep_shaped, runner.ep_events = (
            out["ep_sparse"],
            out["ep_shaped"],
            out["ep_events"],
        )
        runner.starts = out["starts"]
        infos = {"seats": env.state.seats.clone(), "timestep": env.state.timestep.clone()}
        if out.get("full_obs") is not None:
            infos["full_obs"] = out["full_obs"]
        last = out["last"]
        runner.step_out = Step(
            obs=last["obs"], avail_actions=last["avail_actions"], reward=last["reward"],
            sparse_by_agent=last["sparse_by_agent"], shaped_by_agent=last["shaped_by_agent"],
            events=last["events"], interactions=last["interactions"],
            interaction_cell=last["interaction_cell"], terminated=torch.zeros_like(last["truncated"]),
            truncated=last["truncated"], final_obs=last["final_obs"], infos=infos,
        )  # fmt: skip

    # -- the graph ----------------------------------------------------------------------------------------
    def _put(self, dst: torch.Tensor, k: int, src: torch.Tensor) -> torch.Tensor:
        """A copy of ``dst [N, ...]`` with actor k's rows set to ``src`` (functional ``runner.put``)."""
        rows = self.rows[k]
        return src if rows is None else dst.index_copy(0, rows, src)

    def _sel(self, x: torch.Tensor, k: int) -> torch.Tensor:
        rows = self.rows[k]
        return x if rows is None else x.index_select(0, rows)

    def _write(self, dst: torch.Tensor, t: torch.Tensor, src: torch.Tensor) -> None:
        """``dst[t] = src`` in place, ``t`` an ``int64 []`` tensor."""
        dst.index_copy_(0, t.view(1), src.unsqueeze(0))

    def _critic_obs(self, obs: torch.Tensor, full: torch.Tensor | None) -> torch.Tensor:
        if self.core.own_critic:
            return obs
        return critic_view(full if full is not None else obs)

    def _chunk(self, state, obs, avail, full, starts, h, h_critic, ep_sparse, ep_shaped, ep_events,
               noise, rsf, t0, buf):  # fmt: skip
        core, runner, env = self.core, self.runner, self.runner.env
        N, B, n = core.N, core.B, core.n
        L = len(core.policies)
        H = buf.h_actor.shape[-1]
        actors = runner.actors
        seating = runner.seating
        state = state.clone()  # functional: the env state is an output
        h, h_critic = list(h), list(h_critic)
        done_k, sparse_k, shaped_k, events_k = [], [], [], []
        step_out: dict = {}
        for i in range(rsf.shape[0]):
            t = t0 + i
            # observe s_t (PPO's _PPOStep.observe)
            critic_obs = self._critic_obs(obs, full)
            self._write(buf.obs, t, obs)
            if not core.own_critic:
                self._write(buf.critic_obs, t, critic_obs)
            self._write(buf.avail, t, avail)
            self._write(buf.starts, t, starts.view(B, n))
            self._write(buf.actor, t, self.actor_index)
            # every actor acts on its rows (EpisodeRunner.act); learners' states and log-probs recorded
            flat_obs = obs.reshape(N, *obs.shape[2:])
            flat_avail = avail.reshape(N, -1)
            actions = torch.zeros(N, dtype=torch.int64, device=obs.device)
            rec_h = buf.h_actor.index_select(0, t.view(1)).view(N, H)
            rec_logp = buf.log_probs.index_select(0, t.view(1)).view(N)
            for k, actor in enumerate(actors):
                hk = self._sel(h[k], k)
                out = actor.act(self._sel(flat_obs, k), self._sel(flat_avail, k), hk, self._sel(starts, k),
                                noise=noise[k][i])  # fmt: skip
                actions = self._put(actions, k, out.actions)
                if k < L:
                    rec_h = self._put(rec_h, k, hk)
                    rec_logp = self._put(rec_logp, k, out.log_probs)
                h[k] = self._put(h[k], k, out.state)
            self._write(buf.h_actor, t, rec_h.view(B, n, H))
            self._write(buf.log_probs, t, rec_logp.view(B, n))
            # the learners' critic states and values of s_t (_PPOStep.act)
            flat_critic = critic_obs.reshape(N, *critic_obs.shape[2:])
            rec_hc = buf.h_critic.index_select(0, t.view(1)).view(N, H)
            values = buf.values.index_select(0, t.view(1)).view(N)
            for k in range(L):
                rec_hc = self._put(rec_hc, k, self._sel(h_critic[k], k))
            for k, p in enumerate(core.policies):
                v, hc = p.value(self._sel(flat_critic, k), self._sel(h_critic[k], k), self._sel(starts, k))
                values = self._put(values, k, v)
                h_critic[k] = self._put(h_critic[k], k, hc)
            self._write(buf.h_critic, t, rec_hc.view(B, n, H))
            self._write(buf.values, t, values.view(B, n))
            self._write(buf.actions, t, actions.view(B, n))
            # the env step (graph_step: auto-reset as a masked select) and the training reward
            o = env.graph_step(state, actions.view(B, n))
            step = Step(
                obs=o["obs"], avail_actions=o["avail_actions"], reward=o["reward"],
                sparse_by_agent=o["sparse_by_agent"], shaped_by_agent=o["shaped_by_agent"],
                events=o["events"], interactions=o["interactions"], interaction_cell=o["interaction_cell"],
                terminated=torch.zeros_like(o["truncated"]), truncated=o["truncated"],
                final_obs=o["final_obs"],
                infos={k: o[k] for k in ("full_obs", "final_full_obs") if k in o},
            )  # fmt: skip
            ep_sparse = ep_sparse + step.reward
            ep_shaped = ep_shaped + step.shaped_by_agent
            ep_events = ep_events + step.events
            self._write(buf.rewards, t, core.algorithm.training_reward(step, rsf[i], seating))
            self._write(buf.terminated, t, step.terminated)
            self._write(buf.truncated, t, step.truncated)
            # V(final obs) of every row (read where truncated), the critic states kept
            final = step.final_obs if core.own_critic else step.final_critic_obs
            flat_final = final.reshape(N, *final.shape[2:])
            no_start = torch.zeros(N, dtype=torch.bool, device=obs.device)
            tv = buf.truncated_values.index_select(0, t.view(1)).view(N)
            for k, p in enumerate(core.policies):
                v, _ = p.value(self._sel(flat_final, k), self._sel(h_critic[k], k), self._sel(no_start, k))
                tv = self._put(tv, k, v)
            self._write(buf.truncated_values, t, tv.view(B, n))
            # episode records and the reset of the totals (EpisodeRunner.finish_step)
            done = step.done
            done_k.append(done)
            sparse_k.append(ep_sparse)
            shaped_k.append(ep_shaped)
            events_k.append(ep_events)
            keep = (~done).to(torch.float32)
            ep_sparse = ep_sparse * keep
            ep_shaped = ep_shaped * keep.unsqueeze(-1)
            ep_events = ep_events * keep.view(B, 1, 1)
            starts = done.unsqueeze(-1).expand(B, n).reshape(N)
            obs, avail, full = step.obs, step.avail_actions, step.infos.get("full_obs")
            step_out = o
        return {
            "state": {f.name: getattr(state, f.name) for f in fields(state)},
            "h": h, "h_critic": h_critic, "starts": starts, "full_obs": full,
            "ep_sparse": ep_sparse, "ep_shaped": ep_shaped, "ep_events": ep_events,
            "done": torch.stack(done_k), "sparse": torch.stack(sparse_k), "shaped": torch.stack(shaped_k),
            "events": torch.stack(events_k), "last": step_out,
        }  # fmt: skip
