"""Everything ``zsceval report DIR`` shows, gathered from a results folder once: as JSON, as text, as figures.

:func:`gather_report` reads the folder's tables (:mod:`zsceval.bench.report`): IQM BR-Prox with
bootstrap CIs per layout, algorithm and partner level, the partner strata (skilled and semi-skilled
= ZSC-Eval's expert and moderate partners, and the unhelpful partners of ``unhelpful.parquet``), the
comparisons of algorithms, an optional reference comparison, the selected partners (features and
manifests), the human-proxy scores and their interdependence counts (``human_proxy.parquet``), and
the blocks of the report sections that plug-ins contribute (:class:`zsceval.plugins.ReportSection`,
entry-point group ``zsceval.report_sections``; :data:`SECTIONS`): the bench report names no
algorithm and no env. A folder without bench tables gets the sections that found something in it
alone; a section that only shows alone (``with_bench = False``, e.g. one that plays games when the
report is made) is asked only when no other section found anything. :func:`report_json`,
:func:`report_text` and :func:`write_report_figures` present what was gathered.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from zsceval.bench import report as rep
from zsceval.plugins import REPORT_SECTION_GROUP, Registry, ReportOptions, ReportSection

__all__ = [
    "SECTIONS",
    "SECTION_GROUP",
    "ReportContents",
    "gather_report",
    "gather_sections",
    "report_json",
    "report_text",
    "write_report_figures",
]

SECTION_GROUP = REPORT_SECTION_GROUP
SECTIONS = Registry(SECTION_GROUP, "report section", kind="class")
"""The report sections (:class:`zsceval.plugins.Registry`): name -> a
:class:`~zsceval.plugins.ReportSection` subclass."""


def _section(name: str) -> ReportSection:
    cls = SECTIONS.get(name)
    if not issubclass(cls, ReportSection):
        raise TypeError(f"report section '{name}': {cls.__qualname__} is not a zsceval.plugins.ReportSection")
    return cls()


def gather_sections(directory: Path, options: ReportOptions, *, bench: bool) -> tuple[tuple[str, Any], ...]:
    """``(name, data)`` of every report section that found something in ``directory``, by name.

    Sections with ``with_bench`` are asked first; the others only when the folder holds no bench
    tables (``bench`` False) and none of those found anything.

    Raises:
        zsceval.plugins.PluginLoadError: a section's entry point cannot be loaded (named).
    """
    sections = {name: _section(name) for name in SECTIONS.names()}
    found = []
    for with_bench in (True, False):
        if not with_bench and (bench or found):
            break
        for name, section in sections.items():
            if bool(section.with_bench) == with_bench:
                data = section.gather(directory, options)
                if data is not None:
                    found.append((name, data))
    return tuple(found)


@dataclass(frozen=True)
class ReportContents:
    """The tables of one report (``None`` where the folder or the options give none).

    Attributes:
        directory: the results folder.
        options: ``seed, reps, level, nonpositive_br`` of the bootstrap and BR-Prox.
        levels: the moderate/expert split (``checkpoint`` or ``median``).
        summary: :func:`zsceval.bench.report.summarize` output; None for a folder without bench
            tables (then only ``sections`` are shown).
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
        strata: the partner strata (:func:`zsceval.bench.report.strata_rows`); None without bench tables.
        interdependence: interdependence counts with the human proxy
            (:func:`zsceval.evaluation.interdependence.interdependence_summary`).
        sections: ``(name, data)`` of the report sections that found something (:data:`SECTIONS`;
            ``data`` is what the section's ``gather`` returned).
        section_options: the options the sections were gathered with (and present with).
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
    sections: tuple[tuple[str, Any], ...] = ()
    section_options: ReportOptions = ReportOptions()
    stages: pd.DataFrame | None = None

    @property
    def sections_only(self) -> bool:
        """A folder without bench tables: only the report sections are shown."""
        return self.summary is None


def _br_reference(
    directory: Path, br_returns: pd.DataFrame, br_reference: str
) -> tuple[pd.DataFrame, list[str]]:
    """The BR reference returns a report divides by, and a note when they are not the set's own."""
    from zsceval.evaluation.partner_set import COTRAINED_BR_TABLE, best_known_br_returns

    if br_reference == "fresh":
        return br_returns, []
    if br_reference != "best-known":
        raise ValueError(f"br_reference must be 'fresh' or 'best-known', got {br_reference!r}")
    path = directory / COTRAINED_BR_TABLE
    if not path.is_file():
        raise ValueError(
            f"--br-reference best-known needs {path}: the co-trained BRs' returns, which a bench's "
            "manifest job writes (benches made before it: benchmarks/sets/cotrained_br.py measures them)"
        )
    best = best_known_br_returns(br_returns, pd.read_parquet(path))
    replaced = best["br_return"].ne(br_returns["br_return"])
    changed = len(best.loc[replaced, ["layout", "partner", "seat"]].drop_duplicates())
    note = (
        f"BR references: the larger of the set's BR and the candidate's co-trained BR on {changed} mid "
        "(partner, seat) units (--br-reference best-known; ZSC-Eval divides by the set's BR)"
    )
    return best, [note]


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
    br_reference: str = "fresh",
) -> ReportContents:
    """Read and summarize every table of a results folder (module docstring).

    Args:
        directory: the folder: ``results.parquet`` and ``br_returns.parquet`` (schemas of
            :mod:`zsceval.stats.metrics`), optionally ``features.parquet``,
            ``human_proxy.parquet``, ``unhelpful.parquet``, ``suite.yaml``, and the files of the
            report sections (:data:`SECTIONS`); a folder in which a section finds something needs
            no other table.
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
        episodes: sections that play games: episodes per seating of each pair of agents.
        device: sections that play games: torch device of their games.
        br_reference: R(BR, partner) of a mid partner: ``"fresh"`` (the set's BR, ZSC-Eval) or
            ``"best-known"``, the larger of it and the candidate's co-trained BR's
            (:func:`~zsceval.evaluation.partner_set.best_known_br_returns`, from the folder's
            ``cotrained_br_returns.parquet``; a note says how many units it changed).

    Returns:
        The :class:`ReportContents`.

    Raises:
        FileNotFoundError: a missing results or BR-returns table.
        ValueError: malformed tables or options; an unknown reference (names the shipped ones);
            ``best-known`` without ``cotrained_br_returns.parquet``.
        ManifestError: an unreadable manifest.
    """
    from zsceval.bench.comparison import compare_with_reference, load_reference_table, split_reference
    from zsceval.bench.stages import STAGES_TABLE
    from zsceval.evaluation.human_proxy import HUMAN_PROXY_TABLE, human_proxy_summary
    from zsceval.evaluation.interdependence import interdependence_summary
    from zsceval.evaluation.manifest import load_manifest
    from zsceval.evaluation.strata import UNHELPFUL_TABLE, unhelpful_summary

    directory = Path(directory)
    options = {"seed": seed, "reps": reps, "level": level, "nonpositive_br": nonpositive_br}
    section_options = ReportOptions(seed=seed, reps=reps, level=level, episodes=episodes, device=device)
    bench = (directory / rep.RESULTS_FILE).is_file()
    sections = gather_sections(directory, section_options, bench=bench)
    if sections and not bench:  # the sections' results only
        return ReportContents(directory, options, levels, sections=sections, section_options=section_options)
    results, fresh_br, features = rep.read_tables(directory)
    br_returns, reference_notes = _br_reference(directory, fresh_br, br_reference)
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
        {**options, "br_reference": br_reference},
        levels,
        summary=summary,
        comparisons=comparisons,
        reference=reference,
        features=marked,
        notes=(
            *rep.bench_notes(directory, marked, fresh_br, nonpositive_br=nonpositive_br),
            *reference_notes,
        ),
        human=human,
        unhelpful=unhelpful,
        strata=rep.strata_rows(summary, unhelpful),
        interdependence=inter,
        sections=sections,
        section_options=section_options,
        stages=stages,
    )


