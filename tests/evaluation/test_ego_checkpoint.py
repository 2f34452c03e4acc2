"""Which ego checkpoint the benchmark scores: ZSC-Eval's rule (extract_S2_models.py find_target_index),
after the training curve's maximum the point closest to its 80th percentile, then the nearest checkpoint.

Every curve below has a hand-computed answer that differs from the run's last checkpoint. Percentiles
are numpy's linear ones: for M values sorted s_0 <= ... <= s_{M-1}, P80 sits at position 0.8 (M - 1).
"""

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from zsceval.bench import plan as bench_mod_plan
from zsceval.bench.suite import load_suite
from zsceval.evaluation import ego_evaluation
from zsceval.evaluation.ego_checkpoint import (
    EGO_CHECKPOINTS,
    NoTrainingCurve,
    choose_ego_checkpoint,
    ego_checkpoint,
    percentile_for,
    scored_ego_checkpoint,
)
from zsceval.evaluation.matches import PartnerSpec
from zsceval.rl import checkpoint as rl_checkpoint

STEPS = [100 * (i + 1) for i in range(10)]  # env steps 100 .. 1000, one logged point each
EVERY_100 = STEPS  # a checkpoint at every logged point
RISE_FALL = [0, 10, 30, 60, 100, 90, 80, 70, 40, 20]


def test_rise_then_fall_scores_the_point_after_the_peak_nearest_p80():
    # sorted 0 10 20 30 40 60 70 80 90 100; position 7.2 -> q = 80 + 0.2 * 10 = 82.
    # max 100 at step 500; after it 90 80 70 40 20 are 8 2 12 42 62 from q -> 80 at step 700.
    c = choose_ego_checkpoint(STEPS, RISE_FALL, EVERY_100)
    assert c.percentile_return == pytest.approx(82.0)
    assert (c.max_step, c.max_return) == (500, 100.0)
    assert (c.target_step, c.target_return) == (700, 80.0)
    assert (c.step, c.train_return, c.exact) == (700, 80.0, True)
    assert c.step != max(EVERY_100)


def test_monotone_falling_curve_scores_an_early_checkpoint():
    # 100 90 ... 10: sorted 10..100, position 7.2 -> q = 80 + 0.2 * 10 = 82; the max is the first
    # point; after it 90 (8 away) and 80 (2 away) -> 80 at step 300.
    c = choose_ego_checkpoint(STEPS, [100 - 10 * i for i in range(10)], EVERY_100)
    assert c.percentile_return == pytest.approx(82.0)
    assert (c.target_step, c.step, c.train_return) == (300, 300, 80.0)


def test_monotone_rising_curve_scores_the_end_of_training():
    """Nothing follows the maximum: the target is the curve's last row, also when the last
    iterations ended no episode (NaN), as the reference's ``len(array) - 1``."""
    returns = [10.0 * i for i in range(8)] + [np.nan, np.nan]
    c = choose_ego_checkpoint(STEPS, returns, [250, 500, 750, 1000])
    assert (c.max_step, c.target_step, c.step) == (800, 1000, 1000)
    assert c.target_return == 70.0 and c.train_return == 70.0


def test_plateau_at_the_maximum_scores_its_second_point():
    # sorted 0 20 40 50 60 100 100 100 100 100; position 7.2 -> q = 100. The first maximum is at
    # step 300; after it the plateau's 100s are 0 away -> the first of them, step 400. (The
    # reference's by-value lookup returns the first 100 of the whole curve: the maximum itself.)
    c = choose_ego_checkpoint(STEPS, [0, 50, 100, 100, 100, 100, 100, 60, 40, 20], EVERY_100)
    assert c.percentile_return == 100.0
    assert (c.max_step, c.step, c.train_return) == (300, 400, 100.0)


def test_equal_values_before_the_maximum_are_never_chosen():
    """q = 80 (sorted 0 40 80x7 100, position 7.2); after the max (step 400) every 80 is 0 away ->
    step 500. The reference maps the value back with ``np.where(array == 80)[0][0]``, which is
    step 300, before the maximum: we keep the position instead."""
    c = choose_ego_checkpoint(STEPS, [0, 40, 80, 100, 80, 80, 80, 80, 80, 80], EVERY_100)
    assert c.percentile_return == 80.0
    assert (c.max_step, c.step) == (400, 500)


def test_equal_distances_keep_the_earlier_point():
    # 11 points, position 8.0 -> q = s_8 = 80 (sorted 0 10 20 30 40 50 60 70 80 90 100). The max is
    # at step 800; after it 90 and 70 are both 10 away -> the earlier, 90 at step 900.
    steps = [100 * (i + 1) for i in range(11)]
    returns = [0, 10, 20, 30, 40, 50, 80, 100, 90, 70, 60]
    c = choose_ego_checkpoint(steps, returns, steps)
    assert c.percentile_return == 80.0
    assert (c.target_step, c.step, c.train_return) == (900, 900, 90.0)


