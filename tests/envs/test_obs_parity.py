"""Observations against the reference encoder (PyPI `overcooked` 0.2.1 `lossless_state_encoding`).

The reference's 26 planes are, in order: 10 player planes, pot, counter, onion dispenser, tomato
dispenser, dish dispenser, serving window, onions_in_pot, tomatoes_in_pot, onions_in_soup,
tomatoes_in_soup, soup_cook_time_remaining, soup_done, dishes, onions, tomatoes, urgency; arrays
are (W, H, C). Multi-recipe observations must equal it with soup_done dropped (docs/overcooked-rules.md
§5.7). Classic observations (§4.2 without the §4.3 overwrite bug, i.e. §5.8) are derived from it:
items in a pot soup, elapsed cook ticks, off-pot soups, dishes, onions.
"""

import random

import numpy as np
import pytest
import torch

from zsceval.envs.overcooked import OvercookedEnv, load_layout

pytest.importorskip("overcooked", reason="reference simulator not installed (pip install -e .[reference])")
from zsceval.envs.overcooked.reference import ReferenceGame, random_state_dict  # noqa: E402

pytestmark = pytest.mark.reference


def reference_planes(game: ReferenceGame) -> np.ndarray:
    """``[2, H, W, 26]`` reference encodings of both players."""
    return np.stack([np.transpose(p, (1, 0, 2)) for p in game.observe()])


def classic_from_reference(ref: np.ndarray, pot_mask: np.ndarray) -> np.ndarray:
    pot = pot_mask[None, :, :]
    items = ref[..., 16] + ref[..., 18]  # idle + cooking/ready onion counts
    cooking = (ref[..., 18] > 0) & pot
    elapsed = np.where(cooking, 20 - ref[..., 20], 0)
    return np.concatenate(
        [
            ref[..., :10],
            ref[..., [10, 11, 12, 14, 15]],
            np.where(pot, items, 0)[..., None],
            elapsed[..., None],
            np.where(pot, 0, ref[..., 21])[..., None],  # soups not in a pot
            ref[..., [22, 23]],
        ],
        axis=-1,
    )


@pytest.mark.parametrize(
    "name", ["counter_circuit", "coordination_ring", "asymmetric_advantages", "counter_circuit_mr",
             "coordination_ring_mr", "forced_coordination_mr"],
)  # fmt: skip
def test_observations_match_reference_encoder(name):
    layout = load_layout(name)
    num = 40
    env = OvercookedEnv(layout, num_envs=num, horizon=400)
    env.reset()
    rng = random.Random(11)
    games = []
    for i in range(num):
        d = random_state_dict(layout, rng, timestep=rng.randrange(400))
        env.import_state(i, d)
        g = ReferenceGame(layout)
        g.set_state(d)
        games.append(g)
    obs = env.encoder(env.state).numpy()
    pot_mask = np.zeros((layout.height, layout.width), dtype=bool)
    for x, y in layout.cells("P"):
        pot_mask[y, x] = True
    urgent_seen = 0
    for i, g in enumerate(games):
        ref = reference_planes(g)
        if layout.dynamics == "multi_recipe":
            expected = np.delete(ref, 21, axis=-1)
            urgent_seen += int(expected[..., 24].any())
        else:
            expected = classic_from_reference(ref, pot_mask)
        np.testing.assert_array_equal(obs[i], expected, err_msg=f"{name} game {i}")
    if layout.dynamics == "multi_recipe":
        assert urgent_seen > 0  # some random timesteps fall in the last 40 steps


def test_classic_and_multi_channel_counts():
    assert OvercookedEnv("counter_circuit").obs_shape == (5, 8, 20)
    assert OvercookedEnv("counter_circuit_mr").obs_shape == (5, 8, 25)
    assert torch.uint8 == OvercookedEnv("cramped_room").reset().obs.dtype
