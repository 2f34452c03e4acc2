"""``categorical_entropy``: bit for bit the plain ``-(exp(logp) * logp).sum(-1)``, values and gradients,
with masked actions (whose ``exp`` leaves the CPU's fast vector kernel) and the edge cases."""

import torch
import torch.nn.functional as F

from zsceval.rl.networks import categorical_entropy, masked_logits


def plain(logp_all: torch.Tensor) -> torch.Tensor:
    return -(logp_all.exp() * logp_all).sum(-1)


def both(logits: torch.Tensor, avail: torch.Tensor | None):
    """Entropy and the logits' gradient (through ``log_softmax``) with each formula."""
    out = []
    for fn in (plain, categorical_entropy):
        x = logits.clone().requires_grad_()
        ent = fn(F.log_softmax(masked_logits(x, avail), -1))
        (ent * torch.linspace(-1, 1, ent.numel()).view(ent.shape)).sum().backward()
        out.append((ent.detach(), x.grad))
    return out


def test_equal_bit_for_bit_with_masked_actions():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(257, 1068, generator=g) * 4
    avail = torch.rand(257, 1068, generator=g) < 0.05
    avail[:, 0] = True
    avail[0] = False
    avail[0, 3] = True  # one available action: entropy exactly 0
    # a near-deterministic row: its other available actions' probabilities are normal, subnormal, 0
    avail[1] = False
    avail[1, [0, 5, 6, 7]] = True
    logits[1, [0, 5, 6, 7]] = torch.tensor([-200.0, 10.0, -85.0, -60.0])
    (e0, g0), (e1, g1) = both(logits, avail)
    assert torch.equal(e0, e1) and torch.equal(g0, g1)
    assert e0[0].item() == 0.0
    # the row with subnormal probabilities: they are there and count in both
    logp = F.log_softmax(masked_logits(logits[1:2], avail[1:2]), -1)
    assert ((logp.exp() > 0) & (logp.exp() < torch.finfo(torch.float32).tiny)).any()


def test_equal_without_a_mask_and_on_subnormal_inputs():
    g = torch.Generator().manual_seed(1)
    (e0, g0), (e1, g1) = both(torch.randn(64, 9, generator=g), None)
    assert torch.equal(e0, e1) and torch.equal(g0, g1)
    # direct inputs across every range of exp: normal, subnormal, zero
    x = torch.linspace(-120.0, 0.0, 4001).view(1, -1).repeat(3, 1)
    assert torch.equal(categorical_entropy(x), plain(x))


def test_nan_and_infinity_propagate_as_exp_does():
    x = torch.tensor([[0.0, float("nan"), -1.0], [0.0, float("-inf"), -1e9], [float("inf"), 0.0, -1.0]])
    want, got = plain(x), categorical_entropy(x)
    assert torch.isnan(got[0]) and torch.isnan(want[0])
    assert torch.equal(got[1:].isnan(), want[1:].isnan())
    assert torch.equal(torch.nan_to_num(got), torch.nan_to_num(want))
