"""benchmarks/learning/hypothesis_validation.py: steps to validation and the per-pool summary on
hand-built records (the hypothesis agent's distribution of steps to validation)."""

import numpy as np
import pytest

from .scripts import load_script


def _script():
    return load_script("hypothesis_validation.py")


def test_steps_to_validation_is_the_first_validated_step_or_minus_one():
    h = _script()
    v = np.zeros((5, 3), dtype=bool)
    v[2:, 0] = True  # validated from step 2 on
    v[0, 1] = v[4, 1] = True  # at step 0, lost, again at 4: the first counts
    assert h.steps_to_validation(v).tolist() == [2, 0, -1]


def test_summary_counts_games_steps_and_the_partners_own_cluster():
    h = _script()
    T, N = 4, 2
    validated = np.zeros((T, 2, N), dtype=bool)
    choice = np.zeros((T, 2, N), dtype=np.int64)
    validated[1:, 0, 0] = True  # game (seat 0, pair 0): validated at steps 1-3 with hypothesis 1
    choice[:, 0, 0] = 1
    validated[3, 1, 1] = True  # game (seat 1, pair 1): validated at step 3 with hypothesis 0
    returns = np.array([[20.0, 0.0], [0.0, 40.0]])
    s = h.summary(validated, choice, returns, labels=np.array([1, 1]))
    assert s["games"] == 4 and s["never_validated"] == 0.5
    assert s["steps_to_validation"] == {"q25": 1.5, "median": 2.0, "q75": 2.5, "mean": 2.0}
    assert s["validated_share"] == pytest.approx(4 / 16)
    assert s["own_cluster_share"] == pytest.approx(3 / 4)  # pair 1's cluster is 1, its hypothesis 0
    assert s["mean_return"] == 15.0
    # hypothesis 1 acts on 4 of the 16 steps (game (0, 0)), hypothesis 0 on the other 12; of the 12
    # steps with none validated, game (0, 0)'s step 0 is hypothesis 1's
    assert s["choice_share"] == pytest.approx([12 / 16, 4 / 16])
    assert s["fallback_choice_share"] == pytest.approx([11 / 12, 1 / 12])
    assert h.summary(validated, choice, returns, k=3)["choice_share"] == pytest.approx([12 / 16, 4 / 16, 0])
    none = h.summary(np.zeros((T, 2, N), dtype=bool), choice, returns, labels=None)
    assert none["steps_to_validation"] is None and none["own_cluster_share"] is None
    assert none["never_validated"] == 1.0


def test_value_summary_means_and_who_holds_the_highest_value():
    h = _script()
    values = np.array([[0.5, 0.1], [0.2, 0.2], [0.0, 0.3]])  # three steps, k = 2; step 2 tied
    out = h.value_summary(values)
    assert out["mean_value"] == pytest.approx([0.7 / 3, 0.2])
    assert out["highest_share"] == [0.5, 0.5] and out["tied_share"] == pytest.approx(1 / 3)
    values = np.zeros((3, 2, 1, 3))  # [T, seats, pairs, k]: all tied at 0 but two steps
    values[0, 0, 0, 1] = 0.9
    values[2, 1, 0, 2] = 0.4
    out = h.value_summary(values)
    assert out["highest_share"] == [0.0, 0.5, 0.5] and out["tied_share"] == pytest.approx(4 / 6)


def test_summary_keeps_each_games_step_to_validation_seat_major():
    h = _script()
    validated = np.zeros((4, 2, 2), dtype=bool)
    validated[1:, 0, 0] = True  # seat 0, pair 0: step 1
    validated[3, 1, 1] = True  # seat 1, pair 1: step 3
    s = h.summary(validated, np.zeros((4, 2, 2), dtype=np.int64), np.zeros((2, 2)))
    assert s["first_steps"] == [1, -1, -1, 3] and s["horizon"] == 4


def test_pooled_quartiles_take_every_game_of_every_chain_of_a_layout():
    h = _script()

    def record(chain, layout, training, held_out):
        return {"chain": chain, "layout": layout, "training": {"first_steps": training},
                "held-out": {"first_steps": held_out}}  # fmt: skip

    results = [record("a", "ring", [2, -1], [0, -1]), record("b", "ring", [0, 4], [-1, -1]),
               record("c", "circuit", [-1], [5])]  # fmt: skip
    pools = {(p["layout"], p["pool"]): p for p in h.pooled(results)}
    ring = pools[("ring", "training")]
    assert ring["chains"] == ["a", "b"] and ring["games"] == 4 and ring["never_validated"] == 0.25
    # the three validating games' steps are 2, 0, 4: quartiles 1, 2, 3, mean 2
    assert ring["steps_to_validation"] == {"q25": 1.0, "median": 2.0, "q75": 3.0, "mean": 2.0}
    assert pools[("ring", "held-out")]["never_validated"] == 0.75
    assert pools[("ring", "held-out")]["steps_to_validation"]["median"] == 0.0
    assert pools[("circuit", "training")]["steps_to_validation"] is None
    assert h.quartiles([2, -1, 0, 4]) == {"q25": 1.0, "median": 2.0, "q75": 3.0, "mean": 2.0}


def test_validated_by_is_the_share_of_games_validated_at_or_before_each_step(tmp_path):
    h = _script()
    assert h.validated_by([2, -1, 0, 4], 5).tolist() == [0.25, 0.25, 0.5, 0.5, 0.75]
    results = [{"chain": "x/ring_s0", "layout": "ring", "training": {"first_steps": [2, -1], "horizon": 5},
                "held-out": {"first_steps": [0, 3], "horizon": 5}}]  # fmt: skip
    h.figure(results, tmp_path / "v.png")
    assert (tmp_path / "v.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob("*.tmp*"))