def test_sparse_checkpoints_take_the_nearest_and_the_earlier_of_two():
    # the rise-and-fall target is step 700
    c = choose_ego_checkpoint(STEPS, RISE_FALL, [1000, 250, 500, 750])  # any order
    assert (c.step, c.index, c.exact) == (750, 2, False)
    assert c.train_return == 80.0  # the last logged value at or before step 750 (step 700's)
    c = choose_ego_checkpoint(STEPS, RISE_FALL, [600, 800, 1000])  # 600 and 800 both 100 away
    assert (c.step, c.train_return) == (600, 90.0)


def test_nan_points_are_skipped_not_counted():
    """Iterations that ended no episode log nothing: they neither enter the percentile nor get
    chosen. Values 0 10 30 60 100 90 80 70 40 20 as in the rise-and-fall curve, on steps 100..1000,
    with empty rows at steps 150, 750 and 1100 in between."""
    steps = [100, 150, 200, 300, 400, 500, 600, 700, 750, 800, 900, 1000, 1100]
    returns = [0, np.nan, 10, 30, 60, 100, 90, 80, np.nan, 70, 40, 20, np.nan]
    c = choose_ego_checkpoint(steps, returns, steps)
    assert c.percentile_return == pytest.approx(82.0)
    assert (c.step, c.train_return) == (700, 80.0)


def test_e3t_uses_p90_and_sp_the_last_checkpoint():
    # P90 of the rise-and-fall curve: position 8.1 -> 90 + 0.1 * 10 = 91 -> 90 at step 600.
    c = choose_ego_checkpoint(STEPS, RISE_FALL, EVERY_100, percentile=percentile_for("e3t"))
    assert (c.percentile, c.percentile_return, c.step) == (90.0, pytest.approx(91.0), 600)
    assert percentile_for("fcp") == percentile_for("cole") == percentile_for("hsp") == 80.0
    assert percentile_for("sp") is None
    last = choose_ego_checkpoint(STEPS, RISE_FALL, EVERY_100, percentile=percentile_for("sp"))
    assert (last.step, last.train_return, last.rule) == (
        1000,
        20.0,
        "zsceval-extract-sp: the last checkpoint",
    )


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="my-run: no checkpoint"):
        choose_ego_checkpoint(STEPS, RISE_FALL, [], run="my-run")
    with pytest.raises(NoTrainingCurve, match="my-run: no logged training return"):
        choose_ego_checkpoint(STEPS, [np.nan] * 10, EVERY_100, run="my-run")
    with pytest.raises(ValueError, match="must increase"):
        choose_ego_checkpoint([200, 100], [1, 2], [100])
    with pytest.raises(ValueError, match="one return per step"):
        choose_ego_checkpoint([100, 200], [1], [100])
    with pytest.raises(ValueError, match="percentile"):
        choose_ego_checkpoint(STEPS, RISE_FALL, EVERY_100, percentile=0)


# -- run folders ---------------------------------------------------------------------------------
def fake_run(root: Path, ckpt_steps, returns=RISE_FALL, every: int = 100, keep: int = 11) -> Path:
    """A run folder as the trainer writes it: ``metrics.csv`` (rows at STEPS), ``config.yaml`` and
    one checkpoint per step of ``ckpt_steps`` holding a small policy (its actor head's bias = step)."""
    from zsceval.envs.overcooked import OvercookedEnv
    from zsceval.rl.checkpoint import save_checkpoint
    from zsceval.rl.config import ModelConfig
    from zsceval.rl.policy import Policy, network_spec

    run = root / "run"
    run.mkdir(parents=True)
    rows = "\n".join(f"{s},{'' if np.isnan(r) else r}" for s, r in zip(STEPS, np.asarray(returns, float)))
    (run / "metrics.csv").write_text("env_steps,sparse_return\n" + rows + "\n")
    cfg = {"run": {"checkpoint_every": every, "keep_checkpoints": keep, "checkpoint_first": False}}
    (run / "config.yaml").write_text(yaml.safe_dump(cfg))
    if ckpt_steps:
        env = OvercookedEnv("cramped_room", num_envs=1)
        spec = network_spec(ModelConfig(hidden_size=16, recurrent=False), env.obs_shape,
                            env.critic_obs_shape, env.num_actions)  # fmt: skip
        meta = {"algo": "fcp", "layout": "cramped_room", "env_spec": env.spec_dict(), "ego": "ego"}
        for step in ckpt_steps:
            torch.manual_seed(step)
            policy = Policy(spec)
            with torch.no_grad():
                policy.actor.head.bias.fill_(float(step))
            save_checkpoint(run / "checkpoints", step, {"ego": policy}, meta)
    return run


