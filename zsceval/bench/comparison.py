"""Compare a BR-Prox summary with a published reference table (``zsceval report --compare``).

Reference tables are YAML files (``zsceval/bench/reference/*.yaml``, or any path in the same
format)::

    format_version: 1
    name: zsceval-paper
    metric: IQM BR-Prox (pooled over seeds, partners and seats)
    algorithms: [sp, e3t, ...]
    layouts:
      counter_circuit:                 # zsceval's canonical layout name
        reference_name: random3        # the layout's name in the reference
        br_prox: {sp: 0.09, ...}       # required
        shipped_script: {sp: 0.10, ...}  # optional: other columns, e.g. ci_low, ci_high

Shipped: ``zsceval-paper``, the ZSC-Eval numbers recomputed with the correct partner/BR mapping
(docs/reference-protocol.md "Reference numbers"; the shipped script's own numbers as ``shipped_script``)
and GRF's paper Table 3 with its 95% CIs; on Overcooked also ``br_prox_pop12`` and ``br_prox_pop24``
(populations 12 and 24, COLE 25 and 50; ``benchmarks/reference/recompute_zsceval.py``).

A reference is named ``NAME[:COLUMN]`` (:func:`split_reference`): ``zsceval-paper`` compares with
``br_prox`` (population 36), ``zsceval-paper:pop12`` with ``br_prox_pop12``.

Agreement per layout is Spearman's rank correlation between our IQM BR-Prox (``all`` partners) and
the reference over the algorithms both have (ZSC-Eval Sec. 5.1 uses it for human-rank agreement).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from zsceval.envs.overcooked import resolve_layout_name
from zsceval.stats.metrics import ALL_LEVELS, spearman

REFERENCE_DIR = Path(__file__).with_name("reference")
"""Folder of the shipped reference tables."""

REFERENCE_TABLES: dict[str, str] = {"zsceval-paper": "zsceval_paper.yaml"}
"""Shipped reference tables: name -> file in :data:`REFERENCE_DIR`."""

REFERENCE_FORMAT_VERSION = 1
DIFFERENCE_FLAG = 0.15
"""|ours - reference| above which the comparison marks a row: the gap
``docs/results.md`` explains (e.g. Counter Circuit at population 12)."""


class ReferenceTableError(ValueError):
    """An unknown reference name, or a malformed reference file (named)."""


def load_reference_table(name_or_path: str | Path) -> pd.DataFrame:
    """Load a reference table by shipped name or path.

    Args:
        name_or_path: a key of :data:`REFERENCE_TABLES` (e.g. ``"zsceval-paper"``) or a YAML path.

    Returns:
        Long frame, one row per (layout, algorithm): ``layout`` (canonical name),
        ``reference_name``, ``algorithm``, ``br_prox`` and one float column per other per-algorithm
        mapping of the file (NaN where an algorithm lacks it).

    Raises:
        ReferenceTableError: unknown name (lists the shipped ones) or a malformed file.
    """
    key = str(name_or_path)
    if key in REFERENCE_TABLES:
        path = REFERENCE_DIR / REFERENCE_TABLES[key]
    else:
        path = Path(key)
        if not path.is_file():
            raise ReferenceTableError(
                f"unknown reference table {key!r}; shipped: {', '.join(REFERENCE_TABLES)}"
                " (or a YAML file path)"
            )
    try:
        data = yaml.safe_load(path.read_text())
        if not isinstance(data, dict) or data.get("format_version") != REFERENCE_FORMAT_VERSION:
            raise ValueError(f"format_version must be {REFERENCE_FORMAT_VERSION}")
        rows = []
        for layout, entry in data["layouts"].items():
            columns = {k: v for k, v in entry.items() if isinstance(v, dict)}
            if "br_prox" not in columns:
                raise ValueError(f"layout {layout!r} has no br_prox mapping")
            for algorithm, value in columns["br_prox"].items():
                row = {"layout": str(layout), "reference_name": str(entry.get("reference_name", layout))}
                row |= {"algorithm": str(algorithm), "br_prox": float(value)}
                row |= {c: float(m.get(algorithm, np.nan)) for c, m in columns.items() if c != "br_prox"}
                rows.append(row)
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ReferenceTableError(f"malformed reference table {path}: {exc}") from exc
    return pd.DataFrame(rows)


def split_reference(value: str) -> tuple[str, str, str]:
    """``NAME[:COLUMN]`` -> ``(table, column, label)``.

    ``table`` is a shipped name or a YAML path (a value naming an existing file, or without ``:``,
    is all table); ``column`` the compared column: ``br_prox`` by default, ``pop12`` is short for
    ``br_prox_pop12``; ``label`` names the comparison in text and file names
    (``zsceval-paper-pop12``; a YAML path's stem).
    """
    table, column = value, "br_prox"
    if value not in REFERENCE_TABLES and not Path(value).is_file() and ":" in value:
        table, column = value.rsplit(":", 1)
        column = column if column.startswith("br_prox") or column == "shipped_script" else f"br_prox_{column}"
    label = Path(table).stem if table.endswith((".yaml", ".yml")) else table
    if column != "br_prox":
        label += "-" + column.removeprefix("br_prox_")
    return table, column, label


def _canonical(name: str) -> str:
    try:
        return resolve_layout_name(name)
    except ValueError:
        return name  # e.g. a GRF scenario: kept as written


def compare_with_reference(
    summary: pd.DataFrame, reference: pd.DataFrame, column: str = "br_prox"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Join our IQM BR-Prox (``all`` partners) with a reference table; Spearman rho per layout.

    Layouts match by canonical name (aliases and the reference's own names resolve).

    Args:
        summary: :func:`~zsceval.stats.metrics.br_prox_summary` output.
        reference: :func:`load_reference_table` output.
        column: the reference column to compare with (e.g. ``br_prox_pop12``).

    Returns:
        ``(rows, layouts)``. ``rows``: one per (layout, algorithm) we evaluated, columns ``layout,
        algorithm, iqm, ci_low, ci_high, reference`` (NaN where the reference lacks the algorithm or
        the layout), ``difference`` (``iqm - reference``), ``flagged`` (``|difference| >``
        :data:`DIFFERENCE_FLAG`) and ``outside_ci`` (the reference outside our interval).
        ``layouts``: one per layout of ``summary``: ``layout, num_common`` (algorithms in both),
        ``spearman`` (NaN with fewer than 2 common algorithms or a constant column).

    Raises:
        ReferenceTableError: the reference has no ``column`` (the ones it has are named).
    """
    numeric = [c for c in reference.columns if c not in ("layout", "reference_name", "algorithm")]
    if column not in numeric:
        raise ReferenceTableError(
            f"the reference table has no column {column!r}; it has: {', '.join(numeric)}"
        )
    ours = summary[summary["partner_level"] == ALL_LEVELS][
        ["layout", "algorithm", "iqm", "ci_low", "ci_high"]
    ]
    ours = ours.assign(key=[_canonical(str(x)) for x in ours["layout"]])
    ref = reference.assign(key=[_canonical(str(x)) for x in reference["layout"]])
    by_name = dict(zip(reference["reference_name"], ref["key"]))
    ours["key"] = [by_name.get(k, k) for k in ours["key"]]
    ref = ref[["key", "algorithm", column]].rename(columns={column: "reference"})
    rows = ours.merge(ref, on=["key", "algorithm"], how="left").drop(columns="key")
    rows["difference"] = rows["iqm"] - rows["reference"]
    rows["flagged"] = rows["difference"].abs() > DIFFERENCE_FLAG
    rows["outside_ci"] = (rows["reference"] < rows["ci_low"]) | (rows["reference"] > rows["ci_high"])
    layouts = []
    for layout, frame in rows.groupby("layout", sort=True):
        common = frame.dropna(subset=["reference"])
        rho = (
            spearman(
                dict(zip(common["algorithm"], common["iqm"])),
                dict(zip(common["algorithm"], common["reference"])),
            )
            if len(common) >= 2
            else float("nan")
        )
        layouts.append({"layout": layout, "num_common": len(common), "spearman": rho})
    return rows.reset_index(drop=True), pd.DataFrame(layouts, columns=["layout", "num_common", "spearman"])
