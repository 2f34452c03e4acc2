"""``zsceval report DIR``: BR-Prox IQM tables with bootstrap CIs, comparisons of algorithms (probability of
improvement, performance profiles, rank uncertainty), an optional reference comparison, and figures."""

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
    "--levels",
    type=click.Choice(["checkpoint", "median"]),
    default="checkpoint",
    show_default=True,
    help="Moderate/expert split: mid/final checkpoints (spec), or BR return <= layout median (paper text).",
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
    help="Compare with a reference table: 'zsceval-paper' (ZSC-Eval's numbers) or a YAML file.",
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
    levels: str,
    stats: bool,
    compare: str | None,
    figures: bool,
    manifests: tuple[Path, ...],
) -> None:
    """Print IQM BR-Prox with bootstrap CIs per layout and algorithm, all / moderate / expert partners.

    DIR holds results.parquet (one row per episode) and br_returns.parquet; features.parquet is optional
    (behavior features of partner candidates, for the PCA and heatmap figures); human_proxy.parquet,
    when present (suites with evaluation.human_proxy), adds each algorithm's mean return with the
    behavior-cloned human model beside its BR-Prox. TBS evaluations (tbs_eval/results.parquet of a
    bench or of `zsceval train --algo tbs`) add the TBS table: scaled reward against the held-out pool
    per agent (DIR may hold only those). See zsceval.evaluation.metrics for the schemas.

    Comparisons (--stats) use every partner: P(X > Y) per (partner, seat) averaged over partners
    and seats, the fraction of units above each BR-Prox threshold, and each algorithm's rank over
    bootstrap replicates; all resample seeds and partners (zsceval.evaluation.statistics).

    \b
    Examples:
      zsceval report runs/bench
      zsceval report runs/bench --compare zsceval-paper --levels median
      zsceval report runs/bench --json --no-figures
    """
    import pandas as pd

    from zsceval.evaluation import report as rep
    from zsceval.evaluation.comparison import compare_with_reference, load_reference_table
    from zsceval.evaluation.human_proxy import HUMAN_PROXY_TABLE, format_human_proxy, human_proxy_summary
    from zsceval.evaluation.interdependence import format_interdependence, interdependence_summary
    from zsceval.evaluation.manifest import ManifestError, load_manifest

    options = {"seed": seed, "reps": reps, "level": ci_level, "nonpositive_br": nonpositive_br}
    from zsceval.tbs.report import find_tbs_results, format_tbs, plot_pooled, tbs_pooled, tbs_summary

    tbs_paths = find_tbs_results(directory)
    tbs = tbs_summary(tbs_paths, reps=reps, seed=seed) if tbs_paths else None
    pooled = tbs_pooled(tbs_paths, reps=reps, seed=seed) if tbs_paths else None
    if tbs is not None and not (Path(directory) / "results.parquet").is_file():  # a TBS run, no bench
        if as_json:
            click.echo(json.dumps({"tbs": rep.records(tbs), "tbs_pooled": rep.records(pooled)}, indent=2))
        else:
            click.echo(format_tbs(tbs, ci_level, pooled))
        if figures and len(pooled):
            written = plot_pooled(pooled, directory / rep.FIGURES_DIR)
            click.echo(f"wrote {len(written)} figure(s) to {directory / rep.FIGURES_DIR}", err=True)
        return
    try:
        results, br_returns, features = rep.read_tables(directory)
        summary = rep.summarize(results, br_returns, levels=levels, **options)
        comparisons = rep.compare_algorithms(results, br_returns, **options) if stats else None
        reference = None
        if compare:
            rows, layouts = compare_with_reference(summary, load_reference_table(compare))
            reference = (Path(compare).stem if compare.endswith(".yaml") else compare, rows, layouts)
        loaded = [load_manifest(path, verify=False) for path in manifests]
        human = inter = None
        if (Path(directory) / HUMAN_PROXY_TABLE).is_file():
            human_frame = pd.read_parquet(Path(directory) / HUMAN_PROXY_TABLE)
            if "constructive" in human_frame.columns:
                inter = interdependence_summary(human_frame)
            human = human_proxy_summary(human_frame, seed=seed, reps=reps, level=ci_level)
    except (FileNotFoundError, ValueError, ManifestError) as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        payload = {
            "metric": "BR-Prox IQM",
            "ci_level": ci_level,
            "reps": reps,
            "seed": seed,
            "nonpositive_br": nonpositive_br,
            "levels": levels,
            "rows": rep.summary_records(summary),
            "notes": rep.bench_notes(directory, rep.mark_selected(features, loaded)),
        }
        if comparisons is not None:
            payload["probability_of_improvement"] = rep.records(comparisons["poi"])
            payload["performance_profiles"] = rep.records(comparisons["profiles"])
            payload["ranks"] = rep.records(comparisons["ranks"])
        if human is not None:
            payload["human_proxy"] = rep.records(human)
        if inter is not None:
            payload["interdependence"] = rep.records(inter)
        if tbs is not None:
            payload["tbs"] = rep.records(tbs)
            payload["tbs_pooled"] = rep.records(pooled)
        if reference is not None:
            payload["comparison"] = {
                "reference": reference[0],
                "rows": rep.records(reference[1]),
                "layouts": rep.records(reference[2]),
            }
        click.echo(json.dumps(payload, indent=2))
    else:
        blocks = [rep.format_table(summary, level=ci_level)]
        if comparisons is not None:
            blocks.append(rep.format_poi(comparisons["poi"], level=ci_level))
            blocks.append(rep.format_profiles(comparisons["profiles"], level=ci_level))
            blocks.append(rep.format_ranks(comparisons["ranks"]))
        if reference is not None:
            blocks.append(rep.format_comparison(reference[1], reference[2], reference[0]))
        if human is not None:
            blocks.append(format_human_proxy(human, summary, level=ci_level))
        if inter is not None:
            blocks.append(format_interdependence(inter))
        if tbs is not None:
            blocks.append(format_tbs(tbs, ci_level, pooled))
        notes = rep.bench_notes(directory, rep.mark_selected(features, loaded))
        if notes:
            blocks.insert(0, "\n".join(notes))
        click.echo("\n\n".join(blocks))
    if figures:
        try:
            written = rep.write_figures(
                summary,
                rep.mark_selected(features, loaded),
                directory / rep.FIGURES_DIR,
                comparisons=comparisons,
                reference=reference,
            )
        except ValueError as exc:
            raise click.ClickException(str(exc)) from exc
        if pooled is not None and len(pooled):
            written += plot_pooled(pooled, directory / rep.FIGURES_DIR)
        click.echo(f"wrote {len(written)} figure(s) to {directory / rep.FIGURES_DIR}", err=True)
