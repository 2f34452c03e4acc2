"""Plug-ins through entry points: the one lazy loader behind every registry of zsceval.

Every registry is filled from an entry-point group of the installed package metadata. The
built-ins are declared in ``setup.py`` (``entry_points=``) exactly as a third-party package
declares its own (``[project.entry-points."zsceval.algorithms"]`` in its ``pyproject.toml``), so
no core module names a plug-in module:

* ``zsceval.algorithms``: name = algorithm (``--algo``), value = an ``Algorithm`` subclass;
  registry :mod:`zsceval.registry`, lookup ``get``.
* ``zsceval.agents``: name = agent class of checkpoints, value = the agent class;
  :mod:`zsceval.rl.agent`, ``agent_class``.
* ``zsceval.cores``: name = learning core (``Algorithm.core``), value = the core class;
  :mod:`zsceval.rl.cores`, ``get_core``.
* ``zsceval.models``: name = ``model.kind`` of a model plug-in, value = its class (``actor`` and
  ``critic`` builders); :mod:`zsceval.rl.networks`, ``model_class``.
* ``zsceval.envs``: name = env (``env.name``), value = the env factory;
  :mod:`zsceval.envs.registry`, ``make``.
* ``zsceval.jobs``: name = job kind (``Job.kind``), value = the job function;
  :mod:`zsceval.execution.jobs`, ``run_job``.
* ``zsceval.loggers``: name = metric logger (``run.loggers``), value = a ``MetricLogger``
  subclass; :mod:`zsceval.rl.loggers`, ``logger_class``.
* ``zsceval.suites``: name = a label of the collection, value = a package whose folder holds
  ``*.yaml`` suites; :mod:`zsceval.bench.suite`, ``load_suite``.
* ``zsceval.partner_sets``: name = a label of the collection, value = a package whose folder holds
  an ``index.yaml`` of partner sets; :mod:`zsceval.evaluation.shipped_sets`, ``resolve_set``.
* ``zsceval.report_sections``: name = a block of ``zsceval report``, value = a
  :class:`ReportSection` subclass; :mod:`zsceval.bench.report_contents`, ``gather_report``.

Every registry is a :class:`Registry`: ``register`` (a decorator or a call; a second object under
a taken name raises :class:`DuplicatePluginError`), ``get`` (an unknown name raises
:class:`UnknownPluginError`, whose message lists the valid names and suggests the closest), ``names``
and ``describe``. Each registry raises a subclass of these that keeps its older public type
(``UnknownAlgorithmError`` is a ``KeyError``, ``UnknownEnvError`` a ``ValueError``, ...).

Convention of every group but the collections (``zsceval.suites``, ``zsceval.partner_sets``): the
entry point's name is the registry name and its value is the object, ``module:attr``. Loading it
imports the module, whose decorators (``@register``, ``@register_agent``, ``@register_model``,
``@register_env``, ``@job_kind``, ...) may register the object and its siblings; if the name is
still not registered afterwards, the registry registers the loaded object under the entry point's
name. (A value naming only a module works when importing that module registers the entry point's
name.) In the collections the value is a package whose folder holds the files; the suite names are
the files' stems, the partner-set names the index's.

Loading is lazy. Names come from the metadata without importing anything; looking a name up
loads the entry point of that name only (``registry.get("sp")`` imports one algorithm);
listings with descriptions load the whole group. An entry point that fails to load raises
:class:`PluginLoadError` naming the entry point, its distribution and the exception, at every
lookup of that name; the other plug-ins are unaffected. When the zsceval distribution itself
declares no entry point of a group (a source checkout that was never installed, or metadata
older than ``setup.py``), lookups raise :class:`EntryPointsMissingError`, which says how to
install.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib.metadata
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

__all__ = [
    "DISTRIBUTION",
    "DuplicatePluginError",
    "EntryPointsMissingError",
    "PluginGroup",
    "PluginLoadError",
    "REPORT_SECTION_GROUP",
    "Registration",
    "Registry",
    "ReportOptions",
    "ReportSection",
    "UnknownPluginError",
    "unknown_name",
]

DISTRIBUTION = "zsceval"
"""The distribution that declares the built-in entry points."""


class PluginLoadError(ImportError):
    """A plug-in's entry point could not be loaded (the message names it and the exception)."""


class EntryPointsMissingError(PluginLoadError):
    """zsceval's own entry points are not in the package metadata: the package is not installed."""


