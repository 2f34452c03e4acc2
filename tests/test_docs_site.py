"""The documentation site builds in strict mode and documents every public module by import name."""

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTALL = 'pip install -e ".[docs]"'
griffe = pytest.importorskip("griffe", reason=f"the docs tools are not installed: {INSTALL}")
pytest.importorskip("mkdocs", reason=f"the docs tools are not installed: {INSTALL}")


def _nbconvert_lab_template() -> bool:
    """Whether nbconvert finds its ``lab`` template, which mkdocs-jupyter renders the tutorial with.

    Its templates are data files under ``<prefix>/share/jupyter``: a venv made with
    ``--system-site-packages`` imports nbconvert from the base Python but looks for them under its
    own prefix, where they are not."""
    paths = pytest.importorskip("jupyter_core.paths", reason=f"the docs tools are not installed: {INSTALL}")
    return any((Path(p) / "nbconvert" / "templates" / "lab").is_dir() for p in paths.jupyter_path())


def _docs_module(name: str):
    """Import docs/NAME.py (the docs folder is not a package)."""
    spec = importlib.util.spec_from_file_location(f"zsceval_docs_{name}", ROOT / "docs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _public_definitions(module_name: str) -> list[str]:
    """Top-level public functions and classes defined in the module's source (not imported)."""
    tree = ast.parse(Path(importlib.util.find_spec(module_name).origin).read_text())
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return [node.name for node in tree.body if isinstance(node, kinds) and not node.name.startswith("_")]


def test_strict_build_documents_every_public_module_and_its_definitions(tmp_path):
    if not _nbconvert_lab_template():
        pytest.skip(
            "nbconvert finds no 'lab' template in this environment (its data files are not under "
            f"this prefix's share/jupyter, e.g. in a venv with --system-site-packages): {INSTALL} here"
        )
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    env.pop("DOCS_EXECUTE_NOTEBOOKS", None)
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-6000:]
    for page in ("install", "quick-start", "tutorial", "partner-sets", "bench", "report", "algorithms",
                 "adding-an-algorithm", "results"):  # fmt: skip
        assert (site / page / "index.html").is_file(), page
    # README sections included by the snippets extension arrive as text, not as the marker.
    bench = (site / "bench" / "index.html").read_text()
    assert "overcooked-quick" in bench and "--8&lt;--" not in bench
    # The notebook's links to other pages point at the pages (docs/notebook_links.py).
    tutorial = (site / "tutorial" / "index.html").read_text()
    assert 'href="../quick-start/"' in tutorial and 'href="quick-start.md"' not in tutorial
    modules = _docs_module("gen_ref_pages").documented_modules()
    names = [name for name, _ in modules]
    assert {"zsceval", "zsceval.algorithms.sp", "zsceval.stats.statistics"} <= set(names)
    assert not any(part.startswith("_") for name in names for part in name.split("."))
    for name, _ in modules:
        folder = site / "reference" / Path(*name.split("."))
        html = (folder / "index.html").read_text()
        assert 'class="doc doc-object doc-module"' in html, name
        for definition in _public_definitions(name):
            assert f'id="{name}.{definition}"' in html, f"{name}.{definition} is not on its page"


def test_extension_documents_a_subpackage_installed_from_another_folder(tmp_path, monkeypatch):
    """What an editable install does with setup.py's package_dir: the import system finds
    `pkg.sub` in a folder outside pkg/, where griffe alone does not look."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(
        '"""A package."""\nfrom pathlib import Path\n'
        '__path__.append(str(Path(__file__).parents[1] / "elsewhere"))\n'
    )
    (tmp_path / "elsewhere" / "sub" / "inner").mkdir(parents=True)
    (tmp_path / "elsewhere" / "sub" / "__init__.py").write_text('"""Mapped."""\n')
    (tmp_path / "elsewhere" / "sub" / "core.py").write_text('def run():\n    """Run."""\n')
    (tmp_path / "elsewhere" / "sub" / "inner" / "__init__.py").write_text('"""Inner."""\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("pkg", "pkg.sub", "pkg.sub.inner"):  # imported by the extension; gone afterwards
        monkeypatch.delitem(sys.modules, name, raising=False)
    ext = _docs_module("griffe_package_dirs")

    plain = griffe.GriffeLoader(search_paths=[str(tmp_path)]).load("pkg")
    assert "sub" not in plain.members  # the case the extension exists for
    loader = griffe.GriffeLoader(
        search_paths=[str(tmp_path)], extensions=griffe.load_extensions(ext.MappedSubpackages)
    )
    pkg = loader.load("pkg")
    assert pkg["sub.core.run"].docstring.value == "Run."
    assert pkg["sub.inner"].is_module and pkg["sub"].docstring.value == "Mapped."


def test_sphinx_roles_become_inline_code(tmp_path, monkeypatch):
    roles = _docs_module("griffe_sphinx_roles")
    text = "See :func:`iqm`, :class:`~zsceval.rl.policy.Policy` and :py:meth:`a.B.c`; `kept` stays."
    assert roles.plain(text) == "See `iqm`, `Policy` and `a.B.c`; `kept` stays."
    (tmp_path / "rolepkg").mkdir()
    (tmp_path / "rolepkg" / "__init__.py").write_text('def f():\n    """Calls :func:`~x.y.g`."""\n')
    monkeypatch.delitem(sys.modules, "rolepkg", raising=False)
    loader = griffe.GriffeLoader(
        search_paths=[str(tmp_path)], extensions=griffe.load_extensions(roles.SphinxRoles)
    )
    assert loader.load("rolepkg")["f"].docstring.value == "Calls `g`."
