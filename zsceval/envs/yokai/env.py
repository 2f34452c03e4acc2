"""``YokaiEnv``: B Yōkai games on the ``zsceval.envs.base.BatchedEnv`` protocol."""

from __future__ import annotations

from functools import cached_property
from types import SimpleNamespace
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
from .dynamics import EVENT_NAMES, apply, available_actions, final_reward, score
from .observe import channel_high, channel_names, graph_view, image, node_features
from .rules import Rules
from .state import YokaiState, deal
from .symmetry import YokaiSymmetries

__all__ = ["YokaiEnv"]


class YokaiEnv:
    """The Yōkai Learning Environment (YLE paper Sec. 2 and 4, App. B), batched in torch.

    Turn-based: one joint action per env step, of which only the current player's counts; the
    others' only available action is NOOP (0). Actions: :class:`~.rules.ActionLayout` (A = 1,068
    for 2-player 3x3). Observations: :mod:`.observe` (``uint8 [B, n, g, g + 1, F]``; the graph
    view through :meth:`graph_observation`). The critic sees every player's observation
    concatenated on the channel axis (``Step.critic_obs``; YLE App. C.2 "world state").

    Rewards: ``Step.reward`` ``float32 [B]`` is Eq. 3 on the step a game terminates (0 otherwise),
    attributed in ``sparse_by_agent`` to the player who ended it; ``shaped_by_agent`` carries the
    shaped training reward of Sec. 4 for the acting player (:mod:`.dynamics`).

    ``Step.infos`` (all with leading dim B, values of the game that ended this step, zero for the
    others): ``score`` (``float32``, Eq. 1 of games that terminated), ``win`` (``bool``, every
    colour one cluster at termination, Eq. 2), ``ended_early`` (``bool``, ended by END),
    ``clustered`` (``int64``, colours clustered at termination: NC), and for the state of ``obs``:
    ``current_player`` (``int64``) and ``timestep`` (``int64``, env steps since its game started).

    Games end by termination (END, or the last hint placed, at most ``8 |H|`` steps with
    available actions) or by truncation at ``horizon`` (only reachable with unavailable actions,
    which are ignored); finished games restart at once (``final_obs`` holds their last view).

    Args:
        num_envs: B >= 1.
        num_agents: players, 2..4 (YLE Table 4).
        version: ``"3x3"`` (9 cards, 3 colours, 9x9 field) or ``"4x4"`` (16, 4, 10x10).
        device: torch device of state and returned tensors.
        seed: seed of the env's ``generator`` (deals and hint draws).
        horizon: truncation length in env steps (default ``8 |H|``, the longest legal game).
        perfect_memory: observations show every card the observer ever peeked at (the paper's
            "-M" setting), not only this turn's.

    Raises:
        ValueError: an unknown version or player count (the valid ones listed), ``num_envs < 1``
            or ``horizon < 1``.
    """

    event_names = EVENT_NAMES

    def __init__(
        self,
        num_envs: int,
        num_agents: int = 2,
        version: str = "3x3",
        device: str | torch.device = "cpu",
        seed: int = 0,
        horizon: int | None = None,
        perfect_memory: bool = False,
    ) -> None:
        self.rules = Rules(version, int(num_agents))
        horizon = self.rules.max_game_length if horizon is None else int(horizon)
        for name, value in (("num_envs", num_envs), ("horizon", horizon)):
            if int(value) < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        self.num_envs, self.num_agents, self.horizon = int(num_envs), int(num_agents), horizon
        self.version, self.perfect_memory = version, bool(perfect_memory)
        # ``layout.name`` names the configuration in run records (the trainer and evaluation read it).
        self.layout = SimpleNamespace(name=f"yokai-{version}-{self.num_agents}p")
        self.device = torch.device(device)
        self.seed = int(seed)
        self.generator = torch.Generator(self.device).manual_seed(self.seed)
        self.num_actions = self.rules.actions.size
        g = self.rules.grid
        self.obs_channels = channel_names(self.rules)
        self.obs_shape = (g, g + 1, len(self.obs_channels))
        self.critic_obs_shape = (g, g + 1, len(self.obs_channels) * self.num_agents)
        self.state: YokaiState | None = None
        self._avail: torch.Tensor | None = None

    # ------------------------------------------------------------------ description
    @property
    def possible_agents(self) -> tuple[str, ...]:
        """``("agent_0", ..., "agent_{n-1}")``."""
        return agent_names(self.num_agents)

    @cached_property
    def single_observation_space(self):
        """``Box`` ``uint8 (g, g + 1, F)`` with the per-channel bounds of :mod:`.observe`."""
        return box_space(0, np.broadcast_to(channel_high(self.rules), self.obs_shape), torch.uint8)

    @cached_property
    def single_critic_observation_space(self):
        """``Box`` ``uint8 (g, g + 1, n F)``: the observation bounds once per player."""
        high = np.tile(channel_high(self.rules), self.num_agents)
        return box_space(0, np.broadcast_to(high, self.critic_obs_shape), torch.uint8)

    @cached_property
    def single_action_space(self):
        """``Discrete(A)`` (:class:`~.rules.ActionLayout`)."""
        return discrete_space(self.num_actions)

    def spec_dict(self) -> dict[str, Any]:
        """What a policy trained here observes and does (JSON-able)."""
        return {
            "env": "yokai",
            "layout": self.layout.name,
            "version": self.version,
            "perfect_memory": self.perfect_memory,
            "obs_shape": list(self.obs_shape),
            "obs_dtype": "uint8",
            "encoding": "yokai-image-v1",
            "obs_channels": list(self.obs_channels),
            "num_agents": self.num_agents,
            "num_actions": self.num_actions,
            "event_names": list(self.event_names),
        }

    def symmetries(self) -> YokaiSymmetries:
        """The game's symmetries for other-play (YLE Sec. 5.4, App. C.4): colour permutations
        ("C") and quarter-turns of the field ("R"), with their maps of states, observations,
        actions and masks (:class:`~.symmetry.YokaiSymmetries`; built once per env)."""
        if not hasattr(self, "_symmetries"):
            self._symmetries = YokaiSymmetries(self.rules)
        return self._symmetries

    # ------------------------------------------------------------------ stepping
    def _require_state(self) -> YokaiState:
        if self.state is None:
            raise RuntimeError("call reset() before step() (the env has no games yet)")
        return self.state

    def _zeros(self, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.zeros(*shape, dtype=dtype, device=self.device)

    def _observe(self, state: YokaiState) -> torch.Tensor:
        return image(node_features(state, self.rules, self.perfect_memory), state, self.rules)

    def graph_observation(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The graph view of the current state (YLE Sec. 4), for graph encoders.

        Returns:
            ``(adjacency bool [B, Y + H, Y + H], features uint8 [B, n, Y + H, F + 2])``
            (:func:`.observe.graph_view`).

        Raises:
            RuntimeError: before ``reset``.
        """
        state = self._require_state()
        return graph_view(node_features(state, self.rules, self.perfect_memory), state, self.rules)

    def reset(self) -> Step:
        """Deal B new games; zero rewards and events."""
        self.state = deal(self.rules, self.num_envs, self.device, self.generator)
        self._avail = available_actions(self.state, self.rules)
        return self._first_step()

    def _first_step(self) -> Step:
        """The ``Step`` observing ``self.state`` with nothing done yet (zero rewards and events)."""
        B, n = self.num_envs, self.num_agents
        no = self._zeros(B, dtype=torch.bool)
        return Step(
            obs=self._observe(self.state),
            avail_actions=self._avail,  # never written in place: every mask is a new tensor
            reward=self._zeros(B),
            sparse_by_agent=self._zeros(B, n),
            shaped_by_agent=self._zeros(B, n),
            events=self._zeros(B, n, len(self.event_names), dtype=torch.int16),
            interactions=self._zeros(B, n, dtype=torch.int64),
            interaction_cell=torch.full((B, n), -1, dtype=torch.int64, device=self.device),
            terminated=no,
            truncated=no.clone(),
            infos=self._infos(
                self.state, self._zeros(B), no.clone(), no.clone(), self._zeros(B, dtype=torch.int64)
            ),
        )

    def _check_actions(self, actions: Any) -> None:
        B, n = self.num_envs, self.num_agents
        if not isinstance(actions, torch.Tensor):
            raise ValueError(f"actions must be an int64 tensor [{B}, {n}], got {type(actions).__name__}")
        if tuple(actions.shape) != (B, n) or actions.dtype != torch.int64:
            raise ValueError(f"actions must be int64 [{B}, {n}], got {actions.dtype} {list(actions.shape)}")
        if bool(((actions < 0) | (actions >= self.num_actions)).any()):
            raise ValueError(f"actions must lie in 0..{self.num_actions - 1}")

    def _infos(self, state, s, win, early, clustered) -> dict[str, torch.Tensor]:
        return {
            "score": s,
            "win": win,
            "ended_early": early,
            "clustered": clustered,
            "current_player": state.current.clone(),
            "timestep": state.t.clone(),
        }

    def step(self, actions: torch.Tensor) -> Step:
        """Apply ``int64 [B, n]`` joint actions (see the class docstring); finished games restart.

        Raises:
            RuntimeError: before ``reset``.
            ValueError: actions not an int64 tensor ``[B, n]`` with values in ``0..A-1``.
        """
        state = self._require_state()
        self._check_actions(actions)
        actions = actions.to(self.device)
        B, n, C = self.num_envs, self.num_agents, self.rules.num_colours
        nxt, out = apply(state, self.rules, actions, self._avail)
        s, won, clustered, wrong = score(nxt, self.rules, out.clustered)
        terminated = out.terminated
        truncated = ~terminated & (nxt.t >= self.horizon)
        reward = torch.where(terminated, final_reward(s, won, clustered, wrong, out.ended_early, C), 0.0)
        actor = torch.nn.functional.one_hot(out.actor, n).to(torch.float32)
        done = terminated | truncated
        final_obs = None
        obs = self._observe(nxt)
        ended = done.nonzero().squeeze(1)
        if ended.numel():  # deal new games in the rows that ended (a masked select)
            fresh = deal(self.rules, ended.numel(), self.device, self.generator)
            nxt = nxt.replace_rows(ended, fresh)
            final_obs, obs = obs, obs.clone()
            obs[ended] = self._observe(fresh)
        self.state = nxt
        self._avail = available_actions(nxt, self.rules)
        return Step(
            obs=obs,
            avail_actions=self._avail,
            reward=reward,
            sparse_by_agent=actor * reward[:, None],
            shaped_by_agent=actor * out.shaped[:, None],
            events=out.events,
            interactions=self._zeros(B, n, dtype=torch.int64),
            interaction_cell=torch.full((B, n), -1, dtype=torch.int64, device=self.device),
            terminated=terminated,
            truncated=truncated,
            final_obs=final_obs,
            infos=self._infos(
                nxt,
                torch.where(terminated, s, 0.0),
                won & terminated,
                out.ended_early,
                torch.where(terminated, clustered, 0),
            ),
        )

    def set_state(self, state: YokaiState) -> Step:
        """Replace every game's state, e.g. by a hand-built position (tests, analyses, puzzles
        such as the paper's Fig. 7); the mask is recomputed.

        Args:
            state: a :class:`YokaiState` of B games of this configuration (tensors are copied to
                ``device``). The caller keeps it consistent: cards on distinct, connected cells,
                ``clusters`` matching the colours.

        Returns:
            A ``Step`` like ``reset``'s (zero rewards) observing the new state.

        Raises:
            ValueError: a field of another shape or dtype than this env's states.
        """
        like = deal(self.rules, self.num_envs, self.device, torch.Generator(self.device).manual_seed(0))
        fields = {k: restored_tensor(getattr(state, k), f"state.{k}", v) for k, v in like.tensors().items()}
        self.state = YokaiState(**fields)
        self._avail = available_actions(self.state, self.rules)
        return self._first_step()

    # ------------------------------------------------------------------ text picture
    def render(self, game: int = 0) -> str:
        """A text picture of one game with every colour shown (omniscient; for debugging).

        Cards are ``<colour letter><card id>`` (``a0``), lowercase when unlocked, uppercase with
        a hint on them; ``..`` is an empty cell. Below: the hints (colours, status) and the turn.

        Raises:
            RuntimeError: before ``reset``.
            IndexError: ``game`` outside ``0..B-1``.
        """
        state = self._require_state()
        if not 0 <= game < self.num_envs:
            raise IndexError(f"game {game} outside 0..{self.num_envs - 1}")
        g, letters = self.rules.grid, "abcd"
        pos, colour = state.pos[game].tolist(), state.colour[game].tolist()
        locked = state.locked[game].tolist()
        cells = [".." for _ in range(g * g)]
        for y, (p, c) in enumerate(zip(pos, colour, strict=True)):
            tag = f"{letters[c]}{y}"
            cells[p] = (tag.upper() if locked[y] else tag).ljust(3)[:3]
        rows = [" ".join(cell.ljust(3) for cell in cells[r * g : (r + 1) * g]) for r in range(g)]
        names = {1: "face down", 2: "face up", 3: "placed"}
        hints = [
            "".join(letters[c] for c in range(self.rules.num_colours) if shown[c])
            + f" ({names[int(st)]}{f' on {int(on)}' if int(st) == 3 else ''})"
            for shown, st, on in zip(
                state.hint_colours[game].tolist(), state.hint_status[game], state.hint_card[game], strict=True
            )
        ]
        turn = (
            f"player {int(state.current[game])}, phase {int(state.phase[game]) + 1}, t {int(state.t[game])}"
        )
        return "\n".join([*rows, "hints: " + ", ".join(hints), turn])

    # ------------------------------------------------------------------ save / restore
    def _config(self) -> dict[str, Any]:
        return {
            "num_envs": self.num_envs,
            "num_agents": self.num_agents,
            "version": self.version,
            "horizon": self.horizon,
            "perfect_memory": int(self.perfect_memory),
        }

    def state_dict(self) -> dict[str, Any]:
        """Everything the next steps depend on, for exact resume.

        Returns:
            ``{"env": "yokai", "config": {...}, "seed": int, "generator": uint8 CPU tensor,
            "state": {field: tensor copy} or {} before reset}``.
        """
        tensors = {} if self.state is None else {k: v.clone() for k, v in self.state.tensors().items()}
        return {
            "env": "yokai",
            "config": self._config(),
            "seed": self.seed,
            "generator": self.generator.get_state(),
            "state": tensors,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` output of a yokai env of the same config; continue with
        ``step``.

        Raises:
            ValueError: another env kind or config, or malformed entries (the env is unchanged).
        """
        if not isinstance(state, dict) or state.get("env") != "yokai":
            got = state.get("env") if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"not a yokai env state (env={got!r})")
        check_state_config(state, self._config(), "yokai")
        saved = state.get("state")
        if not isinstance(saved, dict):
            raise ValueError("yokai env state entry 'state' must be a dict")
        generator = torch.Generator(self.device)
        restore_generator(generator, state.get("generator"))
        restored = None
        if saved:
            like = deal(self.rules, self.num_envs, self.device, torch.Generator(self.device).manual_seed(0))
            fields = like.tensors()
            if set(saved) != set(fields):
                raise ValueError(f"yokai env state fields {sorted(saved)} != expected {sorted(fields)}")
            restored = YokaiState(
                **{k: restored_tensor(saved[k], f"state.{k}", v) for k, v in fields.items()}
            )
        self.generator, self.state = generator, restored
        self._avail = None if restored is None else available_actions(restored, self.rules)
