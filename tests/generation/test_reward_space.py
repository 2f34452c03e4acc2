"""Behavior-preferring weight grids: candidate counts, order, constraint, sampling, errors."""

import numpy as np
import pytest

from zsceval.generation.reward_space import (
    GridFileError,
    filter_by_c_max,
    layout_names,
    load_reward_space,
    pick_weights,
    read_grid_file,
    sample_weights,
)

# docs/overcooked-rules.md §3.1 (17 classic events), then the sparse weight.
CLASSIC_EVENTS = (
    "put_onion_on_X put_dish_on_X put_soup_on_X pickup_onion_from_X pickup_onion_from_O pickup_dish_from_X "
    "pickup_dish_from_D pickup_soup_from_X USEFUL_DISH_PICKUP SOUP_PICKUP PLACEMENT_IN_POT delivery STAY "
    "MOVEMENT IDLE_MOVEMENT IDLE_INTERACT_X IDLE_INTERACT_EMPTY sparse_reward"
).split()

# "candidates" column of docs/reference-protocol.md "Weight grids".
EXPECTED_CANDIDATES = {
    "random0": 30,
    "forced_coordination": 30,
    "random0_medium": 54,
    "small_corridor": 40,
    "random1": 52,
    "random3": 52,
    "unident_s": 52,
    "counter_circuit": 52,
    "random0_m": 72,
    "random1_m": 72,
    "random3_m": 72,
    "unident_s_m": 72,
    # GRF: [-5:0:1],0,[-5:0:1],0,[-5:0:1],0,0,[1:5] = 54 points, minus the 16 with 4 non-zero weights
    "football": 38,
}


@pytest.mark.parametrize(("layout", "count"), sorted(EXPECTED_CANDIDATES.items()))
def test_candidate_counts_match_reference(layout, count):
    space = load_reward_space(layout)
    candidates = space.candidates()
    assert candidates.shape == (count, space.num_weights)
    assert candidates.dtype == np.float32


def test_every_paper_layout_has_a_grid():
    assert set(layout_names()) == {
        "academy_3_vs_1_with_keeper",
        "cramped_room",
        "forced_coordination",
        "coordination_ring",
        "counter_circuit",
        "asymmetric_advantages",
        "bothway_coordination",
        "blocked_corridor",
        "large_room",
        "asymmetric_coordination",
        "forced_coordination_mr",
        "coordination_ring_mr",
        "counter_circuit_mr",
        "asymmetric_advantages_mr",
    }


def test_event_names_follow_the_spec():
    assert load_reward_space("random1").event_names == tuple(CLASSIC_EVENTS)
    multi = load_reward_space("random1_m")
    assert len(multi.event_names) == 30
    assert multi.event_names[-1] == "sparse_reward"
    assert multi.event_names[25] == "STAY" and multi.event_names[18] == "potting_onion"


def test_layouts_without_reference_grid_use_the_random1_grid():
    ring = load_reward_space("coordination_ring")
    for name in ("cramped_room", "large_room", "asymmetric_coordination"):
        assert load_reward_space(name).values == ring.values


def test_alias_and_name_give_the_same_space():
    assert load_reward_space("random3") == load_reward_space("counter_circuit")
    assert load_reward_space("random3").paper_name == "Counter Circuit"


def test_vectors_are_in_itertools_product_order():
    space = load_reward_space("random0")
    vectors = space.vectors()
    assert len(vectors) == space.grid_size == 2 * 2 * 2 * 3 * 2
    # product order: the last varying position (sparse, [0.1, 1]) changes fastest.
    np.testing.assert_allclose(vectors[0, [4, 6, 7, 12, 17]], [0, 0, -20, -0.1, 0.1], atol=1e-7)
    np.testing.assert_allclose(vectors[1, [4, 6, 7, 12, 17]], [0, 0, -20, -0.1, 1], atol=1e-7)
    np.testing.assert_allclose(vectors[2, [12, 17]], [0, 0.1], atol=1e-7)
    np.testing.assert_allclose(vectors[:, 9], 5)  # SOUP_PICKUP fixed


