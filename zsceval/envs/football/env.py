"""The batched Football env: B Google Research Football games stepped in worker processes.

``FootballEnv`` is :class:`~zsceval.envs.process_vector.ProcessBatchedEnv` over
:class:`~zsceval.envs.football.game.FootballGame` (ZSC-Eval's ``FootballEnv`` wrapper:
``academy_3_vs_1_with_keeper`` in the reference's harder variant, 3 controlled left players,
19 actions with the reference's availability masks, the 58-dim per-player observation, the 52-dim
critic input, per-agent rewards and the 8 events; docs/reference-protocol.md "Football"). Registered as
``football`` (``zsceval.envs.make("football", num_envs=...)``, ``zsceval train --env football``).

What the batched ``Step`` holds (B games, n = 3 agents, slot k = the k-th controlled player):

* ``obs``: ``float32 [B, 3, 58]`` (``features.OBS_FIELDS``); ``avail_actions``: ``bool [B, 3, 19]``;
* ``reward``: ``float32 [B]`` goals our team scored this step (ZSC-Eval's sparse metric
  ``ep_sparse_r`` is its episode sum: 1 if the episode was won);
* ``sparse_by_agent``: the goal credited to its scorer; ``shaped_by_agent``: the reference's
  per-agent reward (5 x own goal + own checkpoint reward);
* ``events``: ``int16 [B, 3, 8]`` in ``events.EVENT_NAMES`` order;
* ``terminated`` / ``truncated``: gfootball's episode end; truncated = the game clock ran out and the
  episode was not won (the reference's ``bad_transition``);
* ``infos``: ``critic_obs`` ``float32 [B, 3, 52]`` (the same vector in every slot),
  ``checkpoint_reward`` ``float32 [B, 3]``, ``reward_by_agent`` ``float32 [B, 3]`` (= ``shaped_by_agent``:
  the reward the cores train on, :func:`zsceval.rl.algorithm.default_training_reward`), and the
  ``final_*`` versions of the per-game extras for games that ended.

Install: ``pip install zsceval[football]`` after the system packages of docs/football.md.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import torch

from zsceval.envs.process_vector import ProcessBatchedEnv

from .scenario import SCENARIO_NAME

__all__ = ["FootballEnv", "make_game"]


def make_game(seed: int, *, difficulty: float, game_duration: int):
    """One :class:`~zsceval.envs.football.game.FootballGame` (called inside a worker process)."""
    from .game import FootballGame

    return FootballGame(seed=seed, difficulty=difficulty, game_duration=game_duration)


class FootballEnv(ProcessBatchedEnv):
    """B Football games in worker processes, implementing ``zsceval.envs.base.BatchedEnv``.

    Args:
        num_envs: B >= 1 games (one simulator each).
        device: torch device of the returned tensors.
        seed: game i's simulator seed derives from it (``ProcessBatchedEnv``).
        game_duration: frames before the game clock runs out (the reference's 400).
        difficulty: right-team (opponent AI) difficulty in [0, 1] (the reference's 0.95; its
            "superhard" variant 1.0).
        num_workers: worker processes; 0 = one per CPU core (at most B).

    Raises:
        ImportError: gfootball is not installed (the message gives the install commands).
        ValueError: a size or difficulty out of range.
        RuntimeError: a worker process died (named, with its exit code).
    """

    def __init__(
        self,
        num_envs: int,
        *,
        device: str | torch.device = "cpu",
        seed: int = 0,
        game_duration: int = 400,
        difficulty: float = 0.95,
        num_workers: int = 0,
    ) -> None:
        if not 0.0 <= float(difficulty) <= 1.0:
            raise ValueError(f"difficulty must be in [0, 1], got {difficulty}")
        if int(game_duration) < 1:
            raise ValueError(f"game_duration (env.horizon) must be >= 1, got {game_duration}")
        self.difficulty, self.game_duration = float(difficulty), int(game_duration)
        factory = functools.partial(make_game, difficulty=self.difficulty, game_duration=self.game_duration)
        spec = {
            "env": "football",
            "layout": SCENARIO_NAME,
            "encoding": "zsceval-grf-simple115v2-custom-v1",
            "difficulty": self.difficulty,
            "game_duration": self.game_duration,
        }
        super().__init__(
            factory, num_envs, num_workers=num_workers or None, device=device, seed=seed, spec=spec
        )
        self.layout = SimpleNamespace(name=SCENARIO_NAME)

    def _with_reward(self, step):
        step.infos["reward_by_agent"] = step.shaped_by_agent
        return step

    def reset(self):
        """Start a new episode in every game (``Step`` as in the module docstring, zero rewards)."""
        return self._with_reward(super().reset())

    def step(self, actions: torch.Tensor):
        """Advance every game by one joint action ``int64 [B, 3]``; finished games auto-reset.

        Raises:
            ValueError: actions of the wrong shape, dtype or range.
            RuntimeError: a worker process died.
        """
        return self._with_reward(super().step(actions))
