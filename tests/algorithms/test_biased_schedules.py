"""The candidates' (biased agent + BR) schedules under the ``paper`` preset follow ZSC-Eval's
``train_bias_agents.sh``: entropy 0.2 -> 0.05 -> 0.001 at 0 / 6e6 / 1e7 (small_corridor 8e6) and the
BR's shaping annealed over the 1e7-step run, where SP keeps 1e8."""

import pytest

from zsceval.rl.config import resolve_config


def cfg(algo, layout, preset="paper", overrides=(), **flags):
    flags = {"run.algo": algo, "env.layout": layout, **flags}
    return resolve_config(preset=preset, overrides=list(overrides), **flags)


@pytest.mark.parametrize(
    ("layout", "late"), [("counter_circuit", 6e6), ("random1", 6e6), ("small_corridor", 8e6)]
)
def test_paper_candidates_use_the_bias_agent_script_schedules(layout, late):
    c = cfg("biased", layout)
    assert c.run.total_steps == 10_000_000
    assert c.ppo.entropy_coefs == (0.2, 0.05, 0.001)
    assert c.ppo.entropy_milestones == (0, late, 1e7)
    assert c.shaping.horizon == 1e7
    sp = cfg("sp", layout)  # SP (and the mid-checkpoint BRs, trained as SP-like runs) keep the preset's
    assert sp.ppo.entropy_coefs == (0.2, 0.05, 0.01) and sp.shaping.horizon == 1e8


def test_schedules_follow_the_run_length_and_user_values_win():
    c = cfg("biased", "blocked_corridor", **{"run.total_steps": 2_000_000})
    assert c.ppo.entropy_milestones == (0, 1_600_000, 2_000_000) and c.shaping.horizon == 2_000_000
    c = cfg("biased", "counter_circuit", overrides=["shaping.horizon=123", "ppo.entropy_coefs=[0.3,0.1,0.0]"])
    assert c.shaping.horizon == 123 and c.ppo.entropy_coefs == (0.3, 0.1, 0.0)


def test_quick_preset_and_football_are_left_as_they_are():
    quick, quick_sp = cfg("biased", "counter_circuit", "quick"), cfg("sp", "counter_circuit", "quick")
    assert quick.ppo == quick_sp.ppo and quick.shaping == quick_sp.shaping
    fb = resolve_config(preset="paper", **{"run.algo": "biased", "env.name": "football"})
    fb_sp = resolve_config(preset="paper", **{"run.algo": "sp", "env.name": "football"})
    assert fb.ppo == fb_sp.ppo and fb.shaping == fb_sp.shaping
