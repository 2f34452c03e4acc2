"""``zsceval train``: train a registered algorithm on a layout and write a run directory."""

from __future__ import annotations

from pathlib import Path

import click
import yaml

from zsceval import registry
from zsceval.bench.chain import run_chain
from zsceval.commands._common import slurm_flags
from zsceval.rl.config import ConfigError, config_to_dict


def _fail(exc: Exception) -> click.ClickException:
    return click.ClickException(str(exc))


def _finish_chain(
    params: dict, out, progress: bool, redo: tuple[str, ...] = (), workers: int = 1, executor=None, slurm=None
) -> None:
    """Run or resume a multi-stage algorithm's job chain (:mod:`zsceval.bench.chain`) and report."""
    from zsceval.execution.jobs import JobError

    click.echo(
        f"{params['algo']} trains in stages: running its job chain in {out} (rerun to resume)", err=True
    )
    try:
        summary = run_chain(params, out, progress=progress, redo=list(redo), workers=workers,
                            log=lambda line: click.echo(line, err=True), executor=executor,
                            slurm=slurm)  # fmt: skip
    except JobError as exc:
        raise click.ClickException(f"{exc}; rerun `zsceval train --resume --out {out}` to resume") from None
    _report(summary, Path(out) / "ego" / "run")
    for extra in sorted((Path(out) / "ego").glob("*/report.txt")):  # a chain's own evaluation (TBS)
        click.echo(extra.read_text().rstrip())


def _print_plan(plan, workers: int) -> None:
    """``--plan``: each stage's env steps, the share done, the hours logged and left."""
    from zsceval.bench.stages import format_budget, format_left
    from zsceval.bench.training import plan_budget

    budget, hours, how, per_stage = plan_budget(plan, workers)
    what = "a multi-stage run (a chain of jobs)" if plan.action == "chain" else "one training run"
    click.echo(f"{what} into {plan.out}")
    click.echo(format_budget(budget, per_stage))
    click.echo(format_left(hours, how))


def _report(summary: dict, out) -> None:
    sp = summary.get("self_play")
    if "env_steps" not in summary:  # an ego that is not one training run (a composite agent)
        click.echo(f"done; run directory: {out}")
        return
    line = f"done: {summary['env_steps']:,} env steps in {summary['train_wall_time_s']:.0f} s"
    if sp:
        lo, hi = sp["sparse_return_ci95"]
        line += f"; self-play sparse return {sp['sparse_return_mean']:.1f} (95% CI {lo:.1f}..{hi:.1f})"
    click.echo(line)
    click.echo(f"run directory: {out}")


