"""Benchmark suites and ``zsceval bench``: the whole ZSC-Eval pipeline as resumable jobs.

A suite (YAML, ``benchmarks/suites/*.yaml``, installed as ``zsceval.suites``) names layouts,
algorithms, seeds and budgets::

    name: overcooked-quick
    seed: 0
    layouts: [cramped_room]
    algorithms: [sp, fcp, mep, trajedi, hsp, cole, e3t]
    ego_seeds: 3
    ego_steps: 2000000            # each ego's env steps (SP, E3T: ZSC-Eval 1e7) ...
    algo_ego_steps:               # ... unless its algorithm has its own (ZSC-Eval: stage 2 and COLE 5x SP's)
      fcp: 10000000
    algo_overrides:               # training-config overrides of one algorithm's runs (after `overrides`);
      cole: [population.size=25]  # an algo.KEY one reaches only its jobs that have option KEY
      hsp: [algo.min_return=0]    # (HSP's ego, not the MEP stage 1 it shares)
    preset: quick                 # training preset of every run
    overrides: []                 # training config overrides of every run, e.g. [env.num_envs=64]
    device: cpu
    partners:
      candidates: 8               # sampled weight vectors (behavior-preferring candidates)
      candidate_steps: 1500000
      checkpoints: 10             # checkpoint trail per candidate (for the mid checkpoint)
      feature_episodes: 10        # episodes per seating for behavior features
      k: 3                        # selected partners (x2 with their mid checkpoints)
      mid_br_steps: 1000000
      dpp_samples: 100000
      min_return: 10              # drop candidates whose final return is <= this
      weight_sampling: reference  # candidate i trains grid point (seed + i) % len(grid); or `random`
    layout_partners:              # per-layout changes to `partners` (ZSC-Eval: K = 15 multi-recipe)
      counter_circuit_mr: {k: 15, candidates: 72}
    layout_partner_sets:          # evaluate a layout's egos on a shipped partner set instead of
      counter_circuit: zsceval:counter_circuit   # generating and selecting its partners
    evaluation:
      episodes: 10                # per (ego, partner, seat)
      human_proxy: false          # also score every ego with a BC human model (2019 layouts)
      strata: true                # also play every ego with the unhelpful partners (issue 36)
      strata_episodes: null       # their episodes per (ego, partner, seating); null: `episodes`

``zsceval bench`` builds the job graph (:mod:`zsceval.evaluation.pipeline`) and runs what is
missing in phases (partner generation, selection, mid BRs, manifest, ego training, evaluation),
so a killed bench resumes and finished work is never redone. Algorithms of the ZSC-Eval paper that
are not registered yet are reported as skipped; unknown names are an error before any compute.
Outputs under ``--out``: ``<layout>/...`` job folders, and ``results.parquet``,
``br_returns.parquet``, ``features.parquet``, ``unhelpful.parquet`` (with ``evaluation.strata``),
``human_proxy.parquet`` (with ``evaluation.human_proxy``) and ``suite.yaml`` (the resolved suite) for
``zsceval report``.

Partner strata (issue 36): the partner set's final and mid checkpoints are the skilled and
semi-skilled strata (ZSC-Eval's expert and moderate partners, ``results.parquet``); with
``evaluation.strata`` (default true) every ego also plays the two unhelpful partners of
:mod:`zsceval.evaluation.strata` (one that only stays, one that acts uniformly at random) in the
seatings it plays the set in, one ``ego.unhelpful`` job per ego, ``strata_episodes`` episodes each.
On by default: a game with an unhelpful partner costs what a game with a set partner costs, so the
two partners add 2 / (2K) to the evaluation's games (K = 3: a third) and nothing to training, which
dominates a bench.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import typing
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from zsceval import registry
from zsceval.bench.algo_options import algo_items, describe_options, plugin_conflicts, takes_option
from zsceval.bench.stages import STAGES_TABLE
from zsceval.envs.scenarios import env_flags, num_players, resolve_scenario
from zsceval.evaluation import pipeline  # noqa: F401  (registers the job kinds)
from zsceval.evaluation.candidates import (
    WEIGHT_SAMPLING,
    PartnerBudget,
    candidate_jobs,
    candidate_weights,
    validate_budget,
)
from zsceval.evaluation.human_proxy import HUMAN_PROXY_TABLE
from zsceval.evaluation.strata import UNHELPFUL_TABLE
from zsceval.execution import Job, run_jobs
from zsceval.execution.locks import FolderLock
from zsceval.io import atomic_path, atomic_write_text
from zsceval.plugins import PluginGroup
from zsceval.rl.algorithm import JobContext
from zsceval.rl.config import ConfigError, check_episode_budget, coerce_value, resolve_config
from zsceval.rl.hardware import scoped_environ, worker_thread_env

__all__ = [
    "Suite",
    "SuiteError",
    "PartnerBudget",
    "load_suite",
    "list_suites",
    "build_phases",
    "late_phases",
    "run_bench",
    "collect_tables",
    "ZSC_ALGORITHMS",
    "WEIGHT_SAMPLING",
    "candidate_weights",
]

# Algorithms of the ZSC-Eval paper (and TBS): a suite may name them before they are implemented.
ZSC_ALGORITHMS = ("sp", "fcp", "mep", "trajedi", "hsp", "cole", "e3t", "tbs")


@dataclass(frozen=True)
class Suite:
    """A resolved benchmark suite (see the module docstring for the fields)."""

    name: str
    """Suite name (default output folder ``bench/<name>``)."""
    layouts: tuple[str, ...]
    """Layout names or aliases."""
    algorithms: tuple[str, ...]
    """Ego algorithms; ZSC-Eval algorithms not implemented yet are skipped."""
    ego_seeds: int = 3
    """Training seeds per ego algorithm (ZSC-Eval: 5)."""
    ego_steps: int = 2_000_000
    """Env steps of each ego training run (unless ``algo_ego_steps`` gives its algorithm its own)."""
    algo_ego_steps: tuple[tuple[str, int], ...] = ()
    """Per-algorithm ego budgets (algorithm, env steps) that replace ``ego_steps`` for that algorithm;
    from the suite's ``algo_ego_steps`` mapping. ZSC-Eval gives SP and E3T 1e7 env steps and the
    stage-2 egos (FCP, MEP, TrajeDi, HSP) and COLE 5e7 for populations of 12 and 25 (zsceval-facts,
    "Training settings")."""
    seed: int = 0
    """Seed of weight sampling, selection and evaluation."""
    preset: str = "quick"
    """Training preset of every run (``quick`` or ``paper``)."""
    device: str = "cpu"
    """Torch device of every job."""
    overrides: tuple[str, ...] = ()
    """Training-config overrides (``key=value``) applied to every run."""
    algo_overrides: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Per-algorithm training-config overrides (algorithm, ``key=value`` strings), applied after
    ``overrides`` to every training job that algorithm declares (its stage-1 runs too), except that
    an ``algo.KEY`` override reaches only the jobs whose algorithm has the option ``KEY``
    (:func:`scope_algo_options`: ``{hsp: [algo.min_return=0]}`` reaches HSP's ego, not the MEP
    stage-1 population it shares); from the suite's ``algo_overrides`` mapping, e.g.
    ``{cole: [population.size=25]}`` (COLE's 25 slots next to the co-play methods' population of 12)."""
    partners: PartnerBudget = field(default_factory=PartnerBudget)
    """Partner generation and selection budget."""
    evaluation_episodes: int = 10
    """Episodes per (ego seed, partner, seat), and per (partner, seat) for BR returns."""
    human_proxy: bool = False
    """Also score every ego against a behavior-cloned human model of its layout (layouts with 2019
    human data only; :mod:`zsceval.evaluation.human_proxy`), from the suite's ``evaluation.human_proxy``."""
    strata: bool = True
    """Also play every ego with the unhelpful partners of :mod:`zsceval.evaluation.strata` (the
    unhelpful stratum of issue 36; ``unhelpful.parquet``), from the suite's ``evaluation.strata``."""
    strata_episodes: int | None = None
    """Episodes per (ego seed, unhelpful partner, seating); None: ``evaluation_episodes``. From the
    suite's ``evaluation.strata_episodes``."""
    layout_partners: tuple[tuple[str, PartnerBudget], ...] = ()
    """Per-layout partner budgets (canonical layout name, full budget) that replace ``partners``
    for that layout; from the suite's ``layout_partners`` mapping (changed keys only)."""
    layout_partner_sets: tuple[tuple[str, str], ...] = ()
    """Layouts evaluated on a shipped partner set (canonical layout name, set name such as
    ``zsceval:counter_circuit``; :mod:`zsceval.evaluation.shipped_sets`): no candidates, selection or
    mid BRs for them; the set, verified, is the layout's ``partners/set``. From the suite's
    ``layout_partner_sets`` mapping."""

    @property
    def unhelpful_episodes(self) -> int:
        """Episodes per (ego seed, unhelpful partner, seating): ``strata_episodes``, else
        ``evaluation_episodes``."""
        return self.strata_episodes if self.strata_episodes is not None else self.evaluation_episodes

    def ego_budget(self, algo: str) -> int:
        """Env steps of each ego run of ``algo``: its ``algo_ego_steps`` entry or ``ego_steps``."""
        return dict(self.algo_ego_steps).get(algo, self.ego_steps)

    def partner_set(self, layout: str) -> str | None:
        """The shipped partner set ``layout`` (name or alias) is evaluated on, or None."""
        return dict(self.layout_partner_sets).get(resolve_scenario(layout))

    def budget(self, layout: str) -> PartnerBudget:
        """The partner budget of ``layout`` (name or alias): its ``layout_partners`` entry or ``partners``."""
        name = resolve_scenario(layout)
        return dict(self.layout_partners).get(name, self.partners)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["evaluation"] = {
            "episodes": d.pop("evaluation_episodes"),
            "human_proxy": d.pop("human_proxy"),
            "strata": d.pop("strata"),
            "strata_episodes": d.pop("strata_episodes"),
        }
        d["layout_partners"] = {name: asdict(budget) for name, budget in self.layout_partners}
        d["layout_partner_sets"] = dict(self.layout_partner_sets)
        d["algo_ego_steps"] = dict(self.algo_ego_steps)
        d["algo_overrides"] = {a: list(o) for a, o in self.algo_overrides}
        return d

    def algo_common(self, algo: str, common: dict) -> dict:
        """``common`` job params with ``algo``'s ``algo_overrides`` appended to its overrides."""
        extra = dict(self.algo_overrides).get(algo, ())
        if not extra:
            return common
        return {**common, "overrides": [*common.get("overrides", []), *extra]}


