"""Helpers shared by the Yōkai tests: hand-built positions and legal random play."""

from __future__ import annotations

import dataclasses

import torch

from zsceval.envs.yokai import YokaiEnv
from zsceval.envs.yokai.graph import adjacency, clustered_colours


def cells_to_pos(cells: list[tuple[int, int]], grid: int) -> torch.Tensor:
    """``int64 [Y]`` flat cells of ``(row, col)`` pairs."""
    return torch.tensor([r * grid + c for r, c in cells], dtype=torch.int64)


def place(env: YokaiEnv, cells=None, colours=None, **fields):
    """Put game 0..B-1 of ``env`` (after ``reset``) into a hand-built position: the same ``cells``
    (list of ``(row, col)``) and ``colours`` (list of ints) in every game, other fields as given
    (tensors broadcast over B); ``clusters`` is recomputed. Returns the ``Step`` of
    ``env.set_state``."""
    state = env.state.clone()
    B = env.num_envs
    if cells is not None:
        state.pos = cells_to_pos(cells, env.rules.grid).expand(B, -1).clone()
    if colours is not None:
        state.colour = torch.tensor(colours, dtype=torch.int64).expand(B, -1).clone()
    for name, value in fields.items():
        value = torch.as_tensor(value)
        setattr(state, name, value.expand_as(getattr(state, name)).clone().to(getattr(state, name).dtype))
    clustered = clustered_colours(adjacency(state.pos, env.rules.grid), state.colour, env.rules.num_colours)
    state = dataclasses.replace(state, clusters=clustered.sum(-1))
    return env.set_state(state)


def random_legal(avail: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """``int64 [B, n]``: a uniformly random available action per agent."""
    B, n, A = avail.shape
    return torch.multinomial(avail.view(B * n, A).float(), 1, generator=gen).view(B, n)


def train_tiny(out, seed: int = 0, perfect_memory: bool = False, recurrent: bool = False) -> None:
    """Train a Yōkai SP run of 128 env steps into ``out`` with ``zsceval train`` (asserts success)."""
    from click.testing import CliRunner

    from zsceval.cli import main

    sets = ["env.num_envs=8", "ppo.rollout_length=16", "run.eval_episodes=1", "run.num_threads=1"]
    sets.append(f"env.options.perfect_memory={str(perfect_memory).lower()}")
    if recurrent:
        sets += ["model.recurrent=true", "model.chunk_length=8"]
    args = ["train", "--algo", "sp", "--env", "yokai", "--steps", "128", "--seed", str(seed)]
    args += ["--out", str(out), "--no-progress", *[x for k in sets for x in ("--set", k)]]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output


def load_benchmark(relative: str):
    """Import a benchmark script (``benchmarks/<relative>``) as a module, leaving ``sys.modules``'
    ``yokai``, ``yokai_games`` and ``yokai_end_knowledge`` (names the learning benchmarks import each
    other by) as they were."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "benchmarks" / relative
    before = {k: sys.modules.pop(k, None) for k in ("yokai", "yokai_games", "yokai_end_knowledge")}
    try:
        spec = importlib.util.spec_from_file_location(f"zsceval_bench_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        for k, v in before.items():
            sys.modules.pop(k, None)
            if v is not None:
                sys.modules[k] = v