@click.command(name="train")
@click.option("--algo", default=None, help="Registered algorithm (`zsceval algos`). [default: sp]")
@click.option(
    "--layout", default=None, help="Layout name or alias (`zsceval layouts`). [default: cramped_room]"
)
@click.option(
    "--env",
    "env_name",
    default=None,
    help="Registered env (`zsceval envs`): overcooked, or football (`pip install zsceval[football]`). "
    "[default: overcooked]",
)
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Run seed, >= 0. [default: 0]")
@click.option(
    "--steps",
    default=None,
    help="Env steps to train for, e.g. 5e6; training stops after the first whole iteration (num_envs x "
    "rollout_length steps) that reaches it, so a smaller value still trains one iteration. "
    "[default: from the preset]",
)
@click.option(
    "--preset",
    default=None,
    help="Preset name: quick or paper (zsceval/presets/*.yaml); --config and --set apply on top. "
    "[default: quick]",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="YAML file of config overrides.",
)
@click.option(
    "--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override one key, e.g. ppo.lr=1e-3."
)
@click.option("--device", default=None, help="Torch device: cpu, cuda, cuda:1. [default: cpu]")
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="Run directory. [default: runs/ALGO_LAYOUT_sSEED]",
)
@click.option(
    "--resume/--no-resume",
    default=False,
    show_default=True,
    help="Continue the run in --out from its last checkpoint.",
)
@click.option(
    "--redo",
    multiple=True,
    metavar="JOB",
    help="Multi-stage runs: run this finished job again (a job id or a pattern such as '*stage1*'; "
    "repeatable), with every job that reads it; their old folders are kept under OUT/redone/.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Multi-stage runs: jobs of the chain run at once, each in its own process, where their "
    "inputs are ready (e.g. TBS's training and held-out pools); each job's torch threads are capped "
    "at cores / N. A resume may change it; with a fixed run.num_threads the results do not depend on it.",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "process", "slurm"]),
    default=None,
    help="Multi-stage runs: where the chain's jobs run: this process, a process pool, or one SLURM job "
    "each (--workers at once; docs/cluster.md). [default: process with --workers > 1, else local]",
)
@slurm_flags
@click.option("--progress/--no-progress", default=True, show_default=True, help="Show a progress bar.")
@click.option(
    "--plan/--no-plan",
    "show_plan",
    default=False,
    show_default=True,
    help="Print the env steps of every training job (a multi-stage run's stages too), what --out already "
    "holds, and the hours left; train nothing.",
)
@click.option(
    "--print-config/--no-print-config",
    default=False,
    show_default=True,
    help="Print the resolved config and exit.",
)
def train(
    algo,
    env_name,
    layout,
    seed,
    steps,
    preset,
    config_file,
    overrides,
    device,
    out,
    resume,
    redo,
    workers,
    executor,
    progress,
    print_config,
    show_plan=False,
    **slurm_args,
) -> None:
    """Train an algorithm on a layout; writes config, metrics, checkpoints and eval.json to --out.

    \b
    Examples:
      zsceval train --algo sp --layout cramped_room --preset quick
      zsceval train --algo sp --layout counter_circuit --preset paper --device cuda --seed 1
      zsceval train --out runs/sp_cramped_room_s0 --resume
      zsceval train --algo sp --env football --steps 1e5

    \b
    Config sections and the most used keys (--set KEY=VALUE; --print-config shows them all):
      run          total_steps, seed, device, num_threads (auto), checkpoint_every, eval_episodes, compile
      env          layout, num_envs, horizon, random_start_prob, view_radius, options.* (env-specific)
      model        kind (mlp|cnn), hidden_size, recurrent, critic_obs (own|joint), bf16 (auto)
      ppo          lr, epochs, num_minibatches, rollout_length, entropy_coefs, entropy_milestones
      shaping      initial_factor, horizon
      population   size (12 / 24 / 36; COLE 25 / 50 / 75), stage1_size, stage1_steps
      pqn          the value-based core (vdn, tbs): lr, epsilon_*, rollout_length
      algo.*       the algorithm's own options (`zsceval algos`)
    """
    from zsceval.bench.training import (
        OutputFolderError,
        TrainRequest,
        TrainRequestError,
        plan_training,
        train_run,
    )
    from zsceval.commands._common import check_writable, parse_steps, slurm_from_flags, write_error
    from zsceval.rl.checkpoint import CheckpointError
    from zsceval.rl.trainer import NonFiniteError, RunExistsError

    req = TrainRequest(
        algo, env_name, layout, seed, parse_steps(steps), preset, config_file, tuple(overrides), device, out,
        resume, tuple(redo), workers,
    )  # fmt: skip
    try:
        plan = plan_training(req, print_config=print_config)
        if plan.action == "finished":
            click.echo(plan.message, err=True)
            return
        if print_config:
            click.echo(yaml.safe_dump(config_to_dict(plan.cfg), sort_keys=False), nl=False)
            return
        if show_plan:
            _print_plan(plan, workers)
            return
        if plan.action == "chain":
            if not resume:
                check_writable(plan.out)
            slurm = slurm_from_flags(None, slurm_args) if executor == "slurm" else None
            _finish_chain(plan.chain, plan.out, progress, redo, workers, executor, slurm)
            return
        if executor is not None:
            raise TrainRequestError(
                f"--executor runs the jobs of a multi-stage algorithm; {plan.cfg.run.algo} trains in one "
                "run (on a SLURM cluster, submit `zsceval train` itself with sbatch)"
            )
        summary = train_run(
            plan.cfg, plan.out, resume=resume, progress=progress, ready=check_writable,
            log=lambda line: click.echo(line, err=True),
        )  # fmt: skip
    except TrainRequestError as exc:
        raise click.UsageError(str(exc)) from None
    except OutputFolderError as exc:
        raise click.ClickException(
            f"cannot write to --out {plan.out}: {exc.strerror}; choose a writable folder with --out"
        ) from None
    except OSError as exc:
        kept = f"; what was saved before is kept: `zsceval train --resume --out {out}` continues from it"
        raise click.ClickException(write_error(exc).message + (kept if out else "")) from None
    except (
        ConfigError,
        CheckpointError,
        NonFiniteError,
        RunExistsError,
        registry.UnknownAlgorithmError,
        registry.PluginLoadError,
    ) as exc:
        raise _fail(exc) from None
    _report(summary, plan.out)
