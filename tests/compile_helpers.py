"""Helpers of the compile tests: graph breaks of a function and its aot_eager compilation."""

import torch
import torch._dynamo as dynamo


def graph_breaks(fn, *args, **kwargs) -> tuple[int, list[str]]:
    """``(graph count, break reasons)`` of tracing ``fn(*args, **kwargs)`` with dynamo (``(1, [])``:
    one graph, no break)."""
    dynamo.reset()
    e = dynamo.explain(fn)(*args, **kwargs)
    return e.graph_count, [b.reason for b in e.break_reasons]


def aot_eager(fn):
    """``fn`` compiled whole (``fullgraph=True, dynamic=False``) with the ``aot_eager`` backend: the
    traced graph run eagerly, so its results can be compared with ``fn``'s."""
    return torch.compile(fn, fullgraph=True, dynamic=False, backend="aot_eager")
