"""The package's layers (``.importlinter``, issue 32): each layer imports only downward, counting
imports written inside functions, and a reversed import is caught."""

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


def test_the_import_contracts_hold():
    res = lint(ROOT, ROOT)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert "Contracts: " in res.stdout and " broken" in res.stdout


def test_a_reversed_import_breaks_the_layers_contract(tmp_path):
    """A copy of the package in which the engine (bottom layer) imports the CLI inside a function."""
    shutil.copytree(ROOT / "zsceval", tmp_path / "zsceval", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    base = tmp_path / "zsceval" / "envs" / "base.py"
    base.write_text(
        base.read_text() + "\n\ndef _reversed():\n    from zsceval.commands import train  # noqa\n"
    )
    res = lint(tmp_path, tmp_path)
    assert res.returncode != 0
    assert "zsceval.envs is not allowed to import zsceval.commands" in res.stdout
    assert "zsceval.envs.base -> zsceval.commands.train" in res.stdout
