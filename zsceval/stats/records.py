"""Records: what changed between the settings an output folder holds and new ones, and tables as
JSON-ready records.

A bench folder (``suite.yaml``) and a partners folder (``partners.yaml``) record the settings their
finished jobs were made with; a rerun with other settings is refused (naming the differences) instead
of silently redoing or deleting finished work. The records are nested dicts read back from YAML, so
the comparison flattens them to dotted keys and compares tuples as lists.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["differences", "flatten", "frame_records"]


def frame_records(frame: pd.DataFrame) -> list[dict]:
    """Any frame as JSON-ready records, one dict per row (Python scalars; NaN -> None)."""
    out = []
    for row in frame.to_dict("records"):
        clean = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in row.items()}
        out.append({k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in clean.items()})
    return out


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts as one dict of dotted keys: ``{"a": {"b": 1}}`` -> ``{"a.b": 1}``.

    Lists and empty dicts stay values.
    """
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def differences(old: dict[str, Any], new: dict[str, Any], ignore: tuple[str, ...] = ()) -> list[str]:
    """``key: old -> new`` for every flattened key whose value differs, sorted by key.

    Values are compared as they read back from YAML (tuples as lists, other objects as ``str``); a
    key missing on one side reads ``'(unset)'``.

    Args:
        old: the recorded settings.
        new: the settings of this call.
        ignore: flattened keys not compared.

    Returns:
        One line per differing key, e.g. ``"seed: 0 -> 4"``; empty when the settings agree.
    """

    def plain(d: dict) -> dict:  # tuples as lists, as they read back from YAML
        return json.loads(json.dumps(d, default=str))

    a, b = flatten(plain(old)), flatten(plain(new))
    diffs = []
    for key in sorted(set(a) | set(b)):
        if key in ignore:
            continue
        if a.get(key) != b.get(key):
            diffs.append(f"{key}: {a.get(key, '(unset)')!r} -> {b.get(key, '(unset)')!r}")
    return diffs
