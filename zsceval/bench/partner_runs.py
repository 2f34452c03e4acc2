"""Evaluation partners made in a working folder: the jobs of ``zsceval partners generate / select``.

The partner phases of a bench (:mod:`zsceval.bench.plan`) for one layout, with no ego: a
partners-only :class:`~zsceval.bench.suite.Suite` (:func:`partner_suite`) whose jobs
(:mod:`zsceval.generation.pipeline`) run into the folder. :func:`generate_partners` trains the
behavior-preferring candidates (pi_w with its BR) and their behavior features;
:func:`select_partners` selects k of them by BR-Div, trains BRs of their mid checkpoints and writes
the partner-set manifest (ZSC-Eval Sec. 4).

The folder records the settings its candidates were generated with in ``partners.yaml``
(:data:`RECORD`): :func:`resolve_settings` takes what a call does not give from it and refuses a
given value that differs, so finished candidates are never silently redone with other settings.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from zsceval.bench.plan import build_phases, late_phases
from zsceval.bench.suite import Suite, check_device, validate_suite
from zsceval.execution import job_ids
from zsceval.execution.locks import FolderLock
from zsceval.generation.candidates import PartnerBudget
from zsceval.io import atomic_write_text
from zsceval.stats.records import differences

__all__ = [
    "DEFAULTS",
    "RECORD",
    "PartnerSettingsError",
    "check_partner_suite",
    "generate_partners",
    "manifest_path",
    "partner_suite",
    "resolve_settings",
    "select_partners",
    "write_settings",
]

RECORD = "partners.yaml"
"""The working folder's record of the settings its candidates were generated with."""

DEFAULTS: dict[str, Any] = {
    "seed": 0,
    "preset": "quick",
    "device": "cpu",
    "steps": None,
    "weight_sampling": "reference",
    "candidates": 8,
}
"""Settings of a folder without a record, for the ones a call does not give."""

PIPELINE = ("zsceval.training.jobs", "zsceval.generation.pipeline")
"""Modules that register the partner job kinds (imported by the job runner)."""


class PartnerSettingsError(ValueError):
    """A call's settings conflict with the folder's record, or the record is unreadable."""


def resolve_settings(
    out: str | Path, layout: str, given: dict[str, Any], force: bool = False
) -> dict[str, Any]:
    """The settings of this call: the folder's record (``partners.yaml``, written by ``generate``) for
    what was not given, the defaults otherwise; a given value that differs from the record is refused
    without ``force``.

    Args:
        out: the working folder.
        layout: canonical layout name.
        given: the call's settings (keys of :data:`DEFAULTS`), None for "not given".
        force: accept given values that differ from the record.

    Returns:
        ``{"layout": layout, **settings}`` with every key of ``given``.

    Raises:
        PartnerSettingsError: conflicting settings (names the differences and the way out), or an
            unreadable record.
    """
    path = Path(out) / RECORD
    record = {}
    if path.is_file():
        try:
            record = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise PartnerSettingsError(f"{path} is not valid YAML ({exc}); fix or delete it") from None
    wanted = {
        "layout": layout,
        **{k: (v if v is not None else record.get(k, DEFAULTS[k])) for k, v in given.items()},
    }
    if record and not force:
        diffs = differences({k: record.get(k) for k in wanted}, wanted)
        if diffs:
            raise PartnerSettingsError(
                f"{out} holds partners generated with other settings ({path}):\n  "
                + "\n  ".join(diffs)
                + "\nOmit these options to use the recorded ones, pass --force to redo the jobs whose "
                "inputs changed, or choose another --out."
            )
    return wanted


def write_settings(out: str | Path, settings: dict[str, Any], overwrite: bool = True) -> None:
    """Record ``settings`` in ``out/partners.yaml`` (atomically); with ``overwrite=False`` only when
    the folder has no record yet.

    Raises:
        OSError: the folder cannot be written.
    """
    path = Path(out) / RECORD
    if overwrite or not path.is_file():
        atomic_write_text(path, yaml.safe_dump(settings, sort_keys=False))


