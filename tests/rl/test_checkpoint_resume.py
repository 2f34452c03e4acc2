"""Checkpoint round trip, corruption detection, and exact --resume."""

import csv

import pytest
import torch

from zsceval.rl.checkpoint import (
    CheckpointError,
    check_compatible,
    decode_state,
    encode_state,
    list_checkpoints,
    load_checkpoint,
    load_policy,
    strip_checkpoint,
)
from zsceval.rl.config import resolve_config
from zsceval.rl.trainer import Trainer

REAL = [
    "env.layout=cramped_room",
    "env.num_envs=8",
    "ppo.rollout_length=100",
    "ppo.epochs=2",
    "ppo.num_minibatches=2",
    "run.checkpoint_every=2400",
    "run.total_steps=8800",
    "run.eval_episodes=2",
]


def test_encode_decode_state_round_trip():
    state = {"a": torch.arange(3), 0: {"b": (1, 2.5, "x", None)}, "l": [torch.ones(2, 2), True]}
    tensors = {}
    skeleton = encode_state(state, tensors)
    back = decode_state(skeleton, tensors)
    assert torch.equal(back["a"], state["a"]) and back[0] == {"b": (1, 2.5, "x", None)}
    assert torch.equal(back["l"][0], torch.ones(2, 2)) and back["l"][1] is True


def test_checkpoint_round_trip_gives_identical_policy(toy_config, tmp_path):
    tr = Trainer(
        toy_config("run.total_steps=512", "run.checkpoint_every=256"), tmp_path / "run", progress=False
    )
    tr.train()
    policy, meta = load_policy(tmp_path / "run")
    ego = tr.learners["ego"]
    for k, v in ego.state_dict().items():
        assert torch.equal(policy.state_dict()[k], v), k
    assert meta["steps"] == tr.env_steps and meta["layout"] == "toy" and meta["ego"] == "ego"
    assert meta["env_spec"] == tr.env_spec and meta["agents"]["ego"]["spec"]["model"]["kind"] == "mlp"
    assert meta["zsceval_version"] and "files" in meta
    obs = torch.randint(0, 3, (16, 3, 3, 6), dtype=torch.uint8)
    h, st = ego.initial_state(16, "cpu"), torch.ones(16, dtype=torch.bool)
    g1, g2 = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    assert torch.equal(ego.act(obs, None, h, st, g1).log_probs, policy.act(obs, None, h, st, g2).log_probs)


def test_a_training_checkpoint_strips_to_an_acting_only_copy(toy_config, tmp_path):
    """A resumable checkpoint's stripped copy keeps the actor (the same actions) and leaves out the
    critic and the training state, so it loads to act but not to resume."""
    Trainer(toy_config("run.total_steps=256"), tmp_path / "run", progress=False).train()
    src = list_checkpoints(tmp_path / "run")[-1]
    assert load_checkpoint(src)[1]["resumable"]
    meta = strip_checkpoint(src, tmp_path / "copy")
    assert sorted(p.name for p in meta.parent.iterdir()) == ["meta.json", "policies.safetensors"]
    _, record, weights, _ = load_checkpoint(meta.parent)
    assert record["resumable"] is False and record["steps"] == load_checkpoint(src)[1]["steps"]
    assert weights and all(".actor." in k for k in weights)
    full, _ = load_policy(src)
    copy, _ = load_policy(meta.parent)
    obs = torch.randint(0, 3, (16, 3, 3, 6), dtype=torch.uint8)
    h, st = full.initial_state(16, "cpu"), torch.ones(16, dtype=torch.bool)
    g1, g2 = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    assert torch.equal(full.act(obs, None, h, st, g1).log_probs, copy.act(obs, None, h, st, g2).log_probs)
    with pytest.raises(CheckpointError, match="not resumable"):
        load_checkpoint(meta.parent, with_train_state=True)


def test_corrupt_or_truncated_checkpoint_is_refused(toy_config, tmp_path):
    Trainer(toy_config("run.total_steps=256"), tmp_path / "run", progress=False).train()
    ckpt = list_checkpoints(tmp_path / "run")[-1]
    weights = ckpt / "policies.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        load_checkpoint(ckpt)
    (ckpt / "meta.json").write_text('{"format": "zsceval-chec')
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        load_policy(ckpt)


