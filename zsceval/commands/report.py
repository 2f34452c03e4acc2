"""``zsceval report DIR``: BR-Prox IQM tables with bootstrap CIs, and figures, from a results folder."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command(name="report")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--json/--no-json", "as_json", default=False, show_default=True, help="Print JSON instead of a table."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap resampling.")
@click.option(
    "--reps", type=click.IntRange(min=1), default=2000, show_default=True, help="Bootstrap replicates."
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
    "--figures/--no-figures", default=True, show_default=True, help="Write PNG figures into DIR/figures."
)
@click.option(
    "--manifest",
    "manifests",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Partner-set manifest marking the selected partners in the PCA figure (repeatable).",
)
def report(
    directory: Path,
    as_json: bool,
    seed: int,
    reps: int,
    ci_level: float,
    nonpositive_br: str,
    figures: bool,
    manifests: tuple[Path, ...],
) -> None:
    """Print IQM BR-Prox with bootstrap CIs per layout and algorithm, all / moderate / expert partners.

    DIR holds results.parquet (one row per episode) and br_returns.parquet; features.parquet is optional
    (behavior features of partner candidates, for the PCA and heatmap figures). See
    zsceval.evaluation.metrics for the schemas.

    \b
    Examples:
      zsceval report runs/bench
      zsceval report runs/bench --json --no-figures
    """
    from zsceval.evaluation import report as rep
    from zsceval.evaluation.manifest import ManifestError, load_manifest

    try:
        results, br_returns, features = rep.read_tables(directory)
        summary = rep.summarize(
            results, br_returns, seed=seed, reps=reps, level=ci_level, nonpositive_br=nonpositive_br
        )
        loaded = [load_manifest(path, verify=False) for path in manifests]
    except (FileNotFoundError, ValueError, ManifestError) as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        payload = {
            "metric": "BR-Prox IQM",
            "ci_level": ci_level,
            "reps": reps,
            "seed": seed,
            "nonpositive_br": nonpositive_br,
            "rows": rep.summary_records(summary),
        }
        click.echo(json.dumps(payload, indent=2))
    else:
        click.echo(rep.format_table(summary, level=ci_level))
    if figures:
        try:
            written = rep.write_figures(
                summary, rep.mark_selected(features, loaded), directory / rep.FIGURES_DIR
            )
        except ValueError as exc:
            raise click.ClickException(str(exc)) from exc
        click.echo(f"wrote {len(written)} figure(s) to {directory / rep.FIGURES_DIR}", err=True)
