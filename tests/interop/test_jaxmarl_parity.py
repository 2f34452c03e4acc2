"""Our JaxMARL observation against jaxmarl's own ``Overcooked.get_obs``, channel by channel, on
cramped_room: the reset state and every state of a 52-step scripted game played in both engines
(onions into the pot, a dish set down and picked up, cooking, a soup on a counter, a delivery), with
the urgency layer off and then on. Needs ``pip install jaxmarl`` (skipped otherwise)."""

import warnings

import numpy as np
import pytest
import torch

jax = pytest.importorskip("jax", reason="pip install jaxmarl")
pytest.importorskip("jaxmarl", reason="pip install jaxmarl")

N, S, E, W, X, I = range(6)  # noqa: E741 - overcooked-ai's action indices
SCRIPT = [
    (W, E), (S, I), (I, W), (E, N), (S, I),  # 0: a dish from the dispenser; 1: an onion into the pot
    (I, E), (X, E), (X, I), (X, W), (X, N), (X, I),  # 0 sets the dish on (2, 3); 1: the second onion
    (X, E), (X, E), (X, I), (X, W), (X, N), (X, I),  # the third onion: cooking starts
    *[(X, X)] * 5, (X, E), *[(X, X)] * 14,  # cooking, then ready
    (I, X), (N, X), (N, X), (I, X), (X, S), (E, X), (S, X),  # 0 takes the dish back, then the soup
    (N, X), (I, X), (I, X),  # 0 sets the soup on counter (3, 0) and takes it back
    (X, W), (S, X), (S, X), (I, X),  # 1 steps aside; 0 delivers at (3, 3)
]  # fmt: skip
MAX_STEPS = 60  # JaxMARL's max_steps: the urgency layer turns on at step 21


def _mismatch(ours: np.ndarray, theirs: np.ndarray) -> list[int]:
    return [c for c in range(ours.shape[-1]) if not np.array_equal(ours[..., c], theirs[..., c])]


def test_our_observation_equals_jaxmarl_get_obs_through_a_scripted_game():
    from flax.core.frozen_dict import FrozenDict
    from jaxmarl.environments.overcooked import Overcooked

    from zsceval.envs.overcooked import OvercookedEnv, load_layout
    from zsceval.interop.jaxmarl import OVERCOOKED_AI_TO_JAXMARL, jaxmarl_layout, jaxmarl_obs

    lay = load_layout("cramped_room")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "OvercookedV2 is now released"
        jenv = Overcooked(FrozenDict(jaxmarl_layout(lay)), max_steps=MAX_STEPS)
    jobs, jst = jenv.reset(jax.random.PRNGKey(0))
    env = OvercookedEnv(lay, num_envs=1)
    env.reset()
    state = env.export_state(0)
    directions = ((0, -1), (0, 1), (1, 0), (-1, 0))  # JaxMARL common.py DIR_TO_VEC
    for p, d in zip(state["players"], np.asarray(jst.agent_dir_idx), strict=True):
        p["orientation"] = directions[int(d)]  # JaxMARL's reset draws orientations; ours face north
    env.import_state(0, state)
    keys = jax.random.split(jax.random.PRNGKey(1), len(SCRIPT))
    delivered = 0.0
    for t in range(len(SCRIPT) + 1):
        state = env.export_state(0)
        assert np.asarray(jst.agent_pos).tolist() == [list(p["position"]) for p in state["players"]], t
        for seat in (0, 1):
            ours, theirs = jaxmarl_obs(state, lay, seat, MAX_STEPS), np.asarray(jobs[f"agent_{seat}"])
            assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
            assert _mismatch(ours, theirs) == [], f"step {t}, seat {seat}"
        if t == len(SCRIPT):
            break
        step = env.step(torch.tensor([SCRIPT[t]]))
        actions = {f"agent_{k}": int(OVERCOOKED_AI_TO_JAXMARL[a]) for k, a in enumerate(SCRIPT[t])}
        jobs, jst, rewards, _, _ = jenv.step_env(keys[t], jst, actions)
        assert float(rewards["agent_0"]) == float(step.reward[0]), f"step {t + 1}: team sparse reward"
        delivered += float(step.reward[0])
    assert delivered == 20.0  # the soup was served in both engines
    assert ours[..., 25].all() and not jaxmarl_obs(env.export_state(0), lay, 0, 400)[..., 25].any()


def test_a_flax_network_acts_in_our_engine_as_it_would_in_jaxmarl():
    """A flax MLP on flattened observations (JaxMARL IPPO's ``batchify`` input): through
    ``JaxMARLPolicy`` it computes, for each seat, the logits it computes on jaxmarl's own observation
    of the same state, and plays their arg-max mapped to our action index."""
    import flax.linen as nn
    import jax.numpy as jnp
    from flax.core.frozen_dict import FrozenDict
    from jaxmarl.environments.overcooked import Overcooked

    from zsceval.envs.overcooked import OvercookedEnv, load_layout
    from zsceval.interop.jaxmarl import JAXMARL_TO_OVERCOOKED_AI, JaxMARLPolicy, jaxmarl_layout

    class Actor(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(6)(nn.relu(nn.Dense(32)(x.astype(jnp.float32)))), jnp.zeros(x.shape[0])

    lay = load_layout("cramped_room")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        jenv = Overcooked(FrozenDict(jaxmarl_layout(lay)))
    jobs, jst = jenv.reset(jax.random.PRNGKey(3))
    net = Actor()
    params = net.init(jax.random.PRNGKey(0), jnp.zeros((1, 4 * 5 * 26)))
    env = OvercookedEnv(lay, num_envs=1)
    env.reset()
    state = env.export_state(0)
    directions = ((0, -1), (0, 1), (1, 0), (-1, 0))
    for p, d in zip(state["players"], np.asarray(jst.agent_dir_idx), strict=True):
        p["orientation"] = directions[int(d)]
    env.import_state(0, state)
    state = env.export_state(0)
    theirs = jnp.stack([jobs["agent_0"], jobs["agent_1"]]).reshape(2, -1)
    their_logits = np.asarray(net.apply(params, theirs)[0])
    seen = []

    def apply(p, x):
        out = net.apply(p, x)
        seen.append(np.asarray(out[0]))
        return out

    got = JaxMARLPolicy(apply, params=params, flatten=True).act(
        None, None, [state, state], np.array([0, 1]), lay
    )
    np.testing.assert_allclose(seen[0], their_logits, rtol=1e-6)  # the same input, so the same logits
    assert got.dtype == np.int64 and got.tolist() == JAXMARL_TO_OVERCOOKED_AI[their_logits.argmax(1)].tolist()