def partner_suite(settings: dict[str, Any], k: int = 1, min_return: float | None = None) -> Suite:
    """The partners-only suite of ``settings`` (:func:`resolve_settings`): one layout, no algorithms.

    Args:
        settings: ``layout, candidates, steps, seed, preset, device, weight_sampling``.
        k: partners to select (capped at the number of candidates).
        min_return: drop candidates whose return with their BR is <= this (default: the budget's).

    Returns:
        A :class:`~zsceval.bench.suite.Suite` named ``partners``; ``steps`` (when not None) is
        the env-step budget of every candidate and every mid-checkpoint BR.
    """
    candidates = settings["candidates"]
    budget = PartnerBudget(
        candidates=candidates, k=min(k, candidates), weight_sampling=settings["weight_sampling"]
    )
    if settings["steps"] is not None:
        budget = dataclasses.replace(
            budget, candidate_steps=settings["steps"], mid_br_steps=settings["steps"]
        )
    if min_return is not None:
        budget = dataclasses.replace(budget, min_return=min_return)
    return Suite(
        name="partners",
        layouts=(settings["layout"],),
        algorithms=(),
        seed=settings["seed"],
        preset=settings["preset"],
        device=settings["device"],
        partners=budget,
    )


def check_partner_suite(suite: Suite, what: str) -> None:
    """Refuse a partners suite that cannot run here, before any compute.

    Args:
        suite: from :func:`partner_suite`.
        what: the caller's name in the messages, e.g. ``"partners generate"``.

    Raises:
        SuiteError: a bad budget, preset or override, or a device this machine does not have.
    """
    validate_suite(suite, what)
    check_device(suite)


def generate_partners(suite: Suite, out: str | Path) -> list[tuple[str, float]]:
    """Train the suite's candidates (pi_w with its BR) and compute their behavior features in ``out``.

    Finished jobs in ``out`` are kept; a rerun resumes.

    Returns:
        ``(candidate, return with its BR)`` per candidate, in job order.

    Raises:
        JobError: a job failed (``retryable`` says whether a rerun can help).
        OSError: ``out`` cannot be written.
    """
    from zsceval.execution import run_jobs

    phases, _ = build_phases(suite)
    with FolderLock(out, "partner folder"):
        results = run_jobs(phases[0] + phases[1], out, modules=PIPELINE)
    parsed = {job_id: job_ids.parse(job_id) for job_id in results}
    return [
        (parsed[job_id].candidate, res["final_return"])
        for job_id, res in sorted(results.items())
        if parsed[job_id].kind == "candidate" and parsed[job_id].step == "evaluate"
    ]


def select_partners(suite: Suite, out: str | Path) -> Path:
    """Select the suite's k partners by BR-Div (k-DPP), train BRs of their mid checkpoints and write
    the partner-set manifest, in ``out`` (the candidates are generated first if missing).

    Returns:
        The manifest's path (:func:`manifest_path`).

    Raises:
        JobError: a job failed (``retryable`` says whether a rerun can help).
        ValueError: too few candidates pass ``min_return`` for k partners, or another input of the
            late phases is unusable.
        OSError: ``out`` cannot be written.
    """
    from zsceval.execution import run_jobs

    phases, infos = build_phases(suite)
    jobs = phases[0] + phases[1] + phases[2]
    with FolderLock(out, "partner folder"):
        run_jobs(jobs, out, modules=PIPELINE)
    late = late_phases(suite, Path(out), infos)
    run_jobs(jobs + late[0] + late[1], out, modules=PIPELINE)
    return manifest_path(out, suite.layouts[0])


def manifest_path(out: str | Path, layout: str) -> Path:
    """Where :func:`select_partners` writes ``layout``'s partner-set manifest in ``out``."""
    return Path(out) / job_ids.partner_set(layout) / "manifest.json"
