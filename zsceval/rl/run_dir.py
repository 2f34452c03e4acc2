"""A training run's folder: its files, whether it holds a run, and which checkpoint a resume uses.

Layout (every file written to a temp file, then renamed): ``config.yaml`` (the resolved config,
what ``--resume`` reads), ``metrics.csv`` (a row per iteration), ``checkpoints/step_<env steps>/``
(:mod:`zsceval.rl.checkpoint`), ``eval.json`` (the final evaluation), ``pools/<sha256>/`` (policy-pool
partners), ``corrupt_checkpoints/`` (checkpoints that failed to verify, set aside, never deleted),
``loggers.json`` and the folders of the other loggers of ``run.loggers`` (``tensorboard/``,
``wandb/``; :mod:`zsceval.rl.loggers`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import yaml

from zsceval.rl.checkpoint import CheckpointError, list_checkpoints, load_checkpoint
from zsceval.rl.config import TrainConfig, config_from_dict, resolve_config

__all__ = [
    "CONFIG",
    "EVAL",
    "METRICS",
    "RunDirectory",
    "RunExistsError",
    "finished_steps",
    "load_run_config",
    "resume_config",
]

CONFIG = "config.yaml"
METRICS = "metrics.csv"
EVAL = "eval.json"


class RunExistsError(RuntimeError):
    """The output directory already holds a run (use ``--resume`` or another ``--out``)."""


def load_run_config(run_dir: str | Path) -> TrainConfig:
    """Read a run's resolved ``config.yaml``.

    Raises:
        CheckpointError: the directory holds no run, or its ``config.yaml`` is not valid YAML (the
            file, line and column named).
        ConfigError: a config whose keys or values are not this zsceval's.
    """
    path = Path(run_dir) / CONFIG
    if not path.is_file():
        raise CheckpointError(f"cannot resume: {run_dir} holds no run (no {CONFIG})")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise CheckpointError(
            f"{where}: the run's saved config is not valid YAML ({getattr(exc, 'problem', exc)}); "
            "repair the file or start a new run with another --out"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"cannot read {path}: {exc}") from None
    if data is not None and not isinstance(data, dict):
        raise CheckpointError(f"{path}: the run's saved config is not a mapping of sections")
    return config_from_dict(data or {})


def finished_steps(run_dir: str | Path) -> int | None:
    """Env steps of a finished run (its ``eval.json``), else None."""
    try:
        return int(json.loads((Path(run_dir) / EVAL).read_text())["env_steps"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def resume_config(run_dir: str | Path, steps: int | None = None) -> tuple[TrainConfig, int | None]:
    """The config a resume of ``run_dir`` continues with: the saved ``config.yaml``, its
    ``run.total_steps`` raised to ``steps`` when given (a resume only raises the budget).

    Returns:
        ``(config, finished)``: ``finished`` is the env steps of a run that already trained its
        budget (and ``steps`` asks no more), i.e. nothing to do; else None.

    Raises:
        CheckpointError: the folder holds no run.
        ValueError: ``steps`` below the saved budget.
    """
    cfg = load_run_config(run_dir)
    saved = cfg.run.total_steps
    if steps is not None and steps < saved:
        raise ValueError(
            f"--steps {steps:,} is below the run's saved budget of {saved:,} env steps; --resume only "
            f"raises it (omit --steps to finish the run at {saved:,})"
        )
    done = finished_steps(run_dir)
    if done is not None and done >= saved and (steps is None or steps <= done):
        return cfg, done
    if steps is not None:
        cfg = resolve_config(overrides=[f"run.total_steps={steps}"], base=cfg)
    return cfg, None


class RunDirectory:
    """The folder of one training run.

    Args:
        path: the run folder (need not exist yet).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.config = self.path / CONFIG
        self.metrics = self.path / METRICS
        self.eval = self.path / EVAL
        self.checkpoints = self.path / "checkpoints"

    def holds_run(self) -> bool:
        """A run was started here (its ``config.yaml`` exists)."""
        return self.config.exists()

    def check_fresh(self) -> None:
        """Refuse to start a new run over an existing one.

        Raises:
            RunExistsError: a run is here; the message says whether it saved anything.
        """
        if not self.holds_run():
            return
        if not list_checkpoints(self.path):
            raise RunExistsError(
                f"{self.path} holds a run that was stopped before its first checkpoint (nothing "
                "trained was saved): pass --resume to start it over from scratch with its saved "
                "config.yaml, or choose another --out"
            )
        raise RunExistsError(f"{self.path} already holds a run; pass --resume or choose another --out")

    def resume_checkpoint(self, notes: list[str]) -> Path | None:
        """The newest resumable checkpoint that verifies; None when the run has no checkpoint at all
        (stopped before its first one: nothing was saved, so resuming is starting over, and the
        trainer's CSV logger drops the metrics rows of its unsaved iterations). Checkpoints that fail
        to verify are moved to ``corrupt_checkpoints/`` with a note appended to ``notes``.

        Raises:
            CheckpointError: no run here, no resumable checkpoint yet, or none that verifies.
        """
        if not self.config.is_file():
            raise CheckpointError(f"cannot resume: {self.path} holds no run (no {CONFIG})")
        ckpts = list_checkpoints(self.path)
        if not ckpts:
            return None
        broken: list[tuple[Path, str]] = []
        for ckpt in reversed(ckpts):
            try:
                resumable = json.loads((ckpt / "meta.json").read_text()).get("resumable")
            except (OSError, json.JSONDecodeError):
                resumable = True  # load_checkpoint reports the corruption
            if not resumable:
                continue
            try:
                load_checkpoint(ckpt, with_train_state=True)  # checksums and train state verify
            except CheckpointError as exc:
                broken.append((ckpt, str(exc)))
                continue
            for bad, why in broken:  # set aside (never deleted), so new checkpoints can take their steps
                aside = self.path / "corrupt_checkpoints" / bad.name
                aside.parent.mkdir(exist_ok=True)
                bad.rename(aside.with_name(f"{bad.name}.{int(time.time())}") if aside.exists() else aside)
                notes.append(
                    f"note: {bad.name} does not verify ({why}); resuming from {ckpt.name}, the newest "
                    f"checkpoint that does (the broken one was moved to {aside.parent})"
                )
            return ckpt
        if broken:
            raise CheckpointError(
                f"cannot resume: no checkpoint of {self.path} verifies (newest: {broken[0][1]}); "
                "start the run again with another --out"
            )
        raise CheckpointError(f"cannot resume: {self.path} has no resumable checkpoint yet")
