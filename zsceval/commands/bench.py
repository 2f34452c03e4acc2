"""``zsceval bench``: run a benchmark suite end to end, resumably."""

from __future__ import annotations

import click

from zsceval.commands._common import slurm_flags


@click.command(name="bench")
@click.option("--suite", "suite_name", required=True, help="Suite name (benchmarks/suites) or a YAML path.")
@click.option("--algos", default=None, help="Comma-separated subset of the suite's algorithms.")
@click.option("--layouts", default=None, help="Comma-separated subset of the suite's layouts.")
@click.option(
    "--out", type=click.Path(file_okay=False), default=None, help="Output directory. [default: bench/SUITE]"
)
@click.option(
    "--executor",
    type=click.Choice(["local", "process", "ray", "slurm"]),
    default="local",
    show_default=True,
    help="Where jobs run: this process, a local process pool, Ray, or one SLURM job each (submitit; "
    'pip install "zsceval[slurm]"; docs/cluster.md).',
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Parallel jobs (process / ray), or SLURM jobs queued or running at once (slurm).",
)
@slurm_flags
@click.option(
    "--force",
    is_flag=True,
    default=False,
    help="Run into an --out that holds another suite setting, replacing the jobs whose inputs changed.",
)
@click.option(
    "--retries",
    type=click.IntRange(min=0),
    default=None,
    help="Attempts after a job's first failure. [default: 1 for process and ray, 0 for local]",
)
@click.option(
    "--device",
    default=None,
    help="Torch device of every job (cpu, cuda, cuda:1), replacing the suite's `device`. "
    "[default: the suite's]",
)
@click.option(
    "--plan",
    is_flag=True,
    default=False,
    help="Print the env steps of every stage, what the folder already holds and the hours left; run nothing. "
    "Hours are for --executor/--workers, or for those of a bench running in --out when they are not given.",
)
@click.option(
    "--stack/--no-stack",
    default=None,
    help="Train each phase's jobs that share a network shape and schedule (a layout's candidates, SP "
    "egos of several seeds) as one stacked process with one env batch; each keeps its own folder. "
    "[default: on for a CUDA suite, off on CPU]",
)
@click.option(
    "--stack-vmap/--no-stack-vmap",
    default=None,
    help="In a stacked phase, all members' actors act, and their critics give values, in one vmapped "
    "forward a step, and their PPO updates take one stacked step a minibatch (equal to --no-stack-vmap "
    "within float tolerance, not bit for bit); implies --stack. [default: off: not yet measured on a GPU]",
)
@click.option(
    "--loggers",
    default=None,
    help="Comma-separated metric loggers (csv, tensorboard, wandb, mlflow) that every training job also "
    "logs to and that get the bench's BR-Prox summary at the end; e.g. --loggers wandb. [default: csv]",
)
@click.option("--progress/--no-progress", default=True, show_default=True)
@click.option(
    "--report/--no-report", default=True, show_default=True, help="Print the BR-Prox table at the end."
)
@click.option(
    "--levels",
    type=click.Choice(["checkpoint", "median"]),
    default="checkpoint",
    show_default=True,
    help="Moderate/expert split of the printed table: mid/final checkpoints, or BR return <= median.",
)
def bench(
    suite_name,
    algos,
    layouts,
    out,
    executor,
    workers,
    force,
    retries,
    device,
    plan,
    stack,
    stack_vmap,
    loggers,
    progress,
    report,
    levels,
    **slurm_args,
) -> None:
    """Run whatever is missing of a suite: partner generation and selection, ego training, evaluation.

    Every expensive step is a job with its inputs and outputs on disk, so a killed bench resumes
    where it stopped and finished work is never redone. Algorithms the suite names that are not
    implemented yet are reported as skipped.

    \b
    Examples:
      zsceval bench --suite overcooked-quick
      zsceval bench --suite overcooked --layouts counter_circuit --algos sp --executor process --workers 2
      zsceval bench --suite overcooked --executor slurm --workers 64 --slurm-partition gpu --slurm-gpus 1
    """
    import dataclasses

    from zsceval.bench.run import log_summary, run_bench
    from zsceval.bench.suite import SuiteError, check_device, check_suite_record, load_suite
    from zsceval.commands._common import check_writable, job_failure, slurm_from_flags, write_error
    from zsceval.execution import JobError
    from zsceval.plugins import PluginLoadError
    from zsceval.rl.loggers import LoggerError, check_loggers

    try:
        suite = load_suite(
            suite_name,
            algorithms=algos.split(",") if algos else None,
            layouts=layouts.split(",") if layouts else None,
        )
        if device is not None:
            suite = dataclasses.replace(suite, device=device)
    except (SuiteError, PluginLoadError) as exc:
        raise click.ClickException(str(exc)) from None
    out = out or f"bench/{suite.name}"
    loggers = tuple(n.strip() for n in (loggers or "").split(",") if n.strip())
    slurm = None
    if executor == "slurm":
        slurm = slurm_from_flags(suite.slurm, slurm_args, check_installed=not plan)
    try:
        check_loggers(loggers)  # an unknown or uninstalled logger fails before any job runs
        if not plan:  # a plan for a GPU suite can be printed anywhere
            check_device(suite)
        check_suite_record(suite, out, force=force)  # before any output is written
    except (SuiteError, LoggerError) as exc:
        raise click.ClickException(str(exc)) from None
    if not plan:
        check_writable(out)
    if plan:
        executor, workers = _running_bench_workers(out, executor, workers)
    _print_plan(suite, out, executor, workers, stack, stack_vmap)
    if plan:
        return
    try:
        tables = run_bench(
            suite, out, executor=executor, workers=workers, retries=retries, progress=progress,
            log=click.echo, force=force, stack=stack, loggers=loggers, slurm=slurm, stack_vmap=stack_vmap,
        )  # fmt: skip
        if loggers and "results" in tables:
            log_summary(out, loggers, name=suite.name, levels=levels)
    except (SuiteError, PluginLoadError) as exc:
        raise click.ClickException(str(exc)) from None
    except (JobError, ValueError) as exc:
        raise job_failure(exc) from None
    except OSError as exc:
        raise write_error(exc) from None
    click.echo(f"results in {out}: " + ", ".join(f"{k}.parquet" for k in tables if k != "skipped_algorithms"))
    if report and "results" in tables:
        _print_report(out, tables, levels)


