"""Docstrings keep the line breaks they are written with.

A shell example continued with ``\\`` at a line's end, inside a docstring that is not a raw string,
is read by Python as a line continuation: the two lines are joined and ``--help`` (argparse
descriptions and click help are built from these docstrings) prints one broken line.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def joined_lines(path: Path) -> list[int]:
    """Line numbers of docstrings in ``path`` whose value has fewer lines than their source."""
    src = path.read_text(encoding="utf-8")
    found = []
    for node in ast.walk(ast.parse(src)):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        first = node.body[0] if node.body else None
        if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)):
            continue
        if not isinstance(first.value.value, str):
            continue
        segment = ast.get_source_segment(src, first) or ""
        if first.value.value.count("\n") < segment.count("\n"):
            found.append(first.lineno)
    return found


def test_no_docstring_joins_its_lines():
    files = sorted((ROOT / "zsceval").rglob("*.py")) + sorted((ROOT / "benchmarks").rglob("*.py"))
    bad = [f"{p.relative_to(ROOT)}:{n}" for p in files for n in joined_lines(p)]
    assert not bad, f'a backslash at a line\'s end joins the docstring\'s lines (make it r"""): {bad}'


def test_the_check_finds_a_continued_line(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('"""Run:\n    a --x \\\n        --y\n"""\n', encoding="utf-8")
    good = tmp_path / "good.py"
    raw = 'r"""Run:\n    a --x \\\n        --y\n"""\n'
    escaped = '\n\ndef f():\n    """One \\\\\n    two."""\n'
    good.write_text(raw + escaped, encoding="utf-8")
    assert joined_lines(bad) == [1]
    assert joined_lines(good) == []
