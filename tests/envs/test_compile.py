"""The Overcooked step as one compiled graph with no host synchronization:
``graph_step`` traces with no graph break, gives the eager ``step``'s results bit for bit through
``aot_eager`` (and ``inductor``: ``test_compile_inductor.py``), and dispatches no data-dependent op."""

import pytest
import torch
import torch._dynamo as dynamo

from zsceval.envs.overcooked import OvercookedEnv
from zsceval.execution.dispatch import HostSyncError, count_ops, forbid_host_sync

CASES = [
    ("counter_circuit", 0),  # classic dynamics, full view
    ("counter_circuit_mr", 2),  # multi-recipe dynamics, partial view (TBS's setting)
]
SLOW_MR = [CASES[0], pytest.param(*CASES[1], marks=pytest.mark.slow)]  # the long equality runs


def _pair(layout, view_radius, B=8, horizon=9):
    envs = [OvercookedEnv(layout, B, seed=0, horizon=horizon, view_radius=view_radius) for _ in range(2)]
    for env in envs:
        env.reset()
    return envs


@pytest.mark.parametrize("layout,view_radius", CASES)
def test_graph_step_traces_as_one_graph(layout, view_radius):
    dynamo.reset()
    _, env = _pair(layout, view_radius)
    explained = dynamo.explain(env.graph_step)(env.state, torch.full((8, 2), 5, dtype=torch.int64))
    assert explained.graph_break_count == 0, [b.reason for b in explained.break_reasons]
    assert explained.graph_count == 1


def _check_equal(eager_env, compiled_env, fn, steps, B, seed=0):
    g = torch.Generator().manual_seed(seed)
    resets = 0
    for t in range(steps):
        actions = torch.randint(0, 6, (B, 2), generator=g)
        s = eager_env.step(actions)
        o = fn(compiled_env.state, actions)
        for key in ("obs", "avail_actions", "reward", "sparse_by_agent", "shaped_by_agent", "events",
                    "interactions", "interaction_cell", "truncated"):  # fmt: skip
            assert torch.equal(getattr(s, key), o[key]), (t, key)
        if s.final_obs is not None:
            assert torch.equal(s.final_obs, o["final_obs"]), t
            resets += 1
    return resets


@pytest.mark.parametrize("layout,view_radius", SLOW_MR)
def test_compiled_graph_step_equals_eager_step_bit_for_bit(layout, view_radius):
    dynamo.reset()
    eager, other = _pair(layout, view_radius)
    fn = torch.compile(other.graph_step, fullgraph=True, dynamic=False, backend="aot_eager")
    assert _check_equal(eager, other, fn, steps=20, B=8) == 2  # crosses two auto-resets
    for a, b in zip(vars(eager.state).values(), vars(other.state).values()):
        assert torch.equal(a, b)


def test_a_rollout_of_graph_steps_dispatches_no_data_dependent_op():
    env = OvercookedEnv("counter_circuit", 16, seed=0, horizon=7)
    env.reset()
    actions = torch.randint(0, 6, (20, 16, 2), generator=torch.Generator().manual_seed(1))
    with forbid_host_sync():
        for t in range(20):  # crosses two resets
            env.graph_step(env.state, actions[t])
    with pytest.raises(HostSyncError, match="_local_scalar_dense"):  # the eager step checks and branches
        with forbid_host_sync():
            env.step(actions[0])
    with pytest.raises(HostSyncError, match="boolean mask"):
        with forbid_host_sync():
            x = torch.arange(4)
            x[x > 1]


