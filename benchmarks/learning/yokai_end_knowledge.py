r"""What a Yōkai player knows when it ENDs the game (why the 2e7-env-step agents end early, docs/yokai.md).

Plays ``--episodes`` games in each seating of an agent and a partner (the same checkpoint: self-play;
two seeds: cross-play) and records, at every END, what the game's public record says about the
players' knowledge (``YokaiState.seen``: who has peeked at which card; with perfect memory, the
paper's -M setting, a player knows the colour of every card it has peeked at). YLE Sec. 2 (Eq. 1):
unused hints score most, so ending early pays, but "the earlier a player ends a game, the less
information they can acquire first-hand and thus must infer knowledge from others' behaviour". The
3x3 deck has 9 cards, 3 per colour, so a player needs 8 of them to know all 9 colours first-hand;
but it peeks at most 2 cards a turn and may END only at the start of its turn, and a 2-player 3x3
game lasts at most 8 turns (16 peeks; App. B.2: a player observes up to 8 of the 9 cards in a whole
game), so an ENDing player has seen at most 6: every END relies on
what the partner saw (its moves and hints), or on luck. What the two had seen together
(``union_seen``) is what a perfect inference from the partner could know.

One row per game (the first game of each of the B envs per seating):

==================  ===================================================================
``seating``         ``agent-partner`` (the agent in seat 0) or ``partner-agent``
``ended_early``     bool: a player ENDed the game
``ender``           ``agent``, ``partner`` or ``""`` (not ended early)
``ender_seen``      cards (of 9) the ENDing player had peeked at by then; -1 if not ended early
``partner_seen``    cards the other player had peeked at; -1 if not ended early
``union_seen``      cards either player had peeked at; -1 if not ended early
``turn``            env steps before the END (the game's ``t``); -1 if not ended early
``won``             bool: the game was won (every colour one cluster, no wrong hint)
``score``           Eq. 1's score (0 unless the game ended with all colours clustered)
==================  ===================================================================

    python benchmarks/learning/yokai_end_knowledge.py --agent RUN/checkpoints/step_X [--partner CKPT] \
        --episodes 250 [--out TABLE.parquet]
    python benchmarks/learning/yokai_end_knowledge.py --runs RUNS/relational_-M --out TABLE.parquet

``--runs`` plays every pair of the folder's runs (their latest checkpoints; each run with itself:
self-play, and every two runs: cross-play) and adds the columns ``agent_run`` and ``partner_run``.
The memory setting comes with the checkpoints (``env_spec.perfect_memory``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from zsceval.evaluation.strata import UniformRandomAgent
from zsceval.evaluation.yokai_xp import find_yokai_runs
from zsceval.rl.checkpoint import load_agent
from zsceval.rl.config import EnvConfig
from zsceval.rl.envs import make_env
from zsceval.rl.play import play

COLUMNS = [
    "seating",
    "ended_early",
    "ender",
    "ender_seen",
    "partner_seen",
    "union_seen",
    "turn",
    "won",
    "score",
]


class EndRecorder:
    """A Yōkai env (``YokaiEnv``) that records how the first game in each env row ended: the
    knowledge at its END (if a player ENDs it), its final layout and its outcome. Everything but
    ``reset`` and ``step`` is the wrapped env's.

    A game ends on an END (at a turn's start) or on its last hint phase, so no card moves in the
    step that ends it: the layout before that step is the final one.

    Attributes (CPU tensors, valid once ``finished`` is all true):
        ender: ``int64 [B]`` seat that ENDed, -1 if the game was not ended early.
        seen: ``int64 [B, n]`` cards each seat had peeked at when the game was ENDed (0 if not).
        union: ``int64 [B]`` cards any seat had peeked at when the game was ENDed.
        turn: ``int64 [B]`` the game's ``t`` at the END, -1 if not ended early.
        pos, colour: ``int64 [B, Y]`` the final layout (cell ``row * g + col``) and the colours.
        won, score: ``bool [B]``, ``float32 [B]``: the game's outcome.
        finished: ``bool [B]`` the row's first game is over.
    """

    def __init__(self, env) -> None:
        self.env = env

    def __getattr__(self, name: str):
        return getattr(self.env, name)

    def reset(self):
        """Reset the env and the records."""
        step = self.env.reset()
        B, n, Y = self.env.num_envs, self.env.num_agents, self.env.state.pos.shape[1]
        self.pos = torch.zeros(B, Y, dtype=torch.int64)
        self.colour = torch.zeros(B, Y, dtype=torch.int64)
        self.ender = torch.full((B,), -1, dtype=torch.int64)
        self.seen = torch.zeros(B, n, dtype=torch.int64)
        self.union = torch.zeros(B, dtype=torch.int64)
        self.turn = torch.full((B,), -1, dtype=torch.int64)
        self.won = torch.zeros(B, dtype=torch.bool)
        self.score = torch.zeros(B, dtype=torch.float32)
        self.finished = torch.zeros(B, dtype=torch.bool)
        return step

    def step(self, actions: torch.Tensor):
        """Step the env; for the games that end in this step, keep what the state said before it."""
        state = self.env.state
        seen_count = state.seen.sum(-1).cpu()
        union = state.seen.any(1).sum(-1).cpu()
        current, t = state.current.cpu().clone(), state.t.cpu().clone()
        pos, colour = state.pos.cpu().clone(), state.colour.cpu().clone()
        step = self.env.step(actions)
        record = step.infos["ended_early"].cpu().bool() & ~self.finished
        self.ender[record] = current[record]
        self.seen[record] = seen_count[record]
        self.union[record] = union[record]
        self.turn[record] = t[record]
        new = step.done.cpu() & ~self.finished
        self.pos[new], self.colour[new] = pos[new], colour[new]
        self.won[new] = step.infos["win"].cpu()[new].bool()
        self.score[new] = step.infos["score"].cpu()[new].float()
        self.finished |= new
        return step


def seating_games(agents: list, names: list[str], setting: str, episodes: int, seed: int) -> pd.DataFrame:
    """``episodes`` games with ``agents[k]`` in seat k (one game per env row), a row each.

    Args:
        agents: one agent per seat (2 for 2-player Yōkai); names: their labels (``ender`` values).
        setting: ``"-M"`` (perfect memory) or ``"memory"``.
        episodes: games, also the env rows B.
        seed: the env's deal seed; actions are drawn from ``seed + 1``.

    Returns:
        The module's table (:data:`COLUMNS`), one row per game in env-row order.

    Raises:
        RuntimeError: a game did not finish (it cannot: the env truncates at ``horizon``).
    """
    env = make_env(
        EnvConfig(name="yokai", num_envs=episodes, horizon=32, options={"perfect_memory": setting == "-M"}),
        seed=seed,
        evaluation=True,
    )
    rec = EndRecorder(env)
    play(rec, agents, episodes, torch.Generator().manual_seed(seed + 1))
    if not bool(rec.finished.all()):
        raise RuntimeError("not every game finished")
    ended = rec.ender >= 0
    ender_seat = rec.ender.clamp(min=0)
    other_seat = 1 - ender_seat
    rows = torch.arange(episodes)
    return pd.DataFrame(
        {
            "seating": "-".join(names),
            "ended_early": ended.numpy(),
            "ender": np.where(ended.numpy(), np.asarray(names)[ender_seat.numpy()], ""),
            "ender_seen": torch.where(ended, rec.seen[rows, ender_seat], -1).numpy(),
            "partner_seen": torch.where(ended, rec.seen[rows, other_seat], -1).numpy(),
            "union_seen": torch.where(ended, rec.union, -1).numpy(),
            "turn": rec.turn.numpy(),
            "won": rec.won.numpy(),
            "score": rec.score.numpy().astype(np.float64),
        }
    )[COLUMNS]


def end_knowledge(agent, partner, setting: str, episodes: int, seed: int) -> pd.DataFrame:
    """Both seatings of ``agent`` and ``partner`` (each ``episodes`` games), the module's table.

    The second seating is dealt from ``seed + 7``, so that self-play (``agent is partner``) plays new
    games there instead of repeating the first seating's.
    """
    return pd.concat(
        [
            seating_games([agent, partner], ["agent", "partner"], setting, episodes, seed),
            seating_games([partner, agent], ["partner", "agent"], setting, episodes, seed + 7),
        ],
        ignore_index=True,
    )


def summary(table: pd.DataFrame, cards: int = 9) -> dict:
    """SR, the share of games ended early, the ENDs' win rate, and how much had been seen: the ENDing
    player's and the pair's mean, the share of ENDs after the two had seen every card together and
    those ENDs' win rate, against the ENDs with a card neither had seen."""
    ends = table[table["ended_early"]]
    all_seen = ends[ends["union_seen"] >= cards]
    some_unseen = ends[ends["union_seen"] < cards]

    def rate(frame: pd.DataFrame) -> float | None:
        return float(frame["won"].mean()) if len(frame) else None

    return {
        "games": len(table),
        "SR": float(table["won"].mean()),
        "ended_early": float(table["ended_early"].mean()),
        "won_when_ended": rate(ends),
        "ender_seen_mean": float(ends["ender_seen"].mean()) if len(ends) else None,
        "union_seen_mean": float(ends["union_seen"].mean()) if len(ends) else None,
        "ends_all_seen_by_pair": float(len(all_seen) / len(ends)) if len(ends) else None,
        "won_when_all_seen_by_pair": rate(all_seen),
        "won_when_some_unseen": rate(some_unseen),
        "turn_mean": float(ends["turn"].mean()) if len(ends) else None,
        "by_ender": {k: rate(g) for k, g in ends.groupby("ender")},
    }


class RandomNeverEnd(UniformRandomAgent):
    """A partner that plays a uniformly random available action other than END (``--partner random``):
    it peeks, moves and places hints without any convention."""

    def act(self, obs, avail, state, starts, generator=None, deterministic=False):
        avail = avail.clone()
        avail[:, -1] = False
        return super().act(obs, avail, state, starts, generator, deterministic)


def _load(path) -> tuple[object, str]:
    """The agent of a checkpoint or run folder (its latest checkpoint) and its memory setting."""
    agent, meta = load_agent(path)
    return agent, "-M" if meta["env_spec"].get("perfect_memory") else "memory"


def pair_table(runs: list[tuple[str, Path]], episodes: int, seed: int) -> pd.DataFrame:
    """The module's table for every unordered pair of ``runs`` (``(label, path)``), self-play
    included, with ``agent_run`` / ``partner_run`` columns.

    Args:
        runs: :func:`~zsceval.evaluation.yokai_xp.find_yokai_runs` output; each run's latest
            checkpoint plays.
        episodes: games per seating of each pair (a pair has ``2 x episodes`` rows).
        seed: as :func:`end_knowledge`, the same for every pair.

    Raises:
        ValueError: the runs mix the memory settings.
    """
    loaded = {label: _load(path) for label, path in runs}
    settings = {setting for _, setting in loaded.values()}
    if len(settings) != 1:
        raise ValueError(f"the runs mix memory settings: {sorted(settings)}")
    (setting,) = settings
    labels = [label for label, _ in runs]
    frames = []
    for i, a in enumerate(labels):
        for b in labels[i:]:
            t = end_knowledge(loaded[a][0], loaded[b][0], setting, episodes, seed)
            frames.append(t.assign(agent_run=a, partner_run=b))
    return pd.concat(frames, ignore_index=True)


def pair_summary(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`summary`'s main figures per pair, then self-play and cross-play pooled."""
    rows = []
    for (a, b), g in table.groupby(["agent_run", "partner_run"], sort=False):
        rows.append({"pair": f"{a} + {b}", "kind": "SP" if a == b else "XP", **_figures(g)})
    for kind in ("SP", "XP"):
        pooled = table[(table["agent_run"] == table["partner_run"]) == (kind == "SP")]
        if len(pooled):
            rows.append({"pair": f"all {kind}", "kind": kind, **_figures(pooled)})
    return pd.DataFrame(rows)


def _figures(g: pd.DataFrame) -> dict:
    d = summary(g)
    keys = ("games", "SR", "ended_early", "won_when_ended", "ender_seen_mean", "union_seen_mean", "turn_mean")
    return {k: d[k] for k in keys}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agent", help="checkpoint (run dir, checkpoint dir or meta.json)")
    ap.add_argument("--partner", default=None, help="partner checkpoint, or random (default: the agent)")
    ap.add_argument("--runs", type=Path, default=None, help="a folder of Yōkai runs: every pair of them")
    ap.add_argument("--episodes", type=int, default=250, help="games per seating (250)")
    ap.add_argument("--seed", type=int, default=0, help="deal and action seed (0)")
    ap.add_argument("--out", type=Path, default=None, help="write the per-game table (parquet)")
    args = ap.parse_args()
    if (args.agent is None) == (args.runs is None):
        ap.error("give exactly one of --agent and --runs")
    torch.set_num_threads(1)
    if args.runs is not None:
        runs = find_yokai_runs(args.runs)
        if not runs:
            ap.error(f"no Yokai runs with a checkpoint under {args.runs}")
        table = pair_table(runs, args.episodes, args.seed)
    else:
        agent, setting = _load(args.agent)
        partner = agent
        if args.partner == "random":
            partner = RandomNeverEnd({"num_actions": agent.spec["num_actions"]})
        elif args.partner is not None:
            partner, other = _load(args.partner)
            if other != setting:
                ap.error(f"the agent is trained for {setting}, the partner for {other}")
        table = end_knowledge(agent, partner, setting, args.episodes, args.seed)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_name(args.out.name + ".tmp")
        table.to_parquet(tmp, index=False)
        tmp.replace(args.out)
    if args.runs is not None:
        with pd.option_context("display.width", 200):
            print(pair_summary(table).round(3).to_string(index=False))
    else:
        print(json.dumps(summary(table), indent=2))


if __name__ == "__main__":
    main()
