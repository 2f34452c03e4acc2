"""Stacked phases of ``zsceval bench --stack``: a phase's training jobs that share a network shape
and schedule train as one :class:`~zsceval.rl.stacked_phase.StackedPhase` (one process, one env
batch over all members' games) before the phase's jobs run.

Which jobs stack: ``train`` jobs (the candidates of a layout, SP and E3T egos of several seeds, the
mid-checkpoint BRs, each with its own frozen partner) whose inputs have finished, whose configs
agree on :func:`~zsceval.rl.stacked_phase.stack_key` (env, network, rollout length, device, env
steps, threads) and that have not started as a job (no ``STARTED.json`` or ``DONE.json`` in their
folder). The BRs the partner pipeline trains with the partner they define run without the
training guard, as their jobs do; every other group under it. Each member trains into its job's own run folder
(``<job>/run``), exactly as the job would alone (tests/rl/test_stacked_phase.py); the phase's jobs
then run as always and find their runs trained: each resumes its finished run, evaluates it and
writes its ``DONE.json``, so reports, ``--redo``, partner-set export and a resume work as without
stacking. A killed stacked phase resumes every member from its own last checkpoint on the next run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from zsceval.execution import Job

__all__ = [
    "stack_default",
    "vmap_default",
    "resolve_stacking",
    "stacked_groups",
    "format_stacked",
    "run_stacked",
]

MIN_MEMBERS = 2
"""The fewest jobs worth a stacked phase."""


def stack_default(device: str) -> bool:
    """``--stack``'s default for a suite's device: on for CUDA (one engine batch over all members'
    games), off on CPU, where a stacked phase was not faster than the same jobs as processes on
    the same cores (docs/performance.md, "Stacked phases")."""
    return str(device).startswith("cuda")


def vmap_default(device: str) -> bool:
    """``--stack-vmap``'s default: off on every device for now. On CPU it is slower than the exact
    stacked phase at the suites' 512 games a member (and the exact phase trains each member bit
    for bit as alone); on a GPU, where it is built to be faster, it has not been measured or run
    yet (``benchmarks/perf/gpu_session.sh`` step 4b). Turn it on where that measurement says so."""
    return False


def resolve_stacking(stack: bool | None, stack_vmap: bool | None, device: str) -> tuple[bool, bool]:
    """``(stack, vmap)`` of ``zsceval bench --stack/--no-stack --stack-vmap/--no-stack-vmap`` (None:
    not given) for a suite on ``device``: ``--stack-vmap`` implies stacked phases; otherwise each
    takes its default (:func:`stack_default`, :func:`vmap_default`)."""
    if stack is None:
        stack = bool(stack_vmap) or stack_default(device)
    return stack, vmap_default(device) if stack_vmap is None else stack_vmap


def _needs(job: Job, root: Path, out_dirs: dict[str, str]) -> dict[str, Path] | None:
    """The folders of ``job``'s inputs, or None while one has not finished (or is unknown)."""
    needs = {}
    for dep in job.needs:
        if dep not in out_dirs or not (root / out_dirs[dep] / "DONE.json").is_file():
            return None
        needs[dep] = root / out_dirs[dep]
    return needs


def _own_br(job: Job) -> bool:
    """A BR of the partner pipeline, trained with the partner it defines (no training guard): the
    algorithm's own rule, as the ``train`` job applies it
    (:meth:`~zsceval.rl.algorithm.Algorithm.trains_with_evaluation_partners`)."""
    from zsceval import registry

    try:
        algo_cls = registry.get(job.params["algo"])
    except Exception:  # unknown plug-in: its job reports it
        return False
    return algo_cls.trains_with_evaluation_partners(job.params)


def stacked_groups(jobs: list[Job], root: str | Path, known: list[Job] = ()) -> list[list[Job]]:
    """The groups of ``jobs`` that train as stacked phases (see the module docstring), in job order;
    ``known``: every job of the bench (the inputs' folders; ``jobs`` are always known).

    Raises:
        ConfigError: a job's config does not resolve (as the job itself would raise).
    """
    from zsceval.rl.stacked_phase import check_stackable, stack_key
    from zsceval.training.jobs import train_config

    root = Path(root)
    out_dirs = {j.id: j.out for j in [*known, *jobs]}
    groups: dict[tuple, list[Job]] = {}
    for job in jobs:
        out = root / job.out
        if job.kind != "train" or (out / "DONE.json").exists() or (out / "STARTED.json").exists():
            continue
        needs = _needs(job, root, out_dirs)
        if needs is None:
            continue
        cfg = train_config(dict(job.params), needs)
        try:
            check_stackable([cfg])
        except ValueError:
            continue
        groups.setdefault((job.params["layout"], _own_br(job), stack_key(cfg)), []).append(job)
    return [g for g in groups.values() if len(g) >= MIN_MEMBERS]


def format_stacked(groups: list[list[Job]], vmap: bool = False) -> str:
    """``--plan``'s lines: one per stacked phase, its members' job ids; ``vmap``: the phases vmap
    their members (:mod:`zsceval.rl.stacked_acting`, :mod:`zsceval.rl.stacked_update`)."""
    if not groups:
        return "stacked phases: none"
    how = ", vmapped acting and updates" if vmap else ", members one by one (--stack-vmap to vmap them)"
    lines = [f"stacked phases: {len(groups)}{how}"]
    for g in groups:
        first, members = g[0].params, ", ".join(j.id for j in g)
        lines.append(f"  {first['layout']}: {len(g)} x {first['algo']} in one process ({members})")
    return "\n".join(lines)


def run_stacked(jobs: list[Job], root: str | Path, log: Callable[[str], None] = print,
                known: list[Job] = (), vmap: bool = False) -> int:  # fmt: skip
    """Train every stacked group of ``jobs`` (:func:`stacked_groups`; ``known``: every job of the
    bench) into its members' run folders, under :func:`~zsceval.evaluation.exclusion.training_guard`
    of its layout unless its members are the partner pipeline's BRs; returns how many groups ran. A
    member folder left by a killed stacked phase resumes. ``vmap``: members act in one vmapped
    forward a step (:mod:`zsceval.rl.stacked_acting`)."""
    import contextlib

    from zsceval.evaluation.exclusion import training_guard
    from zsceval.rl.stacked_phase import StackedPhase
    from zsceval.training.jobs import train_config

    root = Path(root)
    groups = stacked_groups(jobs, root, known)
    out_dirs = {j.id: j.out for j in [*known, *jobs]}
    for g in groups:
        layout = g[0].params["layout"]
        how = ", vmapped acting and updates" if vmap else ""
        log(f"stacked phase: {len(g)} x {g[0].params['algo']} on {layout} in one process{how}")
        cfgs = [train_config(dict(j.params), _needs(j, root, out_dirs)) for j in g]
        with contextlib.nullcontext() if _own_br(g[0]) else training_guard(layout):
            phase = StackedPhase(cfgs, [root / j.out / "run" for j in g], resume=True, vmap=vmap)
            for note in phase.notes:
                if note.startswith("stacked phase:"):
                    log(note)
            try:
                phase.train()
            finally:
                phase.close()
    return len(groups)