def test_c_max_filter_keeps_only_sparse_vectors():
    space = load_reward_space("random0_medium")
    full = space.vectors()
    varying = list(space.varying_positions)
    assert (np.count_nonzero(full[:, varying], axis=1) > 3).any()  # the filter has work to do
    kept = space.candidates()
    assert (np.count_nonzero(kept[:, varying], axis=1) <= 3).all()
    # Fixed non-zero weights (3, 5, 3) do not count: c_max=1 keeps vectors whose only varying
    # non-zero is the (always non-zero) sparse weight.
    only_sparse = filter_by_c_max(full, space.varying_positions, c_max=1)
    assert len(only_sparse) == 2
    assert (only_sparse[:, 8:11] == [3, 5, 3]).all()


def test_pick_weights_wraps_like_the_reference():
    candidates = load_reward_space("random1").candidates()
    np.testing.assert_array_equal(pick_weights(candidates, seed=7, offset=50), candidates[(7 + 50) % 52])
    np.testing.assert_array_equal(pick_weights(candidates, seed=52), candidates[0])


def test_sample_weights_is_seeded_and_without_replacement():
    space = load_reward_space("random0")
    a = sample_weights(space, 10, np.random.default_rng(3))
    b = sample_weights(space, 10, np.random.default_rng(3))
    c = sample_weights(space, 10, np.random.default_rng(4))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert a.shape == (10, 18) and a.dtype == np.float32
    assert len(np.unique(a, axis=0)) == 10


def test_sample_weights_beyond_the_grid_covers_every_candidate_first():
    space = load_reward_space("random0")
    drawn = sample_weights(space, 45, np.random.default_rng(0))
    assert drawn.shape == (45, 18)
    assert len(np.unique(drawn[:30], axis=0)) == 30  # a permutation of all 30 candidates
    candidate_rows = {tuple(r) for r in space.candidates()}
    assert all(tuple(r) in candidate_rows for r in drawn[30:])


def test_unknown_layout_lists_valid_names():
    with pytest.raises(ValueError, match="counter_circuit") as info:
        load_reward_space("no_such_layout")
    assert "random3" in str(info.value)


def test_malformed_grid_file_names_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("format_version: 1\nevents: [a, sparse_reward\n")
    with pytest.raises(GridFileError, match="bad.yaml"):
        read_grid_file(bad)
    wrong_order = tmp_path / "order.yaml"
    wrong_order.write_text(
        "format_version: 1\nevent_set: x\nevents: [a, sparse_reward]\n"
        "grids:\n  - layouts: [{name: l, paper_name: L}]\n    weights: {sparse_reward: [1], a: [0]}\n"
    )
    with pytest.raises(GridFileError, match="order.yaml"):
        read_grid_file(wrong_order)
    too_big = tmp_path / "big.yaml"
    too_big.write_text(
        "format_version: 1\nevent_set: x\nevents: [a, sparse_reward]\n"
        "grids:\n  - layouts: [{name: l, paper_name: L}]\n    weights: {a: [0, 25], sparse_reward: [1]}\n"
    )
    with pytest.raises(GridFileError, match="B_max"):
        read_grid_file(too_big)


def test_as_dict_names_positions():
    space = load_reward_space("random3")
    named = space.as_dict(space.candidates()[0])
    assert list(named) == CLASSIC_EVENTS
    assert named["SOUP_PICKUP"] == 5.0
    with pytest.raises(ValueError):
        space.as_dict(np.zeros(5))


def test_football_grid_has_no_sparse_position_and_the_reference_rows():
    from zsceval.envs.football.events import EVENT_NAMES

    space = load_reward_space("academy_3_vs_1_with_keeper")
    # the biased agent weights the env's event counts position by position
    assert space.event_names == EVENT_NAMES
    rows = {tuple(float(x) for x in r) for r in space.candidates()}
    assert len(rows) == 38
    # by hand: score takes 1 or 5 (always non-zero), so at most 2 of pass / shot / catch are non-zero
    expected = {
        (p, 0.0, s, 0.0, c, 0.0, 0.0, g)
        for p in (-5.0, 0.0, 1.0)
        for s in (-5.0, 0.0, 1.0)
        for c in (-5.0, 0.0, 1.0)
        for g in (1.0, 5.0)
        if (p != 0) + (s != 0) + (c != 0) <= 2
    }
    assert rows == expected
    assert sum(r[-1] == 5.0 for r in rows) == 19
