r"""Does a recurrent Yōkai agent use its memory, or the board? Two measurements per run.

YLE Sec. 5.1: without perfect memory (a card's colour is visible only while its player peeks at it)
an agent must remember the colours it has seen; the paper's memory agents (CNN-LSTM, -GRU, -S5) stay
near 3% SR there (Table 1).

1. **Amnesic self-play.** The agent with its recurrent state zeroed before every step (every row's
   ``starts`` flag set, which zeroes the state in ``Policy.act``) acts on the current observation
   alone; the gap to its self-play as trained is what its memory is worth. With perfect memory (-M)
   the observation already holds every colour the player has seen, so the gap there is what the
   state adds beyond them.
2. **Where each colour ends up.** Positions are public and persist, so an agent can write what it
   saw into the layout: a convention such as "colour 0 goes to the top" lets a player read a card's
   colour from where it lies. For every won or lost game, each colour's offset from the layout's
   centroid (its three cards' mean cell minus all nine cards' mean, in cells: ``row`` down,
   ``col`` right) is averaged over games. Colours are dealt to cards at random, so an agent
   without such a convention has mean offsets near 0 whatever its clusters look like; ``strength``
   = |mean offset| / mean |offset| is 1 when a colour lies in the same direction in every game, 0
   when it has no fixed place.

Plays ``2 x --episodes`` self-play games per row (both seats, ``yokai_games.games``, the same deals
for every row); the memory setting comes with the checkpoint.

    python benchmarks/learning/yokai_memory.py runs/yokai_games/relational_memory/sp_s0 \
        runs/yokai_games/relational_-M/sp_s0 [--episodes 250] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from yokai_end_knowledge import EndRecorder  # noqa: E402  (records how each game ended, its final layout)
from yokai_games import games, summary  # noqa: E402  (the learning benchmark's per-game records)

from zsceval.rl.checkpoint import load_agent  # noqa: E402
from zsceval.rl.config import EnvConfig  # noqa: E402
from zsceval.rl.envs import make_env  # noqa: E402
from zsceval.rl.play import play  # noqa: E402


class Amnesic:
    """An agent whose recurrent state is zeroed before every step (every row's ``starts`` set).
    Everything but ``act`` is the wrapped agent's."""

    def __init__(self, agent) -> None:
        self.agent = agent

    def __getattr__(self, name: str):
        return getattr(self.agent, name)

    def act(self, obs, avail, state, starts, generator=None, deterministic=False):
        """The wrapped agent's action from this observation alone."""
        return self.agent.act(obs, avail, state, torch.ones_like(starts), generator, deterministic)


def colour_offsets(pos: torch.Tensor, colour: torch.Tensor, grid: int, num_colours: int) -> pd.DataFrame:
    """Each colour's offset from the layout's centroid, averaged over games (module docstring, 2).

    Args:
        pos: ``int64 [G, Y]`` final cells (``row * grid + col``).
        colour: ``int64 [G, Y]`` colour of each card.
        grid: the field's side g.
        num_colours: C.

    Returns:
        One row per colour: ``colour, row, col`` (mean offset in cells), ``row_se, col_se``
        (standard errors over games), ``size`` (mean |offset|) and ``strength``.
    """
    p = pos.double()
    row, col = torch.div(p, grid, rounding_mode="floor"), torch.remainder(p, grid)
    rows = []
    for c in range(num_colours):
        mine = (colour == c).double()
        n = mine.sum(1)
        dy = (row * mine).sum(1) / n - row.mean(1)
        dx = (col * mine).sum(1) / n - col.mean(1)
        size = float(torch.sqrt(dy**2 + dx**2).mean())
        my, mx = float(dy.mean()), float(dx.mean())
        se_row, se_col = (float(d.std()) / np.sqrt(len(d)) for d in (dy, dx))
        strength = float(np.hypot(my, mx)) / size if size else 0.0
        rows.append({"colour": c, "row": my, "col": mx, "row_se": se_row, "col_se": se_col, "size": size,
                     "strength": strength})  # fmt: skip
    return pd.DataFrame(rows)


def final_layouts(agent, setting: str, episodes: int, seed: int) -> EndRecorder:
    """``episodes`` self-play games of ``agent`` (one per env row) with their final layouts."""
    env = make_env(
        EnvConfig(name="yokai", num_envs=episodes, horizon=32, options={"perfect_memory": setting == "-M"}),
        seed=seed,
        evaluation=True,
    )
    rec = EndRecorder(env)
    play(rec, [agent, agent], episodes, torch.Generator().manual_seed(seed + 1))
    if not bool(rec.finished.all()):
        raise RuntimeError("not every game finished")
    return rec


def measure(path: str | Path, episodes: int, seed: int) -> dict:
    """Both measurements for one checkpoint: ``{"setting", "selfplay": [kept row, zeroed row],
    "offsets": colour_offsets of the agent as trained}``."""
    agent, meta = load_agent(path)
    setting = "-M" if meta["env_spec"].get("perfect_memory") else "memory"
    selfplay = []
    for state, player in (("kept", agent), ("zeroed", Amnesic(agent))):
        df = games(player, setting, episodes, seed).assign(agent="a", setting=setting, seed=0, env_steps=0)
        m = summary(df).iloc[0]
        selfplay.append({"state": state, **{k: float(m[k]) for k in ("SR", "nc", "dnc", "S", "ret")}})
    rec = final_layouts(agent, setting, 2 * episodes, seed)
    grid, colours = int(rec.env.rules.grid), int(rec.env.rules.num_colours)
    return {
        "setting": setting,
        "selfplay": selfplay,
        "offsets": colour_offsets(rec.pos, rec.colour, grid, colours),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="run folders (their latest checkpoint) or checkpoint folders")
    ap.add_argument("--episodes", type=int, default=250, help="games per seating (250)")
    ap.add_argument("--seed", type=int, default=0, help="deal and action seed (0)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of tables")
    args = ap.parse_args()
    torch.set_num_threads(1)
    results = {path: measure(path, args.episodes, args.seed) for path in args.runs}
    if args.json:
        out = {p: {**r, "offsets": r["offsets"].to_dict(orient="records")} for p, r in results.items()}
        print(json.dumps(out, indent=2))
        return
    for path, r in results.items():
        print(f"{path} ({r['setting']})")
        print(pd.DataFrame(r["selfplay"]).round(3).to_string(index=False))
        print(r["offsets"].round(3).to_string(index=False), end="\n\n")


if __name__ == "__main__":
    main()
