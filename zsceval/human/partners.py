"""Models of the 2019 human players: H_proxy (the evaluation partner) and BC (a training partner).

Carroll et al. (2019), "On the Utility of Learning about Humans for Human-AI Coordination"
(arXiv:1910.05789), behavior-clone two models per layout from their human-human trials
(human_aware_rl ``ppo/evaluate.py``: "a human proxy model (trained with the human testing data)",
loaded from ``bc_runs/test``; the PPO_BC partner from ``bc_runs/train``; see also
https://github.com/HumanCompatibleAI/overcooked_ai/issues/135):

* **``human-proxy``** (H_proxy): fitted on the **test** split. Every human-proxy score uses it,
  so that no agent is scored with the model it may have trained with.
* **``bc``**: fitted on the **train** split; the partner a method may train with.

Each reports its accuracy on the other split. A model is a folder::

    <dir>/human-proxy.json                       # format, role, split, layout, BC config, accuracies
    <dir>/checkpoints/step_000000000000/...      # the model, a normal zsceval checkpoint (agent
                                                 # "human_proxy", class "human-proxy")

written by :func:`build_human_model` (``zsceval partners human-proxy`` / ``zsceval partners bc``)
and read by :func:`load_human_model`. The JSON is written last and atomically, so a folder with a
readable ``human-proxy.json`` is complete. The five classic layouts' models ship with the package
(``eval_partners/human/<layout>/<role>``, sha256-checked against ``eval_partners/human/index.yaml``
at every load): ``--partner-set human-proxy`` plays the shipped H_proxy on a fresh install.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import torch
import yaml

from zsceval import __version__
from zsceval.envs.overcooked import OvercookedEnv, load_layout
from zsceval.human.bc import BCConfig, BCResult, train_bc
from zsceval.io import atomic_write_text, sha256_file
from zsceval.rl.checkpoint import CheckpointError, check_compatible, load_agent, save_checkpoint

__all__ = [
    "HUMAN_PROXY_FILE",
    "HUMAN_PROXY_FORMAT",
    "ROLES",
    "HumanProxyError",
    "build_human_model",
    "build_human_proxy",
    "default_proxy_dir",
    "load_human_model",
    "load_human_proxy",
    "resolve_proxy_dir",
    "shipped_model_dir",
]

HUMAN_PROXY_FORMAT = "zsceval-human-proxy"
HUMAN_PROXY_FORMAT_VERSION = 2
HUMAN_PROXY_FILE = "human-proxy.json"
AGENT_NAME = "human_proxy"
ROLES = {"human-proxy": "test", "bc": "train"}
"""Role -> the split of the 2019 trials it is fitted on (the other split is held out)."""
OTHER_SPLIT = {"test": "train", "train": "test"}
SHIPPED_INDEX = "human/index.yaml"
"""The shipped models' index, relative to the installed ``zsceval.partner_sets`` package."""


class HumanProxyError(ValueError):
    """A human-model folder is missing, unreadable, altered, of another role, or for another layout."""


def _check_role(role: str) -> str:
    if role not in ROLES:
        raise ValueError(f"unknown human-model role {role!r}; valid: {', '.join(ROLES)}")
    return role


def default_proxy_dir(layout: str, role: str = "human-proxy") -> Path:
    """``eval_partners/<layout>/<role>`` (relative to the working directory): where
    ``zsceval partners human-proxy`` / ``bc`` write by default."""
    return Path("eval_partners") / load_layout(layout).name / _check_role(role)


def _shipped_root() -> Path:
    return Path(str(resources.files("zsceval.partner_sets")))