def test_incompatible_spec_is_refused_naming_the_differing_fields():
    meta = {"env_spec": {"layout": "cramped_room", "obs_shape": [4, 5, 20], "horizon": 400}}
    with pytest.raises(CheckpointError) as info:
        check_compatible(meta, {"layout": "counter_circuit", "obs_shape": [5, 8, 20], "horizon": 400})
    msg = str(info.value)
    assert 'layout: checkpoint "cramped_room", requested "counter_circuit"' in msg
    assert "obs_shape: checkpoint [4, 5, 20], requested [5, 8, 20]" in msg
    assert "horizon" not in msg  # equal fields are not dumped
    check_compatible(meta, {"layout": "cramped_room", "obs_shape": (4, 5, 20), "horizon": 400})  # tuples


class _Interrupt(Exception):
    pass


def _metrics(run):
    rows = list(csv.DictReader((run / "metrics.csv").open()))
    drop = {"wall_time_s", "env_steps_per_s", "collect_s", "update_s", "cpu_s"}
    return [{k: v for k, v in r.items() if k not in drop} for r in rows]


TOY_RESUME = [
    "env.name=toy",
    "env.horizon=12",
    "env.num_envs=32",
    "ppo.rollout_length=8",
    "ppo.epochs=2",
    "ppo.num_minibatches=2",
    "run.checkpoint_every=1024",
    "run.total_steps=3072",
    "run.eval_episodes=2",
    "model.recurrent=true",
    "model.chunk_length=4",
    "model.kind=cnn",
    "model.mlp_layers=1",
]


@pytest.mark.parametrize(
    ("overrides", "resume_at", "resume_iteration"),
    [(REAL, 7200, 9), (TOY_RESUME, 2048, 8)],
    ids=["cramped_room-mlp", "toy-cnn-gru"],
)
def test_resume_after_interruption_reproduces_uninterrupted_run(
    tmp_path, overrides, resume_at, resume_iteration
):
    """Kill a run after iteration 10, resume from its last checkpoint, taken mid-episode (the games
    are 100 of 400 and 4 of 12 steps into their episodes): bit-identical to the uninterrupted run."""
    cfg = resolve_config(preset="quick", overrides=overrides)
    full = Trainer(cfg, tmp_path / "full", progress=False)
    full.train()

    def kill_after_iteration_10(trainer, row):
        if trainer.iteration == 10:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        Trainer(cfg, tmp_path / "cut", progress=False).train(kill_after_iteration_10)
    assert list_checkpoints(tmp_path / "cut")[-1].name == f"step_{resume_at:012d}"
    resumed = Trainer(cfg, tmp_path / "cut", resume=True, progress=False)
    assert resumed.env_steps == resume_at and resumed.iteration == resume_iteration
    assert (resume_at // cfg.env.num_envs) % cfg.env.horizon != 0  # mid-episode
    resumed.train()
    for k, v in full.learners["ego"].state_dict().items():
        assert torch.equal(resumed.learners["ego"].state_dict()[k], v), k
    sa, sb = full.core.state_dict()["optimizers"]["ego"], resumed.core.state_dict()["optimizers"]["ego"]
    for which in ("actor", "critic"):
        for pid, st in sa[which]["state"].items():
            assert torch.equal(st["exp_avg"], sb[which]["state"][pid]["exp_avg"])
    assert _metrics(tmp_path / "full") == _metrics(tmp_path / "cut")
    # every iteration logs its process's CPU seconds (what zsceval bench's time estimate sums)
    rows = list(csv.DictReader((tmp_path / "cut" / "metrics.csv").open()))
    assert len(rows) == resumed.iteration and all(float(r["cpu_s"]) > 0 for r in rows)


def test_resume_refuses_directory_without_run(tmp_path):
    cfg = resolve_config(preset="quick", overrides=REAL)
    with pytest.raises(CheckpointError, match="holds no run"):
        Trainer(cfg, tmp_path / "nothing", resume=True, progress=False)
