"""Griffe extension: document the sub-packages that an install maps from folders outside the package.

setup.py's `package_dir` may install a folder that is not inside `zsceval/` as a sub-package (the
layouts, the suites, an algorithms folder). A regular install copies it into place, but an
editable install (`pip install -e .`) leaves it where it is and maps it with setuptools' import
finder; griffe reads a package from its own folder alone and would not see it. After griffe has
loaded a package, this extension asks the import system for every sub-package of the installed
package (`pkgutil.walk_packages`, which imports packages but not their modules) and loads the ones
griffe did not find from the folder the import system uses, under their import names.

mkdocs.yml loads it (`plugins.mkdocstrings.handlers.python.options.extensions`);
tests/test_docs_site.py tests it on a package whose sub-package lies in another folder.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from pathlib import Path
from typing import Any

import griffe


def _editable_mapped(prefix: str) -> list[str]:
    """Sub-packages of `prefix` that setuptools' editable finder maps from other folders (the
    `MAPPING` of its `__editable___*_finder` module): `pkgutil.walk_packages` over the package's
    own folder does not list them."""
    names = set()
    for modname, module in list(sys.modules.items()):
        mapping = getattr(module, "MAPPING", None)
        if modname.startswith("__editable__") and isinstance(mapping, dict):
            names |= {n for n in mapping if n.startswith(prefix + ".")}
    return sorted(names)


def _missing_packages(pkg: griffe.Module) -> list[tuple[str, Path]]:
    """`(dotted name, __init__.py)` of the installed sub-packages that griffe's tree lacks, outer first."""
    try:
        package = importlib.import_module(pkg.path)
    except ImportError:
        return []
    infos = list(pkgutil.walk_packages(package.__path__, f"{pkg.path}.", onerror=lambda name: None))
    for name in _editable_mapped(pkg.path):
        try:
            sub = importlib.import_module(name)
        except ImportError:
            continue
        infos.append(pkgutil.ModuleInfo(None, name, True))
        infos += pkgutil.walk_packages(sub.__path__, f"{name}.", onerror=lambda n: None)
    missing = []
    for info in infos:
        if not info.ispkg or info.name[len(pkg.path) + 1 :] in _tree_names(pkg):
            continue
        spec = importlib.util.find_spec(info.name)
        if spec is not None and spec.origin is not None and spec.origin.endswith("__init__.py"):
            if (info.name, Path(spec.origin)) not in missing:
                missing.append((info.name, Path(spec.origin)))
    return sorted(missing, key=lambda m: m[0].count("."))


def _tree_names(module: griffe.Module, prefix: str = "") -> set[str]:
    """Dotted names, relative to `module`, of the modules griffe has loaded below it."""
    names = set()
    for name, member in module.members.items():
        if not member.is_alias and member.is_module:
            names.add(prefix + name)
            names |= _tree_names(member, f"{prefix}{name}.")
    return names


class MappedSubpackages(griffe.Extension):
    """Load the sub-packages that the import system finds outside the package's own folder."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        """Graft each missing sub-package (with its own modules) onto the loaded package."""
        for name, init in _missing_packages(pkg):
            parent = pkg
            for part in name.split(".")[1:-1]:
                parent = parent.members[part]
            existing = parent.members.get(name.rsplit(".", 1)[1])
            if existing is not None and not existing.is_alias and existing.is_module:
                continue  # grafted with an outer package
            module = loader._load_module(name.rsplit(".", 1)[1], init, submodules=True, parent=parent)
            parent.set_member(module.name, module)
