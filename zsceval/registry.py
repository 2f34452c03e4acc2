"""Registry of ZSC algorithm plug-ins, filled from the entry-point group ``zsceval.algorithms``.

Built-in algorithms (the package ``zsceval.algorithms``, the repository's ``algorithms/`` folder)
are declared in ``setup.py`` exactly as a third-party package declares its own::

    [project.entry-points."zsceval.algorithms"]
    my_algo = "my_package.my_algo:MyAlgo"     # an Algorithm subclass, registered as "my_algo"

Convention (:mod:`zsceval.plugins`): the entry point's name is the algorithm's registry name and
its value the class. Importing its module may register it with the :func:`register` decorator
(``@register("sp", "Self-play ...")``, which also names the description); otherwise it is
registered under the entry point's name with the first line of its docstring as description.

Nothing is imported until a lookup, and a lookup imports only what it needs: :func:`get` loads
the entry point of that name only, :func:`names` reads the names from the metadata alone, and
:func:`describe` loads them all. A plug-in whose import fails does not break the others:
looking it up raises :class:`PluginLoadError` naming the entry point and the exception.
Registering a name twice raises :class:`DuplicateAlgorithmError`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from zsceval.plugins import EntryPointsMissingError, PluginGroup, PluginLoadError

__all__ = [
    "ENTRY_POINT_GROUP",
    "DuplicateAlgorithmError",
    "EntryPointsMissingError",
    "PluginLoadError",
    "UnknownAlgorithmError",
    "describe",
    "get",
    "names",
    "register",
]

ENTRY_POINT_GROUP = "zsceval.algorithms"
BUILTIN_PACKAGE = "zsceval.algorithms"
"""The package of the built-in algorithms (:func:`reset` forgets its modules)."""


class UnknownAlgorithmError(KeyError):
    """No algorithm of that name; the message lists the registered names."""

    def __str__(self) -> str:  # KeyError quotes its argument; show the message as is
        return str(self.args[0])


class DuplicateAlgorithmError(ValueError):
    """An algorithm name was registered twice."""


@dataclass(frozen=True)
class Entry:
    """A registered algorithm: its class, one-line description and where it came from."""

    name: str
    cls: type
    description: str
    source: str


_registry: dict[str, Entry] = {}
_plugins = PluginGroup(ENTRY_POINT_GROUP, "algorithm")


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


def _adopt(name: str, obj: Any) -> None:
    """Register the object of entry point ``name`` unless importing its module registered it."""
    if name in _registry:
        return
    if not isinstance(obj, type):
        raise TypeError(f"{obj!r} is not a class and its module registered no algorithm named '{name}'")
    register(name, cls=obj)


def _load(name: str) -> None:
    """Load the entry point ``name`` if one is declared (at most once)."""
    if name not in _registry and name in _plugins:
        _plugins.load(name, _adopt)


def reset() -> None:
    """Forget every registration and the entry points loaded; the next lookup loads them again
    (for tests that install a plug-in). Imported modules stay imported: a lookup registers the class
    its entry point names (:func:`_adopt`), the same class object as before, so agents, checkpoints
    and ``isinstance`` checks made before the reset keep working (TBS's agent classes live in the
    algorithms package)."""
    _registry.clear()
    _plugins.forget()


def names() -> list[str]:
    """Sorted names of the algorithms: registered ones and declared entry points (none imported).

    Raises:
        EntryPointsMissingError: zsceval is not installed (its entry points are missing).
    """
    return sorted(set(_registry) | set(_plugins.names()))


def describe() -> list[tuple[str, str]]:
    """``(name, description)`` pairs, sorted; loads every entry point. Plug-ins that failed to load
    are listed with the error."""
    failed = _plugins.load_all(_adopt)
    rows = [(e.name, e.description) for e in _registry.values()]
    rows += [(n, f"(failed to load) {err}") for n, err in failed.items() if n not in _registry]
    return sorted(rows)


def get(name: str) -> type:
    """The algorithm class registered as ``name``, loading its entry point (only) if needed.

    Raises:
        PluginLoadError: the entry point declaring ``name`` could not be loaded (it and the
            exception are named).
        UnknownAlgorithmError: no such name (lists the valid ones, suggests the closest).
        EntryPointsMissingError: zsceval is not installed (its entry points are missing).
    """
    _load(name)
    if name in _registry:
        return _registry[name].cls
    valid = names()
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    raise UnknownAlgorithmError(
        f"unknown algorithm '{name}'. Registered algorithms: {', '.join(valid)}.{hint}"
    )