def shipped_model_dir(layout: str, role: str = "human-proxy") -> Path:
    """The shipped model of ``layout`` and ``role``, its files verified against the index.

    Returns:
        the installed folder ``human/<layout>/<role>`` of ``zsceval.partner_sets``.

    Raises:
        HumanProxyError: no model ships for the layout (lists the layouts that have one), or a file
            is missing or differs from its sha256 in ``human/index.yaml`` (names the file).
    """
    _check_role(role)
    name = load_layout(layout).name
    root = _shipped_root()
    index_path = root / SHIPPED_INDEX
    try:
        index = yaml.safe_load(index_path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise HumanProxyError(f"cannot read the shipped human models' index {index_path}: {exc}") from None
    models = (index or {}).get("models", {})
    entry = models.get(name, {}).get(role)
    if entry is None:
        have = sorted(k for k, v in models.items() if role in v)
        raise HumanProxyError(
            f"no shipped {role} model for layout {name!r}; shipped for: {', '.join(have) or 'none'} "
            f"(build one: zsceval partners {role} --layout {name})"
        )
    folder = root / entry["path"]
    for rel, digest in entry["files"].items():
        f = folder / rel
        if not f.is_file():
            raise HumanProxyError(f"shipped {role} model of {name}: {f} is missing (reinstall zsceval)")
        if sha256_file(f) != digest:
            raise HumanProxyError(
                f"shipped {role} model of {name}: {f} does not match its sha256 in {index_path} "
                "(altered or corrupted; reinstall zsceval)"
            )
    return folder


def resolve_proxy_dir(value: str | Path, layout: str) -> Path:
    """The folder named by ``--partner-set VALUE``: ``human-proxy`` is the shipped H_proxy of the
    layout (verified); otherwise a path to a human-model folder or its ``human-proxy.json``."""
    if str(value) == "human-proxy":
        return shipped_model_dir(layout, "human-proxy")
    p = Path(value)
    return p.parent if p.name == HUMAN_PROXY_FILE else p


def is_human_proxy(value: str | Path) -> bool:
    """Whether ``--partner-set VALUE`` names a human model (not a BR-Prox manifest)."""
    p = Path(value)
    return str(value) == "human-proxy" or p.name == HUMAN_PROXY_FILE or (p / HUMAN_PROXY_FILE).is_file()


def build_human_model(
    layout: str,
    out: str | Path,
    role: str = "human-proxy",
    config: BCConfig | None = None,
    data_dir: str | Path | None = None,
    progress=None,
) -> dict:
    """Fit a human model of ``layout`` on its role's split, score it on the other split, save it.

    Args:
        layout: our layout name or alias of one of the human-data layouts (cramped_room,
            asymmetric_advantages, coordination_ring, forced_coordination = random0,
            counter_circuit = random3).
        out: the folder to write.
        role: ``"human-proxy"`` (H_proxy, fitted on the test split) or ``"bc"`` (the train split).
        config: :class:`~zsceval.human.bc.BCConfig`.
        data_dir: folder of the trial pickles (default: the installed ``overcooked-ai`` package).
        progress: optional ``progress(epoch, row)`` callback.

    Returns:
        The record written to ``human-proxy.json``: ``role``, ``trained_on`` (the split fitted),
        ``held_out`` (the other split), ``metrics`` ``{"fit", "validation", "held_out", ...}``.

    Raises:
        ValueError: an unknown role, a layout without human data, or a grid that differs from the
            trials' (the loader names the cells).
        FileNotFoundError: the data is not installed (names the install command).
    """
    from zsceval.human.trials import load_trials

    split = ROLES[_check_role(role)]
    held_out = OTHER_SPLIT[split]
    config = config or BCConfig()
    name = load_layout(layout).name
    fit = load_trials(split, layouts=[name], data_dir=data_dir)
    other = load_trials(held_out, layouts=[name], data_dir=data_dir)
    if not fit:
        raise ValueError(f"the 2019 human trials have no {split} trials on layout {name!r}")
    result: BCResult = train_bc(fit, name, config, held_out_trials=other, progress=progress)
    out = Path(out)
    env = OvercookedEnv(load_layout(name), num_envs=1)
    meta = {
        "algo": role,
        "layout": name,
        "ego": AGENT_NAME,
        "env_spec": env.spec_dict(),
        "config": {"env": {"name": "overcooked", "layout": name}, "bc": result.config, "role": role},
    }
    ckpt = save_checkpoint(out / "checkpoints", 0, {AGENT_NAME: result.proxy}, meta)
    record = {
        "format": HUMAN_PROXY_FORMAT,
        "format_version": HUMAN_PROXY_FORMAT_VERSION,
        "created_by": f"zsceval {__version__}",
        "role": role,
        "trained_on": split,
        "held_out": held_out,
        "layout": name,
        "checkpoint": ckpt.relative_to(out).as_posix(),
        "data": {
            "source": "Carroll et al. (2019) human-human trials (overcooked-ai 1.1.0, clean_*_trials.pickle)",
            f"{split}_trials": len(fit),
            f"{held_out}_trials": len(other),
            f"{split}_transitions": int(sum(len(t.actions) for t in fit)),
            f"{held_out}_transitions": int(sum(len(t.actions) for t in other)),
        },
        "bc": result.config,
        "metrics": result.metrics,
        "history": result.history,
    }
    atomic_write_text(out / HUMAN_PROXY_FILE, json.dumps(record, indent=2) + "\n")
    return record


def build_human_proxy(
    layout: str,
    out: str | Path,
    config: BCConfig | None = None,
    data_dir: str | Path | None = None,
    progress=None,
) -> dict:
    """H_proxy of ``layout``: :func:`build_human_model` with ``role="human-proxy"`` (test split)."""
    return build_human_model(layout, out, "human-proxy", config, data_dir, progress)


def load_human_model(
    folder: str | Path,
    layout: str | None = None,
    role: str = "human-proxy",
    device: str | torch.device = "cpu",
) -> tuple[torch.nn.Module, dict]:
    """Load a human model written by :func:`build_human_model`, refusing one of another role.

    Args:
        folder: the model's folder (or its ``human-proxy.json``).
        layout: if given, the layout the caller plays (aliases match their canonical name).
        role: the role the caller needs: ``"human-proxy"`` (fitted on the test split) or ``"bc"``.
        device: where to put the agent.

    Returns:
        ``(agent, record)``: the :class:`~zsceval.human.proxy.HumanProxy` in eval mode and the
        ``human-proxy.json`` record.

    Raises:
        HumanProxyError: no such folder (names the build command), a malformed record, a model fitted
            on the other split (a format-1 proxy was fitted on the train split: names the rebuild
            command), another layout, or a checkpoint that fails verification.
    """
    split = ROLES[_check_role(role)]
    folder = Path(folder)
    folder = folder.parent if folder.name == HUMAN_PROXY_FILE else folder
    path = folder / HUMAN_PROXY_FILE
    build = f"zsceval partners {role} --layout {layout or '<layout>'} --out {folder}"
    if not path.is_file():
        hint = f" (build it: {build})" if layout else ""
        raise HumanProxyError(f"no {role} model at {folder}: {path} does not exist{hint}")
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
    trained_on = record.get("trained_on", "train")  # format 1 fitted every proxy on the train split
    if trained_on != split:
        what = {"test": "H_proxy, the evaluation partner", "train": "BC, a training partner"}
        raise HumanProxyError(
            f"{folder} was fitted on the 2019 trials' {trained_on} split ({what[trained_on]}), but a "
            f"{role} model is fitted on the {split} split; rebuild it: {build}"
        )
    if layout is not None and load_layout(layout).name != record.get("layout"):
        raise HumanProxyError(
            f"{role} model {folder} was trained on layout {record.get('layout')!r}, "
            f"not {load_layout(layout).name!r}"
        )
    try:
        agent, meta = load_agent(folder / record["checkpoint"], AGENT_NAME, device)
        if layout is not None:
            check_compatible(
                meta, OvercookedEnv(load_layout(layout), num_envs=1).spec_dict(), f"{role} model {folder}"
            )
    except CheckpointError as exc:
        raise HumanProxyError(str(exc)) from exc
    return agent, record


def load_human_proxy(
    folder: str | Path, layout: str | None = None, device: str | torch.device = "cpu"
) -> tuple[torch.nn.Module, dict]:
    """H_proxy (:func:`load_human_model` with ``role="human-proxy"``): refuses a BC model."""
    return load_human_model(folder, layout, "human-proxy", device)
