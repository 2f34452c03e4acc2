"""The per-agent reward formula of ZSC-Eval's Rewarder."""

import numpy as np
import pytest

from zsceval.envs.football.events import EVENT_NAMES
from zsceval.envs.football.rewards import REFERENCE_REWARD, REWARD_KEYS, agent_reward, weight_vector


def row(**counts):
    r = np.zeros(8, dtype=np.int16)
    for k, v in counts.items():
        r[EVENT_NAMES.index(k)] = v
    return r


def test_reference_reward_is_five_per_goal_plus_checkpoints():
    assert REFERENCE_REWARD == {"score": 5.0, "checkpoints": 1.0}
    assert agent_reward(REFERENCE_REWARD, row(), 0.0) == 0.0
    assert agent_reward(REFERENCE_REWARD, row(score=1), 0.3) == pytest.approx(5.3)
    # events other than score carry no weight in the reference config
    assert agent_reward(REFERENCE_REWARD, row(shot=1, possession=1, catch=1, assist=1), 0.1) == pytest.approx(
        0.1
    )


def test_hsp_style_weights():
    w0 = {"pass": -5.0, "shot": 1.0, "catch": 0.0, "score": 1.0, "checkpoints": 1.0}
    r = row(shot=1, possession=1, score=1)
    r[EVENT_NAMES.index("pass")] = 2
    # -5 * 2 passes + 1 shot + 1 goal + 0.2 checkpoints
    assert agent_reward(w0, r, 0.2) == pytest.approx(-10 + 1 + 1 + 0.2)
    w, c = weight_vector(w0)
    assert float(r.astype(np.float32) @ w + c * 0.2) == pytest.approx(agent_reward(w0, r, 0.2))
    assert w.dtype == np.float32 and w.shape == (8,) and c == 1.0


def test_unknown_or_empty_weights_are_rejected():
    with pytest.raises(ValueError, match="valid keys are .*'checkpoints'"):
        agent_reward({"goal": 5.0}, row(), 0.0)
    with pytest.raises(ValueError, match="empty"):
        agent_reward({}, row(), 0.0)
    with pytest.raises(ValueError, match="expected 8"):
        agent_reward(REFERENCE_REWARD, np.zeros(7), 0.0)
    assert set(REWARD_KEYS) == set(EVENT_NAMES) | {"checkpoints"}
