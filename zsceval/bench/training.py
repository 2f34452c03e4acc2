"""What ``zsceval train`` does with its flags: a new single run, a multi-stage job chain, or the
resume of either, decided here so that the command only parses, calls and prints.

:func:`plan_training` turns a :class:`TrainRequest` (the flags) into a :class:`TrainPlan`: the
resolved config and output folder of a single run, the parameters of a chain
(:mod:`zsceval.bench.chain`), or a finished run's message. :func:`train_run` trains a single run
inside :func:`~zsceval.evaluation.exclusion.training_guard` (no evaluation partner of the layout can
enter it). The resume rules of a single run are :func:`~zsceval.rl.run_dir.resume_config`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zsceval import registry
from zsceval.bench.chain import chain_jobs, config_file_overrides, missing_inputs, saved_chain
from zsceval.envs.scenarios import is_football
from zsceval.rl.config import ConfigError, TrainConfig, list_presets, resolve_config
from zsceval.rl.run_dir import resume_config

__all__ = [
    "DEFAULT_PRESET",
    "OutputFolderError",
    "TrainPlan",
    "TrainRequest",
    "TrainRequestError",
    "default_out",
    "plan_budget",
    "plan_training",
    "train_run",
]

DEFAULT_PRESET = "quick"
"""The preset of `zsceval train` without --preset or --config."""


class TrainRequestError(ValueError):
    """Flags that do not work together (the message names them and the way out)."""


class OutputFolderError(OSError):
    """The output folder cannot be created or written."""


@dataclass(frozen=True)
class TrainRequest:
    """The flags of ``zsceval train`` (None: not given)."""

    algo: str | None = None
    env_name: str | None = None
    layout: str | None = None
    seed: int | None = None
    steps: int | None = None
    preset: str | None = None
    config_file: str | None = None
    overrides: tuple[str, ...] = ()
    device: str | None = None
    out: str | None = None
    resume: bool = False
    redo: tuple[str, ...] = ()
    workers: int = 1


@dataclass(frozen=True)
class TrainPlan:
    """What to do.

    Attributes:
        action: ``run`` (one training run of ``cfg`` into ``out``), ``chain`` (the job chain
            ``chain`` into ``out``) or ``finished`` (nothing to do; ``message`` says why).
        out: the output folder.
        cfg: the resolved config of a single run (also what ``--print-config`` prints).
        chain: a chain's parameters (:func:`zsceval.bench.chain.run_chain`).
        message: why there is nothing to do.
    """

    action: str
    out: str
    cfg: TrainConfig | None = None
    chain: dict[str, Any] | None = None
    message: str = ""


def default_out(cfg: TrainConfig) -> str:
    """``runs/ALGO_LAYOUT_sSEED`` (the env's name for envs without layouts)."""
    where = cfg.env.layout if cfg.env.name == "overcooked" else cfg.env.name
    return str(Path("runs") / f"{cfg.run.algo}_{where}_s{cfg.run.seed}")


def plan_training(req: TrainRequest, *, print_config: bool = False) -> TrainPlan:
    """Decide what ``zsceval train`` does with ``req``; nothing is written.

    Raises:
        TrainRequestError: flags that do not work together.
        ConfigError: an unknown preset or a config that does not resolve.
        zsceval.registry.UnknownAlgorithmError: an unknown algorithm.
        CheckpointError: ``--resume`` of a folder that holds no run.
    """
    if req.resume:
        return _plan_resume(req)
    preset = req.preset
    if preset is not None and preset not in list_presets():
        raise ConfigError(f"unknown preset '{preset}'. Valid presets: {', '.join(list_presets())}.")
    preset = preset or DEFAULT_PRESET
    env_name, layout = req.env_name, req.layout
    if env_name is None and layout is not None and is_football(layout):
        env_name = "football"  # `--layout football` / `--layout academy_3_vs_1_with_keeper`
    if layout is not None and layout.endswith(".layout") and Path(layout).is_file():
        layout = str(Path(layout).resolve())  # recorded absolute: --resume works from any folder
    flags = {"run.algo": req.algo, "env.name": env_name, "env.layout": layout, "run.seed": req.seed,
             "run.total_steps": req.steps, "run.device": req.device}  # fmt: skip
    cfg = resolve_config(preset=preset, config_file=req.config_file, overrides=list(req.overrides), **flags)
    algo_cls = registry.get(cfg.run.algo)  # fail before creating anything
    out = req.out if req.out is not None else default_out(cfg)
    chain_layout = cfg.env.layout
    if cfg.env.name == "football" and not is_football(chain_layout):
        chain_layout = "football"  # `--env football` alone: the jobs' env flags need the scenario
    chain = {
        "algo": cfg.run.algo, "layout": chain_layout, "seed": cfg.run.seed, "steps": req.steps,
        "preset": preset, "device": cfg.run.device,
        "overrides": [*config_file_overrides(req.config_file), *req.overrides],
    }  # fmt: skip
    if not print_config and missing_inputs(algo_cls, cfg, chain):
        chain_jobs(chain)  # the algo.* options' routing checked before anything is written
        return TrainPlan("chain", out, chain=chain)
    _single_run_only(req, f"'{cfg.run.algo}' trains in one run")
    algo_cls.parse_options(dict(cfg.algo))  # unknown keys and bad values, before anything is written
    return TrainPlan("run", out, cfg=cfg)


def _plan_resume(req: TrainRequest) -> TrainPlan:
    """``--resume --out OUT``: the saved chain, or the single run's saved config."""
    if req.out is None:
        raise TrainRequestError("--resume needs --out RUN_DIR (the run to continue)")
    given = {
        "--algo": req.algo, "--env": req.env_name, "--layout": req.layout, "--seed": req.seed,
        "--preset": req.preset, "--config": req.config_file, "--device": req.device,
    }  # fmt: skip
    chain = saved_chain(req.out)
    if chain is not None:
        if req.overrides or req.steps is not None or any(v is not None for v in given.values()):
            raise TrainRequestError(
                "--resume of a multi-stage run takes only --out (and --redo, --workers, --no-progress)"
            )
        return TrainPlan("chain", req.out, chain=chain)
    _single_run_only(req, f"{req.out} holds none")
    clash = [k for k, v in given.items() if v is not None] + (["--set"] if req.overrides else [])
    if clash:
        raise TrainRequestError(
            f"--resume continues with the run's saved config.yaml; drop {', '.join(clash)} "
            "(only --steps may be raised)"
        )
    try:
        cfg, finished = resume_config(req.out, req.steps)
    except ValueError as exc:
        raise TrainRequestError(str(exc)) from None
    if finished is not None:
        return TrainPlan(
            "finished", req.out, cfg=cfg,
            message=f"{req.out} already finished training at {finished:,} env steps (eval.json); nothing "
            f"to do. Pass --steps above {finished:,} to train it further.",
        )  # fmt: skip
    return TrainPlan("run", req.out, cfg=cfg)


def _single_run_only(req: TrainRequest, why: str) -> None:
    if req.redo or req.workers > 1:
        flag = "--redo" if req.redo else "--workers"
        raise TrainRequestError(f"{flag} applies to a multi-stage run (a job chain); {why}")


def plan_budget(plan: TrainPlan, workers: int = 1) -> tuple[Any, float, str, Any]:
    """The env steps of a plan's training jobs and the hours left (``zsceval train --plan``), by the
    model of ``zsceval bench --plan`` (:func:`zsceval.bench.budget.hours_left`).

    Returns:
        ``(budget, hours, how, per-stage hours)``: ``budget`` has the columns of
        :func:`~zsceval.bench.budget.env_step_budget`, one row per stage (a single run is one
        ``ego`` row; a chain's rows are its stages), with what ``plan.out`` already holds.
    """
    import pandas as pd

    from zsceval.bench.budget import COLUMNS, hours_left, jobs_budget, trained_steps

    if plan.action == "chain":
        chain = plan.chain
        overrides = [o for o in chain["overrides"] if not o.strip().startswith("algo.")]
        ego_cfg = resolve_config(preset=chain["preset"], overrides=overrides,
                                 **{"run.algo": chain["algo"], "env.layout": chain["layout"]})  # fmt: skip
        steps = chain["steps"] or ego_cfg.run.total_steps
        budget = jobs_budget(chain_jobs(chain), plan.out, default_steps=steps)
        budget["stage"] = budget["stage"].replace({"ego": f"ego: {chain['algo']}"})  # the chain's ego id
        preset, device = chain["preset"], str(chain["device"])
    else:
        cfg = plan.cfg
        done, secs, busy = trained_steps(Path(plan.out))
        total = int(cfg.run.total_steps)
        row = {"stage": f"ego: {cfg.run.algo}", "jobs": 1, "env_steps": total, "done_steps": min(done, total),
               "train_s": secs, "busy_s": busy}  # fmt: skip
        budget = pd.DataFrame([row], columns=COLUMNS)
        # the assumed rates are the presets' networks': the paper preset's CNN or the quick one's MLP
        preset, device = ("paper" if cfg.model.kind == "cnn" else "quick"), str(cfg.run.device)
    hours, how, per_stage = hours_left(preset, device, budget, workers)
    return budget, hours, how, per_stage


def train_run(
    cfg: TrainConfig,
    out: str,
    *,
    resume: bool,
    progress: bool,
    log: Callable[[str], None],
    ready: Callable[[str], None] = lambda out: None,
) -> dict[str, Any]:
    """Train (or resume) one run of ``cfg`` into ``out``; returns the trainer's summary.

    Args:
        cfg: the resolved config.
        out: the run folder.
        resume: continue the run in ``out``.
        progress: show a progress bar.
        log: where notes go (the resume point, notes of the trainer).
        ready: called with ``out`` once the folder is created and locked (a writability check).

    Raises:
        OutputFolderError: ``out`` cannot be created.
        RefusedCheckpointError: an evaluation partner of the layout would enter training.
        ConfigError, CheckpointError, RunExistsError: as :class:`~zsceval.rl.trainer.Trainer`.
    """
    from zsceval.evaluation.exclusion import training_guard
    from zsceval.rl.trainer import Trainer

    with training_guard(cfg.env.layout):  # no evaluation partner of the layout may enter training
        try:  # validates first (nothing written on a config error), then takes the folder's lock
            trainer = Trainer(cfg, out, resume=resume, progress=progress)
        except OSError as exc:
            raise OutputFolderError(exc.errno, exc.strerror or type(exc).__name__) from None
        ready(out)
        for note in trainer.notes:
            log(note)
        if resume and trainer.resumed_from is None:
            log(f"{out} was stopped before its first checkpoint (nothing trained was saved): "
                "starting it over from scratch with its saved config.yaml")  # fmt: skip
        elif resume:
            log(f"resuming {out} at {trainer.env_steps:,} env steps")
        return trainer.train()