def _print_plan(suite, out: str, executor: str, workers: int, stack: bool | None = None,
                stack_vmap: bool | None = None) -> None:  # fmt: skip
    """The suite's layouts, algorithms and ego budgets, the env steps per stage (with what ``out``
    already holds), the hours left and the stacked phases (``--stack``, ``--stack-vmap``)."""
    from zsceval.bench.budget import env_step_budget, hours_left
    from zsceval.bench.plan import build_phases
    from zsceval.bench.stages import format_budget, format_left
    from zsceval.plugins import PluginLoadError

    click.echo(
        f"suite {suite.name}: layouts {', '.join(suite.layouts)}; algorithms {', '.join(suite.algorithms)}"
    )
    budgets = {}
    for algo in suite.algorithms:
        budgets.setdefault(suite.ego_budget(algo), []).append(algo)
    click.echo("ego env steps: " + "; ".join(f"{', '.join(a)} {n:,}" for n, a in budgets.items()))
    try:
        static = build_phases(suite)[0]
        budget = env_step_budget(suite, static, out)
    except (ValueError, OSError, PluginLoadError) as exc:
        raise click.ClickException(str(exc)) from None
    hours, how, per_stage = hours_left(
        suite.preset, str(suite.device), budget, workers if executor != "local" else 1
    )
    click.echo(format_budget(budget, per_stage))
    click.echo(format_left(hours, how))
    if len(suite.layouts) > 1:
        click.echo(_per_layout(suite, out, workers if executor != "local" else 1))
    from zsceval.bench.stacking import format_stacked, resolve_stacking, stacked_groups

    stack, vmap = resolve_stacking(stack, stack_vmap, str(suite.device))
    if stack:
        try:
            click.echo(format_stacked(stacked_groups(static[0], out), vmap=vmap))
        except (ValueError, OSError) as exc:  # a job whose config does not resolve fails when it runs
            click.echo(f"stacked phases: not listed ({exc})")
    else:
        click.echo("stacked phases: off (--stack to train a phase's same-shape jobs in one process)")
    from zsceval.bench.override_check import format_overridden, overridden_settings

    try:
        note = format_overridden(overridden_settings(static, suite.overrides))
    except (ValueError, OSError):  # a job whose config does not resolve fails when it runs, with its error
        note = ""
    if note:
        click.echo(note)


def _per_layout(suite, out: str, workers: int) -> str:
    """Each layout's env steps (total and left) and training hours left, at the rates of
    :func:`~zsceval.bench.budget.hours_left` (layouts share the workers one after another)."""
    import dataclasses

    from zsceval.bench.budget import env_step_budget, format_hours, hours_left
    from zsceval.bench.plan import build_phases

    lines = [f"{'per layout':<40} {'env steps':>21} {'left':>15} {'left h':>7}"]
    for lay in suite.layouts:
        one = dataclasses.replace(suite, layouts=(lay,))
        budget = env_step_budget(one, build_phases(one)[0], out)
        hours = hours_left(one.preset, str(one.device), budget, workers)[0]
        total, done = int(budget["env_steps"].sum()), int(budget["done_steps"].sum())
        lines.append(f"{lay:<40} {total:>21,} {total - done:>15,} {format_hours(hours):>7}")
    return "\n".join(lines)


def _print_report(out: str, tables: dict, levels) -> None:
    """The report's table and strata after a bench (``zsceval report`` has the figures)."""
    import pandas as pd

    from zsceval.bench import report as rep
    from zsceval.evaluation.strata import unhelpful_summary

    results, br, features = rep.read_tables(out)
    click.echo("\n".join(rep.bench_notes(out, features, br)))
    summary = rep.summarize(results, br, levels=levels)
    click.echo(rep.format_table(summary))
    unhelpful = unhelpful_summary(pd.read_parquet(tables["unhelpful"])) if "unhelpful" in tables else None
    strata = rep.strata_rows(summary, unhelpful)
    click.echo("\n" + rep.format_strata(strata, levels=levels, unhelpful_games=unhelpful is not None))
    click.echo(f"figures and JSON: zsceval report {out}")


def _running_bench_workers(out: str, executor: str, workers: int) -> tuple[str, int]:
    """``--plan``'s executor and workers: those given, else a bench's that is running in ``out``
    (recorded in the folder's lock), so the hours left are that run's. Prints which it used."""
    ctx = click.get_current_context()
    given = any(
        ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT
        for name in ("executor", "workers")
    )
    from zsceval.execution.locks import holder

    owner = holder(out)
    if owner is None or not isinstance(owner.get("workers"), int):
        return executor, workers
    running = (
        f"a bench runs in {out} (pid {owner.get('pid')} on {owner.get('host')}, since {owner.get('started')})"
    )
    if given:
        click.echo(f"{running}; hours below are for the --executor/--workers given")
        return executor, workers
    executor, workers = str(owner.get("executor", executor)), int(owner["workers"])
    click.echo(f"{running}: hours below are for its --executor {executor} --workers {workers}")
    return executor, workers
