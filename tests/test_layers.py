"""The package's layers (``.importlinter``): each layer imports only downward, counting
imports written inside functions, and a reversed import is caught.

import-linter reads one folder per package, and the built-in plug-ins live in the top-level
``algorithms/`` that setup.py installs as ``zsceval.algorithms``; so the contracts run on the
package as installed, assembled in a temporary folder. By hand: ``python tests/test_layers.py``.
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


# Folders setup.py's package_dir installs inside zsceval that hold modules: {source: installed path}.
INSTALLED_AS = {"algorithms": "zsceval/algorithms"}


def assemble(dest: Path) -> Path:
    """The package as setup.py installs it (zsceval/ with algorithms/ inside) and .importlinter,
    copied under ``dest``; returns ``dest``."""
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "zsceval", dest / "zsceval", ignore=ignore)
    for folder, target in INSTALLED_AS.items():
        shutil.copytree(ROOT / folder, dest / target, ignore=ignore)
    shutil.copy(ROOT / ".importlinter", dest / ".importlinter")
    return dest


def test_the_import_contracts_hold(tmp_path):
    res = lint(assemble(tmp_path), tmp_path)
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


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        res = lint(assemble(Path(tmp)), Path(tmp))
    print(res.stdout + res.stderr)
    sys.exit(res.returncode)
