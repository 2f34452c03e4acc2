"""The symmetries of a Yōkai game: colour permutations ("C") and quarter-turns of the field ("R").

Other-play (Hu et al. 2020) needs an env's symmetries: bijections of states, observations and
actions that leave the rules unchanged (YLE Sec. 5.4 and App. C.4: OP+C recolours, OP+C+R also
rotates). The env owns them (:meth:`YokaiEnv.symmetries`); :mod:`zsceval.algorithms.op` only
draws elements and applies these maps.

An element ``e`` of the product group G = S_C x Z_4 is an index ``e = rot * C! + perm``: ``perm``
indexes ``itertools.permutations(range(C))`` (0 the identity), ``rot`` the number of clockwise
quarter-turns of the g x g field about its centre, ``(row, col) -> (col, g - 1 - row)``. Applied
to a game:

* colour c becomes ``pi[c]`` (cards, hint cards, and the ``colour_*`` / ``hint_colour_*``
  observation channels);
* a card at cell p moves to ``R(p)``, and cards are *relabelled* so that the deal maps onto a
  deal: card y becomes card ``sigma[y]``, the card whose starting cell is ``R(start cell of y)``
  (card identities are public and the deal puts card y on the y-th cell of the centred square,
  so without the relabelling a rotated start would not be a start);
* hint indices, whose turn it is, the phase and the step count are unchanged.

Actions map accordingly: PEEK y -> PEEK sigma[y]; MOVE y to p -> MOVE sigma[y] to R(p); PLACE
hint h at p -> PLACE h at R(p); NOOP, REVEAL h and END are fixed (colours do not occur in
actions). These maps commute with the rules (``tests/envs/yokai/test_symmetry.py``): stepping the
mapped state with the mapped action gives the mapped result, with the same rewards and events,
and the mask of the mapped state is the mapped mask.
"""

from __future__ import annotations

import itertools

import torch

from .observe import channel_names
from .rules import Rules
from .state import YokaiState

__all__ = ["GROUP_NAMES", "YokaiSymmetries"]

GROUP_NAMES = {"C": "colour permutations", "R": "quarter-turns of the field"}


