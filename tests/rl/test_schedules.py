"""Entropy and reward-shaping schedules (ZSC-Eval values)."""

import pytest

from zsceval.rl.schedules import piecewise_linear, shaping_factor


def test_piecewise_linear_zsceval_entropy():
    ms, vs = (0, 5e6, 1e7), (0.2, 0.05, 0.01)
    assert piecewise_linear(0, ms, vs) == pytest.approx(0.2)
    assert piecewise_linear(2.5e6, ms, vs) == pytest.approx(0.125)
    assert piecewise_linear(5e6, ms, vs) == pytest.approx(0.05)
    assert piecewise_linear(7.5e6, ms, vs) == pytest.approx(0.03)
    assert piecewise_linear(2e7, ms, vs) == pytest.approx(0.01)


def test_shaping_factor_linear_decay_to_zero_and_constant_for_zero_horizon():
    assert shaping_factor(0, 1.0, 1e8) == 1.0
    # SP after 1e7 steps (docs/overcooked-rules.md §3.6)
    assert shaping_factor(1e7, 1.0, 1e8) == pytest.approx(0.9)
    assert shaping_factor(2e8, 1.0, 1e8) == 0.0
    assert shaping_factor(5e9, 0.7, 0) == 0.7
