"""The Overcooked step compiled by ``inductor`` (the compile test at a small size): the
generated C++ kernels give the eager ``step``'s results bit for bit across two auto-resets.

In its own file so that pytest-xdist runs it beside the rest (inductor's code generation takes
about a minute and a half of one core with an empty cache)."""

import torch
import torch._dynamo as dynamo

from tests.envs.test_compile import _check_equal, _pair


def test_inductor_graph_step_equals_eager_step_at_a_small_size():
    dynamo.reset()
    eager, other = _pair("cramped_room", 0, B=4, horizon=6)
    fn = torch.compile(other.graph_step, fullgraph=True, dynamic=False)
    assert _check_equal(eager, other, fn, steps=14, B=4) == 2