def test_a_run_with_its_whole_trail_follows_the_rule(tmp_path):
    run = fake_run(tmp_path, STEPS)
    ckpt, record = ego_checkpoint(run, "mep")
    assert ckpt.name == "step_000000000700"
    assert record["step"] == 700 and record["train_return"] == 80.0 and record["fallback"] is None
    assert record["checkpoints_kept"] == 10 and record["percentile"] == 80.0


def test_a_pruned_run_falls_back_to_the_nearest_kept_checkpoint_and_says_so(tmp_path):
    """An old run that kept its 3 latest checkpoints: the rule's step 700 was pruned."""
    run = fake_run(tmp_path, [800, 900, 1000], keep=3)
    ckpt, record = ego_checkpoint(run, "fcp")
    assert ckpt.name == "step_000000000800" and record["target_step"] == 700
    assert "kept only 3 checkpoints" in record["fallback"] and "700" in record["fallback"]
    # a sparse trail that still brackets the target is no fallback
    sparse = fake_run(tmp_path / "sparse", [200, 400, 600, 800, 1000], every=200, keep=6)
    assert ego_checkpoint(sparse, "fcp")[1]["fallback"] is None


def test_a_run_without_a_curve(tmp_path):
    run = fake_run(tmp_path, [900, 1000], returns=[np.nan] * 10)
    with pytest.raises(NoTrainingCurve, match=str(run)):
        ego_checkpoint(run, "fcp")
    ckpt, record = scored_ego_checkpoint(tmp_path, "fcp")
    assert ckpt.name == "step_000000001000" and "no logged training return" in record["fallback"]
    assert record["checkpoint"] == "run/checkpoints/step_000000001000"
    empty = fake_run(tmp_path / "empty", [])
    with pytest.raises(ValueError, match=f"{empty}: no checkpoint"):
        ego_checkpoint(empty, "fcp")


def test_ego_evaluate_scores_and_records_the_chosen_checkpoint(tmp_path, monkeypatch):
    """``ego.evaluate`` loads the rule's checkpoint (step 700 of 100..1000, not the last) and records
    it in its result (a one-partner set stands in for a manifest)."""
    ego_dir = tmp_path / "egos/fcp/s0"
    fake_run(ego_dir, STEPS)
    loaded = []
    real_load = ego_evaluation.load_policy

    def spy(path, name=None, device="cpu"):
        policy, meta = real_load(path, name, device)
        loaded.append(float(policy.actor.head.bias[0].detach()))
        return policy, meta

    partner = real_load(ego_dir / "run", None)[0]  # the last checkpoint's policy (bias 1000)
    monkeypatch.setattr(rl_checkpoint, "load_policy", spy)  # the scored ego is loaded through it
    monkeypatch.setattr(
        ego_evaluation, "load_partner_set", lambda *a, **k: [PartnerSpec("p0", "expert", partner, partner)]
    )
    out = tmp_path / "evaluation"
    out.mkdir()
    params = {"layout": "cramped_room", "algorithm": "fcp", "ego_seed": 0, "episodes": 1, "seed": 0,
              "device": "cpu", "ego": "ego", "partners": "set"}  # fmt: skip
    result = ego_evaluation.ego_evaluate(params, out, {"ego": str(ego_dir), "set": str(tmp_path / "set")})
    assert loaded == [700.0]
    scored = json.loads(json.dumps(result))["scored_checkpoint"]
    assert scored["checkpoint"] == "run/checkpoints/step_000000000700"
    assert (scored["step"], scored["train_return"], scored["fallback"]) == (700, 80.0, None)
    assert scored["rule"].startswith("zsceval-extract-S2") and scored["percentile"] == 80.0
    assert result["rows"] == 2  # one partner x two seats x one episode


SUITE = """
name: trail
seed: 0
layouts: [cramped_room]
algorithms: [sp]
ego_seeds: 1
ego_steps: 3200
preset: quick
overrides: [env.num_envs=8]
partners:
  candidates: 3
  candidate_steps: 6400
  checkpoints: 2
  k: 2
"""


def test_bench_ego_runs_keep_a_trail_of_checkpoints(tmp_path):
    (tmp_path / "s.yaml").write_text(SUITE)
    suite = load_suite(tmp_path / "s.yaml")
    egos, _ = bench_mod_plan.ego_jobs(suite, "cramped_room", {"layout": "cramped_room", "preset": "quick"})
    (ego,) = egos
    assert ego.params["checkpoint_every"] == 3200 // EGO_CHECKPOINTS
    assert ego.params["keep_checkpoints"] == EGO_CHECKPOINTS + 1
