"""Size limits of the code (docs/design.md, "The folders"): no module outside zsceval/envs over 800
lines and no function outside it over 120 lines (decorators, signature and docstring included)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULE_LINES, FUNCTION_LINES = 800, 120


def _sources():
    for folder in ("zsceval", "algorithms"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if not path.relative_to(ROOT).as_posix().startswith("zsceval/envs/"):
                yield path


def test_no_module_or_function_is_over_the_size_limits():
    over = []
    for path in _sources():
        source = path.read_text()
        name = path.relative_to(ROOT).as_posix()
        if source.count("\n") > MODULE_LINES:
            over.append(f"{name}: {source.count(chr(10))} lines (module limit {MODULE_LINES})")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1 + len(node.decorator_list)
                if lines > FUNCTION_LINES:
                    over.append(f"{name}:{node.lineno} {node.name}: {lines} lines (limit {FUNCTION_LINES})")
    assert not over, "split these into named steps:\n" + "\n".join(over)


def test_the_size_check_sees_the_plugins_and_the_core():
    names = {p.relative_to(ROOT).as_posix() for p in _sources()}
    assert "algorithms/tbs/tom.py" in names and "zsceval/rl/ppo.py" in names
    assert not any(n.startswith("zsceval/envs/") for n in names)