def test_op_counts_see_the_engine_and_graph_step_refuses_random_starts():
    env = OvercookedEnv("counter_circuit", 16, seed=0)
    env.reset()
    a = torch.full((16, 2), 4, dtype=torch.int64)
    with count_ops() as graph:
        env.graph_step(env.state, a)
    with count_ops() as eager:
        env.step(a)
    assert sum(graph.values()) > 50 and sum(eager.values()) > 50  # the count sees the engine's ops
    assert graph["aten::_local_scalar_dense"] == 0 < eager["aten::_local_scalar_dense"]
    for kwargs in ({"randomize_seats": True}, {"random_start_prob": 0.5}):
        env = OvercookedEnv("cramped_room", 2, seed=0, **kwargs)
        env.reset()
        with pytest.raises(ValueError, match="deterministic starts"):
            env.graph_step(env.state, torch.zeros(2, 2, dtype=torch.int64))


@pytest.mark.parametrize("layout,view_radius", SLOW_MR)
def test_a_compiled_env_steps_like_the_eager_one(layout, view_radius):
    dynamo.reset()
    eager, compiled = _pair(layout, view_radius, B=6, horizon=5)
    compiled.compile_step(backend="aot_eager")
    g = torch.Generator().manual_seed(2)
    for t in range(12):
        a = torch.randint(0, 6, (6, 2), generator=g)
        s, c = eager.step(a), compiled.step(a)
        for key in ("obs", "avail_actions", "reward", "events", "truncated", "interactions"):
            assert torch.equal(getattr(s, key), getattr(c, key)), (t, key)
        assert c.final_obs is not None  # always set when compiled; read where truncated
        if s.final_obs is not None:
            assert torch.equal(s.final_obs, c.final_obs)
        assert set(s.infos) <= set(c.infos)
        for key, value in s.infos.items():
            assert torch.equal(value, c.infos[key]), (t, key)
    with pytest.raises(ValueError, match="shape"):
        compiled.step(torch.zeros(6, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match="deterministic starts"):
        OvercookedEnv("cramped_room", 2, randomize_seats=True).compile_step(backend="aot_eager")


def test_run_compile_compiles_the_training_env_step_where_it_can(tmp_path, monkeypatch):
    from zsceval.rl.config import ConfigError, compile_mode, resolve_config
    from zsceval.rl.trainer import Trainer

    compiled = []
    monkeypatch.setattr(OvercookedEnv, "compile_step", lambda self, **kw: compiled.append(self))
    base = ["env.num_envs=2", "ppo.rollout_length=4", "run.num_threads=1", "run.eval_episodes=0"]
    cpu = torch.device("cpu")
    assert compile_mode(resolve_config(preset="quick", overrides=base), cpu) == "off"  # auto on CPU
    assert compile_mode(resolve_config(preset="quick", overrides=base), torch.device("cuda")) == "step"
    step = resolve_config(preset="quick", overrides=[*base, "run.compile=step"])
    tr = Trainer(step, tmp_path / "a", progress=False)
    tr.close()
    assert compiled == [tr.env]
    off = resolve_config(preset="quick", overrides=[*base, "run.compile=off"])
    tr = Trainer(off, tmp_path / "b", progress=False)
    tr.close()
    assert len(compiled) == 1
    monkeypatch.undo()
    cfg = resolve_config(preset="quick", overrides=[*base, "run.compile=step", "env.random_start_prob=0.5"])
    tr = Trainer(cfg, tmp_path / "c", progress=False)
    tr.close()
    assert any("stays eager" in note and "deterministic starts" in note for note in tr.notes)
    with pytest.raises(ConfigError, match="run.compile must be one of off, step, full, rollout, auto"):
        Trainer(resolve_config(preset="quick", overrides=[*base, "run.compile=fast"]), tmp_path / "d")


def test_the_compiled_env_step_checks_actions_without_a_host_sync():
    env = OvercookedEnv("cramped_room", 4, seed=0, horizon=5)
    env.reset()
    env._compiled_step = env.graph_step  # the compiled path's checks, without compiling
    with forbid_host_sync():
        for _ in range(7):
            env.step(torch.full((4, 2), 5, dtype=torch.int64))
    with pytest.raises(RuntimeError, match="actions must be in 0..5"):
        env.step(torch.full((4, 2), 6, dtype=torch.int64))