def report_json(contents: ReportContents) -> dict[str, Any]:
    """The report as a JSON-able dict (tables as lists of records).

    A folder without bench tables gives the keys of its sections (each section's ``to_json``);
    otherwise ``metric, ci_level, reps, seed, nonpositive_br, br_reference, levels, rows`` (the BR-Prox
    summary),
    ``notes``, and the blocks the folder and options give: ``strata`` (rows of
    :func:`zsceval.bench.report.strata_rows`), ``probability_of_improvement, performance_profiles,
    ranks, human_proxy, interdependence``, the sections' keys, ``stages, comparison``
    (``{reference, rows, layouts}``).
    """
    c = contents
    sections: dict[str, Any] = {}
    for name, data in c.sections:
        sections.update(_section(name).to_json(data))
    if c.sections_only:
        return sections
    payload = {
        "metric": "BR-Prox IQM",
        "ci_level": c.options["level"],
        "reps": c.options["reps"],
        "seed": c.options["seed"],
        "nonpositive_br": c.options["nonpositive_br"],
        "br_reference": c.options["br_reference"],
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
    payload.update(sections)
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
    reference, human-proxy, interdependence, report-section and training-cost blocks the folder and
    options give, separated by blank lines (a folder without bench tables: its sections' blocks)."""
    from zsceval.evaluation.human_proxy import format_human_proxy
    from zsceval.evaluation.interdependence import format_interdependence

    c = contents
    level = c.options["level"]
    sections = [_section(name).to_text(data, c.section_options) for name, data in c.sections]
    if c.sections_only:
        return "\n\n".join(sections)
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
    blocks += sections
    if c.stages is not None:
        from zsceval.bench.stages import format_budget

        title = "Training cost per stage (stages.parquet, kept by zsceval bench at the end of its run)"
        blocks.append(title + "\n" + format_budget(c.stages))
    if c.notes:
        blocks.insert(0, "\n".join(c.notes))
    return "\n\n".join(blocks)


def write_report_figures(contents: ReportContents) -> list[Path]:
    """Write the report's figures (:func:`zsceval.bench.report.write_figures` and each report
    section's ``figures``) into ``DIR/figures``; a folder without bench tables gets its sections'
    figures only.

    Returns:
        The PNG paths written.

    Raises:
        ValueError: a features table without numeric feature columns.
        OSError: the folder cannot be written.
    """
    c = contents
    folder = c.directory / rep.FIGURES_DIR
    written = []
    if not c.sections_only:
        written += rep.write_figures(
            c.summary, c.features, folder, comparisons=c.comparisons, reference=c.reference
        )
    for name, data in c.sections:
        written += _section(name).figures(data, folder)
    return written