class SuiteError(ValueError):
    """A malformed suite (names the file and the key)."""


SUITE_GROUP = "zsceval.suites"
"""Entry-point group of suite collections: name = a label, value = a package whose folder holds
``*.yaml`` suites (the shipped ones: ``zsceval = zsceval.suites``); a suite's name is its file's stem."""
_suite_packages = PluginGroup(SUITE_GROUP, "suite collection")


def _adopt_suites(label: str, package: Any) -> None:
    if not hasattr(package, "__path__"):
        raise TypeError(f"{package!r} is not a package (a folder of suite YAML files)")


def _suite_files() -> tuple[dict[str, list[Path]], dict[str, Exception]]:
    """Suite name -> its files in the packages of :data:`SUITE_GROUP`, and the entry points that
    failed to load (left out)."""
    failed = _suite_packages.load_all(_adopt_suites)
    found: dict[str, list[Path]] = {}
    for _, package in sorted(_suite_packages.loaded().items()):
        for path in sorted(Path(str(resources.files(package))).glob("*.yaml")):
            found.setdefault(path.stem, []).append(path)
    return found, dict(failed)


def list_suites() -> list[str]:
    """Names of the installed suites (every package of the entry-point group ``zsceval.suites``)."""
    return sorted(_suite_files()[0])


