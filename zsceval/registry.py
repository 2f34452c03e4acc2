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
Registering a name twice raises :class:`DuplicateAlgorithmError`. The registry is a
:class:`zsceval.plugins.Registry`, :data:`ALGORITHMS`, like every other registry of zsceval.
"""

from __future__ import annotations

from typing import Any

from zsceval.plugins import (
    DuplicatePluginError,
    EntryPointsMissingError,
    PluginLoadError,
    Registry,
    UnknownPluginError,
)

__all__ = [
    "ALGORITHMS",
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
"""The package of the built-in algorithms."""


class UnknownAlgorithmError(UnknownPluginError, KeyError):
    """No algorithm of that name; the message lists the registered names (also a ``KeyError``)."""


class DuplicateAlgorithmError(DuplicatePluginError):
    """An algorithm name was registered twice."""


def _mark(name: str, cls: type, description: str) -> None:
    """Give the class its registry name and description (``Algorithm.name``, ``.description``)."""
    cls.name = name
    cls.description = description


ALGORITHMS = Registry(
    ENTRY_POINT_GROUP,
    "algorithm",
    kind="class",
    on_register=_mark,
    unknown_error=UnknownAlgorithmError,
    duplicate_error=DuplicateAlgorithmError,
)
"""The algorithm registry."""

_registry = ALGORITHMS.objects  # name -> class; tests remove their registrations from it


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
    return ALGORITHMS.register(name, cls, description=description)


def reset() -> None:
    """Forget every registration and the entry points loaded (:meth:`Registry.reset
    <zsceval.plugins.Registry.reset>`), for tests that install a plug-in. Agents, checkpoints and
    ``isinstance`` checks made before the reset keep working: a lookup registers the same class."""
    ALGORITHMS.reset()


def names() -> list[str]:
    """Sorted names of the algorithms: registered ones and declared entry points (none imported).

    Raises:
        EntryPointsMissingError: zsceval is not installed (its entry points are missing).
    """
    return ALGORITHMS.names()


def describe() -> list[tuple[str, str]]:
    """``(name, description)`` pairs, sorted; loads every entry point. Plug-ins that failed to load
    are listed with the error."""
    return ALGORITHMS.describe()


def get(name: str) -> type:
    """The algorithm class registered as ``name``, loading its entry point (only) if needed.

    Raises:
        PluginLoadError: the entry point declaring ``name`` could not be loaded (it and the
            exception are named).
        UnknownAlgorithmError: no such name (lists the valid ones, suggests the closest).
        EntryPointsMissingError: zsceval is not installed (its entry points are missing).
    """
    return ALGORITHMS.get(name)