class UnknownPluginError(LookupError):
    """No plug-in of that name: the one lookup error of every registry.

    The message lists the valid names and suggests the closest (:func:`unknown_name`). Each
    registry raises a subclass that keeps its older public type too (``UnknownAlgorithmError`` is
    also a ``KeyError``, ``UnknownEnvError`` a ``ValueError``, ...), so ``except`` clauses written
    for those still catch it.

    Attributes:
        name: the name looked up.
        valid: the valid names, sorted.
    """

    def __init__(self, message: str, *, name: str = "", valid: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.name = name
        self.valid = list(valid)

    def __str__(self) -> str:  # KeyError quotes its argument; show the message as is
        return str(self.args[0]) if self.args else ""


class DuplicatePluginError(ValueError):
    """A name is registered twice, by two different objects."""


def unknown_name(
    what: str,
    name: str,
    valid: Sequence[str],
    *,
    plural: str | None = None,
    listing: str = "Registered",
    advice: str = "",
    error: type[UnknownPluginError] = UnknownPluginError,
) -> UnknownPluginError:
    """The error for an unknown ``name``: ``unknown <what> '<name>'. <listing> <plural>: <valid>.
    Did you mean '<closest>'? <advice>`` (the closest of ``valid`` by :func:`difflib.get_close_matches`).

    Args:
        what: what a name designates (``algorithm``, ``env``, ...).
        name: the name looked up.
        valid: the valid names.
        plural: ``what`` in the plural (default ``what + "s"``).
        listing: the word before the list (``Registered``, ``Installed``).
        advice: a sentence appended (how to add a name, what failed to load).
        error: the class to return (a subclass of :class:`UnknownPluginError`).

    Returns:
        The error (to raise).
    """
    valid = sorted(valid)
    close = difflib.get_close_matches(str(name), valid, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    shown = ", ".join(valid) if valid else "(none)"
    message = f"unknown {what} '{name}'. {listing} {plural or what + 's'}: {shown}.{hint}"
    return error(f"{message} {advice}" if advice else message, name=name, valid=valid)


def _dist_name(ep: importlib.metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return (getattr(dist, "name", None) or "an unknown distribution") if dist else "an unknown distribution"


class PluginGroup:
    """The entry points of one group: names read from the metadata once, each loaded at most once.

    Args:
        group: entry-point group, e.g. ``zsceval.algorithms``.
        what: what one entry point provides, for messages (``algorithm``, ``agent class``, ...).
    """

    def __init__(self, group: str, what: str) -> None:
        self.group = group
        self.what = what
        self._eps: dict[str, list[importlib.metadata.EntryPoint]] | None = None
        self._loaded: dict[str, Any] = {}
        self._failed: dict[str, PluginLoadError] = {}

    def _entry_points(self) -> dict[str, list[importlib.metadata.EntryPoint]]:
        if self._eps is None:
            eps = list(importlib.metadata.entry_points(group=self.group))
            if not any(_dist_name(ep).lower() == DISTRIBUTION for ep in eps):
                raise EntryPointsMissingError(
                    f"zsceval's entry points are missing (the installed metadata declares no "
                    f"'{self.group}' entry point): install it with `pip install -e .` from the repository "
                    f"root (again after setup.py's entry_points change), or `pip install zsceval`"
                )
            by_name: dict[str, list[importlib.metadata.EntryPoint]] = {}
            for ep in sorted(eps, key=lambda e: (e.name, _dist_name(e))):
                by_name.setdefault(ep.name, []).append(ep)
            self._eps = by_name
        return self._eps

    def names(self) -> list[str]:
        """Sorted entry-point names of the group (nothing is imported).

        Raises:
            EntryPointsMissingError: zsceval's own entry points are not installed.
        """
        return sorted(self._entry_points())

    def __contains__(self, name: object) -> bool:
        return name in self._entry_points()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def where(self, name: str) -> str:
        """``'name = value' of <distribution>`` for messages."""
        eps = self._entry_points().get(name, [])
        return "; ".join(f"entry point '{ep.name} = {ep.value}' of {_dist_name(ep)}" for ep in eps)

    def names_of(self, obj: Any) -> list[str]:
        """Names of the entry points whose value is ``obj``'s ``module:qualname`` (nothing imported),
        for reverse lookups: which name an object that its module did not register has."""
        value = f"{getattr(obj, '__module__', '')}:{getattr(obj, '__qualname__', '')}"
        return [name for name, eps in self._entry_points().items() if any(ep.value == value for ep in eps)]

    def load(self, name: str, adopt: Callable[[str, Any], None]) -> Any:
        """Load the entry point ``name`` (once) and hand its object to ``adopt(name, obj)``.

        ``adopt`` is the registry's: it registers ``obj`` under ``name`` unless importing the
        module already did (so it is idempotent; a later call passes the same object again).

        Returns:
            The loaded object.

        Raises:
            KeyError: no entry point of the group has that name.
            PluginLoadError: the entry point is declared twice, its import failed, or ``adopt``
                refused its object (the message names the entry point and the exception).
            EntryPointsMissingError: zsceval's own entry points are not installed.
        """
        if name in self._loaded:  # adopt again: a test may have removed the registration
            adopt(name, self._loaded[name])
            return self._loaded[name]
        if name in self._failed:
            raise self._failed[name]
        eps = self._entry_points().get(name)
        if not eps:
            raise KeyError(name)
        if len(eps) > 1:
            self._failed[name] = PluginLoadError(
                f"{self.what} '{name}' is declared by several entry points in group '{self.group}' "
                f"({self.where(name)}); uninstall all but one of these distributions"
            )
            raise self._failed[name]
        ep = eps[0]
        try:
            obj = ep.load()
            adopt(name, obj)
        except Exception as exc:
            err = PluginLoadError(self._message(ep, exc))
            err.__cause__ = exc
            self._failed[name] = err
            raise err from exc
        self._loaded[name] = obj
        return obj

    def load_all(self, adopt: Callable[[str, Any], None]) -> dict[str, PluginLoadError]:
        """Load every entry point of the group (see :meth:`load`); returns the failures by name."""
        failures = {}
        for name in self.names():
            try:
                self.load(name, adopt)
            except PluginLoadError as exc:
                failures[name] = exc
        return failures

    def loaded(self) -> dict[str, Any]:
        """The objects loaded so far, by entry-point name."""
        return dict(self._loaded)

    def forget(self) -> None:
        """Forget the metadata read and the objects loaded (for tests that install plug-ins)."""
        self._eps = None
        self._loaded.clear()
        self._failed.clear()

    def _message(self, ep: importlib.metadata.EntryPoint, exc: BaseException) -> str:
        dist = _dist_name(ep)
        msg = (
            f"{self.what} plug-in '{ep.name}' (entry point '{ep.name} = {ep.value}' in group "
            f"'{self.group}' of {dist}) cannot be loaded: {type(exc).__name__}: {exc}."
        )
        missing = getattr(exc, "name", None) if isinstance(exc, ImportError) else None
        if missing:
            msg += f" Install the package '{missing}' (pip install {missing}) or uninstall {dist}."
        return msg


@dataclass(frozen=True)
class Registration:
    """What a registry knows of a name besides its object.

    Attributes:
        name: the registry name.
        description: one line for listings (default: the first line of the object's docstring).
        source: ``module.qualname`` of the object, for messages.
    """

    name: str
    description: str
    source: str


def _source(obj: Any) -> str:
    """``module.qualname`` of a class or function, the name of a module (package)."""
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__qualname__)}"


def _same_definition(old: Any, new: Any) -> bool:
    """``new`` is ``old`` or the same module-level definition imported again (a module re-imported
    by a test re-registers its own objects)."""
    if old is new:
        return True
    qualname = getattr(new, "__qualname__", "<")
    return "<" not in qualname and _source(old) == _source(new)


_KINDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "class": (lambda obj: isinstance(obj, type), "a class"),
    "callable": (callable, "callable"),
    "package": (lambda obj: hasattr(obj, "__path__"), "a package"),
    "any": (lambda obj: True, "an object"),
}


