"""Benchmark suites: the YAML format, loading, validation and a bench folder's suite record.

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
    overrides: []                 # training config overrides of every run, e.g. [env.num_envs=64];
                                  # they replace what an algorithm sets for its runs (a stage-1
                                  # population's stretched schedules): the plan lists it
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
    agents:                       # external agents (docs/external-agents.md), scored like one ego
      scripted: my_agents:make_agent   # of an algorithm against each layout's partner set, untrained
    slurm:                        # resources of each job under `zsceval bench --executor slurm`
      partition: gpu              # (zsceval.execution.slurm.SlurmOptions; --slurm-* override them)
      time: "12:00:00"
      gpus: 1
      cpus: 8
    evaluation:
      episodes: 10                # per (ego, partner, seat)
      human_proxy: false          # also score every ego with a BC human model (2019 layouts)
      strata: true                # also play every ego with the unhelpful partners
      strata_episodes: null       # their episodes per (ego, partner, seating); null: `episodes`

:func:`load_suite` reads and checks a suite before any compute (unknown keys, layouts and
algorithms are named with the valid ones); :func:`check_suite_record` compares it with the suite a
bench folder already holds (``suite.yaml``). :mod:`zsceval.bench.plan` turns a suite into phases of
jobs and :mod:`zsceval.bench.run` runs them.

Partner strata: the partner set's final and mid checkpoints are the skilled and
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
import re
import typing
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from zsceval import registry
from zsceval.envs.scenarios import env_flags, resolve_scenario
from zsceval.execution.slurm import slurm_options
from zsceval.generation.candidates import PartnerBudget, validate_budget
from zsceval.plugins import Registry, UnknownPluginError, unknown_name
from zsceval.rl.budget_check import check_episode_budget
from zsceval.rl.config import ConfigError, coerce_value, resolve_config

__all__ = [
    "SUITE_COLLECTIONS",
    "SUITE_GROUP",
    "SUITE_RECORD",
    "ZSC_ALGORITHMS",
    "Suite",
    "SuiteConflictError",
    "SuiteError",
    "UnknownSuiteError",
    "check_device",
    "check_suite_record",
    "list_suites",
    "load_suite",
    "validate_suite",
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
    stage-2 egos (FCP, MEP, TrajeDi, HSP) and COLE 5e7 for populations of 12 and 25 (ZSC-Eval paper,
    App. C.2; docs/reference-protocol.md "Training settings")."""
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
    """Also score every ego, and every external agent of ``agents``, against a behavior-cloned human
    model of its layout (layouts with 2019 human data only; :mod:`zsceval.evaluation.human_proxy`),
    from the suite's ``evaluation.human_proxy``."""
    strata: bool = True
    """Also play every ego with the unhelpful partners of :mod:`zsceval.evaluation.strata` (the
    unhelpful stratum; ``unhelpful.parquet``), from the suite's ``evaluation.strata``."""
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
    slurm: tuple[tuple[str, Any], ...] = ()
    """Resources of every job under ``zsceval bench --executor slurm`` (keys of
    :class:`~zsceval.execution.slurm.SlurmOptions`: partition, time, gpus, cpus, ...), from the
    suite's ``slurm`` mapping. Where the jobs run changes no result: a bench folder's suite record
    is compared without it."""

    agents: tuple[tuple[str, str], ...] = ()
    """External agents (name, ``module:attr``; :mod:`zsceval.rl.external`) scored without training
    against each layout's partner set, one ``ego.evaluate`` job per layout under the name (and an
    ``ego.human_proxy`` job with ``human_proxy``, an ``ego.unhelpful`` one with ``strata``), which
    the tables and the report list as an algorithm (ego seed 0); from the suite's ``agents``
    mapping."""

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
        d["agents"] = dict(self.agents)
        d["slurm"] = {k: list(v) if isinstance(v, tuple) else v for k, v in self.slurm}
        return d

    def algo_common(self, algo: str, common: dict) -> dict:
        """``common`` job params with ``algo``'s ``algo_overrides`` appended to its overrides."""
        extra = dict(self.algo_overrides).get(algo, ())
        if not extra:
            return common
        return {**common, "overrides": [*common.get("overrides", []), *extra]}


class SuiteError(ValueError):
    """A malformed suite (names the file and the key)."""


