"""PPO learns: the toy cue game (seconds) and cramped_room (a short real-layout budget)."""

import pytest

from zsceval.rl.config import resolve_config
from zsceval.rl.trainer import Trainer


def test_sp_solves_toy_cue_game(toy_config, tmp_path):
    # optimum 20 * horizon = 160; a uniformly random policy scores 160 / 25 = 6.4
    cfg = toy_config("run.total_steps=12000", "ppo.epochs=4", "ppo.entropy_coefs=[0.01]",
                     "ppo.entropy_milestones=[0]", "run.eval_episodes=32")  # fmt: skip
    tr = Trainer(cfg, tmp_path / "run", progress=False)
    summary = tr.train()
    assert tr.metrics[0]["sparse_return"] < 40
    assert summary["self_play"]["sparse_return_mean"] >= 140


def test_sp_improves_sparse_return_on_cramped_room(tmp_path):
    """Real layout, ~200k env steps (about 20 s on 2 cores): sparse return rises from ~5 to > 30."""
    overrides = ["env.layout=cramped_room", "env.num_envs=64", "run.total_steps=204800"]
    cfg = resolve_config(preset="quick", overrides=overrides)
    tr = Trainer(cfg, tmp_path / "run", progress=False)
    tr.train()
    returns = [r["sparse_return"] for r in tr.metrics if r.get("episodes")]
    assert returns[0] < 20
    assert returns[-1] > 30 and returns[-1] > returns[0] + 20


@pytest.mark.slow
def test_quick_preset_sp_reaches_100_on_cramped_room(tmp_path):
    cfg = resolve_config(preset="quick", overrides=["env.layout=cramped_room", "run.total_steps=1500000"])
    summary = Trainer(cfg, tmp_path / "run", progress=False).train()
    assert summary["self_play"]["sparse_return_mean"] >= 100


@pytest.mark.slow
def test_quick_preset_sp_delivers_orders_on_counter_circuit_mr(tmp_path):
    """Multi-recipe acceptance (about 12 minutes on 2 cores): the quick preset's multi-recipe entry
    (random starts, 2e7 steps) learns to deliver orders from the standard start."""
    cfg = resolve_config(preset="quick", overrides=["env.layout=counter_circuit_mr"])
    summary = Trainer(cfg, tmp_path / "run", progress=False).train()
    sp = summary["self_play"]
    assert sp["sparse_return_mean"] > 0
    by_seat = sp["events_mean_by_seat"]
    orders_delivered = sum(e["delivery"] - e["deliver_useless_order"] for e in by_seat)
    assert orders_delivered > 0
