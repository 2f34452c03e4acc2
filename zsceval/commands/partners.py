"""``zsceval partners``: generate behavior-preferring candidates and select an evaluation-partner set."""

from __future__ import annotations

import dataclasses

import click


def _suite(
    layout: str,
    candidates: int,
    k: int,
    steps: int | None,
    seed: int,
    preset: str,
    device: str,
    weight_sampling: str = "reference",
):
    from zsceval.evaluation.bench import PartnerBudget, Suite

    budget = PartnerBudget(candidates=candidates, k=min(k, candidates), weight_sampling=weight_sampling)
    if steps is not None:
        budget = dataclasses.replace(budget, candidate_steps=steps, mid_br_steps=steps)
    return Suite(
        name="partners",
        layouts=(layout,),
        algorithms=(),
        seed=seed,
        preset=preset,
        device=device,
        partners=budget,
    )


@click.group(name="partners")
def partners() -> None:
    """Evaluation partners (ZSC-Eval Sec. 4): candidates, BR-Div selection, partner-set manifests.

    \b
    Examples:
      zsceval partners generate --layout counter_circuit --candidates 24 --out eval_partners/counter_circuit
      zsceval partners select --layout counter_circuit -k 10 --out eval_partners/counter_circuit
    """


_common = [
    click.option("--layout", required=True, help="Layout name or alias."),
    click.option(
        "--out",
        type=click.Path(file_okay=False),
        default=None,
        help="Working directory. [default: eval_partners/LAYOUT]",
    ),
    click.option("--seed", type=int, default=0, show_default=True),
    click.option("--preset", default="quick", show_default=True, help="Training preset of every run."),
    click.option("--device", default="cpu", show_default=True),
    click.option("--steps", default=None, help="Env steps per candidate and per mid BR (e.g. 1e7)."),
    click.option(
        "--weight-sampling",
        type=click.Choice(["reference", "random"]),
        default="reference",
        show_default=True,
        help="Candidate i's weights: grid point (seed + i) % len(grid) (ZSC-Eval), or a random draw.",
    ),
]


def _options(fn):
    for opt in reversed(_common):
        fn = opt(fn)
    return fn


@partners.command(name="generate")
@_options
@click.option("--candidates", type=int, default=8, show_default=True, help="Weight vectors to train.")
def generate(layout, out, seed, preset, device, steps, weight_sampling, candidates) -> None:
    """Train behavior-preferring candidates (pi_w with its BR) and compute their behavior features."""
    from zsceval.evaluation.bench import build_phases
    from zsceval.execution import JobError, run_jobs

    steps = int(float(steps)) if steps else None
    suite = _suite(layout, candidates, 1, steps, seed, preset, device, weight_sampling)
    out = out or f"eval_partners/{suite.layouts[0]}"
    phases, _ = build_phases(suite)
    try:
        results = run_jobs(phases[0] + phases[1], out, modules=("zsceval.evaluation.pipeline",))
    except JobError as exc:
        raise click.ClickException(f"{exc}\n(rerun the same command to resume)") from None
    for job_id, res in sorted(results.items()):
        if job_id.endswith("/evaluate"):
            click.echo(f"{job_id.split('/')[-2]}: return with its BR {res['final_return']:.1f}")


@partners.command(name="select")
@_options
@click.option(
    "-k", "k", type=int, required=True, help="Partners to select (the set has 2k: finals and mids)."
)
@click.option("--candidates", type=int, default=8, show_default=True, help="As given to `generate`.")
def select(layout, out, seed, preset, device, steps, weight_sampling, k, candidates) -> None:
    """Select k candidates by BR-Div (k-DPP), train BRs of their mid checkpoints, write the manifest."""
    from pathlib import Path

    from zsceval.evaluation.bench import SuiteError, _validate, build_phases, late_phases
    from zsceval.execution import JobError, run_jobs

    steps = int(float(steps)) if steps else None
    suite = _suite(layout, candidates, k, steps, seed, preset, device, weight_sampling)
    if k > candidates:
        raise click.ClickException(f"-k {k} is larger than the number of candidates ({candidates})")
    try:
        _validate(suite, "partners select")
    except SuiteError as exc:
        raise click.ClickException(str(exc)) from None
    out = out or f"eval_partners/{suite.layouts[0]}"
    phases, infos = build_phases(suite)
    jobs = phases[0] + phases[1] + phases[2]
    try:
        run_jobs(jobs, out, modules=("zsceval.evaluation.pipeline",))
        late = late_phases(suite, Path(out), infos)
        run_jobs(jobs + late[0] + late[1], out, modules=("zsceval.evaluation.pipeline",))
    except (JobError, ValueError) as exc:
        raise click.ClickException(f"{exc}\n(rerun the same command to resume)") from None
    lay = suite.layouts[0]
    click.echo(f"partner-set manifest: {out}/{lay}/partners/set/manifest.json")
