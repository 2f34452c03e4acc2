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
* ``zsceval.envs``: name = env (``env.name``), value = the env factory;
  :mod:`zsceval.envs.registry`, ``make``.
* ``zsceval.jobs``: name = job kind (``Job.kind``), value = the job function;
  :mod:`zsceval.execution.jobs`, ``run_job``.
* ``zsceval.loggers``: name = metric logger (``run.loggers``), value = a ``MetricLogger``
  subclass; :mod:`zsceval.rl.loggers`, ``logger_class``.
* ``zsceval.suites``: name = a label of the collection, value = a package whose folder holds
  ``*.yaml`` suites; :mod:`zsceval.bench.suite`, ``load_suite``.

Convention of every group but ``zsceval.suites``: the entry point's name is the registry name and
its value is the object, ``module:attr``. Loading it imports the module, whose decorators
(``@register``, ``@register_agent``, ``@register_env``, ``@job_kind``, ...) may register the object
and its siblings; if the name is still not registered afterwards, the registry registers the
loaded object under the entry point's name. (A value naming only a module works when importing
that module registers the entry point's name.) In ``zsceval.suites`` the value is a package whose
folder holds suite files; the suite names are the files' stems.

Loading is lazy. Names come from the metadata without importing anything; looking a name up
loads the entry point of that name only (``TrainConfig.rollout_length`` imports one algorithm);
listings with descriptions load the whole group. An entry point that fails to load raises
:class:`PluginLoadError` naming the entry point, its distribution and the exception, at every
lookup of that name; the other plug-ins are unaffected. When the zsceval distribution itself
declares no entry point of a group (a source checkout that was never installed, or metadata
older than ``setup.py``), lookups raise :class:`EntryPointsMissingError`, which says how to
install.
"""

from __future__ import annotations

import difflib
import importlib.metadata
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["DISTRIBUTION", "EntryPointsMissingError", "PluginGroup", "PluginLoadError"]

DISTRIBUTION = "zsceval"
"""The distribution that declares the built-in entry points."""


class PluginLoadError(ImportError):
    """A plug-in's entry point could not be loaded (the message names it and the exception)."""


class EntryPointsMissingError(PluginLoadError):
    """zsceval's own entry points are not in the package metadata: the package is not installed."""


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

    def lookup(
        self, name: str, table: dict[str, Any], adopt: Callable[[str, Any], None], valid: list[str]
    ) -> tuple[Any, str | None]:
        """``(table[name], None)``, loading the entry point of ``name`` (only) if it is not in
        ``table`` yet; ``(None, closest)`` for an unknown name, ``closest`` the nearest of ``valid``
        (or None), for the caller's error message.

        Raises:
            PluginLoadError: the entry point of ``name`` could not be loaded.
        """
        if name not in table and name in self:
            self.load(name, adopt)
        if name in table:
            return table[name], None
        close = difflib.get_close_matches(name, valid, n=1)
        return None, (close[0] if close else None)

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
