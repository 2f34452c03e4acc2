"""``run.compile: rollout`` (:mod:`zsceval.rl.rollout_graph`): K env steps of the PPO collection as
one compiled graph train exactly as the eager collection does. With the ``aot_eager`` backend (the
graphs inductor would compile, without its code generation) the buffer, the episode table, the
checkpointed weights and the logged metrics are bit for bit those of ``run.compile: off``."""

import csv

import pytest
import torch
from safetensors.torch import load_file

from zsceval.rl.config import ConfigError, compile_mode, resolve_config, validate
from zsceval.rl.trainer import Trainer

# horizon 8, T = 12, K = 5: graphs of 5, 5 and 2 steps (two compilations); episodes end at steps
# 7, 15 and 23, i.e. inside a graph, and the rollout boundary falls mid-episode
SP = ["run.algo=sp", "env.layout=cramped_room", "env.num_envs=8", "env.horizon=8",
      "ppo.rollout_length=12", "run.num_threads=1", "run.eval_episodes=0", "run.rollout_graph_steps=5",
      "run.compile_backend=aot_eager", "run.total_steps=192", "run.seed=5"]  # fmt: skip
TIMING = ("time", "wall", "per_s", "_s")


def _trainer(tmp_path, name, *overrides):
    cfg = resolve_config(preset="quick", overrides=[*SP, *overrides])
    return Trainer(cfg, tmp_path / name, progress=False)


def _metrics(run) -> list[dict[str, str]]:
    with open(run / "metrics.csv") as f:
        return [
            {k: v for k, v in row.items() if not any(w in k for w in TIMING)} for row in csv.DictReader(f)
        ]


def test_the_compiled_rollout_fills_the_buffer_and_records_the_episodes_of_the_eager_one(tmp_path):
    out = {}
    for mode in ("off", "rollout"):
        tr = _trainer(tmp_path, mode, f"run.compile={mode}")
        assert (tr.core.rollout_graph is not None) == (mode == "rollout"), tr.notes
        tables = []
        for it in range(2):
            tables.append(tr.core.collect(tr.runner, it * tr.steps_per_iteration))
            tr.core.bootstrap(tr.runner)
        out[mode] = (tr.core.buffer, tables, tr.runner.state_dict(), tr.core.h_critic)
        tr.close()
    (a, ta, ra, ha), (b, tb, rb, hb) = out["off"], out["rollout"]
    for key in ("obs", "critic_obs", "avail", "actions", "log_probs", "values", "rewards", "starts",
                "terminated", "truncated", "h_actor", "h_critic", "actor"):  # fmt: skip
        assert torch.equal(getattr(a, key), getattr(b, key)), key
    cut = a.truncated.unsqueeze(-1).expand_as(a.truncated_values)
    assert int(cut.sum()) == 32  # the second rollout cuts the 8 games twice (steps 15 and 23), both seats
    assert torch.equal(a.truncated_values[cut], b.truncated_values[cut])
    assert [len(t) for t in ta] == [len(t) for t in tb] == [8, 16]
    for x, y in zip(ta, tb):
        for f in ("game", "arm", "sparse", "shaped", "events"):
            assert torch.equal(getattr(x, f), getattr(y, f)), f
    assert torch.equal(ra["env"]["state"]["timestep"], rb["env"]["state"]["timestep"])
    for key in ("pos", "held", "obj", "obj_tick"):
        assert torch.equal(ra["env"]["state"][key], rb["env"]["state"][key]), key
    for key in ("starts", "ep_sparse", "ep_shaped", "ep_events"):
        assert torch.equal(ra[key], rb[key]), key
    assert all(torch.equal(x, y) for x, y in zip(ra["state"], rb["state"]))
    assert all(torch.equal(x, y) for x, y in zip(ha, hb))
    assert float(sum(t.events.sum() for t in ta)) > 0  # the random policies did something to count


@pytest.mark.slow
def test_training_with_a_compiled_rollout_equals_eager_training_bit_for_bit(tmp_path):
    """Two iterations (rollouts of graphs of 5, 5 and 2 steps, each followed by the eager PPO
    update): the same weights, to the bit, and the same logged metrics."""
    for mode in ("off", "rollout"):
        _trainer(tmp_path, mode, f"run.compile={mode}").train()
    assert _metrics(tmp_path / "off") == _metrics(tmp_path / "rollout")
    assert len(_metrics(tmp_path / "off")) == 2
    final = sorted((tmp_path / "off" / "checkpoints").glob("*/*.safetensors"))
    assert final
    for path in final:
        x = load_file(str(path))
        y = load_file(str(tmp_path / "rollout" / path.relative_to(tmp_path / "off")))
        assert x.keys() == y.keys()
        assert all(torch.equal(x[k], y[k]) for k in x), path.name


def test_a_run_the_graph_cannot_take_collects_eagerly_with_a_note(tmp_path):
    tr = _trainer(tmp_path, "r", "run.compile=rollout", "env.randomize_seats=true")
    assert tr.core.rollout_graph is None
    assert any(
        "run.compile=rollout: the rollout stays eager" in n and "randomize_seats" in n for n in tr.notes
    )
    tr.close()


def test_run_compile_rollout_is_validated():
    cfg = resolve_config(preset="quick", overrides=["run.compile=rollout", "run.rollout_graph_steps=3"])
    validate(cfg)
    assert compile_mode(cfg, torch.device("cpu")) == "rollout"
    with pytest.raises(ConfigError, match="run.rollout_graph_steps must be >= 1, got 0"):
        validate(resolve_config(preset="quick", overrides=["run.rollout_graph_steps=0"]))
