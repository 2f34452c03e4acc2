"""Scripted probe partners: the onion-passing partner of "Who is Helping Whom?" (Sec. 6.1) and its complement.

Biswas et al. probe whether a ZSC agent responds to a partner that initiates a known coordination
policy (Carroll et al. 2019's counter-circuit strategy, "Who is Helping Whom?", Fig. 1): "a scripted agent
performs the role of the green-hat chef, following only their side of the coordination policy
and putting onions on the counter"; the agent under test should pick the onions up, cook, plate
and serve. Every placement is a trigger action (Def. 4.2) and the share the agent does not accept
is the paper's Table 1 column "% not-trig-acc / trig".

:class:`ScriptedProbe` implements :class:`zsceval.rl.agent.Agent` from the observation tensor alone
(``uint8 [rows, H, W, C]``, channels named by ``env.obs_channels``); it is memoryless (state
``[rows, 0]``), deterministic, and registered as agent class ``"interdep_probe"`` (spec
``{"channels": [...], "role": ...}``). Roles:

* ``"onion_passer"`` (the paper's probe): fetch an onion from the nearest onion dispenser and put
  it on the nearest free *handover counter*, forever (it waits, holding an onion, while all are
  taken). A handover counter is a counter that the probe faces from one floor cell and the partner
  from another: on forced_coordination the middle counters x=2 (the partner's region is the
  other floor component), on counter_circuit the middle island (reachable from both sides). If
  there are none (cramped_room), any counter next to the partner's region.
* ``"supplier"``: as ``onion_passer``, and also passes a dish whenever a pot holds a cooking or
  ready soup and no dish is on a handover counter or in the partner's hands; it keeps one handover
  counter free for that dish. Needed where the partner cannot reach dishes (forced_coordination).
* ``"cook"``: the complementary side: takes onions (from dispensers or counters), fills pots that
  are not full, starts cooking (multi-recipe), takes a dish when a pot is cooking or ready, plates
  and serves. Paired with ``"supplier"`` on forced_coordination it completes soups.

Works on any layout where the handover is possible: forced_coordination (the RC layout of the
paper), counter_circuit (the paper's non-RC layout), asymmetric_advantages, coordination_ring,
cramped_room. The path planner is a BFS on the floor that treats the partner's cell as blocked; two
scripted agents can block each other in one-lane corridors (they then wait). Acting loops over rows
in Python (CPU, about 0.1 ms per row): meant for evaluation, not for training at scale.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from zsceval.envs.overcooked.constants import DIRECTIONS, Action
from zsceval.rl.agent import ActOutput, register_agent

__all__ = ["ScriptedProbe", "ROLES"]

ROLES = ("onion_passer", "supplier", "cook")
_TERRAIN = ("pot_loc", "counter_loc", "onion_disp_loc", "tomato_disp_loc", "dish_disp_loc", "serve_loc")


@register_agent("interdep_probe")
class ScriptedProbe(nn.Module):
    """Scripted Overcooked partner acting from observations (module docstring).

    Args:
        channels: observation channel names (``env.obs_channels``), classic or multi-recipe.
        role: one of :data:`ROLES`.

    Raises:
        ValueError: unknown role, or channels that are not an Overcooked encoding.
    """

    def __init__(self, channels: Sequence[str], role: str = "onion_passer") -> None:
        super().__init__()
        if role not in ROLES:
            raise ValueError(f"unknown probe role {role!r}; one of {ROLES}")
        self.channels = tuple(channels)
        need = {"ego_loc", "other_loc", "pot_loc", "counter_loc", "onion_disp_loc", "dish_disp_loc", "onions"}
        missing = need - set(self.channels)
        if missing:
            raise ValueError(f"not an Overcooked observation encoding: missing channels {sorted(missing)}")
        self.role = role
        self._ch = {name: i for i, name in enumerate(self.channels)}
        self.multi = "soup_cook_time_remaining" in self._ch

    @property
    def spec(self) -> dict[str, Any]:
        """JSON-able spec (checkpoint entry)."""
        return {"channels": list(self.channels), "role": self.role}

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> ScriptedProbe:
        """Rebuild from :attr:`spec`."""
        return cls(spec["channels"], spec.get("role", "onion_passer"))

    def initial_state(self, rows: int, device: torch.device | str) -> torch.Tensor:
        """``float32 [rows, 0]`` (memoryless)."""
        return torch.zeros(rows, 0, device=device)

    def act(
        self,
        obs: torch.Tensor,
        avail: torch.Tensor | None,
        state: torch.Tensor,
        starts: torch.Tensor,
        generator: torch.Generator | None = None,
        deterministic: bool = False,
    ) -> ActOutput:
        """Actions for N rows from ``obs uint8 [N, H, W, C]``; ``avail``, ``generator`` and
        ``deterministic`` are ignored (the probe is deterministic); ``log_probs`` are 0."""
        planes = obs.detach().to("cpu").numpy()
        actions = [self._act_one(planes[r]) for r in range(planes.shape[0])]
        a = torch.tensor(actions, dtype=torch.int64, device=obs.device)
        return ActOutput(a, torch.zeros(len(actions), device=obs.device), state)

    # ------------------------------------------------------------------ one row
    def _plane(self, o: np.ndarray, name: str) -> np.ndarray:
        i = self._ch.get(name)
        return np.zeros(o.shape[:2], dtype=np.int64) if i is None else o[..., i].astype(np.int64)

    def _act_one(self, o: np.ndarray) -> int:
        P = self._plane
        terrain = sum(P(o, n) for n in _TERRAIN) > 0
        floor = ~terrain
        ego = tuple(int(v) for v in np.argwhere(P(o, "ego_loc") > 0)[0])  # (y, x)
        others = [tuple(int(v) for v in c) for c in np.argwhere(P(o, "other_loc") > 0)]
        facing = DIRECTIONS[
            int(np.argmax([P(o, f"ego_{d}")[ego] for d in ("north", "south", "east", "west")]))
        ]

        onion, dish = P(o, "onions") > 0, P(o, "dishes") > 0
        tomato = P(o, "tomatoes") > 0
        pot, counter = P(o, "pot_loc") > 0, P(o, "counter_loc") > 0
        if self.multi:
            in_soup = P(o, "onions_in_soup") + P(o, "tomatoes_in_soup")
            idle_n = P(o, "onions_in_pot") + P(o, "tomatoes_in_pot")
            soup_off = (in_soup > 0) & ~pot
            pot_n = np.where(idle_n > 0, idle_n, in_soup) * pot
            pot_busy = pot & (in_soup > 0)  # cooking or ready
            pot_idle = pot & (idle_n > 0)
        else:
            soup_off = P(o, "onion_soup_loc") > 0
            pot_n = P(o, "onions_in_pot") * pot
            pot_busy = pot & (pot_n == 3) & (P(o, "onions_cook_time") > 0)
            pot_idle = pot & (pot_n > 0) & ~pot_busy
        held = "onion" if onion[ego] else "dish" if dish[ego] else "soup" if soup_off[ego] else None
        if held is None and tomato[ego]:
            held = "tomato"
        occupied = onion | dish | tomato | soup_off
        for c in [ego, *others]:
            occupied[c] = False  # held objects are drawn at the holder's cell

        dist = _bfs(floor, ego, set(others))
        other_regions = _component(floor, others[0]) if others else np.zeros_like(floor)
        my_region = _component(floor, ego)

        mine_counters, handover = _handover_counters(counter, my_region, other_regions)

        def go(targets: list) -> int | None:
            """Action towards the nearest target cell: turn/interact when adjacent, else a BFS step."""
            best = None
            for c in targets:
                for dx, dy in DIRECTIONS:
                    a = (c[0] - dy, c[1] - dx)  # the floor cell from which one faces c
                    if a in dist and (best is None or dist[a][0] < best[0]):
                        best = (dist[a][0], a, (dx, dy), dist[a][1])
            if best is None:
                return None
            _, a, d, first = best
            if a == ego:
                return Action.INTERACT if facing == d else DIRECTIONS.index(d)
            return first

        free_handover = [c for c in handover if not occupied[c]]
        onion_disp = [tuple(int(v) for v in c) for c in np.argwhere(P(o, "onion_disp_loc") > 0)]
        dish_disp = [tuple(int(v) for v in c) for c in np.argwhere(P(o, "dish_disp_loc") > 0)]
        cells = lambda m: [tuple(int(v) for v in c) for c in np.argwhere(m)]  # noqa: E731

        if self.role in ("onion_passer", "supplier"):
            dish_wanted = (
                self.role == "supplier"
                and pot_busy.any()
                and not any(dish[c] for c in handover)
                and not any(dish[c] for c in others)
            )
            free_counters = [c for c in mine_counters if not occupied[c]]
            return _or_stay(
                self._pass(go, held, dish_wanted, free_handover, free_counters, onion_disp, dish_disp)
            )

        # cook
        def loose(m):
            return [c for c in cells(m & counter) if c in mine_counters]

        open_pots = [c for c in cells(pot) if pot_n[c] < 3 and not pot_busy[c]]
        if held is None:
            if pot_busy.any():
                act = go(loose(dish) or dish_disp)
                if act is not None:
                    return act
            if self.multi:
                full_idle = [c for c in cells(pot_idle) if pot_n[c] == 3]
                if full_idle:
                    return _or_stay(go(full_idle))
            if open_pots:
                act = go(loose(onion) or onion_disp)
                if act is not None:
                    return act
            return Action.STAY
        if held in ("onion", "tomato"):
            return _or_stay(go(open_pots))
        if held == "dish":
            return _or_stay(go(cells(pot_busy)))
        return _or_stay(go(cells(P(o, "serve_loc") > 0)))

    def _pass(
        self,
        go,
        held: str | None,
        dish_wanted: bool,
        free_handover: list,
        free_counters: list,
        onion_disp: list,
        dish_disp: list,
    ) -> int | None:
        """The ``onion_passer`` / ``supplier`` step: fetch an onion (or a wanted dish) and put it on
        a free handover counter; anything else held goes to a free counter of its own region.
        ``go(cells)`` is the action towards the nearest cell (None: none reachable)."""
        if held is None:
            if dish_wanted and free_handover:
                return go(dish_disp)
            if self.role == "onion_passer" or len(free_handover) >= 2:
                return go(onion_disp)
            return None
        if held == "dish" or held == "onion":
            ok = (
                free_handover
                if held == "dish" or self.role == "onion_passer" or len(free_handover) >= 2
                else []
            )
            return go(ok)
        return go(free_counters)


def _access(cells: np.ndarray, region: np.ndarray) -> dict:
    """{target cell: [floor neighbours in region]}"""
    H, W = region.shape
    out = {}
    for y, x in np.argwhere(cells):
        nb = [
            (y + dy, x + dx)
            for dx, dy in DIRECTIONS
            if 0 <= y + dy < H and 0 <= x + dx < W and region[y + dy, x + dx]
        ]
        if nb:
            out[(int(y), int(x))] = nb
    return out


def _handover_counters(counter: np.ndarray, my_region: np.ndarray, other_region: np.ndarray):
    """``(mine, handover)``: the counters the probe can face (``{cell: [floor cells]}``) and the
    handover counters among them: faced by the partner's region from another floor cell; else
    any the partner's region faces too; else all of the probe's own."""
    mine_counters = _access(counter, my_region)
    partner_counters = _access(counter, other_region)
    handover = [
        c
        for c in mine_counters
        if c in partner_counters and any(a != b for a in mine_counters[c] for b in partner_counters[c])
    ]
    if not handover:
        handover = [c for c in mine_counters if c in partner_counters] or list(mine_counters)
    return mine_counters, handover


def _or_stay(action: int | None) -> int:
    return Action.STAY if action is None else int(action)


def _bfs(floor: np.ndarray, start: tuple, blocked: set) -> dict:
    """``{cell: (distance, first action)}`` over floor cells reachable from ``start`` (y, x)."""
    H, W = floor.shape
    out = {start: (0, Action.STAY)}
    q = deque([start])
    while q:
        c = q.popleft()
        d, first = out[c]
        for a, (dx, dy) in enumerate(DIRECTIONS):
            n = (c[0] + dy, c[1] + dx)
            if 0 <= n[0] < H and 0 <= n[1] < W and floor[n] and n not in blocked and n not in out:
                out[n] = (d + 1, a if c == start else first)
                q.append(n)
    return out


def _component(floor: np.ndarray, start: tuple) -> np.ndarray:
    """Boolean mask of the floor component containing ``start`` (players are not obstacles)."""
    mask = np.zeros_like(floor, dtype=bool)
    for c in _bfs(floor, start, set()):
        mask[c] = True
    return mask
