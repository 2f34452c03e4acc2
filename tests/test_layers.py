"""The package's layers (``.importlinter``): each layer imports only downward, counting
imports written inside functions, and a reversed import is caught.

The built-in plug-ins live in the top-level ``algorithms/``, which setup.py installs as
``zsceval.algorithms``; ``zsceval/algorithms`` is a link to it, so import-linter (which reads the
package from its folder and follows links) checks them as part of the package: ``lint-imports``
from the repository root. The planted-import tests lint a copy.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytest.importorskip("importlinter", reason="pip install -e '.[test]' brings import-linter")


def lint(cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess:
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    env = {"PYTHONPATH": str(pythonpath), "PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    return subprocess.run([sys.executable, "-c", code, "--config", str(cwd / ".importlinter"), "--no-cache"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)  # fmt: skip


def assemble(dest: Path) -> Path:
    """A copy of the package (the algorithms link followed: the plug-ins copied inside) and
    .importlinter under ``dest``; returns ``dest``."""
    shutil.copytree(ROOT / "zsceval", dest / "zsceval", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", dest / ".importlinter")
    return dest


def test_the_import_contracts_hold_in_the_checkout():
    """``lint-imports`` as a developer runs it, from the repository root (the plug-ins through the
    ``zsceval/algorithms`` link)."""
    assert (ROOT / "zsceval" / "algorithms").resolve() == (ROOT / "algorithms").resolve()
    res = lint(ROOT, ROOT)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert "Contracts: " in res.stdout and " broken" in res.stdout


def with_import(tmp_path: Path, module: str, imported: str) -> subprocess.CompletedProcess:
    """Lint a copy of the package in which ``module`` (a file path under zsceval/) imports
    ``imported`` inside a function."""
    path = assemble(tmp_path) / "zsceval" / module
    path.write_text(path.read_text() + f"\n\ndef _added():\n    import {imported}  # noqa\n")
    return lint(tmp_path, tmp_path)


def test_a_reversed_import_breaks_the_layers_contract(tmp_path):
    """The engine (bottom layer) imports the CLI inside a function."""
    res = with_import(tmp_path, "envs/base.py", "zsceval.commands.train")
    assert res.returncode != 0
    assert "zsceval.envs is not allowed to import zsceval.commands" in res.stdout
    assert "zsceval.envs.base -> zsceval.commands.train" in res.stdout


def test_one_plugin_importing_another_breaks_the_independence_contract(tmp_path):
    res = with_import(tmp_path, "algorithms/sp.py", "zsceval.algorithms.fcp")
    assert res.returncode != 0
    assert "Algorithm plug-ins are independent of each other" in res.stdout and "BROKEN" in res.stdout
    assert "zsceval.algorithms.sp -> zsceval.algorithms.fcp" in res.stdout


def test_a_cycle_between_sibling_packages_breaks_the_acyclic_contract(tmp_path):
    """evaluation imports interop (trajectories); interop importing evaluation back closes a cycle
    that the layers contract alone allows (both sit in one layer)."""
    res = with_import(tmp_path, "interop/vector.py", "zsceval.evaluation.matches")
    assert res.returncode != 0
    assert "No import cycle between the packages of one layer BROKEN" in res.stdout
    assert ".evaluation" in res.stdout and ".interop" in res.stdout


if __name__ == "__main__":  # the same as `lint-imports` from the repository root
    res = lint(ROOT, ROOT)
    print(res.stdout + res.stderr)
    sys.exit(res.returncode)
