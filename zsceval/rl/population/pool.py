"""Policy pools: N same-spec policies with stacked weights acting for many rows in one forward.

A :class:`PolicyPool` stores every tensor of its members' state dicts stacked on a leading member
axis (``[M, ...]``). Given a per-row assignment ``member int64 [N]``, the rows are grouped by
member, each group padded to the largest group, and all present members run in one forward:
:func:`torch.func.vmap` over :func:`torch.func.functional_call` of a weightless template policy,
so the pool runs exactly the networks of :mod:`zsceval.rl.networks` (linear layers become batched
matmuls, convolutions grouped convolutions). The pool loops over the present members instead
(still on the stacked weights) when padding would more than double the rows computed (very
skewed assignments), and for CNN members on CPU, where a loop of convolutions is faster than one
grouped convolution (docs/performance.md, "Policy pool acting"); see :attr:`PolicyPool.strategy`.

Pools grow while training (COLE adds a member per generation: :meth:`PolicyPool.add`) and are
saved as one checksummed artifact (:meth:`PolicyPool.save`, :meth:`PolicyPool.load`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn
from torch.func import functional_call, vmap

from zsceval.io import atomic_directory, sha256_file
from zsceval.rl.agent import ActOutput, sample_actions
from zsceval.rl.policy import Policy
from zsceval.rl.population.functional import Layout, StepForward, static_slots

__all__ = [
    "POOL_FORMAT",
    "POOL_JSON",
    "POOL_VERSION",
    "POOL_WEIGHTS",
    "PolicyPool",
    "PoolError",
    "same_network",
]

POOL_FORMAT = "zsceval-policy-pool"
POOL_VERSION = 1
POOL_WEIGHTS = "pool.safetensors"
POOL_JSON = "pool.json"


class PoolError(RuntimeError):
    """A pool artifact is missing, corrupt, or does not match its own description."""


def _buffer_name(key: str) -> str:
    return "stack__" + key.replace(".", "__")


def same_network(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two network specs describe the same network: equal apart from ``model.bf16``, the
    precision it computes at (its weights are float32 either way)."""

    def network(spec: dict[str, Any]) -> dict[str, Any]:
        return {**spec, "model": {k: v for k, v in spec.get("model", {}).items() if k != "bf16"}}

    return network(a) == network(b)


