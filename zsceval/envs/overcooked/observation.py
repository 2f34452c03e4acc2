"""Lossless per-agent observations (ZSC-Eval's "ppo" featurization, our dtype and axis order).

Observations are ``uint8 [B, n, H, W, C]`` (a channels-last view of a channels-first buffer;
``obs.permute(0, 1, 4, 2, 3)`` is contiguous ``[B, n, C, H, W]`` for a CNN). Values are the
integer plane values of the reference encoders, *not* multiplied by 255.

Classic layouts (``CLASSIC_CHANNELS``, 20 planes; docs/overcooked-rules.md §4.2, with the held-type
overwrite bug of §4.3 fixed, i.e. §5.8): ::

     0 ego location              1 other players' locations
     2-5 ego facing N, S, E, W   6-9 others facing N, S, E, W
    10 pots  11 counters  12 onion dispensers  13 dish dispensers  14 serving windows
    15 ingredients in a pot soup (1-3)
    16 cooking ticks elapsed of a pot soup (0 while idle, 1..cook_time)
    17 soups not in a pot (held or on a counter)   18 dishes (held or loose)   19 onions

Multi-recipe layouts (``MULTI_RECIPE_CHANNELS``, 25 planes; docs/overcooked-rules.md §5.7): ::

     0-9 as above   10 pots  11 counters  12 onion disp.  13 tomato disp.  14 dish disp.  15 serving
    16 onions in an idle pot soup        17 tomatoes in an idle pot soup
    18 onions in a cooking/ready/off-pot soup   19 tomatoes in such a soup
    20 cook ticks remaining of such a soup (0 when ready)
    21 dishes  22 onions  23 tomatoes  24 urgency (all ones iff horizon - timestep < 40)

Partial observability (``view_radius`` r > 0; the partially observable setting of TBS, paper
Sec. 4.1 "fully and partially observable conditions"): agent k sees only the cells within
Chebyshev distance r of its own cell, the (2r+1) x (2r+1) square centred on it. The observation
keeps its ``[H, W, C]`` shape and allocentric frame; in every *local* plane the cells outside the
window are zero. Local planes are those that describe what moves: the other players' locations
and facings (1, 6-9) and every object plane (classic 15-19, multi-recipe 16-23). Kept whole:
the ego's own location and facing (0, 2-5: it always knows where it is), the layout-constant
terrain planes (classic 10-14, multi-recipe 10-15: the map, which a policy trained on one layout
knows anyway) and the multi-recipe urgency plane 24 (a clock, not a cell property). Held objects
are drawn on the holder's cell, so the partner's held item disappears with the partner. r = 0 means
fully observable (the default); r >= max(H, W) - 1 masks nothing. JaxMARL's OvercookedV2
``agent_view_size`` crops an egocentric window instead; see docs/differences.md
("Partially observable Overcooked").
"""

from __future__ import annotations

import torch

from .constants import OBJ, TERRAIN
from .state import State
from .tables import Tables

CLASSIC_CHANNELS = (
    "ego_loc", "other_loc",
    "ego_north", "ego_south", "ego_east", "ego_west",
    "other_north", "other_south", "other_east", "other_west",
    "pot_loc", "counter_loc", "onion_disp_loc", "dish_disp_loc", "serve_loc",
    "onions_in_pot", "onions_cook_time", "onion_soup_loc", "dishes", "onions",
)  # fmt: skip

MULTI_RECIPE_CHANNELS = (
    "ego_loc", "other_loc",
    "ego_north", "ego_south", "ego_east", "ego_west",
    "other_north", "other_south", "other_east", "other_west",
    "pot_loc", "counter_loc", "onion_disp_loc", "tomato_disp_loc", "dish_disp_loc", "serve_loc",
    "onions_in_pot", "tomatoes_in_pot", "onions_in_soup", "tomatoes_in_soup",
    "soup_cook_time_remaining", "dishes", "onions", "tomatoes", "urgency",
)  # fmt: skip

NUM_PLAYER_CHANNELS = 10
URGENCY_STEPS = 40


