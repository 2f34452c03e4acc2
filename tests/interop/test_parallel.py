"""PettingZoo adapter: PettingZoo's own conformance tests, spaces vs returned arrays, seeding."""

import warnings

import numpy as np
import pytest

pettingzoo = pytest.importorskip("pettingzoo")
from pettingzoo.test import parallel_api_test, parallel_seed_test  # noqa: E402

from zsceval.interop.parallel import ParallelGame  # noqa: E402


@pytest.mark.parametrize(
    "name,options",
    [("overcooked", {"layout": "cramped_room", "horizon": 30}), ("toy", {"num_agents": 3}),
     ("toy", {"obs_dtype": "float32"}), ("yokai", {"horizon": 40}), ("yokai", {"num_agents": 4})],
)  # fmt: skip
def test_parallel_api_test_passes(name, options):
    env = ParallelGame(name, **options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parallel_api_test(env, num_cycles=100)
    assert not [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def test_parallel_seed_test_passes():
    parallel_seed_test(
        lambda: ParallelGame("overcooked", layout="cramped_room", horizon=40, randomize_seats=True)
    )


def test_spaces_match_returned_arrays_and_episode_end():
    env = ParallelGame("overcooked", layout="counter_circuit", horizon=20)
    assert env.possible_agents == ["agent_0", "agent_1"]
    obs, infos = env.reset(seed=3)
    rng = np.random.default_rng(0)
    for t in range(20):
        for agent in env.possible_agents:
            space = env.observation_space(agent)
            assert obs[agent].dtype == np.uint8 and obs[agent].shape == space.shape == (5, 8, 20)
            assert space.contains(obs[agent])
            assert infos[agent]["action_mask"].dtype == np.int8 and infos[agent]["action_mask"][4] == 1
        actions = {a: int(rng.integers(6)) for a in env.agents}
        obs, rew, term, trunc, infos = env.step(actions)
        assert set(rew) == set(term) == set(trunc) == {"agent_0", "agent_1"}
        assert not any(term.values())
        assert all(v == (t == 19) for v in trunc.values())
        assert all(i["timestep"] == t + 1 for i in infos.values())
    assert env.agents == []
    with pytest.raises(RuntimeError, match="reset"):
        env.step(actions)


def test_same_seed_same_episode_and_bad_actions():
    def run(seed):
        env = ParallelGame(
            "overcooked", layout="coordination_ring", randomize_seats=True, random_start_prob=1.0
        )
        obs, _ = env.reset(seed=seed)
        return obs["agent_0"]

    assert np.array_equal(run(1), run(1))
    assert any(not np.array_equal(run(1), run(s)) for s in range(2, 6))
    env = ParallelGame("overcooked", layout="cramped_room", render_mode="ansi")
    env.reset()
    assert isinstance(env.render(), str) and env.render()
    with pytest.raises(ValueError, match="not in Discrete"):
        env.step({"agent_0": 6, "agent_1": 0})
    with pytest.raises(ValueError, match="missing"):
        env.step({"agent_0": 1})
    with pytest.raises(KeyError, match="possible agents"):
        env.observation_space("agent_7")
    with pytest.raises(ValueError, match="render_mode"):
        ParallelGame("toy", render_mode="human")


def test_last_step_returns_the_final_observation_not_the_next_start():
    env = ParallelGame("overcooked", layout="cramped_room", horizon=1)
    start, _ = env.reset(seed=0)
    obs, _, _, trunc, _ = env.step({"agent_0": 0, "agent_1": 3})  # both players move
    assert all(trunc.values()) and env.agents == []
    assert not np.array_equal(obs["agent_0"], start["agent_0"])
    again, _ = env.reset(seed=0)
    assert np.array_equal(again["agent_0"], start["agent_0"])
