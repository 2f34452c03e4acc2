"""The rollout view every core gives the plug-in hooks: the fields each core
claims are the fields it fills, with the documented shapes, and a plug-in that reads a field its
core lacks fails when the run is built, naming the field and the core."""

import pytest
import torch

from zsceval import registry
from zsceval.algorithms.vdn import VDN
from zsceval.rl.config import ConfigError, resolve_config
from zsceval.rl.rollout import ROLLOUT_FIELDS, Rollout, RolloutFieldError, check_rollout_fields
from zsceval.rl.trainer import Trainer

TOY = ["env.name=toy", "env.horizon=8", "env.num_envs=4", "run.num_threads=1", "run.eval_episodes=2"]


def _trainer(tmp_path, algo, *extra):
    rollout = "pqn.rollout_length=8" if algo == "vdn" else "ppo.rollout_length=8"
    cfg = resolve_config(preset="quick", overrides=[f"run.algo={algo}", *TOY, rollout, *extra])
    return Trainer(cfg, tmp_path / algo, progress=False)


@pytest.mark.parametrize("algo", ["sp", "vdn"])
def test_each_core_fills_the_fields_it_claims_with_the_documented_shapes(tmp_path, algo):
    tr = _trainer(tmp_path, algo)
    try:
        view = tr.core.rollout
        assert isinstance(view, Rollout)
        assert view.fields() == tr.core.rollout_fields
        T, B, n = view.T, view.B, view.n
        assert (T, B, n) == (8, 4, 2)
        tr.core.collect(tr.runner, 0)
        assert view.obs.shape[:3] == (T, B, n) and view.actions.shape == (T, B, n)
        assert view.actions.dtype == torch.int64 and view.actor.shape[1:] == (B, n)
        assert view.terminated.shape == (T, B) and view.terminated.dtype == torch.bool
        if algo == "sp":
            assert view.rewards.shape == (T, B, n) and view.team_rewards is None
            assert view.avail.shape[:3] == (T, B, n) and view.starts.shape == (T, B, n)
            assert view.rewards.data_ptr() == tr.core.buffer.rewards.data_ptr()  # a view, not a copy
        else:
            assert view.team_rewards.shape == (T, B) and view.rewards is None
        assert view.flat(view.actions).shape == (T, B * n)
        with pytest.raises(AttributeError):
            view.rewards = None  # frozen: fields cannot be replaced
    finally:
        tr.close()


def test_the_check_names_the_field_the_core_and_what_it_provides():
    expected = r"reads the rollout field\(s\) 'rewards', which the 'pqn' core does not provide "
    expected += r"\(it provides: obs"
    with pytest.raises(RolloutFieldError, match=expected):
        check_rollout_fields("mine", ("obs", "rewards"), "pqn", ("obs", "actions"))
    with pytest.raises(RolloutFieldError, match="valid: " + ", ".join(ROLLOUT_FIELDS)):
        check_rollout_fields("mine", ("reward",), "ppo", ROLLOUT_FIELDS)
    check_rollout_fields("mine", ("obs",), "ppo", ("obs",))  # provided: no error
    assert issubclass(RolloutFieldError, ConfigError)  # the CLI prints it as one line


def test_a_plugin_reading_per_seat_rewards_fails_on_the_value_based_core_when_built(tmp_path):
    """MEP's bonus adds to per-seat rewards; on the value-based core it would have crashed in its
    first hook. Declared, it fails at build time instead, before anything is trained."""

    class SeatBonusVDN(VDN):
        rollout_fields = ("obs", "rewards")

        def on_rollout(self, rollout, episodes):
            rollout.rewards.add_(1.0)

    registry.register("seat-bonus-vdn", "test plug-in", SeatBonusVDN)
    try:
        expected = "'seat-bonus-vdn' reads .* 'rewards', which the 'pqn' core"
        with pytest.raises(RolloutFieldError, match=expected):
            _trainer(tmp_path, "seat-bonus-vdn")
        assert not list((tmp_path / "seat-bonus-vdn").glob("checkpoints/*"))
    finally:
        registry._registry.pop("seat-bonus-vdn", None)


def test_builtin_plugins_declare_what_their_hooks_read():
    assert set(registry.get("mep-stage1").rollout_fields) >= {"obs", "actions", "actor", "rewards"}
    assert "rewards" not in registry.get("trajedi-stage1").rollout_fields  # it steps the actor only
    from zsceval.rl.ppo import PPOCore

    for algo in ("mep-stage1", "trajedi-stage1"):
        check_rollout_fields(algo, registry.get(algo).rollout_fields, "ppo", PPOCore.rollout_fields)
