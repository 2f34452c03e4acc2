"""Which training jobs take a user's ``algo.*`` option: every one whose algorithm declares it.

One rule for both ways of giving an algorithm options: a suite's ``algo_overrides`` in
``zsceval bench`` (:func:`zsceval.bench.plan.scope_algo_options`) and ``zsceval train --set algo.KEY=V``
of a multi-stage algorithm (:func:`route_chain_options`). TrajeDi's ``jsd_weight`` reaches its
stage-1 population (``trajedi-stage1`` declares it; the ego does not); HSP's ``min_return`` reaches
its ego and not the MEP stage 1 it shares; an option that no job takes is refused before any job
runs, with the options of each job's algorithm, and so is a value the plug-in replaces with its own
for a job (:func:`plugin_conflicts`: FCP's sliding ``window``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from zsceval import registry

__all__ = [
    "algo_items",
    "describe_options",
    "option_names",
    "plugin_conflicts",
    "route_chain_options",
    "takes_option",
]


def algo_items(overrides: list[str] | tuple[str, ...]) -> dict[str, tuple[str, Any]]:
    """The ``algo.KEY=VALUE`` items among config overrides: ``{item: (KEY, value)}``, the value parsed
    as YAML like every override (:func:`zsceval.rl.config.apply_overrides`); other items left out.

    Raises:
        yaml.YAMLError: an ``algo.*`` value that is not YAML (the config's own parse names it first).
    """
    import yaml

    out = {}
    for item in overrides:
        if item.strip().startswith("algo.") and "=" in item:
            key, raw = item.split("=", 1)
            out[item] = (key.strip()[len("algo.") :], yaml.safe_load(raw))
    return out


def option_names(algo: str) -> set[str] | None:
    """The ``algo.*`` option names of a registered algorithm (its ``Options`` dataclass's fields;
    empty without one; None: the name is not registered here)."""
    try:
        options = registry.get(algo).Options
    except (KeyError, ValueError):
        return None
    return {f.name for f in dataclasses.fields(options)} if options is not None else set()


def takes_option(job: Any, key: str, names: dict[str, set[str] | None]) -> bool:
    """Whether ``job`` (a :class:`zsceval.execution.jobs.Job`) takes option ``key``: a ``train`` job
    whose algorithm declares it, or whose algorithm is not registered here (its options are unknown,
    so it is given them). ``names`` caches :func:`option_names` per algorithm."""
    if job.kind != "train":
        return False
    algo = job.params["algo"]
    if algo not in names:
        names[algo] = option_names(algo)
    return names[algo] is None or key in names[algo]


def plugin_conflicts(job: Any, options: dict[str, Any]) -> list[str]:
    """``"KEY (JOB_ID: VALUE)"`` for each user option whose value the plug-in replaced with its own for
    ``job`` (``job.params["algo_options"]``, which win over the user's: FCP's sliding ``window``),
    for the error that keeps such a value from being dropped without a word."""
    own = job.params.get("algo_options", {}) if job.kind == "train" else {}
    return [f"{k} ({job.id}: {own[k]!r})" for k, v in options.items() if k in own and own[k] != v]


def route_chain_options(jobs: list, options: dict[str, Any], ego_id: str) -> tuple[list, list[str]]:
    """Send the user's ``algo.*`` values of a job chain to the training jobs that take them.

    :meth:`zsceval.rl.algorithm.JobContext.train_job` puts every user option into the ego's job;
    this moves each one to the jobs whose algorithm declares it (:func:`takes_option`): it stays in
    the ego when the ego's algorithm has it, and is added to every other training job that takes it
    and for which the plug-in did not set it. A chain whose ego job is not a training job (TBS) reads
    the options itself (``JobContext.ego_options``) and is returned as it is.

    Args:
        jobs: the plug-in's jobs (:meth:`~zsceval.rl.algorithm.Algorithm.jobs`).
        options: ``{key: value}`` of the user's ``algo.*`` overrides.
        ego_id: id of the ego's job.

    Returns:
        ``(jobs, unused)``: the jobs with the options routed, and the keys no job takes (for the
        caller's error; :func:`describe_options` names what the jobs take).
    """
    ego = next((j for j in jobs if j.id == ego_id), None)
    if not options or ego is None or ego.kind != "train":
        return jobs, []
    names: dict[str, set[str] | None] = {}
    used: set[str] = set()
    out = []
    for job in jobs:
        if job.kind != "train":
            out.append(job)
            continue
        current = dict(job.params.get("algo_options", {}))
        for key, value in options.items():
            if job.id == ego_id:
                if takes_option(job, key, names):
                    used.add(key)
                else:
                    current.pop(key, None)
            elif key not in current and takes_option(job, key, names):
                current[key] = value
                used.add(key)
        params = {k: v for k, v in job.params.items() if k != "algo_options"}
        if current:
            params["algo_options"] = current
        out.append(job if params == job.params else dataclasses.replace(job, params=params))
    return out, [k for k in options if k not in used]


def describe_options(jobs: list) -> dict[str, list[str] | str]:
    """``{algorithm: its sorted option names}`` over the training jobs of ``jobs`` (``"?"`` for an
    algorithm not registered here), for the error that names an option no job takes."""
    seen: dict[str, list[str] | str] = {}
    for job in jobs:
        if job.kind == "train" and job.params["algo"] not in seen:
            names = option_names(job.params["algo"])
            seen[job.params["algo"]] = sorted(names) if names is not None else "?"
    return seen
