"""TBS concept sets and next-interaction labels on scripted Overcooked episodes (TBS paper, App. C, D.3)."""

import pytest
import torch

from zsceval.algorithms.tbs.concepts import build_concept_set, middle_counters, next_interaction_labels
from zsceval.envs.overcooked import OvercookedEnv
from zsceval.envs.overcooked.constants import Interaction
from zsceval.envs.overcooked.layout import load_layout

N, S, E, W, STAY, I = 0, 1, 2, 3, 4, 5


def play(layout: str, p0: list[int], p1: list[int]):
    """Kinds, cells ``int64 [T, 2]`` and done ``bool [T]`` of one scripted game (horizon T)."""
    env = OvercookedEnv(layout, num_envs=1, horizon=len(p0))
    env.reset()
    kinds, cells, done = [], [], []
    for a0, a1 in zip(p0, p1, strict=True):
        s = env.step(torch.tensor([[a0, a1]]))
        kinds.append(s.interactions[0])
        cells.append(s.interaction_cell[0])
        done.append(s.done[0])
    return torch.stack(kinds), torch.stack(cells), torch.stack(done)


def expected_labels(T: int, M: int, spans: list[tuple[int, int, int]]) -> torch.Tensor:
    """``[T, M]`` labels with concept c on steps a..b (inclusive) for each ``(a, b, c)``, zeros elsewhere."""
    out = torch.zeros(T, M)
    for a, b, c in spans:
        out[a : b + 1, c] = 1.0
    return out


def test_sizes_names_and_middle_counters():
    sizes = {"cramped_room": 12, "counter_circuit": 38, "coordination_ring": 20, "forced_coordination": 32}
    for layout, m in sizes.items():
        assert build_concept_set(layout).num_concepts == m
    assert middle_counters(load_layout("counter_circuit")) == [(2, 2), (3, 2), (4, 2), (5, 2)]
    assert middle_counters(load_layout("forced_coordination")) == [(2, 1), (2, 2), (2, 3)]
    assert middle_counters(load_layout("coordination_ring")) == [(2, 2)]
    assert middle_counters(load_layout("bothway_coordination")) == [(3, 2), (3, 3)]
    for layout in ("cramped_room", "asymmetric_advantages", "large_room"):
        assert middle_counters(load_layout(layout)) == []
    assert build_concept_set("counter_circuit", "coarse").num_concepts == 11
    assert build_concept_set("counter_circuit", "very_coarse").num_concepts == 6
    assert build_concept_set("counter_circuit", "action").names[5] == "INTERACT"
    with pytest.raises(ValueError, match="very_coarse"):
        build_concept_set("cramped_room", "medium")


def test_non_concept_kinds_map_to_none():
    cs = build_concept_set("cramped_room")
    W = load_layout("cramped_room").width
    pot = 0 * W + 2
    kinds = torch.tensor([Interaction.NONE, Interaction.NOOP, Interaction.IDLE_POT, Interaction.COOK,
                          Interaction.POT_TOMATO, Interaction.POT_ONION])  # fmt: skip
    cells = torch.tensor([-1, pot, pot, pot, pot, pot])
    assert cs.concept_index(kinds, cells).tolist() == [
        -1,
        -1,
        -1,
        -1,
        -1,
        cs.names.index("onion_drop_in_pot@(2,0)"),
    ]


def test_cramped_room_scripted_episode():
    # player 0: onion from pile (0,1) into the pot twice, then a plate from the pile onto a counter.
    p0 = [N, W, I, E, N, I, W, I, E, N, I, W, S, S, I, W, I, STAY, STAY, STAY]
    kinds, cells, done = play("cramped_room", p0, [STAY] * len(p0))
    cs = build_concept_set("cramped_room")
    idx = cs.concept_index(kinds, cells)
    onion, pot = cs.names.index("onion_pickup_from_pile@(0,1)"), cs.names.index("onion_drop_in_pot@(2,0)")
    plate, drop = (
        cs.names.index("plate_pickup_from_pile@(1,3)"),
        cs.names.index("plate_drop_on_counter@other"),
    )
    assert (onion, pot, plate, drop) == (0, 7, 2, 9)
    want = [-1] * 20
    for t, c in ((2, onion), (5, pot), (7, onion), (10, pot), (14, plate), (16, drop)):
        want[t] = c
    assert idx[:, 0].tolist() == want
    assert (idx[:, 1] == -1).all()  # player 1 only stays
    labels = next_interaction_labels(idx[:, :1], done.view(-1, 1), cs.num_concepts)[:, 0]
    spans = [(0, 2, onion), (3, 5, pot), (6, 7, onion), (8, 10, pot), (11, 14, plate), (15, 16, drop)]
    assert torch.equal(labels, expected_labels(20, 12, spans))  # zeros after the last interaction