class Encoder:
    """Builds observations for one layout; holds the static (terrain) planes on the device.

    Args:
        T: the layout's device tables.
        height, width: H, W of the grid.
        multi: multi-recipe encoding (25 planes) instead of classic (20).
        horizon: episode length (for the multi-recipe urgency plane).
        view_radius: r, the Chebyshev radius of each agent's view (module docstring); 0 = fully
            observable.

    Raises:
        ValueError: ``view_radius`` is not an integer >= 0.
    """

    def __init__(self, T: Tables, height: int, width: int, multi: bool, horizon: int, view_radius: int = 0):
        self.T, self.H, self.W, self.multi, self.horizon = T, height, width, multi, horizon
        if isinstance(view_radius, bool) or int(view_radius) != view_radius or view_radius < 0:
            raise ValueError(
                f"view_radius must be an integer >= 0 (0 = fully observable), got {view_radius!r}"
            )
        self.view_radius = int(view_radius)
        self.channels = MULTI_RECIPE_CHANNELS if multi else CLASSIC_CHANNELS
        kinds = (
            (TERRAIN.POT, TERRAIN.COUNTER, TERRAIN.ONION_DISPENSER, TERRAIN.TOMATO_DISPENSER,
             TERRAIN.DISH_DISPENSER, TERRAIN.SERVE)
            if multi
            else (TERRAIN.POT, TERRAIN.COUNTER, TERRAIN.ONION_DISPENSER, TERRAIN.DISH_DISPENSER,
                  TERRAIN.SERVE)
        )  # fmt: skip
        self.static = torch.stack([(T.terrain == k) for k in kinds]).to(torch.uint8)  # [S, HW]
        self.off_pot = ~T.is_pot  # bool [HW]
        self.num_static = len(kinds)
        self._index_cache: dict = {}
        # Planes zeroed outside the view window, as [lo, hi) channel ranges (module docstring).
        first_object = NUM_PLAYER_CHANNELS + self.num_static
        last_object = len(self.channels) - (1 if multi else 0)  # urgency is global
        self.local_channels = ((1, 2), (6, NUM_PLAYER_CHANNELS), (first_object, last_object))
        self.window = view_window(height, width, self.view_radius, T.terrain.device)

    @property
    def num_channels(self) -> int:
        return len(self.channels)

    def __call__(self, state: State) -> torch.Tensor:
        """Observations of every player, in player order.

        Returns:
            ``uint8 [B, n, H, W, C]`` (non-contiguous channels-last view).
        """
        B, n = state.pos.shape
        HW, C = self.H * self.W, self.num_channels
        # One zeroed allocation; only non-zero entries are written below.
        buf = torch.zeros(B, n * C * HW, dtype=torch.uint8, device=state.pos.device)
        buf.scatter_(1, self._player_index(state), 1)
        buf = buf.view(B, n, C, HW)
        s0 = NUM_PLAYER_CHANNELS
        buf[:, :, s0 : s0 + self.num_static] = self.static
        # Object planes are the same for every perspective: build them in perspective 0, copy.
        objects = buf[:, 0, s0 + self.num_static :]
        self._objects(state, objects)
        buf[:, 1:, s0 + self.num_static :] = objects[:, None]
        return buf.view(B, n, C, self.H, self.W).permute(0, 1, 3, 4, 2)

    def restrict(self, obs: torch.Tensor, state: State) -> torch.Tensor:
        """Each agent's partial view of full observations (module docstring, "Partial observability").

        Args:
            obs: ``uint8 [B, n, H, W, C]`` full observations of ``state`` in *player* order, as
                returned by ``__call__``.
            state: the state they encode (its ``pos`` centres each player's window).

        Returns:
            ``obs`` itself when ``view_radius`` is 0; otherwise a new tensor of the same shape,
            dtype and strides whose local planes are zero outside each player's window.
        """
        if self.window is None:
            return obs
        B, n = state.pos.shape
        keep = self.window.index_select(0, state.pos.reshape(-1)).view(B, n, 1, self.H, self.W)
        # Work on channels-first views (contiguous for encoder output): planes are whole blocks.
        src = obs.permute(0, 1, 4, 2, 3)
        out = torch.empty_like(src)  # every byte is written once below
        done = 0
        for lo, hi in self.local_channels:
            out[:, :, done:lo].copy_(src[:, :, done:lo])
            # (`out=` into a strided view breaks torch.compile)
            out[:, :, lo:hi].copy_(src[:, :, lo:hi] * keep)
            done = hi
        out[:, :, done:].copy_(src[:, :, done:])
        return out.permute(0, 1, 3, 4, 2)

    def _player_index(self, state: State) -> torch.Tensor:
        """Flat indices ``int64 [B, 2 n^2]`` of the ones in channels 0-9 of ``[n, C, HW]``.

        Perspective k has its ego (player k) in the location plane 0 and facing planes 2-5, and
        every other player j in plane 1 and facing planes 6-9. Computed in a transposed
        ``[2 n^2, B]`` layout so that broadcasting runs along the long axis.
        """
        n = state.pos.shape[1]
        key = (n, state.pos.device)
        if self._index_cache.get("key") != key:
            HW, C = self.H * self.W, self.num_channels
            pairs = [(k, j) for k in range(n) for j in range(n)]
            base = [(0 if k == j else 1) * HW + k * C * HW for k, j in pairs]
            base += [(2 if k == j else 6) * HW + k * C * HW for k, j in pairs]
            dev = state.pos.device
            self._index_cache = {
                "key": key,
                "select": torch.tensor([j for _, j in pairs] * 2, device=dev),
                "base": torch.tensor(base, device=dev)[:, None],
                "ori_scale": torch.tensor([0] * n * n + [HW] * n * n, device=dev)[:, None],
            }
        c = self._index_cache
        pos_t = state.pos.t().contiguous().index_select(0, c["select"])
        ori_t = state.ori.t().contiguous().index_select(0, c["select"])
        return (pos_t + ori_t * c["ori_scale"] + c["base"]).t().contiguous()

    def _objects(self, state: State, out: torch.Tensor) -> None:
        """Writes the object planes shared by every perspective into ``out`` (``uint8 [B, K, HW]``,
        zero on entry).

        Pot planes are computed on the P pot cells only; loose objects are compared on the grid;
        held objects are then written at the holders' cells (floor cells that hold no object).
        """
        T, obj = self.T, state.obj
        pots = T.pot_cells
        pot_soup = obj.index_select(1, pots) == OBJ.SOUP  # [B, P]
        seq = state.obj_seq.index_select(1, pots).long()
        tick = state.obj_tick.index_select(1, pots).long()
        held, pos = state.held, state.pos
        held_soup = held == OBJ.SOUP
        u8 = torch.uint8
        if not self.multi:
            # Soups in pots are described by planes 0-1, so plane 2 masks the pot cells (an
            # `index_fill_` on the strided plane fails torch 2.11's compile; held soups are on floor).
            for ch, kind in ((2, OBJ.SOUP), (3, OBJ.DISH), (4, OBJ.ONION)):
                plane = (obj == kind) & self.off_pot if kind == OBJ.SOUP else obj == kind
                out[:, ch].copy_(plane)  # (`out=` into a strided view breaks torch.compile)
                out[:, ch].scatter_(1, pos, (held == kind).to(u8))
            out[:, 0].index_copy_(1, pots, torch.where(pot_soup, T.seq_len[seq], 0).to(u8))
            out[:, 1].index_copy_(1, pots, torch.where(pot_soup, tick.clamp(min=0), 0).to(u8))
            return
        idle = pot_soup & (tick < 0)
        cooked = pot_soup & ~idle
        onions, tomatoes = T.seq_onions[seq], T.seq_tomatoes[seq]
        remaining = (T.seq_time[seq] - tick).clamp(min=0)
        for ch, mask, value in ((0, idle, onions), (1, idle, tomatoes), (2, cooked, onions),
                                (3, cooked, tomatoes), (4, cooked, remaining)):  # fmt: skip
            out[:, ch].index_copy_(1, pots, torch.where(mask, value, 0).to(u8))
        # Soups off a pot (on counters or held) are ready: counts only, 0 ticks remaining.
        counters = T.counter_cells
        csoup = obj.index_select(1, counters) == OBJ.SOUP
        cseq = state.obj_seq.index_select(1, counters).long()
        out[:, 2].index_copy_(1, counters, torch.where(csoup, T.seq_onions[cseq], 0).to(u8))
        out[:, 3].index_copy_(1, counters, torch.where(csoup, T.seq_tomatoes[cseq], 0).to(u8))
        out[:, 2].scatter_(1, pos, torch.where(held_soup, T.seq_onions[state.held_seq], 0).to(u8))
        out[:, 3].scatter_(1, pos, torch.where(held_soup, T.seq_tomatoes[state.held_seq], 0).to(u8))
        for ch, kind in ((5, OBJ.DISH), (6, OBJ.ONION), (7, OBJ.TOMATO)):
            out[:, ch].copy_(obj == kind)
            out[:, ch].scatter_(1, pos, (held == kind).to(u8))
        urgent = (self.horizon - state.timestep) < URGENCY_STEPS
        out[:, 8].masked_fill_(urgent[:, None], 1)


def view_window(
    height: int, width: int, radius: int, device: torch.device | str = "cpu"
) -> torch.Tensor | None:
    """Which cells each cell sees: ``uint8 [HW, HW]``, entry ``[p, c]`` is 1 iff cell ``c`` lies
    within Chebyshev distance ``radius`` of cell ``p`` (flat indices ``y * W + x``), i.e. in the
    (2r+1) x (2r+1) square centred on ``p``. ``None`` for ``radius`` 0 (fully observable)."""
    if radius == 0:
        return None
    y, x = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    y, x = y.reshape(-1), x.reshape(-1)
    dist = torch.maximum((y[:, None] - y[None]).abs(), (x[:, None] - x[None]).abs())
    return (dist <= radius).to(torch.uint8).to(device)
