"""Checkpoints: safetensors weights + JSON metadata, written atomically, verified on load.

A checkpoint is a directory ``<run>/checkpoints/step_<env steps, 12 digits>/`` holding

* ``policies.safetensors``: every saved agent's tensors (a PPO policy's actor, critic and value
  normalizer; any registered agent class's ``state_dict``), keys ``<agent name>.<parameter name>``;
* ``train_state.safetensors`` + ``train_state.json`` (resumable checkpoints only): optimizer
  states, RNG states (torch global, trainer generators, env generator, numpy), counters and
  plug-in state; the JSON holds the structure, the safetensors file the tensors;
* ``meta.json``, written last: format version, algorithm, layout, observation spec (``env_spec``),
  ``agents``: for every saved agent its class tag and spec (``{"class": "ppo", "spec": {...}}``;
  :func:`load_agent` finds the class through :func:`zsceval.rl.agent.agent_class`),
  package/torch versions, git revision, env steps, and the SHA-256 of every other file, checked
  when loading (a corrupt or truncated file is refused).

The directory is first written under a temporary name and then renamed (``os.replace``), so a
killed process never leaves a half-written checkpoint under a valid name.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

import zsceval
from zsceval.io import apply_umask, atomic_directory, atomic_write_text
from zsceval.io import sha256_file as _sha256
from zsceval.rl.agent import agent_class, agent_class_name

__all__ = [
    "CheckpointError",
    "RefusedCheckpointError",
    "agent_fingerprint",
    "refusing",
    "atomic_write_text",
    "check_compatible",
    "decode_state",
    "encode_state",
    "find_checkpoint",
    "git_revision",
    "list_checkpoints",
    "load_agent",
    "load_checkpoint",
    "load_policy",
    "save_checkpoint",
]

FORMAT = "zsceval-checkpoint"
FORMAT_VERSION = 1
POLICIES = "policies.safetensors"
TRAIN_TENSORS = "train_state.safetensors"
TRAIN_JSON = "train_state.json"
META = "meta.json"


class CheckpointError(RuntimeError):
    """A checkpoint is missing, corrupt, truncated, or incompatible with the requested env."""


class RefusedCheckpointError(CheckpointError):
    """A checkpoint holds an agent that may not be loaded here (an evaluation partner inside a
    training run: see :func:`refusing`)."""


def agent_fingerprint(state: Mapping[str, torch.Tensor]) -> str:
    """SHA-256 of one agent's parameters: for every key in sorted order its name, dtype, shape and
    bytes. The same in a training run's checkpoint and in a partner set's export of that agent
    (which re-saves the agent alone, so the files' own digests differ).

    Args:
        state: the agent's ``state_dict`` (e.g. :func:`policy_weights` of a checkpoint), any device.

    Returns:
        64 hex digits.
    """
    h = hashlib.sha256()
    for key in sorted(state):
        t = state[key].detach().to("cpu").contiguous()
        h.update(f"{key}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


ACTOR_ONLY_STRIPPED: tuple[str, ...] = ("critic", "value_norm")
"""Parameter prefixes an actor-only copy of a PPO agent leaves out (:func:`strip_checkpoint`)."""
_STRIPPED_PREFIXES = tuple(f"{part}." for part in ACTOR_ONLY_STRIPPED)

_REFUSED: dict[str, str] = {}
"""Digests (:func:`agent_fingerprint`, or a checkpoint's ``meta.json`` SHA-256) that
:func:`load_checkpoint` refuses in this process, with what each one is."""
_REFUSED_WHY: list[str] = []


@contextlib.contextmanager
def refusing(digests: Mapping[str, str], why: str) -> Iterator[None]:
    """Refuse, inside the ``with`` block, every checkpoint whose ``meta.json`` SHA-256 or one of
    whose agents' :func:`agent_fingerprint` is in ``digests``: the fingerprint of all its
    parameters or of its acting ones alone (without the :data:`ACTOR_ONLY_STRIPPED` parameters).

    The training jobs hold the evaluation partners of their layout this way
    (:func:`zsceval.evaluation.exclusion.training_guard`): no evaluation partner, nor a copy of
    its checkpoint, can enter a training run (ZSC-Eval Sec. 4: the ego is scored with partners it
    never trained with). Nested blocks add to the outer one's digests.

    Args:
        digests: ``{sha256: what it is}``, e.g. ``"evaluation partner c000_final of
            zsceval:coordination_ring@1/test"``.
        why: the rule, appended to the error message.
    """
    saved, saved_why = dict(_REFUSED), list(_REFUSED_WHY)
    _REFUSED.update(digests)
    _REFUSED_WHY[:] = [why]
    try:
        yield
    finally:
        _REFUSED.clear()
        _REFUSED.update(saved)
        _REFUSED_WHY[:] = saved_why


def _check_refused(ckpt: Path, meta: dict[str, Any], weights: dict[str, torch.Tensor]) -> None:
    """Raise :class:`RefusedCheckpointError` when :func:`refusing` holds this checkpoint."""
    if not _REFUSED:
        return
    hits = []
    digest = _sha256(ckpt / META)
    if digest in _REFUSED:
        hits.append(f"its {META} (sha256 {digest}) is that of {_REFUSED[digest]}")
    for name in agent_entries(meta):
        state = policy_weights(weights, name)
        acting = {k: v for k, v in state.items() if not k.startswith(_STRIPPED_PREFIXES)}
        # the acting parameters alone too: a copy re-saved from an acting-only partner has a new critic
        for fp in dict.fromkeys((agent_fingerprint(state), agent_fingerprint(acting))):
            if fp in _REFUSED:
                hits.append(f"agent '{name}' has the parameters (sha256 {fp}) of {_REFUSED[fp]}")
                break
    if hits:
        why = f" ({_REFUSED_WHY[0]})" if _REFUSED_WHY else ""
        raise RefusedCheckpointError(f"refusing checkpoint {ckpt}: {'; '.join(hits)}{why}")


def git_revision() -> str | None:
    """``git rev-parse HEAD`` of the source tree zsceval is imported from, or None."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(zsceval.__file__).parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


# -- nested state <-> (JSON skeleton, flat tensors) ------------------------------------------------
def encode_state(obj: Any, tensors: dict[str, torch.Tensor], prefix: str = "s") -> Any:
    """JSON skeleton of a nested state; tensors are moved (to CPU, contiguous) into ``tensors``.

    Dict keys may be str or int (optimizer states); tuples are kept apart from lists.
    """
    if isinstance(obj, torch.Tensor):
        key = f"{prefix}"
        tensors[key] = obj.detach().to("cpu").contiguous().clone()
        return {"__tensor__": key}
    if isinstance(obj, dict):
        return {"__dict__": [[k, encode_state(v, tensors, f"{prefix}.{k}")] for k, v in obj.items()]}
    if isinstance(obj, tuple):
        return {"__tuple__": [encode_state(v, tensors, f"{prefix}.{i}") for i, v in enumerate(obj)]}
    if isinstance(obj, list):
        return [encode_state(v, tensors, f"{prefix}.{i}") for i, v in enumerate(obj)]
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    raise TypeError(f"cannot encode {type(obj).__name__} in a checkpoint state")


def decode_state(obj: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """Inverse of :func:`encode_state`."""
    if isinstance(obj, dict):
        if "__tensor__" in obj:
            return tensors[obj["__tensor__"]]
        if "__dict__" in obj:
            return {k: decode_state(v, tensors) for k, v in obj["__dict__"]}
        if "__tuple__" in obj:
            return tuple(decode_state(v, tensors) for v in obj["__tuple__"])
        return {k: decode_state(v, tensors) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode_state(v, tensors) for v in obj]
    return obj


# -- save ------------------------------------------------------------------------------------------
def _save_tensors(tensors: dict[str, torch.Tensor], path: Path) -> None:
    """``safetensors`` ``save_file``, whose write errors (disk full, quota) become ``OSError``."""
    try:
        save_file(tensors, str(path))
    except SafetensorError as exc:
        raise OSError(
            errno.EIO, f"could not write the checkpoint file ({exc}; disk full?)", str(path)
        ) from None


def save_checkpoint(
    root: str | Path,
    steps: int,
    policies: dict[str, Any],
    meta: dict[str, Any],
    train_state: dict[str, Any] | None = None,
) -> Path:
    """Write a checkpoint directory atomically and return its path.

    Args:
        root: the run's ``checkpoints`` directory.
        steps: env steps so far (names the directory).
        policies: agents to save, by name: instances of registered agent classes
            (:func:`zsceval.rl.agent.register_agent`) with a JSON-able ``spec``.
        meta: metadata (algo, env_spec, ...); ``policies``/``files``/``steps`` are filled in.
        train_state: nested resumable state (tensors, numbers, strings) or None.

    Returns:
        ``root / f"step_{steps:012d}"``. An existing checkpoint of the same step is replaced.

    Raises:
        TypeError: an agent whose class is not registered.
        OSError: the checkpoint could not be written (disk full, read-only); the previous
            checkpoints are untouched (the new one is written to a temporary folder first).
    """
    agents = {name: {"class": agent_class_name(p), "spec": p.spec} for name, p in policies.items()}
    final = Path(root) / f"step_{steps:012d}"
    with atomic_directory(final) as tmp:
        weights = {
            f"{name}.{k}": v.detach().to("cpu").contiguous().clone()
            for name, p in policies.items()
            for k, v in p.state_dict().items()
        }
        _save_tensors(weights, tmp / POLICIES)
        if train_state is not None:
            tensors: dict[str, torch.Tensor] = {}
            skeleton = encode_state(train_state, tensors)
            _save_tensors(tensors, tmp / TRAIN_TENSORS)
            (tmp / TRAIN_JSON).write_text(json.dumps(skeleton))
        for f in tmp.iterdir():
            apply_umask(f)  # safetensors writes 0600
        files = {f.name: _sha256(f) for f in sorted(tmp.iterdir())}
        full_meta = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            **meta,
            "steps": int(steps),
            "agents": agents,
            "resumable": train_state is not None,
            "zsceval_version": zsceval.__version__,
            "torch_version": torch.__version__,
            "git_revision": git_revision(),
            "files": files,
        }
        (tmp / META).write_text(json.dumps(full_meta, indent=2))
    return final


# -- find / load -----------------------------------------------------------------------------------
def list_checkpoints(run_dir: str | Path) -> list[Path]:
    """Checkpoint directories of a run, oldest first (temporary directories excluded)."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith("step_"))


def find_checkpoint(path: str | Path) -> Path:
    """Resolve a run directory (its latest checkpoint), a checkpoint directory or its meta.json.

    Raises:
        CheckpointError: nothing loadable at ``path``.
    """
    path = Path(path)
    if path.is_file() and path.name in (META, POLICIES):
        path = path.parent
    if (path / META).is_file():
        return path
    if path.is_dir():
        ckpts = list_checkpoints(path)
        if ckpts:
            return ckpts[-1]
        raise CheckpointError(f"{path} is neither a checkpoint (no {META}) nor a run with checkpoints")
    raise CheckpointError(f"no checkpoint or run directory at {path}")


def _read_meta(ckpt: Path) -> dict[str, Any]:
    try:
        meta = json.loads((ckpt / META).read_text())
    except FileNotFoundError:
        raise CheckpointError(f"checkpoint {ckpt} has no {META} (incomplete or not a checkpoint)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"checkpoint {ckpt}: {META} is corrupt or truncated ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{ckpt / META} is not a zsceval checkpoint")
    for name, digest in meta.get("files", {}).items():
        f = ckpt / name
        if not f.is_file():
            raise CheckpointError(f"checkpoint {ckpt} is incomplete: {name} is missing")
        if _sha256(f) != digest:
            raise CheckpointError(
                f"checkpoint {ckpt} is corrupt or truncated: {name} does not match its SHA-256 in {META}"
            )
    return meta


def _load_tensors(path: Path) -> dict[str, torch.Tensor]:
    try:
        return load_file(str(path))
    except FileNotFoundError:
        raise CheckpointError(f"cannot read {path}: the file is missing") from None
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"cannot read {path}: corrupt or truncated ({exc})") from None


def load_checkpoint(
    path: str | Path, with_train_state: bool = False, *, guarded: bool = True
) -> tuple[Path, dict, dict, dict | None]:
    """Read and verify a checkpoint.

    Args:
        path: run directory, checkpoint directory or meta.json.
        with_train_state: also decode the resumable training state.
        guarded: apply :func:`refusing` (False only to fingerprint the refused partners themselves).

    Returns:
        ``(checkpoint_dir, meta, weights, train_state)``; weights are CPU tensors keyed
        ``<policy>.<param>``; ``train_state`` is None unless requested.

    Raises:
        CheckpointError: missing, corrupt, truncated, with NaN or infinite weights, or not resumable
            when a train state is asked.
        RefusedCheckpointError: inside :func:`refusing`, a checkpoint it holds (names both).
    """
    ckpt = find_checkpoint(path)
    meta = _read_meta(ckpt)
    weights = _load_tensors(ckpt / POLICIES)
    broken = [k for k, t in weights.items() if t.is_floating_point() and not bool(torch.isfinite(t).all())]
    if broken:
        raise CheckpointError(
            f"checkpoint {ckpt} holds non-finite weights ({', '.join(broken[:3])}"
            f"{' ...' if len(broken) > 3 else ''}): its run diverged; use an earlier checkpoint"
        )
    if guarded:
        _check_refused(ckpt, meta, weights)
    state = None
    if with_train_state:
        if not meta.get("resumable"):
            raise CheckpointError(f"checkpoint {ckpt} holds no training state (not resumable)")
        tensors = _load_tensors(ckpt / TRAIN_TENSORS)
        try:
            skeleton = json.loads((ckpt / TRAIN_JSON).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise CheckpointError(f"checkpoint {ckpt}: {TRAIN_JSON} is corrupt ({exc})") from None
        state = decode_state(skeleton, tensors)
    return ckpt, meta, weights, state


def policy_weights(weights: dict[str, torch.Tensor], name: str) -> dict[str, torch.Tensor]:
    """The state dict of policy ``name`` out of a checkpoint's flat weights."""
    prefix = f"{name}."
    return {k[len(prefix) :]: v for k, v in weights.items() if k.startswith(prefix)}


def agent_entries(meta: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{name: {"class": ..., "spec": ...}}`` of a checkpoint's agents (a checkpoint of format
    version 1 without ``agents`` lists PPO policy specs under ``policies``)."""
    if "agents" in meta:
        return meta["agents"]
    return {name: {"class": "ppo", "spec": spec} for name, spec in meta.get("policies", {}).items()}


def load_agent(
    path: str | Path, name: str | None = None, device: str | torch.device = "cpu"
) -> tuple[Any, dict]:
    """Load one agent of a checkpoint (default: the ego named in its metadata), of any registered class.

    Args:
        path: run directory, checkpoint directory or meta.json; ``PATH#name`` picks an agent.
        name: agent name (overrides ``#name``).
        device: where to put the agent.

    Returns:
        ``(agent in eval mode, meta)``.

    Raises:
        CheckpointError: as :func:`load_checkpoint`, an unknown agent name, or weights that do
            not match the spec.
        zsceval.rl.agent.UnknownAgentClassError: the agent's class is not registered.
    """
    path = str(path)
    if "#" in path and name is None:
        path, name = path.rsplit("#", 1)
    ckpt, meta, weights, _ = load_checkpoint(path)
    entries = agent_entries(meta)
    name = name or meta.get("ego") or next(iter(entries))
    if name not in entries:
        raise CheckpointError(f"checkpoint {ckpt} has no agent '{name}'; it has {', '.join(entries)}")
    entry = entries[name]
    agent = agent_class(entry["class"]).from_spec(entry["spec"])
    try:
        _load_agent_state(agent, policy_weights(weights, name), tuple(entry.get("stripped", ())))
    except RuntimeError as exc:
        raise CheckpointError(
            f"checkpoint {ckpt}: weights of '{name}' do not match its spec: {exc}"
        ) from None
    return agent.to(device).eval(), meta


def _load_agent_state(agent: Any, state: dict[str, torch.Tensor], stripped: tuple[str, ...]) -> None:
    """Load ``state`` into ``agent``; parameters under a ``stripped`` prefix may be absent (they keep
    their initial values), any other missing or unexpected key is an error."""
    if not stripped:
        agent.load_state_dict(state)
        return
    missing, unexpected = agent.load_state_dict(state, strict=False)
    prefixes = tuple(f"{part}." for part in stripped)
    bad = [k for k in missing if not k.startswith(prefixes)]
    if bad or unexpected:
        raise RuntimeError(f"missing keys {bad}, unexpected keys {list(unexpected)}")


def strip_checkpoint(
    src: str | Path, dst: str | Path, stripped: tuple[str, ...] = ACTOR_ONLY_STRIPPED
) -> Path:
    """Copy a checkpoint without the parameters under ``stripped`` (an acting-only copy: an
    evaluation partner only acts, so its critic and value normalizer are not needed).

    The copy keeps the source's metadata (git revision, versions, env spec, steps) and records
    ``stripped`` in every agent's entry, so that :func:`load_agent` accepts those parameters'
    absence (they keep the initial values of the agent's class, and the agent must only act). A
    resumable source's training state (optimizer, counters) is left out: the copy is not resumable.
    The weights file holds the remaining tensors unchanged; the same source gives the same bytes.

    Args:
        src: the source checkpoint (checkpoint directory or its meta.json).
        dst: the new checkpoint directory (written atomically; replaced if present).
        stripped: parameter-name prefixes (below the agent's name) to leave out.

    Returns:
        ``dst / "meta.json"``.

    Raises:
        CheckpointError: ``src`` cannot be read or has no parameter under a ``stripped`` prefix.
    """
    ckpt, meta, weights, _ = load_checkpoint(src, guarded=False)
    agents = agent_entries(meta)
    prefixes = tuple(f"{name}.{part}." for name in agents for part in stripped)
    keep = {k: v.contiguous() for k, v in weights.items() if not k.startswith(prefixes)}
    if len(keep) == len(weights):
        raise CheckpointError(f"{ckpt} holds no parameter under {list(stripped)}")
    meta = {**meta, "agents": {n: {**e, "stripped": list(stripped)} for n, e in agents.items()}}
    meta.pop("policies", None)
    meta["resumable"] = False  # a resumable source's training state is left out too
    final = Path(dst)
    with atomic_directory(final) as tmp:
        _save_tensors(keep, tmp / POLICIES)
        apply_umask(tmp / POLICIES)
        meta["files"] = {POLICIES: _sha256(tmp / POLICIES)}
        (tmp / META).write_text(json.dumps(meta, indent=2))
    return final / META


load_policy = load_agent
"""Alias of :func:`load_agent` (checkpoints of PPO policies load as :class:`~zsceval.rl.policy.Policy`)."""


def check_compatible(meta: dict[str, Any], env_spec: dict[str, Any], what: str = "checkpoint") -> None:
    """Refuse a checkpoint trained on another layout or observation spec.

    Raises:
        CheckpointError: naming each differing field with both values.
    """
    saved = meta.get("env_spec")
    env_spec = json.loads(json.dumps(env_spec))
    if saved != env_spec:
        raise CheckpointError(
            f"{what} was trained on a different layout or observation spec and cannot play here:\n  "
            + "\n  ".join(spec_differences(saved, env_spec))
        )


def spec_differences(saved: Any, requested: Any, prefix: str = "") -> list[str]:
    """``field: checkpoint X, requested Y`` for every differing (nested) field of two env specs;
    long values are shortened."""

    def short(v: Any) -> str:
        text = json.dumps(v, sort_keys=True) if v is not _MISSING else "(absent)"
        return text if len(text) <= 60 else text[:57] + "..."

    if isinstance(saved, dict) and isinstance(requested, dict):
        out = []
        for key in sorted(set(saved) | set(requested)):
            a, b = saved.get(key, _MISSING), requested.get(key, _MISSING)
            if a != b:
                out += (
                    spec_differences(a, b, f"{prefix}{key}.")
                    if a is not _MISSING and b is not _MISSING
                    else [f"{prefix}{key}: checkpoint {short(a)}, requested {short(b)}"]
                )
        return out
    name = prefix.rstrip(".") or "env_spec"
    return [f"{name}: checkpoint {short(saved)}, requested {short(requested)}"]


_MISSING = object()