def test_counter_circuit_two_pots_two_counters():
    # player 0 takes onions from both piles and puts them on middle counters (3,2), (4,2);
    # player 1 picks them up there and fills pot (3,0), then pot (4,0).
    p0 = [S, I, N, I, E, S, I, N, I] + [STAY] * 7
    p1 = [STAY] * 4 + [S, I, N, I, E, S, I, N, I] + [STAY] * 3
    kinds, cells, done = play("counter_circuit", p0, p1)
    cs = build_concept_set("counter_circuit")
    idx = cs.concept_index(kinds, cells)
    name = [cs.names[i] if i >= 0 else "-" for i in idx[:, 1].tolist()]
    assert name[5] == "onion_pickup_from_counter@(3,2)" and name[10] == "onion_pickup_from_counter@(4,2)"
    assert name[7] == "onion_drop_in_pot@(3,0)" and name[12] == "onion_drop_in_pot@(4,0)"
    assert name.count("-") == 12
    pot_a, pot_b = idx[7, 1].item(), idx[12, 1].item()
    assert pot_a != pot_b  # two pots, two fine concepts
    p0_names = [cs.names[i] for i in idx[:, 0].tolist() if i >= 0]
    assert p0_names == ["onion_pickup_from_pile@(3,4)", "onion_drop_on_counter@(3,2)",
                        "onion_pickup_from_pile@(4,4)", "onion_drop_on_counter@(4,2)"]  # fmt: skip
    labels = next_interaction_labels(idx[:, 1:], done.view(-1, 1), cs.num_concepts)[:, 0]
    spans = [(0, 5, idx[5, 1].item()), (6, 7, pot_a), (8, 10, idx[10, 1].item()), (11, 12, pot_b)]
    assert torch.equal(labels, expected_labels(16, cs.num_concepts, spans))

    coarse = build_concept_set("counter_circuit", "coarse")
    cidx = coarse.concept_index(kinds, cells)[:, 1]
    assert cidx[7] == cidx[12] == coarse.names.index("onion_drop_in_pot")  # the coarse set merges the pots
    assert cidx[5] == cidx[10] == coarse.names.index("onion_pickup_from_counter")
    very = build_concept_set("counter_circuit", "very_coarse").concept_index(kinds, cells)
    assert very[:, 0][[1, 3, 6, 8]].tolist() == [0, 3, 0, 3]  # onion_pickup, onion_drop
    action = build_concept_set("counter_circuit", "action")
    acts = torch.tensor([p0, p1]).T
    assert torch.equal(action.concept_index(kinds, cells, acts), acts)
    with pytest.raises(ValueError, match="actions"):
        action.concept_index(kinds, cells)


def test_next_interaction_labels_hand_made():
    # T = 6, B = 2, M = 3. Column 0: episodes [0..2] and [3..5]; column 1: one cut episode.
    idx = torch.tensor([[-1, 2], [1, -1], [-1, -1], [-1, 0], [2, -1], [-1, -1]])
    done = torch.zeros(6, 2, dtype=torch.bool)
    done[2, 0] = done[5, 0] = True
    labels, known = next_interaction_labels(idx, done, 3, return_known=True)
    want0 = [[0, 1, 0], [0, 1, 0], [0, 0, 0], [0, 0, 1], [0, 0, 1], [0, 0, 0]]
    want1 = [[0, 0, 1], [1, 0, 0], [1, 0, 0], [1, 0, 0], [0, 0, 0], [0, 0, 0]]
    assert labels[:, 0].tolist() == want0  # the concept at step 4 does not leak into episode 1
    assert labels[:, 1].tolist() == want1
    assert labels.dtype == torch.float32
    assert known[:, 0].all()
    assert known[:, 1].tolist() == [True, True, True, True, False, False]  # cut at the rollout end
