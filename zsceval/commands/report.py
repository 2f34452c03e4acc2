"""``zsceval report DIR``: BR-Prox IQM tables with bootstrap CIs, comparisons of algorithms (probability of
improvement, performance profiles, rank uncertainty), an optional reference comparison, and figures."""

from __future__ import annotations

import json
from pathlib import Path

import click

from zsceval.commands._common import COUNT


class _ReportCommand(click.Command):
    """``zsceval report``, whose help ends with the names of the installed report sections (read
    from the package metadata: nothing is imported)."""

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_help_text(ctx, formatter)
        from zsceval.plugins import REPORT_SECTION_GROUP, PluginGroup, PluginLoadError

        try:
            names = PluginGroup(REPORT_SECTION_GROUP, "report section").names()
        except PluginLoadError:  # zsceval is not installed: no section to list
            return
        with formatter.section(f"Report sections (entry-point group {REPORT_SECTION_GROUP})"):
            formatter.write_text(
                f"{', '.join(names)}: each adds its block, tables and figures (see the plug-in's "
                "documentation)."
            )


@click.command(name="report", cls=_ReportCommand)
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--json/--no-json", "as_json", default=False, show_default=True, help="Print JSON instead of a table."
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the bootstrap resampling (and of the games of report sections that play games, as "
    "zsceval eval --seed).",
)
@click.option(
    "--reps",
    type=click.IntRange(min=50),
    default=2000,
    show_default=True,
    help="Bootstrap replicates (>= 50: fewer give confidence intervals that are noise).",
)
@click.option(
    "--level",
    "ci_level",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.95,
    show_default=True,
    help="Confidence-interval coverage.",
)
@click.option(
    "--nonpositive-br",
    type=click.Choice(["one", "nan"]),
    default="one",
    show_default=True,
    help="BR-Prox of a unit whose BR return is <= 0: 1 (ZSC-Eval) or excluded.",
)
@click.option(
    "--br-reference",
    type=click.Choice(["fresh", "best-known"]),
    default="fresh",
    show_default=True,
    help="R(BR, partner) of a mid partner: the set's BR (ZSC-Eval), or the larger of it and the "
    "candidate's co-trained BR (needs DIR/cotrained_br_returns.parquet).",
)
@click.option(
    "--levels",
    type=click.Choice(["checkpoint", "median"]),
    default="checkpoint",
    show_default=True,
    help="Moderate/expert split: mid/final checkpoints (ZSC-Eval's code), or BR return <= layout median "
    "(paper text).",
)
@click.option(
    "--stats/--no-stats",
    default=True,
    show_default=True,
    help="Also print probability of improvement, performance profiles and rank distributions.",
)
@click.option(
    "--compare",
    "compare",
    default=None,
    metavar="REFERENCE",
    help="Compare with a reference table: 'zsceval-paper' (ZSC-Eval's numbers, population 36), "
    "'zsceval-paper:pop12' or ':pop24' (populations 12, 24), or a YAML file[:COLUMN].",
)
@click.option(
    "--figures/--no-figures", default=True, show_default=True, help="Write PNG figures into DIR/figures."
)
@click.option(
    "--manifest",
    "manifests",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Partner-set manifest marking the selected partners in the PCA figure (repeatable).",
)
@click.option(
    "--episodes",
    type=COUNT,
    default=500,
    show_default=True,
    help="Report sections that play games (cross-play of trained runs): episodes per seating of each "
    "pair of agents (2 players: 2x games per cell).",
)
@click.option(
    "--device", default="cpu", show_default=True, help="Report sections that play games: torch device."
)
def report(
    directory: Path,
    as_json: bool,
    seed: int,
    reps: int,
    ci_level: float,
    nonpositive_br: str,
    br_reference: str,
    levels: str,
    stats: bool,
    compare: str | None,
    figures: bool,
    manifests: tuple[Path, ...],
    episodes: int,
    device: str,
) -> None:
    """Print IQM BR-Prox with bootstrap CIs per layout and algorithm, all / moderate / expert partners.

    DIR holds results.parquet (one row per episode) and br_returns.parquet; features.parquet is optional
    (behavior features of partner candidates, for the PCA and heatmap figures); human_proxy.parquet,
    when present (suites with evaluation.human_proxy), adds each algorithm's mean return with the
    behavior-cloned human model beside its BR-Prox. The partner strata follow the table: skilled and
    semi-skilled partners (ZSC-Eval's expert and moderate) by IQM BR-Prox, and, from unhelpful.parquet
    (suites with evaluation.strata, the default), the mean return with a partner that only stays and
    with one that acts uniformly at random. See zsceval.stats.metrics for the schemas.

    Plug-ins add report sections (listed below): their blocks follow the bench tables, and a
    folder without bench tables gets the sections that find something in it alone.

    Comparisons (--stats) use every partner: P(X > Y) per (partner, seat) averaged over partners
    and seats, the fraction of units above each BR-Prox threshold, and each algorithm's rank over
    bootstrap replicates; all resample seeds and partners (zsceval.stats.statistics).

    \b
    Examples:
      zsceval report runs/bench
      zsceval report runs/bench --compare zsceval-paper --levels median
      zsceval report runs/s12 --compare zsceval-paper:pop12
      zsceval report runs/bench --json --no-figures
    """
    from zsceval.bench.report import FIGURES_DIR
    from zsceval.bench.report_contents import (
        gather_report,
        report_json,
        report_text,
        write_report_figures,
    )
    from zsceval.commands._common import unwritable_reason
    from zsceval.evaluation.manifest import ManifestError
    from zsceval.plugins import PluginLoadError
    from zsceval.rl.checkpoint import CheckpointError

    if figures and directory.is_dir():  # the figures' folder checked before the compute
        folder = directory / FIGURES_DIR
        reason = unwritable_reason(folder)
        if reason is not None:
            raise click.ClickException(
                f"cannot write the figures to {folder}: {reason}; pass --no-figures, or make it a "
                "writable folder"
            )
    try:
        contents = gather_report(
            directory,
            seed=seed,
            reps=reps,
            level=ci_level,
            nonpositive_br=nonpositive_br,
            br_reference=br_reference,
            levels=levels,
            stats=stats,
            compare=compare,
            manifests=manifests,
            episodes=episodes,
            device=device,
        )
    except (FileNotFoundError, ValueError, ManifestError, CheckpointError, PluginLoadError) as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps(report_json(contents), indent=2))
    else:
        click.echo(report_text(contents))
    if not figures:
        return
    try:
        written = write_report_figures(contents)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    if written or not contents.sections_only:
        click.echo(f"wrote {len(written)} figure(s) to {directory / FIGURES_DIR}", err=True)