class UnknownSuiteError(UnknownPluginError, SuiteError):
    """No installed suite of that name (the installed ones listed; also a :class:`SuiteError`)."""


SUITE_GROUP = "zsceval.suites"
"""Entry-point group of suite collections: name = a label, value = a package whose folder holds
``*.yaml`` suites (the shipped ones: ``zsceval = zsceval.suites``); a suite's name is its file's stem."""
SUITE_COLLECTIONS = Registry(SUITE_GROUP, "suite collection", kind="package")
"""The registry of suite collections (:class:`zsceval.plugins.Registry`): label -> package."""


def _suite_files() -> tuple[dict[str, list[Path]], dict[str, Exception]]:
    """Suite name -> its files in the packages of :data:`SUITE_GROUP`, and the entry points that
    failed to load (left out)."""
    failed = SUITE_COLLECTIONS.load_all()
    found: dict[str, list[Path]] = {}
    for _, package in sorted(SUITE_COLLECTIONS.objects.items()):
        for path in sorted(Path(str(resources.files(package))).glob("*.yaml")):
            found.setdefault(path.stem, []).append(path)
    return found, dict(failed)


def list_suites() -> list[str]:
    """Names of the installed suites (every package of the entry-point group ``zsceval.suites``)."""
    return sorted(_suite_files()[0])


def _suite_path(name: str) -> Path:
    """The file of the installed suite ``name``.

    Raises:
        UnknownSuiteError: unknown (installed suites listed, closest suggested, packages that failed
            to load named).
        SuiteError: shipped by several packages.
    """
    found, failed = _suite_files()
    paths = found.get(name, [])
    if len(paths) > 1:
        raise SuiteError(
            f"suite {name!r} is shipped by several packages ({', '.join(map(str, paths))}); pass one's path"
        )
    if not paths:
        broken = " ".join(f"({exc})" for exc in failed.values())
        raise unknown_name(
            "suite", name, list(found), listing="Installed", advice=broken, error=UnknownSuiteError
        )
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
                "algo_overrides", "agents", "slurm")  # fmt: skip
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
        agents=_agents(data.get("agents") or {}, path),
        slurm=_slurm(data.get("slurm") or {}, path),
    )
    if layouts:
        suite = _restrict(suite, "layouts", layouts)
    if algorithms:
        suite = _restrict(suite, "algorithms", algorithms)
        # the budgets of algorithms left out go too (validate_suite refuses budgets of algorithms not run)
        kept = [(a, n) for a, n in suite.algo_ego_steps if a in suite.algorithms]
        over = [(a, o) for a, o in suite.algo_overrides if a in suite.algorithms]
        suite = dataclasses.replace(suite, algo_ego_steps=tuple(kept), algo_overrides=tuple(over))
    validate_suite(suite, path)
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


_AGENT_NAME = re.compile(r"^[A-Za-z0-9][\w-]*$")


def _agents(data: dict, path: Path) -> tuple[tuple[str, str], ...]:
    """Resolve the ``agents`` mapping (name -> external agent ``module:attr``).

    Raises:
        SuiteError: not a mapping, a name that cannot be a folder name, or a value that is not
            ``MODULE:ATTR`` (naming the file and key).
    """
    from zsceval.rl.external import is_external

    if not isinstance(data, dict):
        raise SuiteError(
            f"{path}: agents must map names to external agents, e.g. {{scripted: my_agents:Agent}}"
        )
    out = {}
    for name, spec in data.items():
        if not _AGENT_NAME.match(str(name)):
            raise SuiteError(f"{path}: agents.{name}: a name is letters, digits, '_' and '-'")
        if not isinstance(spec, str) or not is_external(spec):
            raise SuiteError(f"{path}: agents.{name}: {spec!r} is not MODULE:ATTR (docs/external-agents.md)")
        out[str(name)] = spec
    return tuple(sorted(out.items()))


def _slurm(data: dict, path: Path) -> tuple[tuple[str, Any], ...]:
    """The suite's ``slurm`` mapping, checked (:func:`zsceval.execution.slurm.slurm_options`).

    Raises:
        SuiteError: not a mapping, an unknown key or a bad value (the file named).
    """
    if not isinstance(data, dict):
        raise SuiteError(f"{path}: slurm must be a mapping of options (partition, time, gpus, cpus, ...)")
    try:
        opts = slurm_options(data)
    except (TypeError, ValueError) as exc:
        raise SuiteError(f"{path}: slurm: {exc}") from None
    return tuple((k, getattr(opts, k)) for k in data)


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


