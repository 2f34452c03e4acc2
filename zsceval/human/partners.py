"""Human-proxy partner sets: a behavior-cloned human model per layout, saved as an artifact.

A human-proxy set is a folder::

    <dir>/human-proxy.json                       # format, layout, data source, BC config, accuracies
    <dir>/checkpoints/step_000000000000/...      # the proxy, a normal zsceval checkpoint (agent
                                                 # "human_proxy", class "human-proxy")

written by :func:`build_human_proxy` (``zsceval partners human-proxy``) and read by
:func:`load_human_proxy` (``zsceval eval --partner-set human-proxy``, the bench). The JSON is written
last and atomically, so a folder with a readable ``human-proxy.json`` is complete.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from zsceval import __version__
from zsceval.envs.overcooked import OvercookedEnv, load_layout
from zsceval.human.bc import BCConfig, BCResult, train_bc
from zsceval.io import atomic_write_text
from zsceval.rl.checkpoint import CheckpointError, check_compatible, load_agent, save_checkpoint

__all__ = [
    "HUMAN_PROXY_FILE",
    "HUMAN_PROXY_FORMAT",
    "HumanProxyError",
    "build_human_proxy",
    "default_proxy_dir",
    "load_human_proxy",
    "resolve_proxy_dir",
]

HUMAN_PROXY_FORMAT = "zsceval-human-proxy"
HUMAN_PROXY_FILE = "human-proxy.json"
AGENT_NAME = "human_proxy"


class HumanProxyError(ValueError):
    """A human-proxy folder is missing, unreadable, or for another layout."""


def default_proxy_dir(layout: str) -> Path:
    """``eval_partners/<layout>/human-proxy`` (relative to the working directory)."""
    return Path("eval_partners") / load_layout(layout).name / "human-proxy"


def resolve_proxy_dir(value: str | Path, layout: str) -> Path:
    """The folder named by ``--partner-set human-proxy`` (the layout's default folder) or a path to
    a human-proxy folder or its ``human-proxy.json``."""
    if str(value) == "human-proxy":
        return default_proxy_dir(layout)
    p = Path(value)
    return p.parent if p.name == HUMAN_PROXY_FILE else p


def is_human_proxy(value: str | Path) -> bool:
    """Whether ``--partner-set VALUE`` names a human-proxy set (not a BR-Prox manifest)."""
    p = Path(value)
    return str(value) == "human-proxy" or p.name == HUMAN_PROXY_FILE or (p / HUMAN_PROXY_FILE).is_file()


def build_human_proxy(
    layout: str,
    out: str | Path,
    config: BCConfig | None = None,
    data_dir: str | Path | None = None,
    progress=None,
) -> dict:
    """Train a BC human proxy of ``layout`` on the train split, score it on the test split, save it.

    Args:
        layout: our layout name or alias of one of the human-data layouts (cramped_room,
            asymmetric_advantages, coordination_ring, forced_coordination = random0,
            counter_circuit = random3).
        out: the human-proxy folder to write.
        config: :class:`~zsceval.human.bc.BCConfig`.
        data_dir: folder of the trial pickles (default: the installed ``overcooked-ai`` package).
        progress: optional ``progress(epoch, row)`` callback.

    Returns:
        The record written to ``human-proxy.json``.

    Raises:
        ValueError: the layout has no human data, or its grid differs from the trials' (the
            loader names the cells).
        FileNotFoundError: the data is not installed (names the install command).
    """
    from zsceval.human.trials import load_trials

    config = config or BCConfig()
    name = load_layout(layout).name
    train = load_trials("train", layouts=[name], data_dir=data_dir)
    test = load_trials("test", layouts=[name], data_dir=data_dir)
    if not train:
        raise ValueError(f"the 2019 human trials have no train trials on layout {name!r}")
    result: BCResult = train_bc(train, name, config, test_trials=test, progress=progress)
    out = Path(out)
    env = OvercookedEnv(load_layout(name), num_envs=1)
    meta = {
        "algo": "human-proxy",
        "layout": name,
        "ego": AGENT_NAME,
        "env_spec": env.spec_dict(),
        "config": {"env": {"name": "overcooked", "layout": name}, "bc": result.config},
    }
    ckpt = save_checkpoint(out / "checkpoints", 0, {AGENT_NAME: result.proxy}, meta)
    record = {
        "format": HUMAN_PROXY_FORMAT,
        "format_version": 1,
        "created_by": f"zsceval {__version__}",
        "layout": name,
        "checkpoint": ckpt.relative_to(out).as_posix(),
        "data": {
            "source": "Carroll et al. (2019) human-human trials (overcooked-ai 1.1.0, clean_*_trials.pickle)",
            "train_trials": len(train),
            "test_trials": len(test),
            "train_transitions": int(sum(len(t.actions) for t in train)),
            "test_transitions": int(sum(len(t.actions) for t in test)),
        },
        "bc": result.config,
        "metrics": result.metrics,
        "history": result.history,
    }
    atomic_write_text(out / HUMAN_PROXY_FILE, json.dumps(record, indent=2) + "\n")
    return record


def load_human_proxy(
    folder: str | Path, layout: str | None = None, device: str | torch.device = "cpu"
) -> tuple[torch.nn.Module, dict]:
    """Load a human proxy written by :func:`build_human_proxy`.

    Args:
        folder: the human-proxy folder (or its ``human-proxy.json``).
        layout: if given, the layout the caller plays (aliases match their canonical name).
        device: where to put the agent.

    Returns:
        ``(agent, record)``: the :class:`~zsceval.human.proxy.HumanProxy` in eval mode and the
        ``human-proxy.json`` record.

    Raises:
        HumanProxyError: no such folder (names ``zsceval partners human-proxy``), a malformed
            record, another layout, or a checkpoint that fails verification.
    """
    folder = Path(folder)
    folder = folder.parent if folder.name == HUMAN_PROXY_FILE else folder
    path = folder / HUMAN_PROXY_FILE
    if not path.is_file():
        hint = f" (build it: zsceval partners human-proxy --layout {layout} --out {folder})" if layout else ""
        raise HumanProxyError(f"no human-proxy set at {folder}: {path} does not exist{hint}")
    try:
        record = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise HumanProxyError(f"cannot read {path}: {exc}") from exc
    if (
        not isinstance(record, dict)
        or record.get("format") != HUMAN_PROXY_FORMAT
        or "checkpoint" not in record
    ):
        raise HumanProxyError(f"{path} is not a {HUMAN_PROXY_FORMAT} record")
    if layout is not None and load_layout(layout).name != record.get("layout"):
        raise HumanProxyError(
            f"human proxy {folder} was trained on layout {record.get('layout')!r}, "
            f"not {load_layout(layout).name!r}"
        )
    try:
        agent, meta = load_agent(folder / record["checkpoint"], AGENT_NAME, device)
        if layout is not None:
            check_compatible(
                meta, OvercookedEnv(load_layout(layout), num_envs=1).spec_dict(), f"human proxy {folder}"
            )
    except CheckpointError as exc:
        raise HumanProxyError(str(exc)) from exc
    return agent, record
