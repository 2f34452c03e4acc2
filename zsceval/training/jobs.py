"""The generic ``train`` job kind: one training run of any registered algorithm, as a job.

It reads its inputs from finished jobs' output folders (``algo_inputs``, ``algo_job_dirs`` and what
the algorithm reads itself, :meth:`~zsceval.rl.algorithm.Algorithm.job_options`), trains into
``out/run`` and resumes from the last resumable checkpoint when re-run after a kill. The partner
pipeline (:mod:`zsceval.generation.pipeline`: candidates, BRs), the algorithms' stage-1 populations
and the egos all train through it.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from zsceval import registry
from zsceval.envs.scenarios import env_flags
from zsceval.evaluation.exclusion import training_guard
from zsceval.execution.jobs import JobInputError, job_kind
from zsceval.rl.checkpoint import RefusedCheckpointError, list_checkpoints

__all__ = ["JOB_PROGRESS_ENV", "train_config", "train_job"]

JOB_PROGRESS_ENV = "ZSCEVAL_JOB_PROGRESS"
"""When "1", training jobs show their own progress bar (env steps inside the job)."""


def _algorithm(name: str):
    try:
        return registry.get(name)
    except Exception:  # unknown or broken plug-in: the trainer reports it with the valid names
        return None


def train_config(params: dict, needs: dict):
    """The resolved :class:`~zsceval.rl.config.TrainConfig` of a ``train`` job (:func:`train_job`'s
    params; ``needs``: the finished input jobs' folders by id, empty for a job without inputs).
    A stacked bench phase (:mod:`zsceval.bench.stacking`) builds its members' configs with it."""
    from zsceval.rl.config import config_from_dict, resolve_config

    algo_cls = _algorithm(params["algo"])
    options = dict(params.get("algo_options", {}))
    for option, ids in params.get("algo_inputs", {}).items():
        runs = [str(Path(needs[j]) / "run") for j in ([ids] if isinstance(ids, str) else ids)]
        options[option] = runs[0] if isinstance(ids, str) else runs
    for option, ids in params.get("algo_job_dirs", {}).items():
        dirs = [str(needs[j]) for j in ([ids] if isinstance(ids, str) else ids)]
        options[option] = dirs[0] if isinstance(ids, str) else dirs
    if algo_cls is not None:
        options.update(algo_cls.job_options(params, needs))
    flags = {
        "run.algo": params["algo"],
        **env_flags(params["layout"]),
        "run.seed": params.get("seed", 0),
        "run.total_steps": params.get("steps"),
        "run.device": params.get("device"),
        "run.checkpoint_every": params.get("checkpoint_every"),
        "run.keep_checkpoints": params.get("keep_checkpoints"),
    }
    cfg = resolve_config(preset=params.get("preset", "quick"), overrides=params.get("overrides", []), **flags)
    if options:
        cfg = config_from_dict({"algo": options}, cfg)
    return cfg


@job_kind("train")
def train_job(params: dict, out: Path, needs: dict) -> dict:
    """Train ``params['algo']`` on ``params['layout']`` into ``out/run`` (resumes a killed run).

    params: ``algo, layout, seed, steps, preset, device, checkpoint_every, keep_checkpoints,
    overrides`` (list of ``key=value``), ``algo_options`` (dict of ``algo.*``), ``algo_inputs``
    (``{algo option: job id or [job ids]}``: the option gets those jobs' run folders),
    ``algo_job_dirs`` (the same with the jobs' own folders), and what the algorithm reads itself
    (:meth:`~zsceval.rl.algorithm.Algorithm.job_options`; the BR plug-in's ``partner_train``,
    ``partner_eval`` and ``partner_refs``).

    Every job but the partner pipeline's own BRs
    (:meth:`~zsceval.rl.algorithm.Algorithm.trains_with_evaluation_partners`) runs inside
    :func:`~zsceval.evaluation.exclusion.training_guard`: a checkpoint that holds an evaluation
    partner of the layout is refused (``JobInputError`` naming the checkpoint and the partner).
    """
    from zsceval.rl.config import ConfigError
    from zsceval.rl.trainer import NonFiniteError, Trainer

    algo_cls = _algorithm(params["algo"])
    cfg = train_config(params, needs)
    run = out / "run"
    resume = (run / "config.yaml").exists() and any(
        json.loads((c / "meta.json").read_text()).get("resumable") for c in list_checkpoints(run)
    )
    if (run / "config.yaml").exists() and not resume:
        import shutil

        shutil.rmtree(run)  # killed before its first resumable checkpoint: start over
    progress = os.environ.get(JOB_PROGRESS_ENV) == "1"  # set by `zsceval bench` with the local executor
    # The partner pipeline's own BRs train with the partner they define; every other job refuses the
    # layout's evaluation partners (a copy of one included).
    own_br = algo_cls is not None and algo_cls.trains_with_evaluation_partners(params)
    with contextlib.nullcontext() if own_br else training_guard(params["layout"]):
        try:
            trainer = Trainer(cfg, run, resume=resume, progress=progress)
        except (
            ConfigError,
            RefusedCheckpointError,
        ) as exc:  # inputs that cannot work (too few HSP candidates)
            raise JobInputError(f"{params.get('algo')} on {params.get('layout')}: {exc}") from None
        try:
            summary = trainer.train()
        except NonFiniteError as exc:  # a rerun diverges the same way: change the setting first
            raise JobInputError(f"{params.get('algo')} on {params.get('layout')}: {exc}") from None
        finally:
            trainer.close()
    return {"run": "run", "self_play_return": summary.get("self_play", {}).get("sparse_return_mean")}
