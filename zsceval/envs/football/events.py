"""Per-agent GRF events (pass, shot, catch, score, ...), as ZSC-Eval's StatsObserver counts them.

Source: docs/reference-protocol.md "Football" ("Events"); ZSC-Eval ``zsceval/envs/grf/stats_process.py:
StatsObserver.observe``. Differences from the reference (tracer cleared on reset, a goal credited
only on the step the score rises, optional per-step agent -> player mapping) are listed in
``docs/differences-grf-game.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .features import BALL_NO_OWNER, BALL_OWNED_BY_US, PASS_ACTIONS, SHOT, SLIDE

EVENT_NAMES: tuple[str, ...] = (
    "pass",
    "actual_pass",
    "shot",
    "slide",
    "catch",
    "assist",
    "possession",
    "score",
)
"""Column order of :meth:`EventTracker.observe`'s rows (the reference's ``SHAPED_INFOS``)."""

EV_PASS, EV_ACTUAL_PASS, EV_SHOT, EV_SLIDE, EV_CATCH, EV_ASSIST, EV_POSSESSION, EV_SCORE = range(8)


class EventTracker:
    """Counts the eight events of each controlled agent, one step at a time.

    Args:
        player_ids: agent slot -> left-team player index (``obs["active"]`` of each controlled
            player at reset), e.g. ``[0, 2, 3]``. Must be distinct non-negative ints. Used for
            every step unless :meth:`observe` is given the step's own ``active`` indices.

    The tracker keeps a *ball tracer*: one (team, player, game_mode, our_score, agent) entry for
    every step whose previous observation shows someone owning the ball (``agent`` is the slot
    controlling that player then, -1 if none). Per step (:meth:`observe`), with ``prev``/``next``
    the observations before/after the step:

    - *pass* / *shot* / *slide*: our controlled player owns the ball in ``prev`` and its agent
      chose a pass (LONG/HIGH/SHORT) / SHOT / SLIDE;
    - *possession*: +1 for the agent controlling the ball owner in ``prev``;
    - *catch* / *actual_pass*: controlled player B owns the ball in ``next`` and the last tracer
      entry is a different controlled teammate A: catch for B's agent, actual_pass for A's;
    - *score*: our score rose this step above the last tracer entry's score and that entry is a
      controlled player of ours: score for its agent;
    - *assist*: on such a score, walk back past the scorer's own consecutive entries; if the
      entry before them is another controlled player of ours, assist for its agent.

    gfootball re-assigns the controlled players during play (``active`` changes, e.g. the agent
    nearest the ball takes over the ball carrier); the reference keeps the reset mapping for
    the whole episode. Pass ``prev_active`` / ``next_active`` to map by the step's own
    ``active`` indices instead (what :class:`~zsceval.envs.football.game.FootballGame` does by
    default; see ``docs/differences-grf-game.md``).
    """

    def __init__(self, player_ids: Sequence[int]):
        ids = self._check_ids(player_ids, None)
        self.player_ids: tuple[int, ...] = ids
        self.num_agents = len(ids)
        self._slot = {p: i for i, p in enumerate(ids)}
        self.ball_tracer: list[tuple[int, int, int, int, int]] = []
        self.totals = np.zeros((self.num_agents, len(EVENT_NAMES)), dtype=np.int64)

    @staticmethod
    def _check_ids(player_ids: Sequence[int], n: int | None) -> tuple[int, ...]:
        ids = tuple(int(p) for p in np.asarray(player_ids).reshape(-1))
        if len(ids) == 0 or len(set(ids)) != len(ids) or min(ids) < 0 or (n is not None and len(ids) != n):
            want = "" if n is None else f" ({n} of them)"
            raise ValueError(
                f"player ids must be distinct non-negative left-team indices{want}, got {list(ids)}"
            )
        return ids

    def _slots(self, active: Sequence[int] | None) -> dict[int, int]:
        if active is None:
            return self._slot
        return {p: i for i, p in enumerate(self._check_ids(active, self.num_agents))}

    def reset(self) -> None:
        """Forget the ball tracer and the episode totals (call at every episode start)."""
        self.ball_tracer = []
        self.totals[:] = 0

    def observe(
        self,
        actions: Sequence[int] | np.ndarray,
        prev_obs: Mapping,
        next_obs: Mapping,
        prev_active: Sequence[int] | None = None,
        next_active: Sequence[int] | None = None,
    ) -> np.ndarray:
        """Count this step's events.

        Args:
            actions: int [num_agents], the actions taken, in agent-slot order (default action set).
            prev_obs: raw observation dict before the step (any controlled player's: only the
                global keys ``ball_owned_team``, ``ball_owned_player``, ``game_mode`` and
                ``score`` [2] are read).
            next_obs: the same after the step.
            prev_active, next_active: optional int [num_agents], each slot's ``obs["active"]``
                before / after the step; ``None`` uses the constructor's ``player_ids`` (the
                reference's behaviour).

        Returns:
            int16 [num_agents, 8], columns in :data:`EVENT_NAMES` order. Also added to
            :attr:`totals` (int64 [num_agents, 8], the episode's sums).

        Raises:
            ValueError: ``actions`` does not have one entry per agent, or bad active indices.
        """
        acts = np.asarray(actions).reshape(-1)
        if acts.shape[0] != self.num_agents:
            raise ValueError(
                f"actions has {acts.shape[0]} entries, expected {self.num_agents} (one per agent)"
            )
        prev_slot = self._slots(prev_active)
        next_slot = self._slots(next_active)
        ev = np.zeros((self.num_agents, len(EVENT_NAMES)), dtype=np.int16)

        team = int(prev_obs["ball_owned_team"])
        player = int(prev_obs["ball_owned_player"])
        my_score = int(prev_obs["score"][0])
        next_team = int(next_obs["ball_owned_team"])
        next_player = int(next_obs["ball_owned_player"])
        next_my_score = int(next_obs["score"][0])

        if team != BALL_NO_OWNER:
            a = prev_slot.get(player, -1) if team == BALL_OWNED_BY_US else -1
            self.ball_tracer.append((team, player, int(prev_obs["game_mode"]), my_score, a))
            if a >= 0:
                act = int(acts[a])
                if act in PASS_ACTIONS:
                    ev[a, EV_PASS] += 1
                elif act == SHOT:
                    ev[a, EV_SHOT] += 1
                elif act == SLIDE:
                    ev[a, EV_SLIDE] += 1
                ev[a, EV_POSSESSION] += 1

        if self.ball_tracer:
            last_team, last_player, _, last_score, last_agent = self.ball_tracer[-1]
            if (
                next_team == BALL_OWNED_BY_US
                and last_team == BALL_OWNED_BY_US
                and last_player != next_player
                and last_agent >= 0
                and next_player in next_slot
            ):
                ev[next_slot[next_player], EV_CATCH] += 1
                ev[last_agent, EV_ACTUAL_PASS] += 1

            if (
                next_my_score > my_score
                and next_my_score > last_score
                and last_team == BALL_OWNED_BY_US
                and last_agent >= 0
            ):
                ev[last_agent, EV_SCORE] += 1
                i = len(self.ball_tracer) - 2
                while (
                    i >= 0
                    and self.ball_tracer[i][0] == BALL_OWNED_BY_US
                    and self.ball_tracer[i][1] == last_player
                ):
                    i -= 1
                if i >= 0 and self.ball_tracer[i][0] == BALL_OWNED_BY_US and self.ball_tracer[i][4] >= 0:
                    ev[self.ball_tracer[i][4], EV_ASSIST] += 1

        self.totals += ev
        return ev

    def get_state(self) -> dict:
        """Picklable copy of the tracker's mutable state (for :meth:`FootballGame.get_state`)."""
        return {"ball_tracer": list(self.ball_tracer), "totals": self.totals.copy()}

    def set_state(self, state: Mapping) -> None:
        """Restore what :meth:`get_state` returned."""
        self.ball_tracer = list(state["ball_tracer"])
        self.totals = np.array(state["totals"], dtype=np.int64)