class Registry:
    """Named plug-ins of one kind: registered in code or loaded lazily from an entry-point group.

    Every registry of zsceval is one of these (algorithms, agent classes, learning cores, envs, job
    kinds, suite and partner-set collections, bench report sections): :meth:`register` (a decorator
    or a call; a second object under a taken name raises ``duplicate_error``), :meth:`get` (loads
    the entry point of that name only; an unknown name raises ``unknown_error`` listing the valid
    names), :meth:`names` (nothing imported), :meth:`describe` (loads the whole group).

    Args:
        group: entry-point group, e.g. ``zsceval.algorithms``.
        what: what one name designates, for messages (``algorithm``, ``env``, ...).
        plural: ``what`` in the plural (default ``what + "s"``).
        kind: what an object must be: ``class``, ``callable``, ``package`` or ``any``.
        on_register: ``on_register(name, obj, description)``, called before an object is
            registered; it may check it (raising ``ValueError`` or ``TypeError``) or mark it (set
            its ``name`` attribute).
        unknown_error: the :class:`UnknownPluginError` subclass raised for an unknown name.
        duplicate_error: the :class:`DuplicatePluginError` subclass raised for a taken name.
        advice: a sentence appended to the unknown-name message.

    Attributes:
        objects: the live table, name -> object, of the names registered so far (tests may patch
            it; use :meth:`get` to look a name up).
        plugins: the :class:`PluginGroup` of the entry points.
    """

    def __init__(
        self,
        group: str,
        what: str,
        *,
        plural: str | None = None,
        kind: str = "class",
        on_register: Callable[[str, Any, str], None] | None = None,
        unknown_error: type[UnknownPluginError] = UnknownPluginError,
        duplicate_error: type[DuplicatePluginError] = DuplicatePluginError,
        advice: str = "",
    ) -> None:
        if kind not in _KINDS:
            raise ValueError(f"unknown registry kind {kind!r}; kinds: {', '.join(_KINDS)}")
        self.what = what
        self.plural = plural or what + "s"
        self.kind = kind
        self.on_register = on_register
        self.unknown_error = unknown_error
        self.duplicate_error = duplicate_error
        self.advice = advice
        self.objects: dict[str, Any] = {}
        self._info: dict[str, Registration] = {}
        self.plugins = PluginGroup(group, what)

    @property
    def group(self) -> str:
        """The entry-point group."""
        return self.plugins.group

    def register(self, name: str, obj: Any = None, *, description: str | None = None) -> Any:
        """Register ``obj`` under ``name``: ``register("sp", SP)`` or ``@register("sp")``.

        Registering the same object (or the same module-level definition, imported again) under
        its name again changes nothing.

        Args:
            name: registry name; non-empty, no spaces.
            obj: the object, when not used as a decorator.
            description: one line for listings (default: first line of the object's docstring).

        Returns:
            The object (the decorator form leaves it usable), or the decorator.

        Raises:
            DuplicatePluginError: ``name`` is registered to another object (this registry's
                ``duplicate_error``).
            ValueError: an invalid name, or ``on_register`` refused the object.
            TypeError: the object is not of the registry's kind.
        """
        if not isinstance(name, str) or not name or name != name.strip() or " " in name:
            raise ValueError(f"invalid {self.what} name {name!r}")

        def decorator(o: Any) -> Any:
            check, kind = _KINDS[self.kind]
            if not check(o):
                raise TypeError(f"{self.what} '{name}': {o!r} is not {kind}")
            old = self.objects.get(name)
            if old is not None and not _same_definition(old, o):
                by = self._info[name].source if name in self._info else _source(old)
                raise self.duplicate_error(
                    f"{self.what} '{name}' is already registered by {by}; "
                    f"{_source(o)} cannot use the same name"
                )
            doc = (getattr(o, "__doc__", None) or "").strip().splitlines() if self.kind != "package" else []
            desc = description if description is not None else (doc[0] if doc else "")
            if self.on_register is not None:
                self.on_register(name, o, desc)
            self.objects[name] = o
            self._info[name] = Registration(name, desc, _source(o))
            return o

        return decorator if obj is None else decorator(obj)

    def _adopt(self, name: str, obj: Any) -> None:
        """Register the object of entry point ``name`` unless importing its module registered it."""
        if name not in self.objects:
            check, kind = _KINDS[self.kind]
            if not check(obj):
                raise TypeError(f"{obj!r} is not {kind} and its module registered no {self.what} '{name}'")
            self.register(name, obj)

    def names(self) -> list[str]:
        """Sorted names: registered ones and declared entry points (nothing is imported).

        Raises:
            EntryPointsMissingError: zsceval is not installed (its entry points are missing).
        """
        return sorted(set(self.objects) | set(self.plugins.names()))

    def __contains__(self, name: object) -> bool:
        return name in self.objects or name in self.plugins

    def get(self, name: str) -> Any:
        """The object registered as ``name``, loading its entry point (only) if needed.

        Raises:
            UnknownPluginError: no such name (this registry's ``unknown_error``; the message lists
                the valid names and suggests the closest).
            PluginLoadError: the entry point of ``name`` could not be loaded (it and the exception
                are named).
            EntryPointsMissingError: zsceval is not installed (its entry points are missing).
        """
        if name not in self.objects and name in self.plugins:
            self.plugins.load(name, self._adopt)
        if name in self.objects:
            return self.objects[name]
        raise self.unknown(name)

    def unknown(
        self, name: str, valid: Sequence[str] | None = None, advice: str | None = None
    ) -> UnknownPluginError:
        """The error for the unknown ``name`` (valid names: :meth:`names` unless given)."""
        return unknown_name(
            self.what,
            name,
            self.names() if valid is None else valid,
            plural=self.plural,
            advice=self.advice if advice is None else advice,
            error=self.unknown_error,
        )

    def description(self, name: str) -> str:
        """The one-line description of ``name`` (loads its entry point; errors as :meth:`get`)."""
        self.get(name)
        info = self._info.get(name)
        return info.description if info is not None else ""

    def load_all(self) -> dict[str, PluginLoadError]:
        """Load every entry point of the group; returns the failures by name."""
        return self.plugins.load_all(self._adopt)

    def describe(self, *, failures: bool = True) -> list[tuple[str, str]]:
        """``(name, description)`` pairs, sorted by name; loads every entry point. Plug-ins that
        failed to load are listed with the error (``failures``) or left out (looking them up names
        the error)."""
        failed = self.load_all()
        rows = [(n, self._info[n].description if n in self._info else "") for n in self.objects]
        if failures:
            rows += [(n, f"(failed to load) {err}") for n, err in failed.items() if n not in self.objects]
        return sorted(rows)

    def loaded(self) -> dict[str, Any]:
        """name -> object of every entry point of the group (loads them all; failures left out),
        and of the names registered in code."""
        self.load_all()
        return dict(sorted(self.objects.items()))

    def name_of(self, obj: Any) -> str | None:
        """The name ``obj`` is registered under; an object that its module does not register is
        found by its entry point's value, which loads that entry point. None if neither."""
        for name, o in self.objects.items():
            if o is obj:
                return name
        for name in self.plugins.names_of(obj):
            self.plugins.load(name, self._adopt)
            if self.objects.get(name) is obj:
                return name
        return None

    def unregister(self, name: str) -> None:
        """Forget the registration of ``name`` (its entry point registers it again at the next
        lookup)."""
        self.objects.pop(name, None)
        self._info.pop(name, None)

    def reset(self) -> None:
        """Forget every registration and the entry points loaded; the next lookup loads them again
        (for tests that install a plug-in). Imported modules stay imported: a lookup registers the
        object its entry point names, the same object as before."""
        self.objects.clear()
        self._info.clear()
        self.plugins.forget()

    @contextlib.contextmanager
    def scratch(self) -> Iterator[Registry]:
        """A block whose registrations are forgotten at its end (for tests)."""
        objects, info = dict(self.objects), dict(self._info)
        try:
            yield self
        finally:
            self.objects.clear()
            self.objects.update(objects)
            self._info.clear()
            self._info.update(info)


