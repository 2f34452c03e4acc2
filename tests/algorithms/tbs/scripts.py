"""Load a script of ``benchmarks/learning/`` as a module, for the tests of the TBS diagnostics."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

LEARNING = Path(__file__).resolve().parents[3] / "benchmarks" / "learning"


def load_script(name: str, alias: str | None = None) -> ModuleType:
    """``benchmarks/learning/<name>`` executed as a module registered as ``alias`` (default
    ``<stem>_in_tests``) in ``sys.modules``, where dataclasses look their module up.

    Raises:
        FileNotFoundError: no such script.
    """
    path = LEARNING / name
    if not path.is_file():
        raise FileNotFoundError(path)
    spec = importlib.util.spec_from_file_location(alias or f"{path.stem}_in_tests", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
