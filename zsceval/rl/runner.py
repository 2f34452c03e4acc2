"""The episode runner: one loop that steps a batched env with seated agents, for training
(:meth:`EpisodeRunner.rollout`: T steps, each learning core storing its part through
:class:`StepHooks`), for ``zsceval eval`` and for the evaluation core (:meth:`EpisodeRunner.play`:
one episode per game).

Glossary (shared with :mod:`zsceval.rl.trainer` and :mod:`zsceval.rl.ppo`):

* **env step**: one joint action in one game. A batched call ``env.step`` on B games is B env
  steps; budgets, schedules and throughput are all counted in env steps.
* **row**: one seat of one game, ``row = game * n + seat`` (N = B * n rows).
* **actor**: anything that acts (:class:`~zsceval.rl.agent.Agent`): a learner, a frozen partner,
  or a :class:`~zsceval.rl.population.pool.PolicyPool` whose members are chosen per row. Actors are
  indexed learners first, then partners.
* **arm**: a seating of a game (:mod:`zsceval.rl.seating`). Each game draws an arm at every
  episode start (``assign``) inside the auto-reset: partners change per episode, never mid-episode.
* **rollout**: T consecutive batched steps (T * B env steps) collected without updating anyone.
* **iteration**: one rollout followed by one update of every learner.

Each actor runs one batched forward per step over the rows it drives (a pool: one forward for all
its members). Recurrent states are kept per actor for all N rows and zeroed at episode starts.
The runner's whole state (env state, last observation, recurrent states, seating, episode totals)
is saved by :meth:`EpisodeRunner.state_dict`, so training resumes mid-episode exactly.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

import pandas as pd
import torch

from zsceval.envs.base import Step
from zsceval.rl.policy import Policy
from zsceval.rl.seating import Arm, ArmTable, Seating

__all__ = ["EpisodeRunner", "EpisodeTable", "StepHooks", "uniform_assign"]


def uniform_assign(num_arms: int) -> Callable[[torch.Tensor, torch.Generator | None], torch.Tensor]:
    """An ``assign`` function drawing each game's arm uniformly from ``num_arms``."""

    def assign(games: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        if num_arms == 1:
            return torch.zeros_like(games)
        return torch.randint(0, num_arms, games.shape, generator=generator, device=games.device)

    assign.zeros_for_one_arm = True
    return assign


@dataclass
class EpisodeTable:
    """One row per finished episode (CPU tensors), in the order the episodes ended.

    Attributes:
        game: ``int64 [M]`` game index in the batch.
        arm: ``int64 [M]`` arm index (into ``arms``) the game was seated with.
        ego_seat: ``int64 [M]`` the arm's ego seat.
        sparse: ``float32 [M]`` team sparse return (20 per onion soup in Overcooked).
        shaped: ``float32 [M, n]`` base shaped return per seat.
        events: ``float32 [M, n, E]`` event counts per seat (``event_names`` order).
        arms: the arms (for labels and seatings).
        event_names: the env's event names.
    """

    game: torch.Tensor
    arm: torch.Tensor
    ego_seat: torch.Tensor
    sparse: torch.Tensor
    shaped: torch.Tensor
    events: torch.Tensor
    arms: list[Arm]
    event_names: tuple[str, ...]

    def __len__(self) -> int:
        return int(self.sparse.numel())

    @property
    def partner(self) -> list[str]:
        """Partner label of each episode's arm."""
        return [self.arms[int(a)].partner for a in self.arm]

    def to_frame(self) -> pd.DataFrame:
        """One row per episode: ``game, arm, seat, partner, sparse_return, shaped_<k>, ev_<k>_<event>``."""
        frame = pd.DataFrame(
            {
                "game": self.game.numpy(),
                "arm": self.arm.numpy(),
                "seat": self.ego_seat.numpy(),
                "partner": self.partner,
                "sparse_return": self.sparse.numpy(),
            }
        )
        for k in range(self.shaped.shape[1]):
            frame[f"shaped_{k}"] = self.shaped[:, k].numpy()
            for e, name in enumerate(self.event_names):
                frame[f"ev_{k}_{name}"] = self.events[:, k, e].numpy()
        return frame


class _Episodes:
    """Records each step's finished episodes without a host sync; the table is built once, at the end.

    :meth:`add` keeps references to the step's ``bool [B]`` record mask, the games' arms and the
    episode totals (the runner replaces these tensors every step instead of changing them in place),
    so recording is static-shape tensor work; :meth:`table` selects the recorded rows once, in the
    order the episodes ended (step, then game), as the per-step selection did.
    """

    def __init__(self) -> None:
        self.parts: list[tuple[torch.Tensor, ...]] = []

    def add(self, record: torch.Tensor, arm: torch.Tensor, sparse: torch.Tensor, shaped: torch.Tensor,
            events: torch.Tensor) -> None:  # fmt: skip
        """One step: ``record bool [B]``, ``arm int64 [B]``, ``sparse float32 [B]``, ``shaped
        float32 [B, n]``, ``events float32 [B, n, E]`` (not modified afterwards)."""
        self.parts.append((record, arm, sparse, shaped, events))

    def table(self, arms: list[Arm], event_names: tuple[str, ...], n: int, E: int) -> EpisodeTable:
        """The recorded episodes (host work: one selection per step that ended an episode)."""
        z = torch.zeros(0)
        empty = EpisodeTable(
            z.long(), z.long(), z.long(), z, torch.zeros(0, n), torch.zeros(0, n, E), arms, event_names
        )
        if not self.parts:
            return empty
        steps = torch.stack([p[0] for p in self.parts]).any(1).nonzero().squeeze(-1).tolist()
        if not steps:
            return empty
        cols: list[list[torch.Tensor]] = [[] for _ in range(5)]
        for t in steps:
            record, arm, sparse, shaped, events = self.parts[t]
            games = record.nonzero().squeeze(-1)
            arm = arm.index_select(0, games)
            picked = (games, arm, *(x.index_select(0, games) for x in (sparse, shaped, events)))
            for c, x in zip(cols, picked):
                c.append(x)
        game, arm, sparse, shaped, events = (torch.cat(c).cpu() for c in cols)
        ego_seat = torch.tensor([a.ego_seat for a in arms], dtype=torch.int64).index_select(0, arm)
        return EpisodeTable(game, arm, ego_seat, sparse, shaped, events, arms, event_names)


class StepHooks:
    """A learning core's part of each step of :meth:`EpisodeRunner.rollout` (override what it needs;
    the defaults do nothing). ``t`` is the step index in the rollout; ``N = B * n`` rows.

    Attributes:
        learners: the core's learners are actors ``0 .. learners - 1``.
        acts_for_learners: the core picks its learners' actions itself (in :meth:`act`: PQN's
            epsilon-greedy over one batched forward); otherwise they act through the runner with
            the other actors.
    """

    learners: int = 0
    acts_for_learners: bool = False

    def observe(self, t: int, s: Step, seating: Seating, starts: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor] | None:  # fmt: skip
        """Step t begins at ``s`` (s_t) with ``seating``; ``starts bool [N]`` marks episode starts.
        Store what the core keeps of s_t. Return ``(state float32 [N, hidden], log_probs float32
        [N])`` to have the runner write into them, for the learners' rows, each learner's recurrent
        state before acting and the log-probabilities of its actions (None: nothing recorded)."""
        return None

    def act(self, t: int, s: Step, seating: Seating, actions: torch.Tensor,
            generator: torch.Generator | None) -> torch.Tensor:  # fmt: skip
        """The actors have acted: ``actions int64 [N]`` (the learners' rows unset when
        :attr:`acts_for_learners`). Returns the actions to step the env with (draws from
        ``generator``, the runner's, come after the actors' own)."""
        return actions

    def stepped(self, t: int, step: Step, seating: Seating) -> None:
        """The env stepped: ``step`` holds r_t and the episode ends (``final_obs`` where games
        reset), ``seating`` is the seating that acted (before any re-seat)."""

    def advanced(self, t: int, s: Step, seating: Seating) -> None:
        """After step t: ``s`` is s_{t+1}, ``seating`` its seating (games that reset re-seated)."""


class EpisodeRunner:
    """Steps a batched env (``zsceval.envs.base`` protocol) with actors seated by arms.

    Args:
        env: the batched env (B games, n seats).
        actors: every actor by name, learners first; an actor whose ``act`` takes a ``member``
            argument (a policy pool) is given each row's member index.
        arms: the seatings games are assigned to.
        assign: ``(games int64 [k], generator) -> arm int64 [k]`` called at every episode start
            of the games ``games`` (default: uniform over ``arms``). An ``assign`` with the attribute
            ``zeros_for_one_arm = True`` promises to return zeros, drawing nothing, when there is one
            arm; the runner then never calls it after the reset of a one-arm run (see
            :attr:`static_seating`).
        generator: torch generator on ``device`` for action sampling and arm draws.
        device: device of the actors (default: the env's); observations are moved there.

    Raises:
        ValueError: bad arms (see :class:`~zsceval.rl.seating.ArmTable`).
    """

    def __init__(
        self,
        env,
        actors: dict,
        arms: Sequence[Arm],
        *,
        assign: Callable[[torch.Tensor, torch.Generator | None], torch.Tensor] | None = None,
        generator: torch.Generator | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        self.env = env
        self.env_device = torch.device(env.device)
        self.device = torch.device(device) if device is not None else self.env_device
        self.names = list(actors)
        self.actors = list(actors.values())
        self.B, self.n = env.num_envs, env.num_agents
        self.N = self.B * self.n
        self.E = len(env.event_names)
        self.arm_table = ArmTable(arms, self.names, self.n, self.device)
        self.assign = assign or uniform_assign(len(self.arm_table))
        self.generator = generator
        self.takes_member = ["member" in inspect.signature(a.act).parameters for a in self.actors]
        self.wants_states = [bool(getattr(a, "wants_states", False)) for a in self.actors]
        """Per actor: whether its ``act`` also takes ``game_states`` and ``seats`` (:meth:`game_states`)."""
        self.step_out: Step | None = None
        self.compiled_act: dict[int, Callable] = {}
        """Actor index -> ``torch.compile``'d ``act`` taking ``noise`` (:meth:`compile_acting`)."""

    @property
    def static_seating(self) -> bool:
        """Whether every game keeps its seating for good: one arm, and an ``assign`` that returns
        zeros for it without drawing. Then an episode end re-seats nothing, and a step of
        :meth:`act`, :meth:`env_step` and :meth:`finish_step` runs without a host synchronization
        (with a sync-free env step). Otherwise :meth:`finish_step` reads ``done.any()`` on the host
        and calls ``assign`` with the games that reset (population seatings), unless the env's
        games are in lockstep (``env.lockstep_timestep`` not None: Overcooked), where the host
        knows when every game's episode ends and re-seats all games then with no read."""
        return len(self.arm_table) == 1 and bool(getattr(self.assign, "zeros_for_one_arm", False))

    def set_arms(self, arms: Sequence[Arm]) -> None:
        """Replace the arms (e.g. a pool grew: COLE). Games keep their current arm until their next
        episode start, so the arms they hold must keep their index (append new arms at the end).

        Raises:
            ValueError: a game holds an arm index the new list does not have, or bad arms.
        """
        table = ArmTable(arms, self.names, self.n, self.device)
        if self.step_out is not None and int(self.game_arm.max()) >= len(table):
            raise ValueError(f"games hold arm {int(self.game_arm.max())}; the new list has {len(table)} arms")
        self.arm_table = table
        if self.step_out is not None:
            self._refresh_rows()

    # -- seating ------------------------------------------------------------------------------------
    def _seat(self, games: torch.Tensor | None) -> None:
        """Draw arms for ``games`` (all when None) and refresh each actor's rows."""
        if games is None:
            games = torch.arange(self.B, device=self.device)
            self.game_arm = torch.zeros(self.B, dtype=torch.int64, device=self.device)
        arm = self.assign(games, self.generator).to(self.device, torch.int64)
        if arm.numel() and (int(arm.min()) < 0 or int(arm.max()) >= len(self.arm_table)):
            raise ValueError(f"assign returned arms outside 0..{len(self.arm_table) - 1}")
        self.game_arm = self.game_arm.index_copy(0, games, arm)  # a new tensor: episode records keep the old
        self._refresh_rows()

    def _refresh_rows(self) -> None:
        self.seat_actor = self.arm_table.actor.index_select(0, self.game_arm)  # [B, n]
        self.seat_member = self.arm_table.member.index_select(0, self.game_arm)
        flat = self.seat_actor.reshape(-1)
        self.rows: list[torch.Tensor | None] = []
        for k in range(len(self.actors)):
            mask = flat == k
            self.rows.append(None if bool(mask.all()) else mask.nonzero().squeeze(-1))
        # one member tensor per actor and seating: a pool keeps its grouping while it is the same
        member = self.seat_member.reshape(-1)
        self.actor_member = [
            self.select(member, k) if takes else None for k, takes in enumerate(self.takes_member)
        ]
        for actor, m in zip(self.actors, self.actor_member):
            if m is not None and hasattr(actor, "group_rows"):
                actor.group_rows(m)

    def reset(self) -> None:
        """Reset every game, draw every game's arm, zero every recurrent state and total."""
        self.step_out = self._to_device(self.env.reset())
        self.starts = torch.ones(self.N, dtype=torch.bool, device=self.device)
        self.state = [a.initial_state(self.N, self.device) for a in self.actors]
        self.ep_sparse = torch.zeros(self.B, device=self.device)
        self.ep_shaped = torch.zeros(self.B, self.n, device=self.device)
        self.ep_events = torch.zeros(self.B, self.n, self.E, device=self.device)
        self._seat(None)

    def _to_device(self, s: Step) -> Step:
        if self.device == self.env_device:
            return s
        moved = {
            f.name: (v.to(self.device) if isinstance(v, torch.Tensor) else v)
            for f in fields(s)
            for v in [getattr(s, f.name)]
        }
        infos = s.infos.items()
        moved["infos"] = {k: v.to(self.device) if isinstance(v, torch.Tensor) else v for k, v in infos}
        return Step(**moved)

    # -- acting -------------------------------------------------------------------------------------
    def select(self, x: torch.Tensor, k: int) -> torch.Tensor:
        """Rows of actor k of a ``[N, ...]`` tensor."""
        rows = self.rows[k]
        return x if rows is None else x.index_select(0, rows)

    def put(self, dst: torch.Tensor, k: int, src: torch.Tensor) -> None:
        """Write actor k's rows ``src`` into ``dst [N, ...]``."""
        rows = self.rows[k]
        if rows is None:
            dst.copy_(src)
        else:
            dst.index_copy_(0, rows, src)

    def active(self, k: int) -> bool:
        """Whether actor k drives any row now."""
        rows = self.rows[k]
        return rows is None or rows.numel() > 0

    def per_actor(
        self, actors: int, fn: Callable[..., tuple[torch.Tensor, ...]],
        inputs: Sequence[torch.Tensor | list[torch.Tensor] | None],
        outputs: Sequence[torch.Tensor | list[torch.Tensor] | None],
    ) -> None:  # fmt: skip
        """Run ``fn`` on the rows of each of the actors ``0 .. actors - 1`` that drives any row now.

        ``fn(k, every_row, *rows)`` gets actor k, whether it drives every row (static shapes), and
        its rows of each input: of a ``[N, ...]`` tensor, of ``inputs[i][k]`` for a list (one
        ``[N, ...]`` tensor per actor), or None for None. Its i-th result is written into actor k's
        rows of ``outputs[i]`` (``outputs[i][k]`` for a list; None: dropped). No host read.
        """

        def rows_of(x, k: int):
            if x is None:
                return None
            return self.select(x[k] if isinstance(x, list) else x, k)

        for k in range(actors):
            if not self.active(k):
                continue
            results = fn(k, self.rows[k] is None, *(rows_of(x, k) for x in inputs))
            for dst, src in zip(outputs, results):
                if dst is not None:
                    self.put(dst[k] if isinstance(dst, list) else dst, k, src)

    @torch.no_grad()
    def act(
        self, deterministic: bool = False, on_actor=None, skip: frozenset[int] = frozenset()
    ) -> torch.Tensor:
        """Every actor acts on its rows of the current observation: ``int64 [N]`` actions.

        ``on_actor(k, state_before [R, ...], log_probs [R])`` is called for each active actor (the
        trainer stores what learners need for their update). Actors in ``skip`` do not act; their
        rows' actions are left for the caller to fill (the value-based core acts for its learners
        in one batched forward).
        """
        s = self.step_out
        obs = s.obs.reshape(self.N, *s.obs.shape[2:])
        avail = s.avail_actions.reshape(self.N, -1)
        actions = torch.empty(self.N, dtype=torch.int64, device=self.device)
        for k, actor in enumerate(self.actors):
            if k in skip or not self.active(k):
                continue
            h = self.select(self.state[k], k)
            compiled = self.compiled_act.get(k) if self.rows[k] is None and not deterministic else None
            if compiled is not None:  # the draws sample_actions would take, as an input
                noise = torch.rand(self.N, avail.shape[-1], generator=self.generator, device=self.device)
                out = compiled(obs, avail, h, self.starts, noise=noise)
            else:
                kw = {"member": self.actor_member[k]} if self.takes_member[k] else {}
                if self.wants_states[k]:
                    kw["game_states"], kw["seats"] = self.game_states(k)
                    kw["layout"] = self.env.layout
                out = actor.act(
                    self.select(obs, k), self.select(avail, k), h, self.select(self.starts, k),
                    generator=self.generator, deterministic=deterministic, **kw,
                )  # fmt: skip
            self.put(actions, k, out.actions)
            if on_actor is not None:  # before the state is overwritten: ``h`` may be a view of it
                on_actor(k, h, out.log_probs)
            self.put(self.state[k], k, out.state)
        return actions

    def game_states(self, k: int) -> tuple[list[dict], list[int]]:
        """The game state of each of actor k's rows now, for actors that read the game rather than
        the observation (an overcooked-ai ``Agent``, :class:`~zsceval.rl.external.OvercookedAIAgent`).

        Returns:
            ``(states, seats)``: per row, overcooked-ai's ``OvercookedState.to_dict()`` of its game
            (``env.export_state``, players in seat order; rows of one game share one dict) and the
            row's seat (player index) in it.

        Raises:
            ValueError: the env cannot export states (only Overcooked can).
        """
        export = getattr(self.env, "export_state", None)
        if not callable(export):
            raise ValueError(
                f"actor '{self.names[k]}' reads game states; {type(self.env).__name__} cannot export them "
                "(only the Overcooked env can)"
            )
        rows = torch.arange(self.N) if self.rows[k] is None else self.rows[k].cpu()
        games, slots = rows // self.n, rows % self.n
        if getattr(self.env, "randomize_seats", False):  # slot j of game b sits in seat seats[b, j]
            seats = self.env.state.seats.cpu()[games, slots]
        else:
            seats = slots
        exported = {g: export(g) for g in sorted(set(games.tolist()))}
        return [exported[g] for g in games.tolist()], seats.tolist()

    def compile_acting(self, backend: str = "inductor", mode: str | None = None) -> list[str]:
        """Compile each actor's ``act`` with ``torch.compile(fullgraph=True, dynamic=False)``
        (``run.compile: full``), for actors that act by :meth:`Policy.act
        <zsceval.rl.policy.Policy.act>` (the sampling draws become its ``noise`` input, drawn from
        the runner's generator exactly as the eager sampling draws them, so the actions are the
        same). Other actors (policy pools, value-based agents with their own noise) act eagerly.

        The compiled act runs when the actor drives every row (static shapes: self-play) and
        samples; otherwise (some rows, arg-max evaluation, policy pools) it acts eagerly.

        Args:
            backend: ``torch.compile`` backend (``inductor``; ``aot_eager`` in tests).
            mode: ``torch.compile`` mode, e.g. ``"reduce-overhead"`` (CUDA graphs; CUDA only).

        Returns:
            Notes naming the actors that stay eager.
        """
        notes = []
        for k, actor in enumerate(self.actors):
            if self.takes_member[k] or getattr(type(actor), "act", None) is not Policy.act:
                notes.append(f"run.compile=full: actor '{self.names[k]}' acts eagerly")
                continue
            self.compiled_act[k] = torch.compile(actor.act, fullgraph=True, dynamic=False, backend=backend,
                                                 mode=mode)  # fmt: skip
        return notes

    @property
    def seating(self) -> Seating:
        """The current seating (actor and member per seat, arm per game)."""
        return Seating(self.seat_actor, self.seat_member, self.game_arm)

    def env_step(self, actions: torch.Tensor) -> tuple[Step, Seating, torch.Tensor]:
        """Step the env with ``actions int64 [N]`` and account the episodes.

        Returns:
            ``(step, seating, done bool [B])``: the step (on the runner's device), the seating that
            acted in it (before any re-seat), and the games whose episode ended. Call
            :meth:`finish_step` after using them.
        """
        return self.account(self._to_device(self.env.step(actions.view(self.B, self.n).to(self.env_device))))

    def account(self, s: Step) -> tuple[Step, Seating, torch.Tensor]:
        """Add step ``s`` (this runner's games, on its device) to the episode totals; returns what
        :meth:`env_step` returns. For a caller that steps the games itself (a stacked phase steps
        its members' games as one batch)."""
        # new tensors, not in-place sums: the episode records of earlier steps hold the old ones
        self.ep_sparse = self.ep_sparse + s.reward
        self.ep_shaped = self.ep_shaped + s.shaped_by_agent
        self.ep_events = self.ep_events + s.events
        return s, self.seating, s.done

    def finish_step(
        self, s: Step, done: torch.Tensor, episodes: _Episodes | None, record: torch.Tensor | None = None
    ) -> None:
        """Record finished episodes, re-seat the games that reset, advance to the new observation.

        Recording and resetting the totals are masked tensor work over all games; with
        :attr:`static_seating` nothing here reads a tensor on the host.

        Args:
            s, done: from :meth:`env_step`.
            episodes: where finished episodes are recorded (None: nowhere).
            record: ``bool [B]`` which finished games to record (default: all of ``done``).
        """
        if episodes is not None:
            episodes.add(done if record is None else done & record, self.game_arm,
                         self.ep_sparse, self.ep_shaped, self.ep_events)  # fmt: skip
        keep = (~done).to(torch.float32)
        self.ep_sparse = self.ep_sparse * keep
        self.ep_shaped = self.ep_shaped * keep.unsqueeze(-1)
        self.ep_events = self.ep_events * keep.view(self.B, 1, 1)
        if not self.static_seating:
            clock = getattr(self.env, "lockstep_timestep", None)
            if clock is None:  # host sync: seating that needs Python
                if bool(done.any()):
                    self._seat(done.nonzero().squeeze(-1))
            else:  # games in lockstep: every episode ends together, known on the host
                ended = clock == 0
                torch._assert_async(done.all() if ended else ~done.any(),
                                    "the env's lockstep_timestep disagrees with its done flags")  # fmt: skip
                if ended:
                    self._seat(torch.arange(self.B, device=self.device))
        self.starts = done.unsqueeze(-1).expand(self.B, self.n).reshape(self.N)
        self.step_out = s

    # -- training -----------------------------------------------------------------------------------
    def seats_only(self, actors: int) -> bool:
        """Whether every arm seats only actors ``0 .. actors - 1`` (one host read)."""
        return bool((self.arm_table.actor < actors).all())

    @torch.no_grad()
    def rollout(self, T: int, hooks: StepHooks) -> _Episodes:
        """Play T steps from the current state (a rollout), a learning core storing its part of each
        step through ``hooks``; returns the records of the episodes that ended (:meth:`table`).

        Each step t: the core observes s_t (:meth:`StepHooks.observe`), every actor acts on its
        rows (:meth:`act`; the learners' states and log-probabilities recorded where the core asks),
        the core completes the actions (:meth:`StepHooks.act`), the env steps (:meth:`env_step`),
        the core stores the reward and the ends (:meth:`StepHooks.stepped`), the runner records the
        finished episodes, re-seats the games that reset and advances (:meth:`finish_step`), and
        the core sees s_{t+1} (:meth:`StepHooks.advanced`). With :attr:`static_seating` and hooks
        that read no tensor on the host, no op here does (tests/rl/test_sync_free_rollout.py).
        """
        episodes = _Episodes()
        L = hooks.learners
        skip = frozenset(range(L)) if hooks.acts_for_learners else frozenset()
        record: tuple[torch.Tensor, torch.Tensor] | None = None

        def on_actor(k: int, h: torch.Tensor, logp: torch.Tensor) -> None:
            if k < L:
                self.put(record[0], k, h)
                self.put(record[1], k, logp)

        for t in range(T):
            s, seating = self.step_out, self.seating
            record = hooks.observe(t, s, seating, self.starts)
            actions = self.act(on_actor=None if record is None else on_actor, skip=skip)
            actions = hooks.act(t, s, seating, actions, self.generator)
            s2, seating, done = self.env_step(actions)
            hooks.stepped(t, s2, seating)
            self.finish_step(s2, done, episodes)
            hooks.advanced(t, self.step_out, self.seating)
        return episodes

    def table(self, episodes: _Episodes) -> EpisodeTable:
        """The episode table of ``episodes`` (host work, once per rollout or match)."""
        return episodes.table(self.arm_table.arms, tuple(self.env.event_names), self.n, self.E)

    # -- evaluation ---------------------------------------------------------------------------------
    @torch.no_grad()
    def play(self, deterministic: bool = False, max_steps: int | None = None) -> EpisodeTable:
        """Reset, then play until every game has finished one episode; one table row per game.

        Games are seated by ``assign`` at the reset (e.g. a fixed arm per game); games that finish
        early keep stepping (their later episodes are not recorded).

        Raises:
            RuntimeError: not every game finished within ``max_steps`` (default 100 * horizon).
        """
        self.reset()
        episodes = _Episodes()
        finished = torch.zeros(self.B, dtype=torch.bool, device=self.device)
        limit = max_steps if max_steps is not None else 100 * int(self.env.horizon)
        for _ in range(limit):
            s, _, done = self.env_step(self.act(deterministic))
            self.finish_step(s, done, episodes, record=~finished)
            finished |= done
            if bool(finished.all()):
                break
        else:
            raise RuntimeError(f"not every game finished an episode within {limit} steps")
        table = self.table(episodes)
        order = torch.argsort(table.game)
        for f in ("game", "arm", "ego_seat", "sparse", "shaped", "events"):
            setattr(table, f, getattr(table, f)[order])
        return table

    # -- resumable state ------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Everything needed to continue exactly: env state, last step, states, seating, totals."""
        s = self.step_out
        return {
            "env": self.env.state_dict(),
            "step": {f.name: getattr(s, f.name) for f in fields(s) if getattr(s, f.name) is not None},
            "starts": self.starts,
            "state": list(self.state),
            "game_arm": self.game_arm,
            "ep_sparse": self.ep_sparse,
            "ep_shaped": self.ep_shaped,
            "ep_events": self.ep_events,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` (tensors are moved to the runner's device)."""
        d = self.device
        self.env.load_state_dict(state["env"])
        step = {k: v.to(d) if isinstance(v, torch.Tensor) else v for k, v in state["step"].items()}
        self.step_out = Step(**step)
        self.starts = state["starts"].to(d)
        self.state = [h.to(d) for h in state["state"]]
        self.game_arm = state["game_arm"].to(d)
        self.ep_sparse = state["ep_sparse"].to(d)
        self.ep_shaped = state["ep_shaped"].to(d)
        self.ep_events = state["ep_events"].to(d)
        self._refresh_rows()
