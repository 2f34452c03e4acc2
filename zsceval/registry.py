"""Registry of ZSC algorithm plug-ins, with entry-point discovery.

Built-in algorithms live in ``zsceval.algorithms`` (the repository's ``algorithms/`` folder) and
register themselves with the :func:`register` decorator when imported. Third-party packages
declare an entry point in the group ``zsceval.algorithms``::

    [project.entry-points."zsceval.algorithms"]
    my_algo = "my_package.my_algo:MyAlgo"     # an Algorithm subclass, registered as "my_algo"
    # or a module whose import calls @register itself: my_algo = "my_package.my_algo"

Nothing is imported until the first lookup (:func:`get`, :func:`names`, :func:`describe`); then
the built-ins are imported and every entry point is loaded once. A plug-in whose import fails
does not break the others: looking it up raises :class:`PluginLoadError` naming the missing
package. Registering a name twice raises :class:`DuplicateAlgorithmError`.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import importlib.util
import pkgutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "ENTRY_POINT_GROUP",
    "DuplicateAlgorithmError",
    "PluginLoadError",
    "UnknownAlgorithmError",
    "describe",
    "get",
    "names",
    "register",
]

ENTRY_POINT_GROUP = "zsceval.algorithms"
BUILTIN_PACKAGE = "zsceval.algorithms"


class UnknownAlgorithmError(KeyError):
    """No algorithm of that name; the message lists the registered names."""

    def __str__(self) -> str:  # KeyError quotes its argument; show the message as is
        return str(self.args[0])


class DuplicateAlgorithmError(ValueError):
    """An algorithm name was registered twice."""


class PluginLoadError(ImportError):
    """A plug-in's module could not be imported (the message names the missing package)."""


@dataclass(frozen=True)
class Entry:
    """A registered algorithm: its class, one-line description and where it came from."""

    name: str
    cls: type
    description: str
    source: str


_registry: dict[str, Entry] = {}
_failed: dict[str, PluginLoadError] = {}
_discovered = False


def register(name: str, description: str | None = None, cls: type | None = None) -> Any:
    """Register an :class:`~zsceval.rl.algorithm.Algorithm` subclass under ``name``.

    Use as a decorator, ``@register("sp", "Self-play ...")``, or call ``register("sp", "...", SP)``.

    Args:
        name: registry name (what ``--algo`` takes); lower-case, no spaces.
        description: one line for ``zsceval algos`` (default: first line of the class docstring).
        cls: the class, when not used as a decorator.

    Returns:
        The class (decorator form) or the class passed in.

    Raises:
        DuplicateAlgorithmError: ``name`` is already registered by another class.
        ValueError: an invalid name.
    """
    if not name or name != name.strip() or " " in name:
        raise ValueError(f"invalid algorithm name {name!r}")

    def decorator(c: type) -> type:
        existing = _registry.get(name)
        if existing is not None and existing.cls is not c:
            raise DuplicateAlgorithmError(
                f"algorithm '{name}' is already registered by {existing.source}; "
                f"{c.__module__}.{c.__qualname__} cannot use the same name"
            )
        doc = (c.__doc__ or "").strip().splitlines()
        desc = description if description is not None else (doc[0] if doc else "")
        c.name = name
        c.description = desc
        _registry[name] = Entry(name, c, desc, f"{c.__module__}.{c.__qualname__}")
        return c

    return decorator if cls is None else decorator(cls)


def _import_builtins() -> None:
    """Import every module of the built-in plug-in package (``algorithms/``).

    In an installed package that is ``zsceval.algorithms``; in a source checkout that is not
    installed (``PYTHONPATH=.``), the ``algorithms/`` folder next to ``zsceval/`` is mapped to
    that name, exactly as ``setup.py``'s ``package_dir`` does.
    """
    try:
        pkg = importlib.import_module(BUILTIN_PACKAGE)
    except ModuleNotFoundError as exc:
        if exc.name != BUILTIN_PACKAGE:
            raise
        folder = Path(__file__).resolve().parent.parent / "algorithms"
        spec = importlib.util.spec_from_file_location(
            BUILTIN_PACKAGE, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )
        if spec is None or spec.loader is None:
            return
        pkg = importlib.util.module_from_spec(spec)
        sys.modules[BUILTIN_PACKAGE] = pkg
        spec.loader.exec_module(pkg)
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{BUILTIN_PACKAGE}.{info.name}")


def _entry_points() -> list[importlib.metadata.EntryPoint]:
    return sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)


def _load_entry_point(ep: importlib.metadata.EntryPoint) -> None:
    dist = getattr(ep.dist, "name", None) or "an unknown distribution"
    try:
        obj = ep.load()
    except ImportError as exc:
        missing = getattr(exc, "name", None)
        what = f"the package '{missing}' is not installed" if missing else str(exc)
        _failed[ep.name] = PluginLoadError(
            f"algorithm plug-in '{ep.name}' (entry point '{ep.value}' of {dist}) cannot be imported: "
            f"{what}. Install it (pip install {missing or '<package>'}) or uninstall {dist}."
        )
        return
    if isinstance(obj, type) and ep.name not in _registry:
        register(ep.name, cls=obj)
    elif ep.name not in _registry:
        _failed[ep.name] = PluginLoadError(
            f"entry point '{ep.name}' of {dist} ({ep.value}) registered no algorithm named '{ep.name}'"
        )


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    _discovered = True
    _import_builtins()
    for ep in _entry_points():
        _load_entry_point(ep)


def reset() -> None:
    """Forget every registration and rediscover at the next lookup (for tests)."""
    global _discovered
    _registry.clear()
    _failed.clear()
    _discovered = False
    for mod in [m for m in sys.modules if m == BUILTIN_PACKAGE or m.startswith(BUILTIN_PACKAGE + ".")]:
        del sys.modules[mod]


def names() -> list[str]:
    """Sorted names of the registered algorithms (after discovery)."""
    _discover()
    return sorted(_registry)


def describe() -> list[tuple[str, str]]:
    """``(name, description)`` pairs, sorted; plug-ins that failed to load are listed with the error."""
    _discover()
    rows = [(e.name, e.description) for e in _registry.values()]
    rows += [(n, f"(failed to load) {err}") for n, err in _failed.items() if n not in _registry]
    return sorted(rows)


def get(name: str) -> type:
    """The algorithm class registered as ``name``.

    Raises:
        PluginLoadError: the plug-in declaring ``name`` could not be imported.
        UnknownAlgorithmError: no such name (lists the valid ones, suggests the closest).
    """
    _discover()
    if name in _registry:
        return _registry[name].cls
    if name in _failed:
        raise _failed[name]
    valid = sorted(_registry)
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    raise UnknownAlgorithmError(
        f"unknown algorithm '{name}'. Registered algorithms: {', '.join(valid)}.{hint}"
    )