def validate_suite(suite: Suite, path: Path) -> None:
    """Check a loaded suite (layouts, algorithms, budgets, device name, every run's config).

    Raises:
        SuiteError: the first problem, naming ``path`` and the key.
    """
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
            pending = [a for a in ZSC_ALGORITHMS if a not in registered]
            later = (
                f"; ZSC-Eval algorithms not implemented yet (skipped): {', '.join(pending)}"
                if pending
                else ""
            )
            known = ", ".join(sorted(registered))
            raise SuiteError(f"{path}: unknown algorithm {algo!r}{hint}; registered: {known}{later}")
    for name, _ in suite.agents:
        if name in registered or name in ZSC_ALGORITHMS:
            raise SuiteError(f"{path}: agents.{name}: an algorithm has this name; name the agent otherwise")
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


SUITE_RECORD = "suite.yaml"
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


def _algo_override_differences(old: dict, new: dict) -> list[str]:
    """``algo_overrides.A: old -> new`` for the algorithms both records run whose overrides differ;
    an algorithm's overrides reach only its own jobs, so one that only one record runs (a bench
    resumed with more ``--algos``) adds or leaves out jobs and changes none."""

    def overrides(record: dict, algo: str) -> list:
        return list((record.get("algo_overrides") or {}).get(algo) or [])

    common = [a for a in new.get("algorithms", []) if a in (old.get("algorithms") or [])]
    return [
        f"algo_overrides.{a}: {overrides(old, a)!r} -> {overrides(new, a)!r}"
        for a in common
        if overrides(old, a) != overrides(new, a)
    ]


OTHER_KINDS = {
    "config.yaml": "a training run (`zsceval train`)",
    "chain.json": "a multi-stage training run (`zsceval train`)",
    "partners.yaml": "an evaluation-partner folder (`zsceval partners`)",
}
"""Records of the other kinds of output folder, and what each holds."""


def _check_not_another_kind(out: Path) -> None:
    """Refuse a folder that holds another kind of output (its own record names it).

    Raises:
        SuiteConflictError: names the folder, the record and what it holds.
    """
    for record, what in OTHER_KINDS.items():
        if (out / record).is_file() and not (out / SUITE_RECORD).is_file():
            raise SuiteConflictError(
                f"{out} holds {what} ({out / record}), not a bench; a bench would mix its jobs into it. "
                "Choose another --out."
            )


def check_suite_record(suite: Suite, out: str | Path, *, force: bool = False) -> list[str]:
    """Compare ``suite`` with the suite recorded in ``out/suite.yaml`` (if any).

    Returns:
        The differences (``key: old -> new``) other than the layouts and algorithms run; empty when
        the folder is new or holds the same suite.

    Raises:
        SuiteConflictError: differences and not ``force`` (names them and the way out); a folder
            that holds another kind of output (a training run, a partner folder), even with ``force``.
    """
    from zsceval.stats.records import differences

    _check_not_another_kind(Path(out))
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
    own = ("algo_ego_steps", "algo_overrides", "agents", "slurm")  # per entry below; slurm changes no result
    diffs = differences(
        {k: v for k, v in old.items() if k not in own},
        {k: v for k, v in new.items() if k not in own},
        ignore=_SUBSET_KEYS,
    )
    diffs += _ego_budget_differences(old, new)
    diffs += _algo_override_differences(old, new)
    old_agents = old.get("agents") or {}  # an agent added or left out adds or leaves out its jobs
    diffs += [f"agents.{a}: {old_agents[a]!r} -> {s!r}" for a, s in suite.agents if old_agents.get(a, s) != s]
    if diffs and not force:
        raise SuiteConflictError(
            f"{out} holds a run of another suite setting ({path}):\n  "
            + "\n  ".join(diffs)
            + "\nRunning this suite there would redo (and delete) the finished jobs these settings "
            "touch. Choose another --out, or pass --force to replace them."
        )
    return diffs