# -- the contract of report sections (entry-point group zsceval.report_sections) -------------------
REPORT_SECTION_GROUP = "zsceval.report_sections"
"""Entry-point group of the blocks of ``zsceval report``: name = the section, value = a
:class:`ReportSection` subclass."""


@dataclass(frozen=True)
class ReportOptions:
    """What ``zsceval report`` passes every report section (its command-line options).

    Attributes:
        seed: seed of the bootstrap resampling, and of the games a section plays.
        reps: bootstrap replicates.
        level: confidence-interval coverage, in (0, 1).
        episodes: a section that plays games: episodes per seating of each pair of agents.
        device: a section that plays games: torch device of the games.
    """

    seed: int = 0
    reps: int = 2000
    level: float = 0.95
    episodes: int = 500
    device: str = "cpu"


class ReportSection:
    """A block of ``zsceval report`` contributed by a plug-in: its own results in a results folder.

    The report (:mod:`zsceval.bench.report_contents`) names no algorithm and no env: it asks every
    section of the entry-point group ``zsceval.report_sections`` (name = the section, value = its
    subclass of this class, ``module:Class``) to :meth:`gather` what a folder holds. Beside the
    bench tables the sections that found something follow the interdependence block; a folder
    without bench tables gets the sections alone.

    Attributes:
        with_bench: True: the section also shows beside the bench tables. False: it shows only in a
            folder without bench tables in which no other section found anything (a section that
            plays games when the report is made).
    """

    with_bench: ClassVar[bool] = True

    def gather(self, directory: Path, options: ReportOptions) -> Any | None:
        """What the section shows for the results folder ``directory``; None when it holds none.

        Raises:
            ValueError: malformed tables (naming the file).
            FileNotFoundError: a file the section needs is missing.
        """
        raise NotImplementedError

    def to_json(self, data: Any) -> dict[str, Any]:
        """The JSON-able keys the section adds to ``zsceval report --json`` (records for tables)."""
        raise NotImplementedError

    def to_text(self, data: Any, options: ReportOptions) -> str:
        """The section as a text block."""
        raise NotImplementedError

    def figures(self, data: Any, folder: Path) -> list[Path]:
        """Write the section's PNG figures into ``folder`` (created when written to); returns
        their paths. Default: none."""
        return []
