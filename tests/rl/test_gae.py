"""GAE against hand-computed values: bootstrap, truncation bootstrap, termination."""

import pytest
import torch

from zsceval.rl.gae import compute_gae


def _gae(rewards, values, terminated, truncated, truncated_values, gamma, lam):
    t = lambda x, dt=torch.float32: torch.tensor(x, dtype=dt).unsqueeze(-1)  # noqa: E731
    adv, ret = compute_gae(
        t(rewards),
        t(values),
        t(terminated, torch.bool),
        t(truncated, torch.bool),
        t(truncated_values),
        gamma,
        lam,
    )
    return adv.squeeze(-1).tolist(), ret.squeeze(-1).tolist()


def test_no_episode_end_bootstraps_from_last_value():
    # gamma 0.5, lambda 1: A_1 = 1 + 0.5*4 - 3 = 0; A_0 = 1 + 0.5*3 - 2 + 0.5*A_1 = 0.5
    adv, ret = _gae([1, 1], [2, 3, 4], [0, 0], [0, 0], [0, 0], gamma=0.5, lam=1.0)
    assert adv == pytest.approx([0.5, 0.0])
    assert ret == pytest.approx([2.5, 3.0])


def test_truncation_bootstraps_from_cut_off_state_and_stops_recursion():
    # step 0 truncated: next value is V(final) = 10, not values[1] = 3 (the reset state's value)
    # delta_0 = 1 + 0.5*10 - 2 = 4; the recursion does not cross the episode end.
    # step 1: delta_1 = 2 + 0.5*4 - 3 = 1 (crossing the end would give A_0 = 4 + 0.45 * 1).
    adv, ret = _gae([1, 2], [2, 3, 4], [0, 0], [1, 0], [10, 0], gamma=0.5, lam=0.9)
    assert adv == pytest.approx([4.0, 1.0])
    assert ret == pytest.approx([6.0, 4.0])


def test_termination_has_no_bootstrap_even_if_truncated_value_given():
    # terminated at step 0: delta_0 = 1 + 0 - 2 = -1; truncated_values are ignored
    # step 1: delta_1 = 2 + 0.5*4 - 3 = 1, not carried back across the end
    adv, _ = _gae([1, 2], [2, 3, 4], [1, 0], [0, 0], [10, 0], gamma=0.5, lam=0.9)
    assert adv == pytest.approx([-1.0, 1.0])
    adv2, _ = _gae([1, 2], [2, 3, 4], [1, 0], [1, 0], [10, 0], gamma=0.5, lam=0.9)
    assert adv2 == pytest.approx([-1.0, 1.0])


def test_lambda_mixes_td_errors():
    # 3 steps, gamma 0.9, lambda 0.5, no episode end, rewards 0,0,1, values 0.5,0.5,0.5,0.5
    g, lam = 0.9, 0.5
    d = [0 + g * 0.5 - 0.5, 0 + g * 0.5 - 0.5, 1 + g * 0.5 - 0.5]
    a2 = d[2]
    a1 = d[1] + g * lam * a2
    a0 = d[0] + g * lam * a1
    adv, _ = _gae([0, 0, 1], [0.5] * 4, [0, 0, 0], [0, 0, 0], [0, 0, 0], gamma=g, lam=lam)
    assert adv == pytest.approx([a0, a1, a2])


def test_batched_dims_and_shape_errors():
    T, B, n = 4, 3, 2
    r = torch.rand(T, B, n)
    v = torch.rand(T + 1, B, n)
    f = torch.zeros(T, B, n, dtype=torch.bool)
    adv, ret = compute_gae(r, v, f, f, torch.zeros(T, B, n), 0.99, 0.95)
    assert adv.shape == (T, B, n) and torch.allclose(ret, adv + v[:-1])
    with pytest.raises(ValueError, match="values must be"):
        compute_gae(r, v[:-1], f, f, torch.zeros(T, B, n), 0.99, 0.95)
