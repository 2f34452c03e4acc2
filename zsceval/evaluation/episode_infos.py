"""Per-episode ``Step.infos`` of evaluation games, aligned with :func:`zsceval.rl.play.play`'s rows.

:func:`~zsceval.rl.play.play` keeps returns and event counts per episode; env-specific outcomes
such as the Yōkai env's ``win``, ``ended_early``, ``clustered`` and ``score`` (YLE Sec. 5's SR, SEE,
NC and the game score)
live in the ``Step.infos`` of the step that ends an episode. :class:`InfoRecorder` wraps the env
and records them: per ``reset`` (one round of :meth:`~zsceval.rl.runner.EpisodeRunner.play`), the
infos of the first episode each game finishes, in game order: the same episodes, in the same
order, as the round's rows of the ``PlayResult``.
"""

from __future__ import annotations

import torch

__all__ = ["EPISODE_INFO_KEYS", "InfoRecorder"]

EPISODE_INFO_KEYS = ("win", "ended_early", "clustered", "score")
"""The end-of-episode infos recorded when the env gives them (the Yōkai env does)."""


class InfoRecorder:
    """A batched env that records the end-of-episode infos of the first episode of each game.

    Everything but ``reset`` and ``step`` is the wrapped env's.

    Args:
        env: the batched env.
        keys: info names to record (those the env does not give are skipped).

    Attributes:
        rounds: one ``{key: tensor [B]}`` per completed round (every game finished an episode).
    """

    def __init__(self, env, keys: tuple[str, ...] = EPISODE_INFO_KEYS) -> None:
        self.env = env
        self.keys = keys
        self.rounds: list[dict[str, torch.Tensor]] = []
        self._current: dict[str, torch.Tensor] | None = None
        self._finished: torch.Tensor | None = None

    def __getattr__(self, name: str):
        return getattr(self.env, name)

    def reset(self):
        """Reset the env and start a round."""
        self._close_round()
        step = self.env.reset()
        B = self.env.num_envs
        self._current = {k: torch.zeros(B, dtype=step.infos[k].dtype) for k in self.keys if k in step.infos}
        self._finished = torch.zeros(B, dtype=torch.bool)
        return step

    def step(self, actions: torch.Tensor):
        """Step the env; record the infos of games whose first episode of the round ends now."""
        step = self.env.step(actions)
        if self._finished is not None:
            new = step.done.cpu() & ~self._finished
            if bool(new.any()):
                for k, v in self._current.items():
                    v[new] = step.infos[k].cpu()[new].to(v.dtype)
                self._finished |= new
            if bool(self._finished.all()):
                self._close_round()
        return step

    def _close_round(self) -> None:
        if self._finished is not None and bool(self._finished.all()):
            self.rounds.append(self._current)
        self._current, self._finished = None, None

    def episodes(self, count: int) -> dict[str, torch.Tensor] | None:
        """``{key: tensor [count]}`` of the first ``count`` recorded episodes (rounds in order),
        or None when the env gives none of the keys.

        Raises:
            ValueError: fewer than ``count`` episodes recorded.
        """
        if not self.rounds or not self.rounds[0]:
            return None
        out = {k: torch.cat([r[k] for r in self.rounds]) for k in self.rounds[0]}
        got = next(iter(out.values())).numel()
        if got < count:
            raise ValueError(f"recorded {got} episodes, {count} asked")
        return {k: v[:count] for k, v in out.items()}
