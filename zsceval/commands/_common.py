"""Helpers shared by the commands: parsing budgets, checking output folders, and the click errors of
failed writes and jobs. The settings records of output folders are library code
(:mod:`zsceval.stats.records`)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click


def parse_steps(value, flag: str = "--steps") -> int | None:
    """``value`` (``"5e6"``, ``"300000"``) as a positive int env-step count; None stays None.

    Raises:
        click.BadParameter: not a number, or < 1.
    """
    if value is None:
        return None
    try:
        steps = int(float(value))
    except (TypeError, ValueError, OverflowError):
        raise click.BadParameter(
            f"{value!r} is not a number of env steps (e.g. 3e5)", param_hint=flag
        ) from None
    if steps < 1:
        raise click.BadParameter(f"{value!r} must be at least 1 env step", param_hint=flag)
    return steps


class Count(click.ParamType):
    """A whole number >= 1 written as ``--steps`` takes it: ``1000``, ``1e3`` or ``5e6``."""

    name = "count"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            count = value
        else:
            try:
                count = int(float(value))
            except (TypeError, ValueError, OverflowError):
                self.fail(f"{value!r} is not a whole number (e.g. 50 or 1e3)", param, ctx)
            if float(value) != count:
                self.fail(f"{value!r} is not a whole number", param, ctx)
        if count < 1:
            self.fail(f"{value!r} must be at least 1", param, ctx)
        return count


COUNT = Count()
"""The ``--episodes`` type of every command: what ``--steps`` accepts."""


def plural(count: int, word: str) -> str:
    """``1 partner``, ``2 partners``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def unwritable_reason(folder: str | Path) -> str | None:
    """Create ``folder`` and write a file in it; the OS's reason when that fails, else None."""
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".write-test.")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def check_writable(out: str | Path, flag: str = "--out") -> None:
    """Create ``out`` and check that a file can be written in it.

    Raises:
        click.ClickException: naming the folder, the OS error and the way out.
    """
    reason = unwritable_reason(out)
    if reason is not None:
        raise click.ClickException(
            f"cannot write to {flag} {out}: {reason}; choose a writable folder with {flag}"
        )


def write_error(exc: OSError) -> click.ClickException:
    """A message for an OSError met while writing outputs (disk full, read-only, permissions)."""
    where = f" {exc.filename}" if exc.filename else ""
    return click.ClickException(
        f"cannot write{where}: {exc.strerror or exc}; check the disk or choose another --out"
    )


def job_failure(exc: Exception) -> click.ClickException:
    """The message of a failed bench / partners run: resume advice only when a rerun can help."""
    retryable = getattr(exc, "retryable", False)
    if retryable:
        advice = "(finished jobs are kept; rerun the same command to resume)"
    else:
        advice = "(a rerun would fail the same way: change the setting named above first)"
    return click.ClickException(f"{exc}\n{advice}")


def slurm_flags(command):
    """Decorator adding the ``--slurm-*`` options (the resources of ``--executor slurm``'s jobs,
    :class:`zsceval.execution.slurm.SlurmOptions`) to a command; they reach it as ``slurm_*``
    keyword arguments, read with :func:`slurm_from_flags`."""
    int_option = {"type": click.IntRange(min=0), "default": None}
    options = [
        click.option("--slurm-partition", default=None, help="SLURM partition. [default: the cluster's]"),
        click.option("--slurm-time", default=None,
                     help="Time limit of one SLURM job: minutes, HH:MM:SS, D-HH:MM:SS. [default: 24:00:00]"),
        click.option("--slurm-gpus", **int_option, help="GPUs per SLURM job. [default: 0]"),
        click.option("--slurm-cpus", type=click.IntRange(min=1), default=None,
                     help="CPU cores per SLURM job. [default: 4]"),
        click.option("--slurm-mem-gb", type=click.FloatRange(min=0, min_open=True), default=None,
                     help="Memory per SLURM job, GB."),
        click.option("--slurm-account", default=None, help="SLURM account."),
        click.option("--slurm-qos", default=None, help="SLURM quality of service."),
        click.option("--slurm-constraint", default=None, help="SLURM node features, e.g. a100."),
        click.option("--slurm-cluster", type=click.Choice(["slurm", "local", "debug"]), default=None,
                     help="submitit back-end: slurm (sbatch), local (local processes: tests, one machine), "
                     "debug (in-process). [default: slurm]"),
    ]  # fmt: skip
    for option in reversed(options):
        command = option(command)
    return command


def slurm_from_flags(block: dict | None, flags: dict, *, check_installed: bool = True):
    """The :class:`~zsceval.execution.slurm.SlurmOptions` of a suite's ``slurm`` block (or None)
    overridden by the ``slurm_*`` flags given.

    Raises:
        click.ClickException: a bad option, or submitit missing (its install command named).
    """
    from zsceval.execution.jobs import JobError
    from zsceval.execution.slurm import require_submitit, slurm_options

    given = {k.removeprefix("slurm_"): v for k, v in flags.items() if k.startswith("slurm_")}
    try:
        opts = slurm_options(dict(block or {}), **given)
        if check_installed:
            require_submitit()
    except (ValueError, JobError) as exc:
        raise click.ClickException(str(exc)) from None
    return opts