class PolicyPool(nn.Module):
    """Same-spec policies with stacked weights, acting for a per-row member assignment.

    Member ``i``'s tensors are ``stacked[key][i]`` for every key of ``Policy.state_dict()``
    (actor, critic and value normalizer); they are buffers of this module, so ``pool.to(device)``
    and ``state_dict()`` cover them. Acting methods run under ``torch.no_grad()`` and under
    bfloat16 autocast when ``spec["model"]["bf16"]`` is set (as :class:`Policy`).

    Args:
        spec: the members' network spec (:func:`zsceval.rl.policy.network_spec`).
        members: initial member policies (copied; each of ``spec``'s network, :func:`same_network`).
        names: one unique name per member (default ``member_<index>``).

    Raises:
        ValueError: a member's spec differs from ``spec``, or names are not unique / miscounted.
    """

    def __init__(
        self,
        spec: dict[str, Any],
        members: Iterable[Policy] = (),
        names: Sequence[str] | None = None,
    ) -> None:
        super().__init__()
        self.spec = copy.deepcopy(spec)
        template = Policy(self.spec)
        self._template_shapes = {k: (tuple(v.shape), v.dtype) for k, v in template.state_dict().items()}
        self.bf16 = template.bf16
        self.hidden_size = template.hidden_size
        self.num_actions = int(self.spec["num_actions"])
        # The template never holds weights: functional_call supplies them. Kept outside the module
        # tree (not a submodule) so it is neither saved nor moved.
        self._forward = [StepForward(template.to("meta"))]
        for key, (shape, dtype) in self._template_shapes.items():
            self.register_buffer(_buffer_name(key), torch.zeros((0, *shape), dtype=dtype))
        self.names: list[str] = []
        self.strategy = "auto"
        """How rows are batched: ``vmap`` (one forward over present members, groups padded to the
        largest), ``loop`` (one forward per present member), ``static`` (one forward over every
        member with ``capacity`` slots each, by default all N rows: static shapes and no host
        synchronization, what a compiled acting graph runs) or ``auto`` (``static`` inside
        ``torch.compile`` or with a ``capacity``; otherwise vmap unless padding would more than
        double the rows computed, or the encoder is a CNN on CPU, where the loop is faster:
        docs/performance.md "Policy pool acting")."""
        self._cast_cache: dict[str, tuple] = {}
        self._layout_cache: tuple[torch.Tensor, int, int, Layout] | None = None
        self.sha256: str | None = None
        """SHA-256 of ``pool.safetensors`` after :meth:`save` / :meth:`load`; None once changed."""
        members = list(members)
        if names is not None and len(names) != len(members):
            raise ValueError(f"{len(names)} names for {len(members)} members")
        for i, policy in enumerate(members):
            self.add(policy, None if names is None else names[i])

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def from_policies(
        cls,
        policies: Sequence[Policy],
        names: Sequence[str] | None = None,
        spec: dict[str, Any] | None = None,
    ) -> PolicyPool:
        """A pool of ``policies`` (one network: :func:`same_network`), on the first one's device.

        Args:
            policies: the members.
            names: one unique name per member (default ``member_<index>``).
            spec: the pool's spec, whose ``model.bf16`` sets the precision every member acts at
                (default: the first policy's). A policy trained elsewhere may have been trained
                where ``model.bf16: auto`` chose otherwise; its float32 weights are the same network.

        Raises:
            ValueError: no policies, or their networks differ.
        """
        if not policies:
            raise ValueError("from_policies needs a policy (PolicyPool(spec) makes an empty pool)")
        device = next(policies[0].parameters()).device
        return cls(policies[0].spec if spec is None else spec, (), None).to(device)._extend(policies, names)

    @classmethod
    def empty(cls, spec: dict[str, Any], count: int, names: Sequence[str] | None = None) -> PolicyPool:
        """A pool of ``count`` all-zero members (to be filled by ``load_state_dict``)."""
        pool = cls(spec)
        for key, (shape, dtype) in pool._template_shapes.items():
            setattr(pool, _buffer_name(key), torch.zeros((count, *shape), dtype=dtype))
        pool.names = list(names) if names is not None else [f"member_{i}" for i in range(count)]
        pool._check_names()
        return pool

    def _extend(self, policies: Sequence[Policy], names: Sequence[str] | None) -> PolicyPool:
        if names is not None and len(names) != len(policies):
            raise ValueError(f"{len(names)} names for {len(policies)} members")
        for i, policy in enumerate(policies):
            self.add(policy, None if names is None else names[i])
        return self

    def _check_names(self) -> None:
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"member names must be unique, got {self.names}")

    # -- members --------------------------------------------------------------------------------
    @property
    def stacked(self) -> dict[str, torch.Tensor]:
        """Stacked tensors ``{state-dict key of Policy: [M, ...]}`` (views of the buffers)."""
        return {k: getattr(self, _buffer_name(k)) for k in self._template_shapes}

    @property
    def device(self) -> torch.device:
        """Device of the stacked weights."""
        return next(iter(self.stacked.values())).device

    def __len__(self) -> int:
        return len(self.names)

    def add(self, policy: Policy, name: str | None = None) -> int:
        """Append a copy of ``policy``'s weights (incl. value normalizer) as a new member.

        Args:
            policy: a :class:`Policy` with the pool's network (:func:`same_network`; it acts at the
                pool's precision), on any device.
            name: unique member name (default ``member_<index>``).

        Returns:
            The new member's index.

        Raises:
            ValueError: the network differs from the pool's, or the name is taken.
        """
        if not same_network(policy.spec, self.spec):
            raise ValueError(f"policy spec {policy.spec} differs from the pool's member spec {self.spec}")
        index = len(self)
        name = f"member_{index}" if name is None else str(name)
        if name in self.names:
            raise ValueError(f"a member named '{name}' is already in the pool")
        state = policy.state_dict()
        device = self.device
        for key in self._template_shapes:
            old = getattr(self, _buffer_name(key))
            new = state[key].detach().to(device=device, dtype=old.dtype).unsqueeze(0)
            setattr(self, _buffer_name(key), torch.cat([old, new]))
        self.names.append(name)
        self.sha256 = None
        return index

    def member(self, index: int) -> Policy:
        """A standalone :class:`Policy` holding member ``index``'s weights, on the pool's device.

        Raises:
            IndexError: ``index`` outside ``[0, len(pool))``.
        """
        if not 0 <= index < len(self):
            raise IndexError(f"member {index} out of range for a pool of {len(self)}")
        policy = Policy(self.spec)
        policy.load_state_dict({k: v[index].clone() for k, v in self.stacked.items()})
        return policy.to(self.device).eval()

    def initial_state(self, rows: int, device: torch.device | str) -> torch.Tensor:
        """Zero recurrent state ``float32 [rows, hidden]`` (``[rows, 0]`` when feed-forward)."""
        return torch.zeros(rows, self.hidden_size, device=device)

    # -- acting ---------------------------------------------------------------------------------
    def _autocast(self):
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16)

    def _weights(self, keys: list[str], dtype: torch.dtype) -> dict[str, torch.Tensor]:
        """Stacked tensors of ``keys`` in ``dtype``; bf16 copies are cached until a buffer changes."""
        source = {k: getattr(self, _buffer_name(k)) for k in keys}
        if dtype == torch.float32:
            return source
        if torch.compiler.is_compiling():  # a graph casts them itself (no cache keyed on pointers)
            return {k: v.to(dtype) for k, v in source.items()}
        signature = tuple((k, v.data_ptr(), v._version, v.shape, v.device) for k, v in source.items())
        cached = self._cast_cache.get(keys[0])
        if cached is None or cached[0] != signature:
            cached = (signature, {k: v.to(dtype) for k, v in source.items()})
            self._cast_cache[keys[0]] = cached
        return cached[1]

    def _run(
        self,
        side: str,
        obs: torch.Tensor,
        h: torch.Tensor,
        starts: torch.Tensor,
        member: torch.Tensor,
        capacity: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Forward of ``side`` for every row with its member's weights: ``(out [N, D], h [N, hidden])``."""
        N = obs.shape[0]
        if member.shape != (N,):
            raise ValueError(f"member must be int64 [{N}], got shape {tuple(member.shape)}")
        module = self._forward[0]
        out_dim = self.num_actions if side == "actor" else 1
        if N == 0:
            return torch.empty(0, out_dim, device=obs.device), h.clone()

        def call(params, obs_, h_, starts_):
            return functional_call(module, params, (side, obs_, h_, starts_))

        strategy = self.strategy
        if strategy == "auto" and (capacity is not None or torch.compiler.is_compiling()):
            strategy = "static"
        layout = None if strategy == "static" else self._layout(member)
        if strategy == "auto":
            strategy = layout.strategy(self.spec["model"]["kind"], obs.device)
        # Under bf16 the weights are cast here, as autocast would cast them per op (autocast does
        # not cast the weights of convolutions under vmap).
        weights = self._weights(self._keys(side + "."), torch.bfloat16 if self.bf16 else torch.float32)
        flat_obs = obs.reshape(N, -1)

        def grouped(params, idx, pos, P, G):
            """One vmapped forward over P groups of G slots (rows ``idx``), back in row order (``pos``)."""
            y, h_new = vmap(call)(
                params,
                flat_obs.index_select(0, idx).view(P, G, *obs.shape[1:]),
                h.index_select(0, idx).view(P, G, h.shape[-1]),
                starts.index_select(0, idx).view(P, G),
            )
            return y.flatten(0, 1).index_select(0, pos), h_new.flatten(0, 1).index_select(0, pos)

        with torch.no_grad(), self._autocast():
            if strategy == "static":
                M, C = len(self), N if capacity is None else int(capacity)
                return grouped(weights, *static_slots(member, M, C), M, C)
            if strategy == "vmap":
                P = len(layout.present)
                params = weights
                if P < len(self):
                    sel = layout.present_index()
                    params = {k: v.index_select(0, sel) for k, v in weights.items()}
                return grouped(params, *layout.padded(), P, layout.largest)
            out = torch.empty(N, out_dim, device=obs.device)
            h_out = torch.empty_like(h)
            for m, rows in layout.rows_of():
                y, h_new = call(
                    {k: v[m] for k, v in weights.items()},
                    flat_obs.index_select(0, rows).view(-1, *obs.shape[1:]),
                    h.index_select(0, rows),
                    starts.index_select(0, rows),
                )
                out.index_copy_(0, rows, y)
                h_out.index_copy_(0, rows, h_new)
            return out, h_out

    def group_rows(self, member: torch.Tensor) -> None:
        """Group the rows of ``member int64 [N]`` now (host reads: once per seating), so acting
        with this same, unchanged tensor reads nothing on the host (a runner calls this when it
        re-seats games).

        Raises:
            IndexError: a member index outside ``[0, len(pool))``.
        """
        self._layout(member).padded()

    def _layout(self, member: torch.Tensor) -> Layout:
        """The rows grouped by member, kept while the same unchanged ``member`` tensor comes back:
        a runner passes one tensor per seating, so grouping reads the host once per re-seat (per
        episode), not once per step."""
        cached = self._layout_cache
        if cached is not None and cached[0] is member and cached[1:3] == (member._version, len(self)):
            return cached[3]
        layout = Layout.of(member, len(self))
        self._layout_cache = (member, member._version, len(self), layout)
        return layout

    def _keys(self, prefix: str) -> list[str]:
        return [k for k in self._template_shapes if k.startswith(prefix)]

    @torch.no_grad()
    def logits(
        self, obs: torch.Tensor, h: torch.Tensor, starts: torch.Tensor, member: torch.Tensor,
        capacity: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        """Unmasked logits of N rows, each with its member's actor (as ``Policy.logits`` per member).

        Args:
            obs: ``[N, *obs_shape]`` in the env's dtype (uint8 for Overcooked).
            h: ``float32 [N, hidden]`` actor state before this step (``[N, 0]`` if feed-forward).
            starts: ``bool [N]`` rows whose episode starts at this step (state zeroed first).
            member: ``int64 [N]`` member index of each row.
            capacity: rows per member of the ``static`` strategy (:attr:`strategy`; giving it
                selects that strategy under ``auto``): at least the largest group, default N.

        Returns:
            ``(logits float32 [N, A], h float32 [N, hidden])``.

        Raises:
            IndexError: a member index outside ``[0, len(pool))`` (the ``static`` strategy raises
                it from the indexing, or a device-side assert on CUDA).
        """
        return self._run("actor", obs, h, starts, member, capacity)

    @torch.no_grad()
    def act(
        self,
        obs: torch.Tensor,
        avail: torch.Tensor | None,
        h: torch.Tensor,
        starts: torch.Tensor,
        member: torch.Tensor,
        generator: torch.Generator | None = None,
        deterministic: bool = False,
        noise: torch.Tensor | None = None,
        capacity: int | None = None,
    ) -> ActOutput:
        """Sample actions for N rows, row ``i`` played by member ``member[i]``.

        The logits of all rows are assembled in row order and sampled once with
        :func:`~zsceval.rl.agent.sample_actions`, so under the same generator state the actions
        and log-probs equal those of computing each member's logits alone and sampling once.

        Args:
            obs: ``[N, *obs_shape]``; avail: ``bool [N, A]`` or None; h: ``float32 [N, hidden]``;
            starts: ``bool [N]``; member: ``int64 [N]``.
            generator: torch generator on the rows' device; None uses the global one.
            deterministic: arg-max actions (no random draw).
            noise: ``float32 [N, A]`` uniform draws used instead of ``generator``
                (:func:`~zsceval.rl.agent.sample_actions`).
            capacity: see :meth:`logits`. With the ``static`` strategy (inside ``torch.compile``
                or with a ``capacity``) and ``noise``, acting traces as one graph with no host
                synchronization.

        Returns:
            :class:`~zsceval.rl.agent.ActOutput` (``actions int64 [N]``, ``log_probs float32 [N]``,
            ``state float32 [N, hidden]``, ``extras["logits"] float32 [N, A]``).
        """
        logits, h_new = self.logits(obs, h, starts, member, capacity)
        actions, logp = sample_actions(logits, avail, generator, deterministic, noise)
        return ActOutput(actions, logp, h_new, {"logits": logits})

    @torch.no_grad()
    def values(
        self, critic_obs: torch.Tensor, h: torch.Tensor, starts: torch.Tensor, member: torch.Tensor,
        capacity: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        """Normalized critic values of N rows with their members' critics (as ``Policy.value``).

        Args:
            critic_obs: ``[N, *critic_obs_shape]``; h: ``float32 [N, hidden]`` critic state;
            starts: ``bool [N]``; member: ``int64 [N]``; capacity: see :meth:`logits`.

        Returns:
            ``(values float32 [N] (normalized), h float32 [N, hidden])``.
        """
        v, h_new = self._run("critic", critic_obs, h, starts, member, capacity)
        return v.squeeze(-1), h_new

    # -- artifact -------------------------------------------------------------------------------
    def save(self, directory: str | Path) -> str:
        """Write the pool as one artifact: ``directory/pool.safetensors`` + ``directory/pool.json``.

        ``pool.safetensors`` holds the stacked tensors (keys as ``Policy.state_dict()``, leading
        member axis); ``pool.json`` the format tag, version, member spec, names and the weights
        file's SHA-256. Written to a temporary directory next to ``directory``, then renamed
        over it (an existing pool at ``directory`` is replaced).

        Returns:
            The hex SHA-256 of ``pool.safetensors`` (also stored as ``self.sha256``).
        """
        with atomic_directory(directory) as tmp:
            tensors = {k: v.detach().to("cpu").contiguous().clone() for k, v in self.stacked.items()}
            save_file(tensors, str(tmp / POOL_WEIGHTS))
            digest = sha256_file(tmp / POOL_WEIGHTS)
            meta = {
                "format": POOL_FORMAT,
                "version": POOL_VERSION,
                "members": len(self),
                "names": list(self.names),
                "spec": self.spec,
                "weights": POOL_WEIGHTS,
                "sha256": digest,
            }
            (tmp / POOL_JSON).write_text(json.dumps(meta, indent=2))
        self.sha256 = digest
        return digest

    @staticmethod
    def read_meta(directory: str | Path) -> dict[str, Any]:
        """``pool.json`` of a saved pool (format tag checked; the weights are not read).

        Raises:
            PoolError: ``pool.json`` missing, unreadable, or not a zsceval policy pool.
        """
        path = Path(directory) / POOL_JSON
        try:
            meta = json.loads(path.read_text())
        except FileNotFoundError:
            raise PoolError(f"no policy pool at {directory}: {path} is missing") from None
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise PoolError(f"{path} is corrupt or truncated ({exc})") from None
        if not isinstance(meta, dict) or meta.get("format") != POOL_FORMAT:
            raise PoolError(f"{path} is not a zsceval policy pool (format tag '{POOL_FORMAT}' expected)")
        if meta.get("version") != POOL_VERSION:
            found = meta.get("version")
            raise PoolError(f"{path}: pool format version {found} (this zsceval reads {POOL_VERSION})")
        return meta

    @classmethod
    def load(cls, directory: str | Path, device: torch.device | str = "cpu") -> PolicyPool:
        """Read a pool written by :meth:`save`, verifying the weights against their SHA-256.

        Args:
            directory: the folder holding ``pool.json`` and ``pool.safetensors``.
            device: where to put the stacked weights.

        Returns:
            The pool in eval mode, ``sha256`` set to the verified digest.

        Raises:
            PoolError: a file is missing, corrupt or truncated, its SHA-256 does not match
                ``pool.json``, or the tensors do not match the member spec (the message names the file).
        """
        directory = Path(directory)
        meta = cls.read_meta(directory)
        weights = directory / POOL_WEIGHTS
        if not weights.is_file():
            raise PoolError(f"pool {directory} is incomplete: {weights} is missing")
        digest = sha256_file(weights)
        if digest != meta.get("sha256"):
            raise PoolError(
                f"{weights} is corrupt or was altered: its SHA-256 {digest} does not match "
                f"{meta.get('sha256')} in {directory / POOL_JSON}"
            )
        try:
            tensors = load_file(str(weights))
        except (SafetensorError, OSError, ValueError) as exc:
            raise PoolError(f"cannot read {weights}: corrupt or truncated ({exc})") from None
        try:
            pool = cls.empty(meta["spec"], int(meta["members"]), meta["names"])
        except (KeyError, TypeError, ValueError) as exc:
            raise PoolError(f"{directory / POOL_JSON} does not describe a valid pool ({exc!r})") from None
        expected = {k: v.shape for k, v in pool.stacked.items()}
        found = {k: v.shape for k, v in tensors.items()}
        if expected != found:
            missing = sorted(set(expected) - set(found))
            extra = sorted(set(found) - set(expected))
            shapes = sorted(k for k in set(expected) & set(found) if expected[k] != found[k])
            raise PoolError(
                f"{weights} does not match the member spec in {directory / POOL_JSON}: "
                f"missing {missing}, unexpected {extra}, wrong shape {shapes}"
            )
        for key, value in tensors.items():
            setattr(pool, _buffer_name(key), value.to(pool.stacked[key].dtype))
        pool = pool.to(device).eval()
        pool.sha256 = digest
        return pool

    def extra_repr(self) -> str:
        model = self.spec["model"]
        return f"members={len(self)}, kind={model['kind']}, recurrent={model['recurrent']}, bf16={self.bf16}"