class YokaiSymmetries:
    """The symmetry group of one Yōkai configuration and its action on states, observations,
    actions and masks (YLE Sec. 5.4, App. C.4; see the module docstring for the maps).

    Every map takes a batch and an element per row (``e int64 [N]``) and runs on the batch's
    device (the tables are moved there once).

    Args:
        rules: the configuration (version, players).

    Attributes:
        groups: ``{"C": C!, "R": 4}``, the generating groups and their orders.
        size: |G| = C! x 4 (24 for 3x3, 96 for 4x4).
        colour_perm: ``int64 [|G|, C]`` new colour of colour c.
        card_perm: ``int64 [|G|, Y]`` new index sigma[y] of card y.
        cell_perm: ``int64 [|G|, g²]`` new cell of cell p.
        action_perm: ``int64 [|G|, A]`` the image of each action; ``action_inv`` its inverse.
        inverse: ``int64 [|G|]`` the element undoing each element.
    """

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        C, Y, g = rules.num_colours, rules.num_cards, rules.grid
        perms = list(itertools.permutations(range(C)))
        P = len(perms)
        self.groups = {"C": P, "R": 4}
        self.size = 4 * P
        rot_cells = [torch.arange(g * g)]
        for _ in range(3):  # one more clockwise quarter-turn: (r, c) -> (c, g - 1 - r)
            p = rot_cells[-1]
            r, c = p // g, p % g
            rot_cells.append(c * g + (g - 1 - r))
        start = rules.start_cells()
        slot = torch.full((g * g,), -1, dtype=torch.int64)
        slot[start] = torch.arange(Y)
        rot_cards = [slot[cells[start]] for cells in rot_cells]  # card whose start is R(start of y)
        if any(bool((s < 0).any()) for s in rot_cards):  # pragma: no cover - a rules invariant
            raise AssertionError("the starting square is not centred on the field")
        self.colour_perm = torch.tensor([perms[e % P] for e in range(self.size)], dtype=torch.int64)
        self.card_perm = torch.stack([rot_cards[e // P] for e in range(self.size)])
        self.cell_perm = torch.stack([rot_cells[e // P] for e in range(self.size)])
        inv_perm = [perms.index(tuple(sorted(range(C), key=lambda c, q=q: q[c]))) for q in perms]
        self.inverse = torch.tensor(
            [((4 - e // P) % 4) * P + inv_perm[e % P] for e in range(self.size)], dtype=torch.int64
        )
        self.action_perm = torch.stack([self._action_table(e) for e in range(self.size)])
        self.action_inv = self.action_perm.argsort(-1)
        self._obs_tables()
        self._cache: dict[tuple, torch.Tensor] = {}

    # ------------------------------------------------------------------ tables
    def _action_table(self, e: int) -> torch.Tensor:
        layout = self.rules.actions
        a = torch.arange(layout.size)
        kind, card, hint, cell = layout.decode(a)
        sigma, cells = self.card_perm[e], self.cell_perm[e]
        out = a.clone()
        peek = kind == 1
        out[peek] = layout.peek + sigma[card[peek]]
        move = kind == 2
        out[move] = layout.move + sigma[card[move]] * layout.cells + cells[cell[move]]
        place = kind == 4
        out[place] = layout.place + hint[place] * layout.cells + cells[cell[place]]
        return out

    def _obs_tables(self) -> None:
        """``obs_src [|G|, g (g + 1)]`` source cell of each image cell, ``chan_src [|G|, F]`` source
        channel of each channel, ``card_id_lut [|G|, Y + 1]`` new value of a ``card_id`` value."""
        rules = self.rules
        g, C = rules.grid, rules.num_colours
        names = channel_names(rules)
        width = g + 1
        obs_src, chan_src, lut = [], [], []
        for e in range(self.size):
            src = torch.arange(g * width)
            cells = self.cell_perm[e]  # field cell p goes to cells[p]
            p = torch.arange(g * g)
            src[(cells // g) * width + cells % g] = (p // g) * width + p % g
            obs_src.append(src)
            ch = torch.arange(len(names))
            inv = self.colour_perm[e].argsort()  # new colour c' shows old colour inv[c']
            for prefix in ("colour_", "hint_colour_"):
                first = names.index(f"{prefix}0")
                ch[first : first + C] = first + inv
            chan_src.append(ch)
            lut.append(torch.cat([torch.zeros(1, dtype=torch.int64), self.card_perm[e] + 1]))
        self.obs_src = torch.stack(obs_src)
        self.chan_src = torch.stack(chan_src)
        self.card_id_lut = torch.stack(lut).to(torch.uint8)
        self.card_id_channel = names.index("card_id")
        self.num_channels = len(names)

    def _on(self, name: str, device: torch.device) -> torch.Tensor:
        key = (name, str(device))
        if key not in self._cache:
            self._cache[key] = getattr(self, name).to(device)
        return self._cache[key]

    # ------------------------------------------------------------------ elements
    def elements(self, spec: str) -> torch.Tensor:
        """The elements of the subgroup ``spec`` generates.

        Args:
            spec: ``"C"`` (colour permutations, C! elements), ``"R"`` (rotations, 4) or ``"C+R"``
                (both, C! x 4); order and case of the parts do not matter.

        Returns:
            ``int64 [k]`` element indices, the identity (0) first.

        Raises:
            ValueError: an empty spec or an unknown part (the valid ones named).
        """
        parts = {p.strip().upper() for p in str(spec).split("+") if p.strip()}
        unknown = sorted(parts - set(self.groups))
        if not parts or unknown:
            valid = ", ".join(f"{k} ({v})" for k, v in GROUP_NAMES.items())
            raise ValueError(f"unknown Yokai symmetries {spec!r}; combine with '+': {valid}")
        P = self.groups["C"]
        perms = range(P) if "C" in parts else [0]
        rots = range(4) if "R" in parts else [0]
        return torch.tensor([r * P + q for r in rots for q in perms], dtype=torch.int64)

    # ------------------------------------------------------------------ maps
    def state(self, state: YokaiState, e: torch.Tensor) -> YokaiState:
        """The games of ``state`` seen through ``e`` (a new state; the input is not changed).

        Args:
            state: B games.
            e: ``int64 [B]`` element per game.
        """
        dev = state.pos.device
        e = e.to(dev)
        sigma = self._on("card_perm", dev)[e]  # [B, Y]
        cells = self._on("cell_perm", dev)[e]  # [B, g²]
        pi = self._on("colour_perm", dev)[e]  # [B, C]
        B, Y = state.pos.shape

        def relabel(x: torch.Tensor) -> torch.Tensor:  # card axis last: new[..., sigma[y]] = x[..., y]
            index = sigma.view(B, *([1] * (x.dim() - 2)), Y).expand_as(x)
            return torch.empty_like(x).scatter_(-1, index, x)

        hint_card = torch.where(state.hint_card >= 0, sigma.gather(1, state.hint_card.clamp(min=0)), -1)
        return YokaiState(
            pos=relabel(cells.gather(1, state.pos)),
            colour=relabel(pi.gather(1, state.colour)),
            hint_colours=state.hint_colours.gather(
                2, pi.argsort(-1)[:, None, :].expand_as(state.hint_colours)
            ),
            hint_status=state.hint_status.clone(),
            hint_card=hint_card,
            seen=relabel(state.seen),
            peeked=relabel(state.peeked),
            current=state.current.clone(),
            phase=state.phase.clone(),
            t=state.t.clone(),
            clusters=state.clusters.clone(),
        )

    def observation(self, obs: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        """Image observations seen through ``e``: cells rotated, colour channels permuted,
        ``card_id`` values relabelled.

        Args:
            obs: ``uint8 [N, g, g + 1, k F]``: one observation (k = 1) or the critic's k
                concatenated ones.
            e: ``int64 [N]``.

        Returns:
            ``uint8 [N, g, g + 1, k F]``.

        Raises:
            ValueError: the channel count is not a multiple of F.
        """
        N, g, width, K = obs.shape
        F = self.num_channels
        if K % F:
            raise ValueError(f"observation has {K} channels, not a multiple of the {F} of a Yokai view")
        dev = obs.device
        e = e.to(dev)
        flat = obs.reshape(N, g * width, K)
        src = self._on("obs_src", dev)[e]  # [N, cells]
        flat = flat.gather(1, src[:, :, None].expand(N, g * width, K))
        blocks = K // F
        chan = self._on("chan_src", dev)[e]  # [N, F]
        chan = (chan[:, None, :] + F * torch.arange(blocks, device=dev)[None, :, None]).reshape(N, K)
        flat = flat.gather(2, chan[:, None, :].expand(N, g * width, K))
        ids = torch.arange(blocks, device=dev) * F + self.card_id_channel
        lut = self._on("card_id_lut", dev)[e]  # [N, Y + 1]
        old = flat[:, :, ids].long()  # [N, cells, blocks]
        flat[:, :, ids] = lut.gather(1, old.reshape(N, -1)).view_as(old)
        return flat.view(N, g, width, K)

    def action(self, actions: torch.Tensor, e: torch.Tensor, inverse: bool = False) -> torch.Tensor:
        """``int64 [N]``: the image of each action under ``e`` (``inverse``: under e's inverse,
        i.e. an action chosen in the view of ``e`` mapped back to the env's frame).

        Args:
            actions: ``int64 [N]`` in ``0..A-1``.
            e: ``int64 [N]``.
        """
        table = self._on("action_inv" if inverse else "action_perm", actions.device)
        return table[e.to(actions.device)].gather(1, actions[:, None]).squeeze(1)

    def mask(self, avail: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        """``bool [N, A]``: the available-action mask seen through ``e``
        (``out[action(a, e)] = avail[a]``).

        Args:
            avail: ``bool [N, A]``.
            e: ``int64 [N]``.
        """
        inv = self._on("action_inv", avail.device)[e.to(avail.device)]
        return avail.gather(1, inv)

    def __repr__(self) -> str:
        return f"YokaiSymmetries({self.rules.version!r}, groups={self.groups}, size={self.size})"