def _suite_path(name: str) -> Path:
    """The file of the installed suite ``name``.

    Raises:
        SuiteError: unknown (installed suites listed, closest suggested, packages that failed to
            load named) or shipped by several packages.
    """
    found, failed = _suite_files()
    paths = found.get(name, [])
    if len(paths) > 1:
        raise SuiteError(
            f"suite {name!r} is shipped by several packages ({', '.join(map(str, paths))}); pass one's path"
        )
    if not paths:
        close = difflib.get_close_matches(name, list(found), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        broken = "".join(f" ({exc})" for exc in failed.values())
        names = ", ".join(sorted(found))
        raise SuiteError(f"unknown suite {name!r}; installed suites: {names}.{hint}{broken}")
    return paths[0]


def load_suite(name_or_path: str | Path, *, algorithms=None, layouts=None) -> Suite:
    """Load and validate a suite by name or path, optionally restricted to some algorithms/layouts.

    Raises:
        SuiteError: unknown suite (lists the installed ones), malformed YAML (file, line, column),
            unknown keys, unknown layout or algorithm names (with the valid ones).
    """
    path = Path(str(name_or_path))
    if not path.suffix:
        path = _suite_path(str(name_or_path))
    if not path.is_file():
        raise SuiteError(f"suite file {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except UnicodeDecodeError:
        raise SuiteError(f"{path}: not a text (UTF-8 YAML) file; a suite is a YAML file") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise SuiteError(f"{where}: invalid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict):
        raise SuiteError(f"{path}: a suite is a mapping of keys")
    known = (set(Suite.__dataclass_fields__) - set(_EVALUATION_KEYS)) | {"evaluation"}
    _check_keys(data, known, path, "")
    pdata = data.get("partners") or {}
    _check_keys(pdata, set(PartnerBudget.__dataclass_fields__), path, "partners.")
    base = PartnerBudget(**_typed(PartnerBudget, pdata, path, "partners."))
    layout_partners = _layout_partners(data.get("layout_partners") or {}, base, path)
    edata = data.get("evaluation") or {}
    _check_keys(edata, {k.split(".", 1)[1] for k in _EVALUATION_KEYS.values()}, path, "evaluation.")
    values = {"name": path.stem, "layouts": [], "algorithms": []}
    algo_steps = _algo_ego_steps(data.get("algo_ego_steps") or {}, path)
    algo_over = _algo_overrides(data.get("algo_overrides") or {}, path)
    sections = ("partners", "evaluation", "layout_partners", "layout_partner_sets", "algo_ego_steps",
                "algo_overrides")  # fmt: skip
    values.update({k: v for k, v in data.items() if k not in sections})
    for name, key in _EVALUATION_KEYS.items():
        short = key.split(".", 1)[1]
        if short in edata and not (name == "strata_episodes" and edata[short] is None):  # null: the default
            values[name] = edata[short]
    suite = Suite(
        **_typed(Suite, values, path, ""),
        partners=base,
        layout_partners=layout_partners,
        layout_partner_sets=_layout_partner_sets(data.get("layout_partner_sets") or {}, path),
        algo_ego_steps=algo_steps,
        algo_overrides=algo_over,
    )
    if layouts:
        suite = _restrict(suite, "layouts", layouts)
    if algorithms:
        suite = _restrict(suite, "algorithms", algorithms)
        # the budgets of algorithms left out go too (_validate refuses budgets of algorithms not run)
        kept = [(a, n) for a, n in suite.algo_ego_steps if a in suite.algorithms]
        over = [(a, o) for a, o in suite.algo_overrides if a in suite.algorithms]
        suite = dataclasses.replace(suite, algo_ego_steps=tuple(kept), algo_overrides=tuple(over))
    _validate(suite, path)
    return suite


_EVALUATION_KEYS = {
    "evaluation_episodes": "evaluation.episodes",
    "human_proxy": "evaluation.human_proxy",
    "strata": "evaluation.strata",
    "strata_episodes": "evaluation.strata_episodes",
}
"""Suite fields read from the ``evaluation`` section, and their keys there."""


def _typed(cls, values: dict, path: Path, prefix: str) -> dict:
    """``values`` coerced to the field types of the dataclass ``cls`` (``1.5e6`` is an int budget;
    a scalar where a list is expected becomes a one-element list).

    Raises:
        SuiteError: a value of the wrong type, naming the file and the key.
    """
    hints = typing.get_type_hints(cls)
    for k, tp in hints.items():  # ``X | None``: a value (None is left out by the caller) is an X
        args = typing.get_args(tp)
        if type(None) in args and len(args) == 2:
            hints[k] = next(a for a in args if a is not type(None))
    try:
        return {k: coerce_value(v, hints[k], _EVALUATION_KEYS.get(k, prefix + k)) for k, v in values.items()}
    except ConfigError as exc:
        raise SuiteError(f"{path}: {exc}") from None


def _layout_partners(data: dict, base: PartnerBudget, path: Path) -> tuple[tuple[str, PartnerBudget], ...]:
    """Resolve the ``layout_partners`` mapping (layout name or alias -> changed budget keys).

    Raises:
        SuiteError: not a mapping, an unknown layout, a layout given twice, or a bad budget key.
    """
    if not isinstance(data, dict):
        raise SuiteError(f"{path}: layout_partners must map layout names to partner budgets")
    out: dict[str, PartnerBudget] = {}
    for name, changes in data.items():
        try:
            layout = resolve_scenario(str(name))
        except ValueError as exc:
            raise SuiteError(f"{path}: layout_partners: {exc}") from None
        if layout in out:
            raise SuiteError(f"{path}: layout_partners names {layout!r} twice")
        prefix = f"layout_partners.{name}."
        _check_keys(changes or {}, set(PartnerBudget.__dataclass_fields__), path, prefix)
        out[layout] = dataclasses.replace(base, **_typed(PartnerBudget, changes or {}, path, prefix))
    return tuple(sorted(out.items()))


def _layout_partner_sets(data: dict, path: Path) -> tuple[tuple[str, str], ...]:
    """Resolve the ``layout_partner_sets`` mapping (layout name or alias -> shipped set name).

    Raises:
        SuiteError: not a mapping, an unknown layout or set (the installed sets listed), or a set of
            another layout.
    """
    from zsceval.evaluation.manifest import ManifestError
    from zsceval.evaluation.shipped_sets import resolve_set

    if not isinstance(data, dict):
        raise SuiteError(f"{path}: layout_partner_sets must map layout names to set names")
    out: dict[str, str] = {}
    for name, set_name in data.items():
        try:
            layout, entry = resolve_scenario(str(name)), resolve_set(str(set_name))
        except (ValueError, ManifestError) as exc:
            raise SuiteError(f"{path}: layout_partner_sets.{name}: {exc}") from None
        if entry.layout != layout:
            raise SuiteError(f"{path}: layout_partner_sets.{name}: {entry.full_name} is for {entry.layout}")
        out[layout] = str(set_name)
    return tuple(sorted(out.items()))


def _algo_ego_steps(data: dict, path: Path) -> tuple[tuple[str, int], ...]:
    """Resolve the ``algo_ego_steps`` mapping (algorithm name -> env steps of each of its egos).

    Raises:
        SuiteError: not a mapping, or a budget that is not a whole number (naming the file and key).
    """
    if not isinstance(data, dict):
        raise SuiteError(
            f"{path}: algo_ego_steps must map algorithm names to env steps, e.g. {{fcp: 15000000}}"
        )
    out = {}
    for name, steps in data.items():
        try:
            out[str(name)] = coerce_value(steps, int, f"algo_ego_steps.{name}")
        except ConfigError as exc:
            raise SuiteError(f"{path}: {exc}") from None
    return tuple(sorted(out.items()))


def _algo_overrides(data: dict, path: Path) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Resolve the ``algo_overrides`` mapping (algorithm name -> list of ``key=value`` overrides).

    Raises:
        SuiteError: not a mapping of lists of strings (naming the file and key).
    """
    if not isinstance(data, dict):
        raise SuiteError(f"{path}: algo_overrides must map algorithm names to override lists, "
                         "e.g. {cole: [population.size=25]}")  # fmt: skip
    out = {}
    for name, items in data.items():
        items = [items] if isinstance(items, str) else items
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise SuiteError(f"{path}: algo_overrides.{name} must be a list of key=value strings")
        out[str(name)] = tuple(items)
    return tuple(sorted(out.items()))


def _check_keys(data: dict, known: set[str], path: Path, prefix: str) -> None:
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f" (did you mean {prefix}{close[0]!r}?)" if close else ""
            raise SuiteError(f"{path}: unknown key {prefix}{key!r}{hint}; valid: {', '.join(sorted(known))}")


def _restrict(suite: Suite, what: str, chosen) -> Suite:
    """The suite with ``what`` (``layouts`` or ``algorithms``) replaced by ``chosen``, a subset.

    Raises:
        SuiteError: a chosen name the suite does not hold (lists the suite's).
    """
    have = list(getattr(suite, what))
    flag = {"algorithms": "algos"}.get(what, what)  # the command-line flag
    canon = (lambda n: _canonical_layout(n)) if what == "layouts" else (lambda n: n)
    have_canon = [canon(n) for n in have]
    picked = []
    for name in (c.strip() for c in chosen):
        if not name:
            continue
        if canon(name) not in have_canon:
            raise SuiteError(
                f"--{flag} {name!r} is not in suite {suite.name!r}, whose {what} are: {', '.join(have)} "
                f"(edit a copy of the suite YAML and pass its path to --suite to add it)"
            )
        picked.append(have[have_canon.index(canon(name))])
    if not picked:
        raise SuiteError(f"--{flag} selects nothing; the suite's {what} are: {', '.join(have)}")
    return dataclasses.replace(suite, **{what: tuple(dict.fromkeys(picked))})


def _canonical_layout(name: str) -> str:
    try:
        return resolve_scenario(name)
    except ValueError:
        return name


def _validate(suite: Suite, path: Path) -> None:
    if not suite.layouts:
        raise SuiteError(f"{path}: 'layouts' is empty")
    for name in suite.layouts:
        try:
            resolve_scenario(name)
        except ValueError as exc:
            raise SuiteError(f"{path}: {exc}") from None
    registered = set(registry.names())
    for algo in suite.algorithms:
        if algo not in registered and algo not in ZSC_ALGORITHMS:
            close = difflib.get_close_matches(algo, sorted(registered | set(ZSC_ALGORITHMS)), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise SuiteError(
                f"{path}: unknown algorithm {algo!r}{hint}; registered: {', '.join(sorted(registered))}; "
                f"ZSC-Eval algorithms (skipped until implemented): {', '.join(ZSC_ALGORITHMS)}"
            )
    for algo, _ in suite.algo_ego_steps:
        if algo not in suite.algorithms:
            raise SuiteError(
                f"{path}: algo_ego_steps names {algo!r}, which the suite does not run; its algorithms: "
                f"{', '.join(suite.algorithms)}"
            )
    for algo, items in suite.algo_overrides:
        if algo not in suite.algorithms:
            raise SuiteError(
                f"{path}: algo_overrides names {algo!r}, which the suite does not run; its algorithms: "
                f"{', '.join(suite.algorithms)}"
            )
        try:
            resolve_config(preset=suite.preset, overrides=[*suite.overrides, *items], **{"run.algo": algo})
        except ConfigError as exc:
            raise SuiteError(f"{path}: algo_overrides.{algo}: {exc}") from None
    for key, value in [
        ("ego_seeds", suite.ego_seeds),
        ("ego_steps", suite.ego_steps),
        *((f"algo_ego_steps.{a}", n) for a, n in suite.algo_ego_steps),
        ("evaluation.episodes", suite.evaluation_episodes),
        ("evaluation.strata_episodes", suite.unhelpful_episodes),
    ]:
        if value < 1:
            raise SuiteError(f"{path}: {key}={value} must be >= 1")
    validate_budget(suite.partners, f"{path}: partners.", SuiteError)
    for name, pb in suite.layout_partners:
        validate_budget(pb, f"{path}: layout_partners.{name}.", SuiteError)
    import torch

    try:  # the device name only: a suite for a GPU machine loads anywhere (check_device before running)
        torch.device(suite.device)
    except RuntimeError:
        raise SuiteError(
            f"{path}: device: unknown device {suite.device!r}; valid: cpu, cuda, cuda:N (e.g. cuda:1), mps"
        ) from None
    for name in suite.layouts:  # the training config of every run resolves (preset, overrides)
        try:
            resolve_config(preset=suite.preset, overrides=suite.overrides, **env_flags(name))
            # candidates: selection reads their logged returns, so each must end episodes
            cand = resolve_config(preset=suite.preset, overrides=suite.overrides,
                                  **{"run.algo": "biased", **env_flags(name)})  # fmt: skip
            budget = suite.budget(name)
            key = (
                "partners.candidate_steps"
                if budget is suite.partners
                else f"layout_partners.{name}.candidate_steps"
            )
            check_episode_budget(cand, key, budget.candidate_steps, cand.env.num_envs,
                                 "partner selection (the candidates' final and mid returns)")  # fmt: skip
        except ConfigError as exc:
            raise SuiteError(f"{path}: {exc}") from None


def check_device(suite: Suite) -> None:
    """Refuse a suite whose device this machine does not have, before any compute.

    Raises:
        SuiteError: names the device and the way out.
    """
    from zsceval.envs.overcooked.env import resolve_device

    try:
        resolve_device(suite.device)
    except ValueError as exc:
        raise SuiteError(f"device: {exc}") from None


def _phases_for_layout(suite: Suite, layout: str) -> tuple[list[list[Job]], dict]:
    """Static phases 1-3 (candidates, features, selection) and the ego training jobs; an ego job
    that reads candidates or the selection (HSP) joins the selection phase."""
    lay = resolve_scenario(layout)
    pb = suite.budget(lay)
    common = {
        "layout": lay,
        "preset": suite.preset,
        "device": suite.device,
        "overrides": list(suite.overrides),
    }
    if suite.partner_set(lay):  # a shipped set: no candidates; HSP generates its own (partners None)
        egos, stages = ego_jobs(suite, lay, common, None)
        info = {"candidates": [], "trains": {}, "evals": {}, "select": None, "egos": egos}
        info["shipped"] = suite.partner_set(lay)
        proxy = human_proxy_job(suite, lay)
        if proxy is not None:
            info["human_proxy"] = proxy
        return [stages + egos + ([proxy] if proxy else []), [], []], info
    trains, evals, select = candidate_jobs(lay, pb, suite.seed, common)
    cand_ids = [t.id.split("/")[-2] for t in trains]
    partners = {"train": [t.id for t in trains], "evaluate": [e.id for e in evals], "select": select.id}
    egos, stages = ego_jobs(suite, lay, common, partners)
    late_ids = {select.id, *partners["evaluate"]}
    early = [j for j in stages + egos if not (set(j.needs) & late_ids)]
    after_selection = [j for j in stages + egos if set(j.needs) & late_ids]
    info = {
        "candidates": cand_ids,
        "trains": {j.id: j for j in trains},
        "evals": {j.id: j for j in evals},
        "select": select,
        "egos": egos,
    }
    proxy = human_proxy_job(suite, lay)
    if proxy is not None:
        info["human_proxy"] = proxy
        early.append(proxy)
    return [trains + early, evals, [select, *after_selection]], info


def human_proxy_job(suite: Suite, layout: str) -> Job | None:
    """The job that trains ``layout``'s human proxy, when the suite asks for human-proxy scores, the
    layout has 2019 human data and the data is installed (None otherwise; :func:`run_bench` says
    why when the data is missing)."""
    from zsceval.evaluation.human_proxy import HUMAN_LAYOUTS

    if not suite.human_proxy or layout not in HUMAN_LAYOUTS or not human_data_installed():
        return None
    jid = f"{layout}/partners/human-proxy"
    return Job(jid, "partners.human_proxy", {"layout": layout, "seed": suite.seed}, out=jid)


def human_data_installed() -> bool:
    """Whether the 2019 human trials can be found (:func:`zsceval.human.trials.find_data_dir`)."""
    from zsceval.human.trials import HumanDataMissing, find_data_dir

    try:
        find_data_dir()
    except HumanDataMissing:
        return False
    return True


def ego_jobs(
    suite: Suite, layout: str, common: dict, partners: dict | None = None
) -> tuple[list[Job], list[Job]]:
    """Each implemented algorithm's jobs for every ego seed (:meth:`Algorithm.jobs`); ``partners``
    (ids of the candidate ``train`` / ``evaluate`` jobs and of ``select``) is passed on to the
    plug-ins (:attr:`JobContext.partners`).

    Returns:
        ``(ego jobs, other stage jobs)``; identical stage jobs declared by several algorithms
        (same id and parameters) appear once.

    Raises:
        SuiteError: a plug-in declared no job with its ego id, or two different jobs with one id.
    """
    implemented = set(registry.names())
    egos: list[Job] = []
    stages: dict[str, Job] = {}
    for algo in suite.algorithms:
        if algo not in implemented:
            continue
        cls = registry.get(algo)
        for s in range(suite.ego_seeds):
            seed, steps = suite.seed + 1000 + s, suite.ego_budget(algo)
            common_a = suite.algo_common(algo, common)
            ctx = JobContext(algo, layout, seed, steps, f"{layout}/egos/{algo}/s{s}", common_a, partners)
            extra = dict(suite.algo_overrides).get(algo, ())
            jobs = scope_algo_options(algo, cls.jobs(ctx), list(common.get("overrides", [])), extra)
            ego = [j for j in jobs if j.id == ctx.ego_id]
            if len(ego) != 1:
                raise SuiteError(f"algorithm '{algo}' must declare exactly one job with id {ctx.ego_id!r}")
            egos.append(_with_checkpoint_trail(ego[0]))
            for j in jobs:
                if j.id == ctx.ego_id:
                    continue
                if j.id in stages and stages[j.id] != j:
                    raise SuiteError(
                        f"two different jobs share the id {j.id!r} (algorithm '{algo}'): a stage job that "
                        "several algorithms declare (e.g. MEP's stage 1, which HSP trains with) takes the "
                        "suite's `overrides`, not one algorithm's `algo_overrides`"
                    )
                stages[j.id] = j
    return egos, list(stages.values())


def scope_algo_options(
    algo: str, jobs: list[Job], base: list[str], extra: tuple[str, ...] | list[str]
) -> list[Job]:
    """Keep each of ``algo``'s ``algo.KEY=...`` overrides (from the suite's ``algo_overrides``) only
    in the training jobs whose algorithm has the option ``KEY``.

    A plug-in declares its jobs with the suite's overrides followed by ``extra`` (``base + extra``);
    the ``algo:`` section of a run is its own algorithm's options, so HSP's ``algo.min_return``
    belongs to its ego and not to the MEP stage-1 population it shares with MEP (which would refuse
    the key, and would differ from MEP's job of the same id). Other overrides (``population.size``,
    ``ppo.lr``) stay in every job. A job whose overrides a plug-in set itself is left alone.

    Raises:
        SuiteError: an ``algo.KEY`` override that no training job of ``algo`` takes (the options of
            each job's algorithm named), or whose value the plug-in replaces with its own
            (:func:`~zsceval.bench.algo_options.plugin_conflicts`).
    """
    scoped = algo_items(extra)  # {item: (KEY, value)}
    if not scoped:
        return jobs
    declared, used, names = [*base, *extra], set(), {}
    out = []
    for job in jobs:
        if job.kind != "train" or list(job.params.get("overrides", [])) != declared:
            out.append(job)
            continue
        keep = [o for o in extra if o not in scoped or takes_option(job, scoped[o][0], names)]
        taken = plugin_conflicts(job, dict(scoped[o] for o in keep if o in scoped))
        if taken:
            raise SuiteError(f"algo_overrides.{algo}: {algo} sets these options itself: {'; '.join(taken)}")
        used.update(o for o in keep if o in scoped)
        out.append(dataclasses.replace(job, params={**job.params, "overrides": [*base, *keep]}))
    unused = [o for o in scoped if o not in used]
    if unused:
        raise SuiteError(
            f"algo_overrides.{algo}: {', '.join(unused)}: no training job of {algo} has this option "
            f"(the options of its jobs' algorithms: {describe_options(jobs)})"
        )
    return out


def _with_checkpoint_trail(job: Job) -> Job:
    """An ego training job that keeps ``EGO_CHECKPOINTS`` evenly spaced checkpoints (and the final
    one): ``ego.evaluate`` scores ZSC-Eval's checkpoint of the curve, not the last one
    (:mod:`zsceval.evaluation.ego_checkpoint`). Other kinds, and jobs that set their own, are kept."""
    from zsceval.evaluation.ego_checkpoint import EGO_CHECKPOINTS

    steps = job.params.get("steps")
    if job.kind != "train" or not steps or "checkpoint_every" in job.params:
        return job
    trail = {
        "checkpoint_every": max(1, int(steps) // EGO_CHECKPOINTS),
        "keep_checkpoints": EGO_CHECKPOINTS + 1,
    }
    return dataclasses.replace(job, params={**job.params, **trail})


def build_phases(suite: Suite) -> tuple[list[list[Job]], dict]:
    """Phases 1-3 of every layout (candidates and egos, features, selection) and per-layout info
    for :func:`late_phases`."""
    phases: list[list[Job]] = [[], [], []]
    infos = {}
    for layout in suite.layouts:
        ph, info = _phases_for_layout(suite, layout)
        for i, jobs in enumerate(ph):
            phases[i].extend(jobs)
        infos[resolve_scenario(layout)] = info
    return phases, infos


def late_phases(suite: Suite, root: Path, infos: dict) -> list[list[Job]]:
    """Phases 4-6 (mid BRs, manifest, evaluation), built once each layout's selection is done."""
    import json

    mids, manifests, evaluations = [], [], []
    for lay, info in infos.items():
        pb = suite.budget(lay)
        if info.get("shipped"):
            manifests.append(_shipped_set_job(lay, info["shipped"]))
            evaluations.extend(_evaluation_jobs(suite, lay, info, manifests[-1].id))
            continue
        sel = json.loads((root / info["select"].out / "DONE.json").read_text())["result"]
        sel_candidates = list(sel["selected_ids"])
        mid_jobs = {}
        for cid in sel_candidates:
            tid, eid = f"{lay}/candidates/{cid}/train", f"{lay}/candidates/{cid}/evaluate"
            jid = f"{lay}/partners/mid_br/{cid}"
            mid_jobs[cid] = Job(
                jid,
                "train",
                {
                    "layout": lay,
                    "preset": suite.preset,
                    "device": suite.device,
                    "overrides": list(suite.overrides),
                    "algo": "br",
                    "seed": suite.seed + 500,
                    "steps": pb.mid_br_steps,
                    "partner_train": tid,
                    "partner_eval": eid,
                },
                needs=(tid, eid),
                out=jid,
            )
        mids.extend(mid_jobs.values())
        set_jobs = _partner_set_br_jobs(suite, lay, sel_candidates) if num_players(lay) > 2 else {}
        mids.extend(set_jobs.values())
        man_id = f"{lay}/partners/set"
        cand_map = {
            cid: [f"{lay}/candidates/{cid}/train", f"{lay}/candidates/{cid}/evaluate"]
            for cid in sel_candidates
        }
        needs = (
            [info["select"].id]
            + [j for pair in cand_map.values() for j in pair]
            + [j.id for j in mid_jobs.values()]
            + [j.id for j in set_jobs.values()]
        )
        manifests.append(
            Job(
                man_id,
                "partners.manifest",
                {
                    "layout": lay,
                    "seed": suite.seed,
                    "episodes": suite.evaluation_episodes,
                    "device": suite.device,
                    "select": info["select"].id,
                    "candidates": cand_map,
                    "mid_brs": {cid: j.id for cid, j in mid_jobs.items()},
                    **({"combination_brs": {key: j.id for key, j in set_jobs.items()}} if set_jobs else {}),
                },
                needs=tuple(needs),
                out=man_id,
            )
        )
        evaluations.extend(_evaluation_jobs(suite, lay, info, man_id))
    return [mids, manifests, evaluations]


def _shipped_set_job(lay: str, name: str) -> Job:
    """The job that verifies the shipped set ``name`` and copies it into ``<lay>/partners/set`` (the
    set's full name, version included, is a parameter: a newer version is a changed job)."""
    from zsceval.evaluation.shipped_sets import resolve_set

    man_id = f"{lay}/partners/set"
    return Job(man_id, "partners.shipped", {"set": resolve_set(name).full_name, "layout": lay}, out=man_id)


def _evaluation_jobs(suite: Suite, lay: str, info: dict, man_id: str) -> list[Job]:
    """Every ego of ``lay`` against the partner set of job ``man_id`` (and the human proxy, and the
    unhelpful partners with ``suite.strata``: ``ego.unhelpful`` jobs ``<lay>/unhelpful/<algo>/s<i>``)."""
    evaluations = []
    for ego in info["egos"]:
        algo, seed = ego.id.split("/")[2], int(ego.id.split("/")[3][1:])
        jid = f"{lay}/evaluation/{algo}/s{seed}"
        ego_params = {
            "layout": lay,
            "algorithm": algo,
            "ego_seed": seed,
            "episodes": suite.evaluation_episodes,
            "seed": suite.seed,
            "device": suite.device,
            "ego": ego.id,
        }
        evaluations.append(
            Job(jid, "ego.evaluate", {**ego_params, "partners": man_id}, needs=(ego.id, man_id), out=jid)
        )
        if "human_proxy" in info:
            proxy = info["human_proxy"].id
            hid = f"{lay}/human-proxy/{algo}/s{seed}"
            params = {**ego_params, "proxy": proxy}
            evaluations.append(Job(hid, "ego.human_proxy", params, needs=(ego.id, proxy), out=hid))
        if suite.strata:
            uid = f"{lay}/unhelpful/{algo}/s{seed}"
            params = {**ego_params, "episodes": suite.unhelpful_episodes}
            evaluations.append(Job(uid, "ego.unhelpful", params, needs=(ego.id,), out=uid))
    return evaluations


def _partner_set_br_jobs(suite: Suite, lay: str, sel_candidates: list[str]) -> dict[str, Job]:
    """Games of n > 2 players (Football): one BR training job per pair of distinct evaluation
    partners (``{"id_a+id_b": job}``), the BR in the seat(s) the pair leaves free; a single
    partner's reference is its own BR (algorithms-facts section 9; ZSC-Eval
    ``scripts/prep/gen_train_br_ymls.py`` trains one BR per pair of the 6 partners)."""
    pb = suite.budget(lay)
    refs = [
        (f"{cid}_{level}", [f"{lay}/candidates/{cid}/train", f"{lay}/candidates/{cid}/evaluate", level])
        for cid in sel_candidates
        for level in ("final", "mid")
    ]
    jobs = {}
    for (id_a, ref_a), (id_b, ref_b) in itertools.combinations(refs, 2):
        key = "+".join(sorted([id_a, id_b]))
        jid = f"{lay}/partners/set_br/{key}"
        params = {
            "layout": lay,
            "preset": suite.preset,
            "device": suite.device,
            "overrides": list(suite.overrides),
            "algo": "br",
            "seed": suite.seed + 600,
            "steps": pb.mid_br_steps,
            "partner_refs": [ref_a, ref_b],
        }
        needs = tuple(dict.fromkeys([*ref_a[:2], *ref_b[:2]]))
        jobs[key] = Job(jid, "train", params, needs=needs, out=jid)
    return jobs


ASSUMED_RATES = {("quick", "cpu"): 30_000, ("paper", "cpu"): 3_000}
"""Env steps/s of one training process, assumed for the time estimate before any job of the folder
has run (quick preset, MLP, float32: 30-50k on the project's 2-core CPU, docs/performance.md)."""


def _stage_of(job_id: str) -> str:
    parts = job_id.split("/")
    if "hsp_candidates" in parts:
        return "HSP's own candidates (biased agent + its BR)"
    if "candidates" in parts:
        return "candidates (biased agent + its BR)"
    if "stage1" in parts:
        return f"stage 1: {parts[parts.index('stage1') + 1]}"
    if "egos" in parts:
        return f"ego: {parts[parts.index('egos') + 1]}"
    return parts[1] if len(parts) > 1 else job_id


def _trained_steps(run: Path) -> tuple[int, float, float]:
    """``(env steps, training seconds, busy seconds)`` a (possibly unfinished) run has logged in
    ``metrics.csv``.

    Busy seconds are the CPU seconds the run's process spent (the ``cpu_s`` column summed): the
    time it needs on a core of its own. Training seconds also count the time the process waited
    for a core (other jobs, a niced or paused process), so a rate from them says how busy the
    machine was, not how fast a job trains. A log from before ``cpu_s`` existed gives its env steps
    over its 90th-percentile iteration rate (``env_steps_per_s``, the iterations that had a core),
    and a log without either its training seconds.
    """
    metrics = run / "metrics.csv"
    if not metrics.is_file():
        return 0, 0.0, 0.0
    wanted = {"env_steps", "wall_time_s", "env_steps_per_s", "cpu_s"}
    try:
        frame = pd.read_csv(metrics, usecols=lambda c: c in wanted)
    except (ValueError, OSError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return 0, 0.0, 0.0
    if frame.empty or "env_steps" not in frame or "wall_time_s" not in frame:
        return 0, 0.0, 0.0
    done, secs = int(frame["env_steps"].iloc[-1]), float(frame["wall_time_s"].iloc[-1])
    if "cpu_s" in frame and frame["cpu_s"].notna().all():
        return done, secs, float(frame["cpu_s"].sum())
    rates = frame["env_steps_per_s"].dropna() if "env_steps_per_s" in frame else pd.Series(dtype=float)
    rate = float(rates.quantile(0.9)) if len(rates) else 0.0
    return done, secs, (done / rate if rate > 0 else secs)


def env_step_budget(suite: Suite, static: list[list[Job]], root: str | Path | None = None) -> pd.DataFrame:
    """Env steps of every training stage of a suite, and how many a folder already holds.

    Counts the training jobs of phases 1-3 (``steps`` of each ``train`` job: candidates with their
    BRs, stage-1 populations, egos) and the mid-checkpoint BRs of the late phase (K per layout; one
    per pair of the 2K partners for games of more than two players), whose ids depend on the
    selection. Evaluation episodes are not counted.

    Returns:
        one row per stage: ``stage, jobs, env_steps, done_steps, train_s, busy_s`` (``done_steps``:
        what the runs under ``root`` have logged, finished or not; ``train_s``: their training
        seconds; ``busy_s``: the seconds they need on a core each, see :func:`_trained_steps`).
    """
    rows: dict[str, dict] = {}
    root = Path(root) if root is not None else None

    def add(stage: str, steps: int, out: str | None) -> None:
        empty = {"stage": stage, "jobs": 0, "env_steps": 0, "done_steps": 0, "train_s": 0.0, "busy_s": 0.0}
        row = rows.setdefault(stage, empty)
        row["jobs"] += 1
        row["env_steps"] += int(steps)
        if root is not None and out is not None:
            done, secs, busy = _trained_steps(root / out / "run")
            row["done_steps"] += min(done, int(steps))
            row["train_s"] += secs
            row["busy_s"] += busy

    seen = set()
    for job in (j for phase in static for j in phase):
        if job.kind != "train" or job.id in seen:
            continue
        seen.add(job.id)
        add(_stage_of(job.id), job.params.get("steps") or 0, job.out)
    for layout in suite.layouts:
        lay = resolve_scenario(layout)
        pb = suite.budget(lay)
        if suite.partner_set(lay):  # a shipped set: nothing to train
            continue
        count = pb.k if num_players(lay) <= 2 else len(list(itertools.combinations(range(2 * pb.k), 2)))
        brs = root / lay / "partners" if root is not None else None
        for _ in range(count):
            add("mid-checkpoint BRs", pb.mid_br_steps, None)
        if brs is not None and brs.is_dir():  # their ids depend on the selection: count what is there
            row = rows["mid-checkpoint BRs"]
            for run in brs.glob("*/*/run"):
                done, secs, busy = _trained_steps(run)
                row["done_steps"] += min(done, pb.mid_br_steps)
                row["train_s"] += secs
                row["busy_s"] += busy
    columns = ["stage", "jobs", "env_steps", "done_steps", "train_s", "busy_s"]
    return pd.DataFrame(list(rows.values()), columns=columns)


STAGE_RATE_MIN_STEPS = 100_000
"""Env steps a stage's runs must have logged before its own rate is used for its remaining steps."""


def estimate_hours(suite: Suite, budget: pd.DataFrame, workers: int = 1) -> tuple[float | None, str]:
    """Hours left for the suite's training, and how the rate was found.

    Once the folder's runs add up to 1e6 env steps, each stage's remaining steps are divided by that
    stage's own rate (its env steps over its busy seconds, once it has logged
    :data:`STAGE_RATE_MIN_STEPS`), else by the folder's rate over all stages: stages differ (a
    stage-2 ego trains slower than a candidate). Busy seconds count a job on a core of its own, so
    the estimate is for ``workers`` concurrent jobs that each get a core, not for a machine shared
    with other work. Before that, :data:`ASSUMED_RATES` for the suite's preset and device (None
    where there is no figure, e.g. CUDA before any job ran). ``workers`` divide the time.
    """
    busy = budget["busy_s"]
    done, secs = int(budget["done_steps"].sum()), float(busy.sum())
    left = (budget["env_steps"] - budget["done_steps"]).clip(lower=0)
    if done >= 1_000_000 and secs > 0:
        rate = done / secs
        own = (budget["done_steps"] >= STAGE_RATE_MIN_STEPS) & (busy > 0)
        stage_rate = (budget["done_steps"] / busy.where(own)).where(own, rate)
        seconds = float((left / stage_rate).sum())
        how = (
            f"{rate:,.0f} env steps/s per job on a core of its own; per stage, measured on this folder's runs"
        )
    else:
        device = "cuda" if str(suite.device).startswith("cuda") else str(suite.device)
        rate = ASSUMED_RATES.get((suite.preset, device))
        if rate is None:
            return None, f"no figure for preset {suite.preset!r} on {device} until a job has run"
        seconds = float(left.sum()) / rate
        how = f"{rate:,.0f} env steps/s per job, assumed for preset {suite.preset!r} on {device}"
    return seconds / max(1, workers) / 3600, how


def _write_table(frame: pd.DataFrame, path: Path) -> None:
    with atomic_path(path) as tmp:
        frame.to_parquet(tmp)


SUITE_RECORD = "suite.yaml"
TABLES = ("results", "br_returns", "features", "human_proxy", "unhelpful", "stages")
# a subset of a folder's layouts or algorithms runs the same jobs: not a conflicting change
_SUBSET_KEYS = ("layouts", "algorithms", "evaluation.human_proxy", "evaluation.strata")  # these only add jobs
"""``evaluation`` keys a ``suite.yaml`` written before they existed lacks, with the value that
reproduces what such a bench ran (``strata_episodes`` None: the evaluation's episodes)."""


class SuiteConflictError(SuiteError):
    """The output folder holds a run of a suite with other settings."""


def _ego_budget_differences(old: dict, new: dict) -> list[str]:
    """``algo_ego_steps.A: old -> new`` for the algorithms both records run whose ego budget
    (``algo_ego_steps`` entry, else ``ego_steps``) differs; an algorithm only one of them runs adds
    or leaves out jobs, like the ``algorithms`` list itself."""

    def budget(record: dict, algo: str):
        return (record.get("algo_ego_steps") or {}).get(algo, record.get("ego_steps"))

    common = [a for a in new.get("algorithms", []) if a in (old.get("algorithms") or [])]
    return [
        f"algo_ego_steps.{a}: {budget(old, a)!r} -> {budget(new, a)!r}"
        for a in common
        if budget(old, a) != budget(new, a)
    ]


def check_suite_record(suite: Suite, out: str | Path, *, force: bool = False) -> list[str]:
    """Compare ``suite`` with the suite recorded in ``out/suite.yaml`` (if any).

    Returns:
        The differences (``key: old -> new``) other than the layouts and algorithms run; empty when
        the folder is new or holds the same suite.

    Raises:
        SuiteConflictError: differences and not ``force`` (names them and the way out).
    """
    from zsceval.stats.records import differences

    path = Path(out) / SUITE_RECORD
    if not path.is_file():
        return []
    try:
        old = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError:
        old = {}
    new = suite.to_dict()
    # A key the record lacks was written before the setting existed: that run used its default.
    defaults = Suite(name=suite.name, layouts=(), algorithms=()).to_dict()
    old = {**{k: v for k, v in defaults.items() if k not in old}, **old}
    if isinstance(old.get("evaluation"), dict):
        old["evaluation"] = {**defaults["evaluation"], **old["evaluation"]}
    diffs = differences(
        {k: v for k, v in old.items() if k != "algo_ego_steps"},
        {k: v for k, v in new.items() if k != "algo_ego_steps"},
        ignore=_SUBSET_KEYS,
    )
    diffs += _ego_budget_differences(old, new)
    if diffs and not force:
        raise SuiteConflictError(
            f"{out} holds a run of another suite setting ({path}):\n  "
            + "\n  ".join(diffs)
            + "\nRunning this suite there would redo (and delete) the finished jobs these settings "
            "touch. Choose another --out, or pass --force to replace them."
        )
    return diffs


def run_bench(
    suite: Suite,
    out: str | Path,
    *,
    executor: str = "local",
    workers: int = 1,
    retries: int | None = None,
    progress: bool = True,
    log=print,
    force: bool = False,
) -> dict[str, Any]:
    """Run (or resume) a suite; returns a summary with the result table paths.

    ``retries``: attempts after a job's first failure (default: 1 for the process and Ray
    executors, 0 in-process; :func:`zsceval.execution.run_jobs`). The folder's ``suite.yaml``
    decides what it holds: a suite with other settings is refused unless ``force``
    (:func:`check_suite_record`); with ``force`` the old result tables are removed first, so
    ``zsceval report`` never shows them under the new suite.

    Raises:
        SuiteConflictError: ``out`` holds another suite setting and not ``force``.
        SuiteError: the suite names no implemented algorithm.
        zsceval.execution.JobError: a job failed (finished jobs stay finished; rerun to resume).
    """
    root = Path(out)
    implemented = [a for a in suite.algorithms if a in registry.names()]
    if not implemented:
        raise SuiteError(
            f"none of the algorithms {', '.join(suite.algorithms)} is implemented yet, so there is nothing "
            f"to evaluate; implemented: {', '.join(registry.names())} (`zsceval algos`). "
            "To train evaluation partners only, use `zsceval partners generate` / `select`."
        )
    check_device(suite)
    diffs = check_suite_record(suite, root, force=force)
    root.mkdir(parents=True, exist_ok=True)
    with FolderLock(root, "bench", info={"executor": executor, "workers": workers}):
        return _run_locked(suite, root, diffs, executor, workers, retries, progress, log)


def _run_locked(suite, root, diffs, executor, workers, retries, progress, log) -> dict[str, Any]:
    """:func:`run_bench` once the bench folder is locked."""
    if diffs:
        log("--force: replacing a run of another suite setting (" + "; ".join(diffs) + ")")
        for name in TABLES:
            (root / f"{name}.parquet").unlink(missing_ok=True)
    atomic_write_text(root / SUITE_RECORD, yaml.safe_dump(suite.to_dict(), sort_keys=False))
    skipped = [a for a in suite.algorithms if a not in registry.names()]
    if skipped:
        log(f"skipped (not implemented yet): {', '.join(skipped)}")
    if suite.human_proxy and not human_data_installed():
        from zsceval.human.trials import INSTALL_HINT

        log(f"human-proxy scores skipped: the 2019 human trials are not installed ({INSTALL_HINT})")
    static, infos = build_phases(suite)
    all_jobs: list[Job] = []

    def run_phase(name: str, jobs: list[Job]) -> None:
        log(f"phase: {name} ({len(jobs)} jobs)")
        all_jobs.extend(jobs)  # earlier phases' jobs are done: they are skipped, not rerun
        # progress inside a job (env steps of training) where one job runs at a time in this process
        inner = progress and executor == "local"
        env = {pipeline.JOB_PROGRESS_ENV: "1" if inner else "0"}
        if executor != "local":  # concurrent jobs share the cores: no oversubscription
            env.update(worker_thread_env(workers))
        with scoped_environ(env):
            run_jobs(all_jobs, root, executor=executor, workers=workers, retries=retries, progress=progress,
                     modules=_JOB_MODULES)  # fmt: skip

    for name, jobs in zip(["candidates and ego training", "candidate features", "partner selection"], static):
        run_phase(name, jobs)
    late = late_phases(suite, root, infos)
    for name, jobs in zip(["mid-checkpoint best responses", "partner-set manifests", "ego evaluation"], late):
        run_phase(name, jobs)
    tables = collect_tables(root, late[-1], infos, skipped)
    _write_table(env_step_budget(suite, static, root), root / STAGES_TABLE)
    tables["stages"] = str(root / STAGES_TABLE)
    return tables


_JOB_MODULES = ("zsceval.evaluation.pipeline", "zsceval.evaluation.strata")
"""Modules whose import registers the bench's job kinds (in worker processes too)."""


def collect_tables(root: Path, evaluations: list[Job], infos: dict, skipped: list[str]) -> dict[str, Any]:
    """Concatenate this suite's per-job tables into ``results.parquet``, ``br_returns.parquet``,
    ``features.parquet``, ``human_proxy.parquet`` and ``unhelpful.parquet`` under ``root`` (outputs
    of other suites or earlier settings that share the folder are not read). A suite without
    ``ego.unhelpful`` jobs (``evaluation.strata: false``) removes an ``unhelpful.parquet`` an
    earlier setting left, so the folder's tables are this suite's.

    ``unhelpful.parquet``: one row per (layout, algorithm, ego seed, unhelpful partner, seating,
    episode), the columns of :func:`zsceval.evaluation.strata.unhelpful_results`.

    Args:
        root: the bench folder.
        evaluations: the suite's evaluation jobs (``ego.evaluate``, ``ego.human_proxy``,
            ``ego.unhelpful``; finished).
        infos: ``build_phases``' per-layout info (its keys are the layouts).
        skipped: algorithms the suite names that are not implemented yet.

    Returns:
        ``{"results" | "br_returns" | "features" | "human_proxy" | "unhelpful": path of the table,
        "skipped_algorithms": [...]}`` (tables the suite has no rows for are left out).

    Raises:
        FileNotFoundError: a job's table is missing (the job has not finished).
    """
    results = [
        pd.read_parquet(root / job.out / "results.parquet")
        for job in evaluations
        if job.kind == "ego.evaluate"
    ]
    human = [
        pd.read_parquet(root / job.out / HUMAN_PROXY_TABLE)
        for job in evaluations
        if job.kind == "ego.human_proxy"
    ]
    unhelpful = [
        pd.read_parquet(root / job.out / UNHELPFUL_TABLE)
        for job in evaluations
        if job.kind == "ego.unhelpful"
    ]
    if not unhelpful:
        (root / UNHELPFUL_TABLE).unlink(missing_ok=True)
    brs, feats = [], []
    for lay, info in infos.items():
        brs.append(pd.read_parquet(root / lay / "partners" / "set" / "br_returns.parquet"))
        if info.get("shipped"):  # no candidates here: the set's features are in its manifest
            continue
        f = pd.read_parquet(root / lay / "partners" / "select" / "features.parquet")
        f.insert(0, "layout", lay)
        feats.append(f)
    out = {}
    for name, frames in (
        ("results", results),
        ("br_returns", brs),
        ("features", feats),
        ("human_proxy", human),
        ("unhelpful", unhelpful),
    ):
        if frames:
            path = root / f"{name}.parquet"
            _write_table(pd.concat(frames, ignore_index=True), path)
            out[name] = str(path)
    out["skipped_algorithms"] = skipped
    return out
