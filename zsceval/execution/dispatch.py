"""What a piece of tensor code asks of the dispatcher: counting its ATen ops, and refusing the
ones that synchronize with the host.

On CPU a host synchronization costs nothing, so a CUDA-only check (``torch.cuda.set_sync_debug_mode``)
cannot guard the hot paths in CI. These helpers watch the ATen ops instead: an op whose output
size or value the host must read (``nonzero``, ``masked_select``, ``.item()`` / ``bool(tensor)``,
which dispatch ``_local_scalar_dense``) is exactly what would stall a GPU stream or break a
``torch.compile`` graph. ``.tolist()``, ``.numpy()`` and ``.cpu()`` of a CPU tensor dispatch no
op; a ``fullgraph`` compile (dynamo's ``explain``) catches those.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["HOST_SYNC_OPS", "HostSyncError", "allow_host_sync", "count_ops", "forbid_host_sync"]

HOST_SYNC_OPS = frozenset({
    "aten::_local_scalar_dense",  # .item(), int(t), bool(t)
    "aten::nonzero",
    "aten::nonzero_static",
    "aten::masked_select",
    "aten::unique_dim",
    "aten::_unique2",
    "aten::unique_consecutive",
    "aten::repeat_interleave",  # with a tensor of repeats: its output size is data-dependent
})  # fmt: skip
"""ATen ops whose result the host must read, or whose output shape depends on tensor values
(boolean-mask indexing dispatches ``index`` with a bool mask, caught separately).
``_assert_async`` is not one: on CUDA the check runs on the device without stopping the host."""


class HostSyncError(RuntimeError):
    """A data-dependent op (host synchronization) ran inside :func:`forbid_host_sync`."""


class _Counting(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.counts[func._schema.name] += 1
        return func(*args, **(kwargs or {}))


_allowed = 0  # > 0 inside allow_host_sync


class _Forbidding(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if _allowed:
            return func(*args, **(kwargs or {}))
        name = func._schema.name
        if name in HOST_SYNC_OPS:
            raise HostSyncError(f"{name} synchronizes with the host (data-dependent op)")
        if name in ("aten::index", "aten::index_put", "aten::index_put_") and any(
            isinstance(i, torch.Tensor) and i.dtype == torch.bool
            for i in (args[1] if len(args) > 1 else [])
            if i is not None
        ):
            raise HostSyncError(f"{name} with a boolean mask (its output size depends on the mask)")
        return func(*args, **(kwargs or {}))


@contextmanager
def count_ops() -> Iterator[Counter[str]]:
    """Count the ATen ops dispatched inside the block (by schema name, e.g. ``aten::add``).

    Yields:
        A ``Counter`` filled as the block runs; ``sum(counter.values())`` is the number of
        dispatched ops (each is at least one kernel launch on a GPU).
    """
    mode = _Counting()
    with mode:
        yield mode.counts


@contextmanager
def forbid_host_sync() -> Iterator[None]:
    """Raise :class:`HostSyncError` at the first data-dependent op inside the block.

    Raises:
        HostSyncError: an op of :data:`HOST_SYNC_OPS`, or indexing with a boolean mask.
    """
    with _Forbidding():
        yield


@contextmanager
def allow_host_sync() -> Iterator[None]:
    """Inside :func:`forbid_host_sync`, let the block synchronize (e.g. a test that allows the
    once-per-episode re-seat of a population run and forbids every other sync of the rollout)."""
    global _allowed
    _allowed += 1
    try:
        yield
    finally:
        _allowed -= 1
