"""Everything ``zsceval report DIR`` shows, gathered from a results folder once: as JSON, as text, as figures.

:func:`gather_report` reads the folder's tables (:mod:`zsceval.bench.report`): IQM BR-Prox with
bootstrap CIs per layout, algorithm and partner level, the partner strata (skilled and semi-skilled
= ZSC-Eval's expert and moderate partners, and the unhelpful partners of ``unhelpful.parquet``), the
comparisons of algorithms, an optional reference comparison, the selected partners (features and
manifests), the human-proxy scores and their interdependence counts (``human_proxy.parquet``), and
the TBS tables
(``tbs_eval/results.parquet``, :mod:`zsceval.algorithms.tbs.report`). A folder may hold only TBS results (a
``zsceval train --algo tbs`` run): then only the TBS tables are shown. A folder of trained Yōkai runs
(and no bench tables) gets the Yōkai report: the YLE paper's R, SR, NC and SEE with CIs per pair of
agents and the cross-play matrix (:mod:`zsceval.evaluation.yokai_xp`), played when the report is made.
:func:`report_json`, :func:`report_text` and :func:`write_report_figures` present what was gathered.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from zsceval.bench import report as rep

if TYPE_CHECKING:
    from zsceval.evaluation.yokai_xp import XPMatrix

__all__ = ["ReportContents", "gather_report", "report_json", "report_text", "write_report_figures"]


@dataclass(frozen=True)
class ReportContents:
    """The tables of one report (``None`` where the folder or the options give none).

    Attributes:
        directory: the results folder.
        options: ``seed, reps, level, nonpositive_br`` of the bootstrap and BR-Prox.
        levels: the moderate/expert split (``checkpoint`` or ``median``).
        summary: :func:`zsceval.bench.report.summarize` output; None for a TBS-only folder.
        comparisons: ``{"poi", "profiles", "ranks"}`` of
            :func:`zsceval.bench.report.compare_algorithms` (with ``stats``).
        reference: ``(name, rows, layouts)`` of
            :func:`zsceval.bench.comparison.compare_with_reference` (with ``compare``).
        features: candidates' behavior features with ``selected`` marked from the manifests.
        notes: what the folder's tables leave out or chose (:func:`~zsceval.bench.report.bench_notes`).
        human: mean return with the human proxy per algorithm
            (:func:`zsceval.evaluation.human_proxy.human_proxy_summary`).
        unhelpful: mean return with each unhelpful partner per algorithm
            (:func:`zsceval.evaluation.strata.unhelpful_summary`); None without ``unhelpful.parquet``.
        strata: the partner strata (:func:`zsceval.bench.report.strata_rows`); None for a TBS-only folder.
        interdependence: interdependence counts with the human proxy
            (:func:`zsceval.evaluation.interdependence.interdependence_summary`).
        tbs: per-run TBS table (:func:`zsceval.algorithms.tbs.report.tbs_summary`).
        tbs_pooled: TBS pooled over seeds (:func:`zsceval.algorithms.tbs.report.tbs_pooled`).
        yokai: the cross-play matrix of a folder of Yōkai runs
            (:func:`zsceval.evaluation.yokai_xp.cross_play_matrix`); then every other table is None.
        stages: env steps and hours of every training stage (``stages.parquet``, written by
            ``zsceval bench`` at the end of a run; :mod:`zsceval.bench.stages`).
    """

    directory: Path
    options: dict[str, Any]
    levels: str
    summary: pd.DataFrame | None = None
    comparisons: dict[str, pd.DataFrame] | None = None
    reference: tuple[str, pd.DataFrame, pd.DataFrame] | None = None
    features: pd.DataFrame | None = None
    notes: tuple[str, ...] = ()
    human: pd.DataFrame | None = None
    unhelpful: pd.DataFrame | None = None
    strata: pd.DataFrame | None = None
    interdependence: pd.DataFrame | None = None
    tbs: pd.DataFrame | None = None
    tbs_pooled: pd.DataFrame | None = None
    yokai: XPMatrix | None = None
    stages: pd.DataFrame | None = None

    @property
    def tbs_only(self) -> bool:
        """A folder of TBS results and no bench results (``summary`` is None)."""
        return self.summary is None and self.yokai is None


def gather_report(
    directory: str | Path,
    *,
    seed: int = 0,
    reps: int = 2000,
    level: float = 0.95,
    nonpositive_br: str = "one",
    levels: str = "checkpoint",
    stats: bool = True,
    compare: str | None = None,
    manifests: tuple[str | Path, ...] = (),
    episodes: int = 500,
    device: str = "cpu",
) -> ReportContents:
    """Read and summarize every table of a results folder (module docstring).

    Args:
        directory: the folder: ``results.parquet`` and ``br_returns.parquet`` (schemas of
            :mod:`zsceval.stats.metrics`), optionally ``features.parquet``,
            ``human_proxy.parquet``, ``unhelpful.parquet``, ``suite.yaml`` and
            ``tbs_eval/results.parquet`` files below it;
            a folder with TBS results only needs no other table.
        seed: seed of the bootstrap resampling.
        reps: bootstrap replicates.
        level: confidence-interval coverage.
        nonpositive_br: BR-Prox of a unit whose BR return is <= 0: ``"one"`` (ZSC-Eval) or ``"nan"``.
        levels: moderate/expert split: ``"checkpoint"`` (mid/final) or ``"median"`` (paper text).
        stats: also compare algorithms (probability of improvement, profiles, ranks).
        compare: a reference table: a shipped name (``"zsceval-paper"``) or a YAML path, with an
            optional ``:COLUMN`` (``"zsceval-paper:pop12"``;
            :func:`~zsceval.bench.comparison.split_reference`).
        manifests: partner-set manifests whose selected partners are marked in ``features``.
        episodes: a folder of Yōkai runs: episodes per seating of each pair of agents.
        device: a folder of Yōkai runs: torch device of their games.

    Returns:
        The :class:`ReportContents`.

    Raises:
        FileNotFoundError: a missing results or BR-returns table.
        ValueError: malformed tables or options; an unknown reference (names the shipped ones).
        ManifestError: an unreadable manifest.
    """
    from zsceval.algorithms.tbs.report import find_tbs_results, tbs_pooled, tbs_summary
    from zsceval.bench.comparison import compare_with_reference, load_reference_table, split_reference
    from zsceval.bench.stages import STAGES_TABLE
    from zsceval.evaluation.human_proxy import HUMAN_PROXY_TABLE, human_proxy_summary
    from zsceval.evaluation.interdependence import interdependence_summary
    from zsceval.evaluation.manifest import load_manifest
    from zsceval.evaluation.strata import UNHELPFUL_TABLE, unhelpful_summary

    directory = Path(directory)
    options = {"seed": seed, "reps": reps, "level": level, "nonpositive_br": nonpositive_br}
    tbs_paths = find_tbs_results(directory)
    tbs = tbs_summary(tbs_paths, reps=reps, seed=seed) if tbs_paths else None
    pooled = tbs_pooled(tbs_paths, reps=reps, seed=seed) if tbs_paths else None
    if tbs is not None and not (directory / rep.RESULTS_FILE).is_file():  # a TBS run, no bench
        return ReportContents(directory, options, levels, tbs=tbs, tbs_pooled=pooled)
    if not (directory / rep.RESULTS_FILE).is_file():
        from zsceval.evaluation.yokai_xp import cross_play_matrix, find_yokai_runs

        runs = find_yokai_runs(directory)
        if runs:  # Yōkai runs, no bench
            matrix = cross_play_matrix(runs, episodes=episodes, seed=seed, device=device)
            return ReportContents(directory, options, levels, yokai=matrix)
    results, br_returns, features = rep.read_tables(directory)
    summary = rep.summarize(results, br_returns, levels=levels, **options)
    comparisons = rep.compare_algorithms(results, br_returns, **options) if stats else None
    reference = None
    if compare:
        table, column, label = split_reference(compare)
        rows, layouts = compare_with_reference(summary, load_reference_table(table), column=column)
        reference = (label, rows, layouts)
    marked = rep.mark_selected(features, [load_manifest(path, verify=False) for path in manifests])
    human = inter = None
    if (directory / HUMAN_PROXY_TABLE).is_file():
        human_frame = pd.read_parquet(directory / HUMAN_PROXY_TABLE)
        if "constructive" in human_frame.columns:
            inter = interdependence_summary(human_frame)
        human = human_proxy_summary(human_frame, seed=seed, reps=reps, level=level)
    stages = None
    if (directory / STAGES_TABLE).is_file():
        stages = pd.read_parquet(directory / STAGES_TABLE)
    unhelpful = None
    if (directory / UNHELPFUL_TABLE).is_file():
        unhelpful_frame = pd.read_parquet(directory / UNHELPFUL_TABLE)
        unhelpful = unhelpful_summary(unhelpful_frame, seed=seed, reps=reps, level=level)
    return ReportContents(
        directory,
        options,
        levels,
        summary=summary,
        comparisons=comparisons,
        reference=reference,
        features=marked,
        notes=tuple(rep.bench_notes(directory, marked, br_returns, nonpositive_br=nonpositive_br)),
        human=human,
        unhelpful=unhelpful,
        strata=rep.strata_rows(summary, unhelpful),
        interdependence=inter,
        tbs=tbs,
        tbs_pooled=pooled,
        stages=stages,
    )


def report_json(contents: ReportContents) -> dict[str, Any]:
    """The report as a JSON-able dict (tables as lists of records).

    A TBS-only folder gives ``{"tbs", "tbs_pooled"}``; a folder of Yōkai runs ``{"yokai"}``
    (:func:`zsceval.evaluation.yokai_xp.yokai_report_json`); otherwise ``metric, ci_level, reps, seed,
    nonpositive_br, levels, rows`` (the BR-Prox summary), ``notes``, and the blocks the folder and
    options give: ``strata`` (rows of :func:`zsceval.bench.report.strata_rows`),
    ``probability_of_improvement, performance_profiles, ranks, human_proxy, interdependence, tbs,
    tbs_pooled, stages, comparison`` (``{reference, rows, layouts}``).
    """
    c = contents
    if c.yokai is not None:
        from zsceval.evaluation.yokai_xp import yokai_report_json

        return {"yokai": yokai_report_json(c.yokai)}
    if c.tbs_only:
        return {"tbs": rep.records(c.tbs), "tbs_pooled": rep.records(c.tbs_pooled)}
    payload = {
        "metric": "BR-Prox IQM",
        "ci_level": c.options["level"],
        "reps": c.options["reps"],
        "seed": c.options["seed"],
        "nonpositive_br": c.options["nonpositive_br"],
        "levels": c.levels,
        "rows": rep.summary_records(c.summary),
        "notes": list(c.notes),
    }
    if c.strata is not None:
        payload["strata"] = rep.records(c.strata)
    if c.comparisons is not None:
        payload["probability_of_improvement"] = rep.records(c.comparisons["poi"])
        payload["performance_profiles"] = rep.records(c.comparisons["profiles"])
        payload["ranks"] = rep.records(c.comparisons["ranks"])
    if c.human is not None:
        payload["human_proxy"] = rep.records(c.human)
    if c.interdependence is not None:
        payload["interdependence"] = rep.records(c.interdependence)
    if c.tbs is not None:
        payload["tbs"] = rep.records(c.tbs)
        payload["tbs_pooled"] = rep.records(c.tbs_pooled)
    if c.stages is not None:
        payload["stages"] = rep.records(c.stages)
    if c.reference is not None:
        payload["comparison"] = {
            "reference": c.reference[0],
            "rows": rep.records(c.reference[1]),
            "layouts": rep.records(c.reference[2]),
        }
    return payload


def report_text(contents: ReportContents) -> str:
    """The report as text: the notes, the BR-Prox table, the partner strata, then the comparison,
    reference, human-proxy, interdependence, TBS and training-cost blocks the folder and options
    give, separated by blank lines."""
    from zsceval.algorithms.tbs.report import format_tbs
    from zsceval.evaluation.human_proxy import format_human_proxy
    from zsceval.evaluation.interdependence import format_interdependence

    c = contents
    level = c.options["level"]
    if c.yokai is not None:
        from zsceval.evaluation.yokai_xp import format_yokai_report

        return format_yokai_report(c.yokai)
    if c.tbs_only:
        return format_tbs(c.tbs, level, c.tbs_pooled)
    blocks = [rep.format_table(c.summary, level=level)]
    if c.strata is not None:
        blocks.append(
            rep.format_strata(c.strata, level=level, levels=c.levels, unhelpful_games=c.unhelpful is not None)
        )
    if c.comparisons is not None:
        blocks.append(rep.format_poi(c.comparisons["poi"], level=level))
        blocks.append(rep.format_profiles(c.comparisons["profiles"], level=level))
        blocks.append(rep.format_ranks(c.comparisons["ranks"]))
    if c.reference is not None:
        blocks.append(rep.format_comparison(c.reference[1], c.reference[2], c.reference[0]))
    if c.human is not None:
        blocks.append(format_human_proxy(c.human, c.summary, level=level))
    if c.interdependence is not None:
        blocks.append(format_interdependence(c.interdependence))
    if c.tbs is not None:
        blocks.append(format_tbs(c.tbs, level, c.tbs_pooled))
    if c.stages is not None:
        from zsceval.bench.stages import format_budget

        title = "Training cost per stage (stages.parquet, kept by zsceval bench at the end of its run)"
        blocks.append(title + "\n" + format_budget(c.stages))
    if c.notes:
        blocks.insert(0, "\n".join(c.notes))
    return "\n\n".join(blocks)


def write_report_figures(contents: ReportContents) -> list[Path]:
    """Write the report's figures (:func:`zsceval.bench.report.write_figures` and the pooled TBS
    figure, :func:`~zsceval.algorithms.tbs.report.plot_pooled`) into ``DIR/figures``; a TBS-only
    folder gets the TBS figure only (none without pooled rows); a folder of Yōkai runs the heatmaps
    of its cross-play matrix (``yokai_xp.png``, :func:`zsceval.evaluation.yokai_xp.plot_matrix`).

    Returns:
        The PNG paths written.

    Raises:
        ValueError: a features table without numeric feature columns.
        OSError: the folder cannot be written.
    """
    from zsceval.algorithms.tbs.report import plot_pooled

    c = contents
    folder = c.directory / rep.FIGURES_DIR
    if c.yokai is not None:
        from zsceval.evaluation.yokai_xp import plot_matrix

        return [plot_matrix(c.yokai, folder / "yokai_xp.png")]
    written = []
    if not c.tbs_only:
        written += rep.write_figures(
            c.summary, c.features, folder, comparisons=c.comparisons, reference=c.reference
        )
    if c.tbs_pooled is not None and len(c.tbs_pooled):
        written += plot_pooled(c.tbs_pooled, folder)
    return written
