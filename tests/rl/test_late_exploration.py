"""On small_corridor (blocked_corridor) every ZSC-Eval script puts the middle entropy milestone at 80%
of the run (``train_sp.sh``, ``train_e3t.sh``, ``train_*_stage_2.sh``, ...): the ``paper`` preset does
the same for every method there, and nowhere else."""

import pytest

from zsceval.rl.config import resolve_config


def milestones(algo, layout, preset="paper", overrides=()):
    flags = {"run.algo": algo, "env.layout": layout}
    cfg = resolve_config(preset=preset, overrides=["population.size=12", *overrides], **flags)
    return tuple(cfg.ppo.entropy_milestones)


@pytest.mark.parametrize(
    ("algo", "blocked", "elsewhere"),
    [
        ("sp", (0, 8e6, 1e7), (0, 5e6, 1e7)),  # train_sp.sh: 0 5e6 1e7, small_corridor 0 8e6 1e7
        ("e3t", (0, 8e6, 1e7), (0, 6e6, 1e7)),  # train_e3t.sh: 0 6e6 1e7
        ("fcp", (0, 4e7, 5e7), (0, 2.5e7, 5e7)),  # train_fcp_stage_2.sh at population 12
    ],
)
def test_paper_moves_the_middle_milestone_on_blocked_corridor_only(algo, blocked, elsewhere):
    assert milestones(algo, "blocked_corridor") == blocked
    assert milestones(algo, "small_corridor") == blocked  # the ZSC-Eval name
    assert milestones(algo, "counter_circuit") == elsewhere


def test_user_values_and_other_presets_win():
    mine = ["ppo.entropy_milestones=[0,1e6,1e7]"]
    assert milestones("sp", "blocked_corridor", overrides=mine) == (0, 1e6, 1e7)
    assert milestones("sp", "blocked_corridor", "quick") == milestones("sp", "counter_circuit", "quick")
