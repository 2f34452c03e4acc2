"""``OvercookedEnv``: B independent Overcooked games of one layout, stepped together on a device."""

from __future__ import annotations

from dataclasses import fields
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..base import (
    Step,
    agent_names,
    box_space,
    check_state_config,
    discrete_space,
    restore_generator,
    restored_tensor,
)
from . import dynamics
from .constants import Action
from .export import export_state, import_state
from .layout import Layout, load_layout
from .observation import Encoder
from .random_start import randomize_start
from .render import render_state
from .state import State
from .tables import build_tables

__all__ = ["OvercookedEnv", "resolve_device"]


def resolve_device(device: str | torch.device) -> torch.device:
    """``torch.device`` for ``device``; raises ``ValueError`` for an unknown device or if CUDA is
    asked for but absent."""
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise ValueError(
            f"unknown device {str(device)!r}; valid: cpu, cuda, cuda:N (e.g. cuda:1), mps"
        ) from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"device={str(device)!r} was requested but CUDA is not available "
            f"(torch {torch.__version__}, torch.cuda.is_available() is False); use device='cpu'."
        )
    return dev


class OvercookedEnv:
    """Batched Overcooked: ``num_envs`` games of one layout whose state lives on ``device``.

    Dynamics are ZSC-Eval's: the classic (OLD) onion dynamics for ``dynamics: classic`` layouts
    (docs/overcooked-rules.md §2-3) and the multi-recipe (NEW) dynamics otherwise (§5).
    ``step`` has no Python loop over games. Same seed, same trajectory.

    Args:
        layout: layout name or ZSC-Eval alias (``counter_circuit``, ``random3``), a path to a
            ``.layout`` file, or a :class:`Layout`.
        num_envs: B, the number of games.
        device: ``"cpu"``, ``"cuda"`` or a ``torch.device``.
        seed: seeds the generator of seat randomization and random starts.
        horizon: episode length in env steps (default: the layout's, 400).
        randomize_seats: at every reset, draw which seat (player) each agent slot drives,
            uniformly per game (ZSC-Eval ``random_index`` / ``agent_idx``). Everything in
            :class:`Step` is in slot order either way.
        random_start_prob: probability that a reset game starts from a random kitchen (items on
            counters, part-filled and ready pots) instead of the standard start; ZSC-Eval's
            ``random_start_prob`` (docs/overcooked-rules.md §5.9), a training-time exploration aid.
        view_radius: r; 0 (default) = fully observable. With r > 0 each agent observes only the
            cells within Chebyshev distance r of itself (TBS's partially observable setting, paper
            Sec. 4.1): the planes of the other players and of objects are zeroed outside that
            window; its own location/facing and the terrain stay whole (``observation`` module).
            ``obs`` and ``final_obs`` are partial, shapes and spaces are unchanged. The unmasked
            observations go to ``Step.infos["full_obs"]`` (and ``"final_full_obs"`` when
            ``final_obs`` is set) for a centralized critic (CTDE).

    Implements :class:`zsceval.envs.base.BatchedEnv`. ``Step.infos`` holds ``seats`` (``int64
    [B, n]``, the seat (player) each agent slot drives in the state that ``obs`` shows, i.e. after
    auto-reset) and ``timestep`` (``int64 [B]``, env steps since that state's episode started);
    with ``view_radius`` > 0 also ``full_obs`` and ``final_full_obs`` (``uint8 [B, n, H, W, C]``,
    like ``obs`` and ``final_obs`` but fully observable).

    Raises:
        ValueError: unknown layout (lists the valid names), malformed layout file, bad
            ``num_envs``/``horizon``, ``random_start_prob`` outside [0, 1], ``view_radius`` not an
            integer >= 0, or ``device="cuda"`` without CUDA.

    Example:
        >>> env = OvercookedEnv("counter_circuit", num_envs=4)
        >>> step = env.reset()
        >>> step = env.step(torch.full((4, 2), 4))  # everyone STAYs
    """

    num_actions = len(Action)

    @property
    def lockstep_timestep(self) -> int | None:
        """Every game's ``timestep``, known on the host, while all games are in lockstep; else None.

        Episodes end only at the horizon, so games reset together stay together: the host knows,
        without reading a tensor, that every game's episode ends in ``horizon - lockstep_timestep``
        steps (the runner re-seats population games then). It is 0 after :meth:`reset`,
        advances with every :meth:`step` and wraps at the horizon; after :meth:`load_state_dict` or
        :meth:`import_state` it is read from the state once (None when the games' timesteps differ).
        Changing ``env.state`` by hand bypasses it.
        """
        return self._clock

    def _read_clock(self) -> None:
        """Set the host clock from the state (one host read): its common timestep, or None."""
        t = None if self.state is None else self.state.timestep
        self._clock = int(t[0]) if t is not None and t.numel() and bool((t == t[0]).all()) else None

    def _tick(self) -> None:
        if self._clock is not None:
            self._clock = 0 if self._clock + 1 >= self.horizon else self._clock + 1

    def __init__(
        self,
        layout: str | Path | Layout,
        num_envs: int = 1,
        device: str | torch.device = "cpu",
        seed: int = 0,
        horizon: int | None = None,
        randomize_seats: bool = False,
        random_start_prob: float = 0.0,
        view_radius: int = 0,
    ):
        self.layout = load_layout(layout)
        if isinstance(num_envs, bool) or int(num_envs) != num_envs or int(num_envs) < 1:
            raise ValueError(f"num_envs must be a whole number >= 1, got {num_envs!r}")
        self.horizon = int(horizon if horizon is not None else self.layout.horizon)
        if self.horizon < 1:
            raise ValueError(f"horizon must be >= 1, got {horizon}")
        self.num_envs = int(num_envs)
        self.device = resolve_device(device)
        self.seed = seed
        self.randomize_seats = randomize_seats
        self.random_start_prob = float(random_start_prob)
        if not 0.0 <= self.random_start_prob <= 1.0:
            raise ValueError(f"random_start_prob must be in [0, 1], got {random_start_prob}")
        self.multi_recipe = self.layout.dynamics == "multi_recipe"
        self.tables = build_tables(self.layout, self.device)
        self.encoder = Encoder(
            self.tables,
            self.layout.height,
            self.layout.width,
            self.multi_recipe,
            self.horizon,
            view_radius,
        )
        self.view_radius = self.encoder.view_radius
        W = self.layout.width
        self._start_cells = [y * W + x for x, y in self.layout.start_positions]
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(seed)
        self.state: State | None = None
        self._clock: int | None = None
        self._compiled_step = None
        self._graph_starts: dict[int, tuple[State, torch.Tensor, torch.Tensor]] = {}

    # ------------------------------------------------------------------ description
    @property
    def num_agents(self) -> int:
        """n, the number of agents (players) per game."""
        return self.layout.num_players

    @property
    def event_names(self) -> tuple[str, ...]:
        """Names of the per-agent event counts in ``Step.events`` (ZSC-Eval order)."""
        return self.tables.event_names

    @property
    def obs_channels(self) -> tuple[str, ...]:
        """Name of each observation channel, by index (see ``observation`` module)."""
        return self.encoder.channels

    @property
    def obs_shape(self) -> tuple[int, int, int]:
        """``(H, W, C)`` of one agent's observation."""
        return (self.layout.height, self.layout.width, self.encoder.num_channels)

    @property
    def critic_obs_shape(self) -> tuple[int, int, int]:
        """``(H, W, n*C)`` of one agent's centralized-critic observation."""
        return (self.layout.height, self.layout.width, self.encoder.num_channels * self.num_agents)

    @property
    def possible_agents(self) -> tuple[str, ...]:
        """``("agent_0", ..., "agent_{n-1}")``: the agent slots (PettingZoo naming)."""
        return agent_names(self.num_agents)

    def _channel_high(self) -> np.ndarray:
        """``uint8 [C]`` largest value of each observation channel (see ``observation`` module)."""
        high = np.ones(self.encoder.num_channels, dtype=np.uint8)
        ingredients = int(self.tables.seq_len.max())
        ticks = int(self.tables.seq_time.max())
        if self.multi_recipe:
            high[16:20] = ingredients  # ingredient counts of pot and off-pot soups
            high[20] = ticks  # cook ticks remaining
        else:
            high[15] = ingredients  # ingredients in a pot soup
            high[16] = ticks  # cook ticks elapsed
        return high

    @cached_property
    def single_observation_space(self):
        """``gymnasium.spaces.Box`` of one agent's observation: ``uint8 (H, W, C)``, low 0, high per
        channel (1 for 0/1 planes, 3 for ingredient counts, the longest cook time for ticks)."""
        return box_space(0, np.broadcast_to(self._channel_high(), self.obs_shape), torch.uint8)

    @cached_property
    def single_critic_observation_space(self):
        """``Box`` of one agent's critic observation: ``uint8 (H, W, n*C)``, the per-channel bounds
        of :attr:`single_observation_space` repeated for each of the n encodings."""
        high = np.tile(self._channel_high(), self.num_agents)
        return box_space(0, np.broadcast_to(high, self.critic_obs_shape), torch.uint8)

    @cached_property
    def single_action_space(self):
        """``gymnasium.spaces.Discrete(6)``: 0 N, 1 S, 2 E, 3 W, 4 STAY, 5 INTERACT."""
        return discrete_space(self.num_actions)

    def spec_dict(self) -> dict:
        """JSON-able description of what a policy trained here observes and does.

        Checkpoints store it; a policy may be loaded into another env only if the specs match.
        """
        return {
            "env": "overcooked",
            "layout": self.layout.name,
            "dynamics": self.layout.dynamics,
            "obs_encoding": "multi-recipe-25" if self.multi_recipe else "classic-20",
            "obs_shape": list(self.obs_shape),
            "obs_channels": list(self.obs_channels),
            "critic_obs_shape": list(self.critic_obs_shape),
            "num_agents": self.num_agents,
            "num_actions": self.num_actions,
            "event_names": list(self.event_names),
            "horizon": self.horizon,
            # Only when partial, so that fully observable specs are unchanged.
            **({"view_radius": self.view_radius} if self.view_radius else {}),
        }

    # ------------------------------------------------------------------ stepping
    def _start_state(self, num_envs: int) -> State:
        start = State.start(self._start_cells, num_envs, self.layout.width * self.layout.height, self.device)
        if self.randomize_seats:
            draws = torch.rand(num_envs, self.num_agents, generator=self.generator, device=self.device)
            start.seats = draws.argsort(dim=1)
        if self.random_start_prob > 0:
            draws = torch.rand(num_envs, generator=self.generator, device=self.device)
            randomize_start(
                start, draws < self.random_start_prob, self.tables, self.multi_recipe, self.generator
            )
        return start

    def reset(self) -> Step:
        """Reset every game to a start state (standard, or random with ``random_start_prob``).

        Returns:
            A :class:`Step` with zero rewards and events and ``truncated`` all False.
        """
        self.state = self._start_state(self.num_envs)
        self._clock = 0
        B, n = self.num_envs, self.num_agents
        zeros = torch.zeros(B, n, device=self.device)
        return self._output(
            {
                "sparse": zeros,
                "shaped": zeros.clone(),
                "events": torch.zeros(B, n, len(self.event_names), dtype=torch.int16, device=self.device),
                "kind": torch.zeros(B, n, dtype=torch.int64, device=self.device),
                "cell": torch.full((B, n), -1, dtype=torch.int64, device=self.device),
            },
            torch.zeros(B, dtype=torch.bool, device=self.device),
            None,
            self.state.seats,
        )

    def check_actions(self, actions) -> torch.Tensor:
        """Validate a joint action; returns it as an int64 tensor on the env's device.

        Raises:
            ValueError: not an int64 tensor (or int64 numpy array) of shape ``[num_envs,
                num_agents]`` with values in 0..5.
        """
        if isinstance(actions, np.ndarray):
            actions = torch.from_numpy(actions)
        if not isinstance(actions, torch.Tensor):
            raise ValueError(
                f"actions must be an int64 torch tensor or int64 numpy array, got {type(actions).__name__}"
            )
        expected = (self.num_envs, self.num_agents)
        if tuple(actions.shape) != expected:
            raise ValueError(
                f"actions must have shape {list(expected)} [num_envs, num_agents], got {list(actions.shape)}"
            )
        if actions.dtype != torch.int64:
            raise ValueError(
                f"actions must have dtype int64 (torch.int64 or numpy int64), got {actions.dtype} "
                "(use .long() or .astype(np.int64))"
            )
        actions = actions.to(self.device)
        if actions.numel() and (int(actions.min()) < 0 or int(actions.max()) >= self.num_actions):
            raise ValueError(
                f"actions must be in 0..{self.num_actions - 1} (0 N, 1 S, 2 E, 3 W, 4 STAY, 5 INTERACT), "
                f"got values in [{int(actions.min())}, {int(actions.max())}]"
            )
        return actions

    def step(self, actions: torch.Tensor, *, observe: bool = True) -> Step:
        """Advance every game by one joint action.

        Args:
            actions: ``int64 [num_envs, num_agents]`` in agent-slot order, overcooked-ai's action
                indices (0 N, 1 S, 2 E, 3 W, 4 STAY, 5 INTERACT).
            observe: if False, skip building observations (``obs`` and ``final_obs`` are
                ``None``); for callers that only need rewards and events, and for benchmarks.

        Returns:
            A :class:`Step` for the post-transition state; games that hit the horizon are reset
            (their pre-reset observation is in ``final_obs``).

        Raises:
            ValueError: bad actions (the state is left unchanged).
            RuntimeError: ``reset`` was never called.
        """
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        if self._compiled_step is not None and observe:
            return self._step_compiled(actions)
        actions = self.check_actions(actions)
        state = self.state
        seats = state.seats
        if self.randomize_seats:
            actions = torch.empty_like(actions).scatter_(1, seats, actions)
        B = actions.shape[0]
        out, truncated = self._transition(state, actions)
        final = None
        if bool(truncated.any()):
            if observe:
                final = self._observe(state, seats)
            state.assign_where(truncated, self._start_state(B))
        self._tick()
        return self._output(out, truncated, final, seats, observe)

    def _transition(
        self, state: State, actions: torch.Tensor
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """Interact, move and cook every game of ``state`` in place (player-order ``actions``);
        returns the step's per-player outputs (``sparse``, ``shaped``, ``events``, ``kind``,
        ``cell``) and ``truncated bool [B]`` (the horizon reached, before any reset)."""
        B, n = actions.shape
        dev = actions.device
        out = {
            "sparse": torch.empty(B, n, device=dev),
            "shaped": torch.empty(B, n, device=dev),
            "events": torch.empty(B, n, len(self.event_names), dtype=torch.int16, device=dev),
            "kind": torch.empty(B, n, dtype=torch.int64, device=dev),
            "cell": torch.empty(B, n, dtype=torch.int64, device=dev),
        }
        dynamics.interact(state, actions, self.tables, out)
        dynamics.move(state, actions, self.tables, out)
        dynamics.cook(state, self.tables, auto_start=not self.multi_recipe)
        return out, state.timestep >= self.horizon

    def compile_step(self, backend: str = "inductor", mode: str | None = None) -> None:
        """From now on :meth:`step` runs :meth:`graph_step` compiled with ``torch.compile``
        (``fullgraph=True, dynamic=False``; ``run.compile: step``).

        The results are those of the eager step (tests: bit for bit); ``final_obs`` is then set on
        every step (read it where ``truncated``). Actions are checked for shape and dtype on the
        host and for their range with an asynchronous device assert (no host sync on CUDA). The
        first step compiles (about a minute on CPU). ``step(observe=False)`` stays eager.

        Args:
            backend: ``torch.compile`` backend (``inductor``; ``aot_eager`` in tests).
            mode: ``torch.compile`` mode, e.g. ``"reduce-overhead"`` (CUDA graphs) on CUDA.

        Raises:
            ValueError: seat randomization or random starts (see :meth:`graph_step`).
        """
        self._require_deterministic_starts("a compiled step")
        self._compiled_step = torch.compile(
            self.graph_step, fullgraph=True, dynamic=False, backend=backend, mode=mode
        )

    def _step_compiled(self, actions) -> Step:
        if isinstance(actions, np.ndarray):
            actions = torch.from_numpy(actions)
        expected = (self.num_envs, self.num_agents)
        well_formed = isinstance(actions, torch.Tensor) and tuple(actions.shape) == expected
        if not well_formed or actions.dtype != torch.int64:
            self.check_actions(actions)  # raises the eager step's message
        actions = actions.to(self.device)
        torch._assert_async(((actions >= 0) & (actions < self.num_actions)).all(), "actions must be in 0..5")
        out = self._compiled_step(self.state, actions)
        self._tick()
        infos = {"seats": self.state.seats.clone(), "timestep": self.state.timestep.clone()}
        if self.view_radius:
            infos["full_obs"], infos["final_full_obs"] = out["full_obs"], out["final_full_obs"]
        return Step(
            obs=out["obs"],
            avail_actions=out["avail_actions"],
            reward=out["reward"],
            sparse_by_agent=out["sparse_by_agent"],
            shaped_by_agent=out["shaped_by_agent"],
            events=out["events"],
            interactions=out["interactions"],
            interaction_cell=out["interaction_cell"],
            terminated=torch.zeros_like(out["truncated"]),
            truncated=out["truncated"],
            final_obs=out["final_obs"],
            infos=infos,
        )

    def graph_step(self, state: State, actions: torch.Tensor) -> dict[str, torch.Tensor]:
        """One step of every game as a function of tensors, for ``torch.compile``.

        The same transition as :meth:`step`, written so that it compiles to one graph with no
        host synchronization (``torch.compile(env.graph_step, fullgraph=True)``): no validation of
        ``actions``, no branch on whether a game ended, and the auto-reset as a masked select. The
        observation of every game's pre-reset state is returned as ``final_obs`` (read it where
        ``truncated``); the first observation after a reset is the start state's, computed once.

        Args:
            state: the env's :class:`State` (``env.state``), updated in place.
            actions: ``int64 [B, n]`` valid actions (0..5) in agent-slot order.

        Returns:
            ``obs uint8 [B, n, H, W, C]`` (post-reset), ``final_obs`` (pre-reset, every game),
            ``avail_actions bool [B, n, 6]``, ``reward float32 [B]``, ``sparse_by_agent`` and
            ``shaped_by_agent float32 [B, n]``, ``events int16 [B, n, E]``, ``interactions`` and
            ``interaction_cell int64 [B, n]``, ``truncated bool [B]``: the fields of :class:`Step`
            that :meth:`step` returns, for the same state and actions; with ``view_radius`` also
            ``full_obs`` and ``final_full_obs`` (its ``infos``).

        Raises:
            ValueError: seat randomization or random starts (their draws need the host
                generator); use :meth:`step`.
        """
        self._require_deterministic_starts("graph_step")
        B = actions.shape[0]
        out, truncated = self._transition(state, actions)
        final, final_full = self._observe(state, state.seats)
        start, start_obs, start_full = self._graph_start(B)
        state.assign_where(truncated, start)
        # uint8 arithmetic (exact modulo 256): torch.where is ~4x slower here on CPU
        reset = truncated.to(final.dtype).view(B, 1, 1, 1, 1)
        obs = final + (start_obs - final) * reset
        extra = {}
        if self.view_radius:
            extra = {"full_obs": final_full + (start_full - final_full) * reset, "final_full_obs": final_full}
        return {
            **extra,
            "obs": obs,
            "final_obs": final,
            "avail_actions": dynamics.available_actions(state, self.tables),
            "reward": out["sparse"].sum(1),
            "sparse_by_agent": out["sparse"],
            "shaped_by_agent": out["shaped"],
            "events": out["events"],
            "interactions": out["kind"],
            "interaction_cell": out["cell"],
            "truncated": truncated,
        }

    def _graph_start(self, num_envs: int) -> tuple[State, torch.Tensor, torch.Tensor]:
        """The standard start state of ``num_envs`` games and its observations (as seen, and fully
        observed), built once (cached outside any compiled graph; :meth:`graph_step`)."""
        if num_envs not in self._graph_starts:
            cells = self.layout.width * self.layout.height
            start = State.start(self._start_cells, num_envs, cells, self.device)
            self._graph_starts[num_envs] = (start, *self._observe(start, start.seats))
        return self._graph_starts[num_envs]

    def _require_deterministic_starts(self, what: str) -> None:
        """Raise ValueError naming ``what`` when resets draw seats or kitchens from the host
        generator (:meth:`graph_step`, :meth:`compile_step`)."""
        if self.randomize_seats or self.random_start_prob > 0:
            raise ValueError(
                f"{what} needs deterministic starts: randomize_seats=False and random_start_prob=0 "
                "(use step() without compile_step())"
            )

    def _observe(self, state: State, seats: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(obs, full_obs)`` of ``state`` in agent-slot order; the same tensor twice when fully
        observable."""
        full = self.encoder(state)
        if not self.view_radius:
            obs = self._to_slots(full, seats)
            return obs, obs
        return self._to_slots(self.encoder.restrict(full, state), seats), self._to_slots(full, seats)

    def _to_slots(self, x: torch.Tensor, seats: torch.Tensor) -> torch.Tensor:
        """Reorder dim 1 of a player-order tensor ``x [B, n, ...]`` into agent-slot order."""
        if not self.randomize_seats:
            return x
        index = seats.view(*seats.shape, *([1] * (x.dim() - 2))).expand(-1, -1, *x.shape[2:])
        return x.gather(1, index)

    def _output(self, out, truncated, final, seats, observe: bool = True) -> Step:
        state = self.state
        sparse = out["sparse"]
        obs, full = self._observe(state, state.seats) if observe else (None, None)
        infos = {"seats": state.seats.clone(), "timestep": state.timestep.clone()}
        if self.view_radius and observe:
            infos["full_obs"] = full
            if final is not None:
                infos["final_full_obs"] = final[1]
        return Step(
            obs=obs,
            avail_actions=self._to_slots(dynamics.available_actions(state, self.tables), state.seats),
            reward=sparse.sum(1),
            sparse_by_agent=self._to_slots(sparse, seats),
            shaped_by_agent=self._to_slots(out["shaped"], seats),
            events=self._to_slots(out["events"], seats),
            interactions=self._to_slots(out["kind"], seats),
            interaction_cell=self._to_slots(out["cell"], seats),
            terminated=torch.zeros_like(truncated),
            truncated=truncated,
            final_obs=None if final is None else final[0],
            infos=infos,
        )

    # ------------------------------------------------------------------ save / restore
    def _config(self) -> dict[str, Any]:
        return {
            "layout": self.layout.name,
            "grid": self.layout.grid_text,
            "num_envs": self.num_envs,
            "num_agents": self.num_agents,
            "horizon": self.horizon,
            "randomize_seats": bool(self.randomize_seats),
            "random_start_prob": self.random_start_prob,
            **({"view_radius": self.view_radius} if self.view_radius else {}),
        }

    def state_dict(self) -> dict[str, Any]:
        """Everything the next steps depend on, for exact resume.

        Returns:
            ``{"env": "overcooked", "config": {layout, grid, num_envs, num_agents, horizon,
            randomize_seats, random_start_prob[, view_radius if > 0]}, "seed": int, "generator":
            uint8 CPU tensor (the generator's ``get_state()``), "state": {field: tensor}}``.
            ``state`` holds copies of every :class:`State` tensor on ``device`` (positions,
            orientations, held and cell objects with their soups' ingredients, ticks and stamps,
            ``timestep``, ``seats``); it is absent before the first ``reset``.
        """
        out: dict[str, Any] = {
            "env": "overcooked",
            "config": self._config(),
            "seed": int(self.seed),
            "generator": self.generator.get_state(),
        }
        if self.state is not None:
            out["state"] = {f.name: getattr(self.state, f.name).clone() for f in fields(self.state)}
        return out

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` output, saved by an env of the same config (any seed).

        The next ``step`` continues the saved run bit-identically; do not call ``reset`` (it would
        start new episodes and advance the generator). Tensors are copied onto this env's device.

        Raises:
            ValueError: another env kind or config (each difference named), or missing or
                mis-shaped entries. The env is unchanged then.
        """
        if not isinstance(state, dict) or state.get("env") != "overcooked":
            got = state.get("env") if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"not an overcooked env state (env={got!r})")
        check_state_config(state, self._config(), "overcooked")
        saved_radius = state["config"].get("view_radius", 0)
        if saved_radius != self.view_radius:  # _config names view_radius only when > 0
            raise ValueError(
                f"overcooked env state was saved with another config: view_radius: saved "
                f"{saved_radius!r} != this env {self.view_radius!r}"
            )
        game = None
        if "state" in state:
            saved = state["state"]
            if not isinstance(saved, dict):
                raise ValueError("overcooked env state entry 'state' must be a dict of tensors")
            template = State.start(
                self._start_cells, self.num_envs, self.layout.width * self.layout.height, self.device
            )
            names = [f.name for f in fields(State)]
            missing = sorted(set(names) - set(saved))
            if missing:
                raise ValueError(f"overcooked env state is missing {missing}")
            game = State(**{k: restored_tensor(saved[k], f"state.{k}", getattr(template, k)) for k in names})
        generator = torch.Generator(device=self.device)
        restore_generator(generator, state.get("generator"))
        self.generator, self.state = generator, game
        self._read_clock()

    # ------------------------------------------------------------------ interop
    def export_state(self, i: int) -> dict:
        """Game ``i`` as overcooked-ai's ``OvercookedState.to_dict()`` (docs/overcooked-rules.md §6.3).

        Players are listed in seat (player) order, as in overcooked-ai.
        """
        self._require_state(i)
        return export_state(self.state, i, self.layout, self.tables)

    def import_state(self, i: int, state_dict: dict) -> None:
        """Load an overcooked-ai state dict into game ``i`` (seat order unchanged).

        Raises:
            ValueError: the dict is inconsistent with the layout (player off the floor, two
                objects on one cell, object on a floor cell, unknown object, a non-pot soup that
                is not ready, ...). Game ``i`` is unchanged then.
        """
        self._require_state(i)
        import_state(self.state, i, state_dict, self.layout, self.tables)
        self._read_clock()

    def render(self, i: int = 0) -> str:
        """A readable text picture of game ``i`` (see ``render`` module for the legend)."""
        self._require_state(i)
        return render_state(self.state, i, self.layout, self.tables)

    def _require_state(self, i: int) -> None:
        if self.state is None:
            raise RuntimeError("call reset() first")
        if not 0 <= i < self.num_envs:
            raise IndexError(f"game index {i} out of range for num_envs={self.num_envs}")
