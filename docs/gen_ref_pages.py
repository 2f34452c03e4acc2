"""Write one API-reference page per module of the installed `zsceval` package (mkdocs-gen-files).

The module list comes from the imported package (`pkgutil.walk_packages` over `zsceval.__path__`),
not from the folders of this checkout, so a module that the package maps from another folder
(setup.py `package_dir`) gets its page under its import name. Private modules (a name part that
starts with `_`) and packages that hold only data files (layouts, suites, partner sets) get none.
Pages go to `reference/<dotted/path>.md` (a package's to `.../index.md`); `reference/SUMMARY.md`
is the nav that mkdocs-literate-nav reads. The recipe is mkdocstrings' "Automatic code reference pages".
"""

from __future__ import annotations

import importlib.util
import pkgutil

import mkdocs_gen_files

import zsceval

# Packages installed from data folders (setup.py package_dir): no Python API to document.
DATA_PACKAGES = ("zsceval.layouts", "zsceval.suites", "zsceval.partner_sets")
# Code packages that setup.py maps from a top-level folder: an editable install does not put them
# under `zsceval.__path__`, so they are walked through their own path too.
MAPPED_PACKAGES = ("zsceval.algorithms",)


def documented_modules() -> list[tuple[str, bool]]:
    """The public modules of the installed `zsceval`, sorted by import name.

    Returns:
        `(dotted name, is a package)` pairs, `zsceval` first. Modules are not imported (their
        pages are rendered from source), so one that needs an optional extra is still listed.

    Raises:
        ImportError: a package cannot be imported, so its modules cannot be listed.
    """
    names, failed = [("zsceval", True)], []
    walks = [(zsceval.__path__, "zsceval.")]
    for pkg in MAPPED_PACKAGES:
        spec = importlib.util.find_spec(pkg)
        if spec is not None and spec.submodule_search_locations:
            names.append((pkg, True))
            walks.append((spec.submodule_search_locations, pkg + "."))
    infos = [i for path, prefix in walks for i in pkgutil.walk_packages(path, prefix, onerror=failed.append)]
    for info in infos:
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        if info.name.startswith(DATA_PACKAGES):
            continue
        spec = importlib.util.find_spec(info.name)
        if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
            continue
        names.append((info.name, info.ispkg))
    if failed:  # walk_packages imports each package to list its modules
        names = ", ".join(failed)
        raise ImportError(f"cannot import {names}: their modules would be missing from the reference")
    return sorted(set(names))


def main() -> None:
    """Write the pages and `reference/SUMMARY.md`."""
    nav = mkdocs_gen_files.Nav()
    for name, is_package in documented_modules():
        parts = tuple(name.split("."))
        doc_path = "/".join(parts) + ("/index.md" if is_package else ".md")
        nav[parts] = doc_path
        with mkdocs_gen_files.open(f"reference/{doc_path}", "w") as page:
            page.write(f"# `{name}`\n\n::: {name}\n")
    with mkdocs_gen_files.open("reference/SUMMARY.md", "w") as summary:
        summary.writelines(nav.build_literate_nav())


if __name__ in {"__main__", "<run_path>"}:  # mkdocs-gen-files runs this file with runpy.run_path
    main()
