"""``ProcessBatchedEnv``: B single-game simulators in worker processes, checked against the same games
stepped in-process, plus the robustness guarantees (worker crashes, Ctrl-C, parent death, close)."""

from __future__ import annotations

import functools
import gc
import json
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from zsceval.envs import BatchedEnv
from zsceval.envs.base import Step
from zsceval.envs.process_vector import ProcessBatchedEnv, game_seed

N, D, A, E, DC = 2, 5, 4, 2, 3
EVENTS = ("zero", "one")
REPO = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------- fake games
class PlainGame:
    """Counter game. obs[k] = [t, seed, k, episode, last action of k]; action (t + k) % A is
    unavailable; reward = sum(actions) / 2; events = (action == 0, action == 1); terminated with
    probability ``p_term`` per step (seeded rng), truncated at ``horizon``. Extras: ``critic_obs``
    [n, 3] = [t, seed, k] (with ``critic``) and ``bonus`` [n] (step only, = actions * 10).
    ``crash_at`` = (seed, t, mode): game ``seed`` crashes on its step t (``"exit"``: os._exit(3);
    ``"raise"``: ValueError)."""

    num_agents, num_actions, obs_dim, event_names = N, A, D, EVENTS

    def __init__(self, seed, horizon=6, p_term=0.15, critic=True, crash_at=None, obs_dim=D):
        self.seed, self.horizon, self.p_term, self.critic, self.crash_at = (
            seed,
            horizon,
            p_term,
            critic,
            crash_at,
        )
        self.obs_dim = obs_dim
        self.rng = np.random.default_rng(seed)
        self.t, self.episode, self.last = 0, -1, np.zeros(N, np.int64)

    def _gs(self):
        k = np.arange(N)
        obs = np.stack([np.full(N, self.t), np.full(N, self.seed), k, np.full(N, self.episode), self.last], 1)
        avail = np.ones((N, A), bool)
        avail[k, (self.t + k) % A] = False
        gs = {"obs": obs[:, : self.obs_dim].astype(np.float32), "avail_actions": avail}
        if self.critic:
            gs["critic_obs"] = obs[:, :DC].astype(np.float32)
        return gs

    def reset(self):
        self.t, self.episode, self.last = 0, self.episode + 1, np.zeros(N, np.int64)
        return self._gs()

    def step(self, actions):
        assert actions.dtype == np.int64 and actions.shape == (N,)
        self.t += 1
        if self.crash_at is not None and self.crash_at[:2] == (self.seed, self.t):
            if self.crash_at[2] == "exit":
                os._exit(3)
            raise ValueError(f"boom in game {self.seed} at step {self.t}")
        self.last = actions.copy()
        terminated = bool(self.rng.random() < self.p_term)
        return {
            **self._gs(),
            "reward": np.float32(actions.sum() / 2),
            "sparse_by_agent": actions.astype(np.float32),
            "shaped_by_agent": -actions.astype(np.float32),
            "events": np.stack([actions == 0, actions == 1], 1).astype(np.int16),
            "terminated": terminated,
            "truncated": self.t >= self.horizon and not terminated,
            "bonus": actions.astype(np.float32) * 10,
        }

    def close(self):
        pass


class FakeGame(PlainGame):
    """``PlainGame`` with exact save / restore (``get_state`` / ``set_state``)."""

    def get_state(self):
        return pickle.dumps((self.t, self.episode, self.last, self.rng.bit_generator.state))

    def set_state(self, data):
        self.t, self.episode, self.last, self.rng.bit_generator.state = pickle.loads(data)


def make_broken(seed):
    raise ImportError("No module named 'fakesim' (pip install fakesim)")


class BadShapeGame(PlainGame):
    """Reports obs_dim 7 but returns 5 observation columns."""

    def __init__(self, seed):
        super().__init__(seed)
        self.obs_dim = 7


# ---------------------------------------------------------------------------- helpers
def direct_rollout(make, num_envs, seed, actions_seq):
    """The same games stepped in this process, with the documented auto-reset semantics."""
    games = [make(game_seed(seed, i)) for i in range(num_envs)]
    first = [g.reset() for g in games]
    out = []
    for actions in actions_seq:
        rows = []
        for i, g in enumerate(games):
            gs = g.step(actions[i].numpy())
            done = gs["terminated"] or gs["truncated"]
            row = {"step": gs, "final": gs if done else None, "next": g.reset() if done else gs}
            rows.append(row)
        out.append(rows)
    return first, out


def live(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pids, timeout=10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(live(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if live(p)]


def rand_actions(env, gen):
    return torch.randint(0, env.num_actions, (env.num_envs, env.num_agents), generator=gen)


# ---------------------------------------------------------------------------- tests
def test_step_fields_spaces_and_spec():
    with ProcessBatchedEnv(
        FakeGame, 5, num_workers=2, seed=3, event_names=EVENTS, spec={"name": "fake", "v": 1}
    ) as env:
        assert isinstance(env, BatchedEnv)
        assert (env.num_envs, env.num_agents, env.num_actions, env.horizon) == (5, N, A, 6)
        assert env.possible_agents == ("agent_0", "agent_1") and env.event_names == EVENTS
        assert env.obs_shape == (D,) and env.critic_obs_shape == (DC,)
        assert env.single_observation_space.shape == (D,) and env.single_observation_space.dtype == np.float32
        assert np.isinf(env.single_observation_space.low).all()
        assert env.single_critic_observation_space.shape == (DC,) and env.single_action_space.n == A
        spec = json.loads(json.dumps(env.spec_dict()))
        assert spec["name"] == "fake" and spec["v"] == 1 and spec["obs_shape"] == [D]
        assert spec["critic_obs_shape"] == [DC] and spec["event_names"] == list(EVENTS)
        assert env.blocks == [(0, 2), (2, 5)] and env.num_workers == 2
        step = env.reset()
        assert isinstance(step, Step) and step.final_obs is None
        assert step.obs.dtype == torch.float32 and step.obs.shape == (5, N, D)
        assert step.avail_actions.dtype == torch.bool and step.avail_actions.shape == (5, N, A)
        assert step.reward.shape == (5,) and not step.reward.any() and not step.events.any()
        assert not step.done.any() and step.terminated.dtype == torch.bool
        assert torch.equal(
            step.obs[:, 0, 1], torch.tensor([game_seed(3, i) for i in range(5)], dtype=torch.float32)
        )
        assert set(step.infos) == {"critic_obs", "bonus"} and not step.infos["bonus"].any()  # zeros at reset
        assert step.critic_obs is step.infos["critic_obs"] and step.critic_obs.shape == (5, N, DC)
        step = env.step(torch.ones(5, N, dtype=torch.int64))
        assert step.events.dtype == torch.int16 and step.events.shape == (5, N, E)
        assert torch.equal(step.events[..., 1], torch.ones(5, N, dtype=torch.int16))
        assert torch.equal(step.reward, torch.ones(5)) and torch.equal(
            step.infos["bonus"], torch.full((5, N), 10.0)
        )
        assert torch.equal(step.interactions, torch.zeros(5, N, dtype=torch.int64))
        assert torch.equal(step.interaction_cell, torch.full((5, N), -1))
        assert step.sparse_by_agent.dtype == step.shaped_by_agent.dtype == torch.float32


def test_batched_result_equals_in_process_games_with_auto_resets():
    B, seed, T = 5, 7, 40
    gen = torch.Generator().manual_seed(0)
    actions_seq = [torch.randint(0, A, (B, N), generator=gen) for _ in range(T)]
    first, expected = direct_rollout(FakeGame, B, seed, actions_seq)
    ends = {"term": 0, "trunc": 0}
    with ProcessBatchedEnv(FakeGame, B, num_workers=2, seed=seed) as env:
        step = env.reset()
        assert torch.equal(step.obs, torch.from_numpy(np.stack([g["obs"] for g in first])))
        for actions, rows in zip(actions_seq, expected):
            step = env.step(actions)
            for key in ("reward", "sparse_by_agent", "shaped_by_agent", "events", "terminated", "truncated"):
                want = torch.from_numpy(np.stack([np.asarray(r["step"][key]) for r in rows]))
                assert torch.equal(getattr(step, key), want.to(getattr(step, key).dtype)), key
            for key, field in (("obs", step.obs), ("avail_actions", step.avail_actions)):
                assert torch.equal(field, torch.from_numpy(np.stack([r["next"][key] for r in rows]))), key
            assert torch.equal(
                step.infos["critic_obs"], torch.from_numpy(np.stack([r["next"]["critic_obs"] for r in rows]))
            )
            # after an auto-reset the extra that reset() lacks is zero; else the step's value
            bonus = np.stack(
                [r["step"]["bonus"] if r["final"] is None else np.zeros(N, np.float32) for r in rows]
            )
            assert torch.equal(step.infos["bonus"], torch.from_numpy(bonus))
            done = [r["final"] is not None for r in rows]
            ends["term"] += sum(bool(r["step"]["terminated"]) for r in rows)
            ends["trunc"] += sum(bool(r["step"]["truncated"]) for r in rows)
            assert step.done.tolist() == done
            if not any(done):
                assert step.final_obs is None and "final_bonus" not in step.infos
                continue
            final = np.stack([(r["final"] or r["next"])["obs"] for r in rows])
            assert torch.equal(step.final_obs, torch.from_numpy(final))
            final_bonus = np.stack([r["step"]["bonus"] for r in rows])  # not-done rows: current == step's
            assert torch.equal(step.infos["final_bonus"], torch.from_numpy(final_bonus))
            final_critic = np.stack([(r["final"] or r["next"])["critic_obs"] for r in rows])
            assert torch.equal(step.final_critic_obs, torch.from_numpy(final_critic))
    assert ends["term"] > 0 and ends["trunc"] > 0, ends


def test_default_critic_view_and_worker_clamp():
    make = functools.partial(PlainGame, critic=False, p_term=0.0)
    with ProcessBatchedEnv(make, 3, num_workers=10) as env:
        assert env.num_workers == 3 and env.blocks == [(0, 1), (1, 2), (2, 3)] and len(env.worker_pids) == 3
        assert env.critic_obs_shape == (N * D,)
        step = env.reset()
        assert "critic_obs" not in step.infos
        assert torch.equal(step.critic_obs[:, 0], torch.cat([step.obs[:, 0], step.obs[:, 1]], -1))
        assert torch.equal(step.critic_obs[:, 1], torch.cat([step.obs[:, 1], step.obs[:, 0]], -1))
        assert env.single_critic_observation_space.shape == (N * D,)


def test_bad_actions_raise_value_error_and_leave_the_env_usable():
    with ProcessBatchedEnv(FakeGame, 3, num_workers=1) as env:
        env.reset()
        bad = {
            "shape": torch.zeros(3, N + 1, dtype=torch.int64),
            "dtype": torch.zeros(3, N, dtype=torch.int32),
            "range": torch.full((3, N), A, dtype=torch.int64),
            "negative": torch.full((3, N), -1, dtype=torch.int64),
            "float numpy": np.zeros((3, N)),
            "list": [[0, 0]] * 3,
        }
        for actions in bad.values():
            with pytest.raises(ValueError, match="actions must"):
                env.step(actions)
        step = env.step(np.full((3, N), A - 1, dtype=np.int64))
        assert torch.equal(step.obs[:, :, 4], torch.full((3, N), A - 1.0))


def test_state_dict_round_trip_and_refusals():
    gen = torch.Generator().manual_seed(1)
    with ProcessBatchedEnv(FakeGame, 4, num_workers=2, seed=2) as env:
        env.reset()
        for _ in range(5):
            env.step(rand_actions(env, gen))
        state = env.state_dict()
        assert state["exact"] is True and len(state["games"]) == 4 and state["games"][0].dtype == torch.uint8
        actions = [rand_actions(env, gen) for _ in range(12)]
        first = [env.step(a) for a in actions]
        with ProcessBatchedEnv(FakeGame, 4, num_workers=3, seed=2) as other:  # other worker split
            other.load_state_dict(state)
            second = [other.step(a) for a in actions]
        for a, b in zip(first, second):
            assert (
                torch.equal(a.obs, b.obs) and torch.equal(a.reward, b.reward) and torch.equal(a.done, b.done)
            )
        with ProcessBatchedEnv(FakeGame, 4, num_workers=2, seed=5) as other:
            with pytest.raises(ValueError, match="seed: saved 2 != this env 5"):
                other.load_state_dict(state)
            with pytest.raises(ValueError, match="'games' must be a list of 4"):
                other.load_state_dict(
                    {**state, "config": other.state_dict()["config"], "games": state["games"][:3]}
                )
            with pytest.raises(ValueError, match="not a process env state"):
                other.load_state_dict({"env": "toy"})
    with ProcessBatchedEnv(PlainGame, 2, num_workers=1) as env:
        state = env.state_dict()
        assert state["exact"] is False and "games" not in state
        with pytest.raises(ValueError, match="cannot be restored exactly"):
            env.load_state_dict(state)


def test_worker_exit_is_reported_with_exit_code_and_games():
    make = functools.partial(FakeGame, p_term=0.0, horizon=50, crash_at=(game_seed(0, 3), 2, "exit"))
    env = ProcessBatchedEnv(make, 5, num_workers=2)
    pids = env.worker_pids
    env.reset()
    env.step(torch.zeros(5, N, dtype=torch.int64))
    with pytest.raises(RuntimeError) as info:
        env.step(torch.zeros(5, N, dtype=torch.int64))
    msg = str(info.value)
    assert f"worker 1 (pid {pids[1]}, exit code 3, games 2..4) failed to step" in msg, msg
    assert env.closed and wait_gone(pids) == []
    with pytest.raises(RuntimeError, match="closed after a worker failure"):
        env.reset()


def test_game_exception_shows_the_worker_traceback():
    make = functools.partial(FakeGame, p_term=0.0, horizon=50, crash_at=(game_seed(0, 1), 2, "raise"))
    env = ProcessBatchedEnv(make, 4, num_workers=2)
    pids = env.worker_pids
    env.reset()
    env.step(torch.zeros(4, N, dtype=torch.int64))
    with pytest.raises(RuntimeError) as info:
        env.step(torch.zeros(4, N, dtype=torch.int64))
    msg = str(info.value)
    assert "worker 0" in msg and f"pid {pids[0]}" in msg and "exit code 1" in msg and "games 0..1" in msg
    assert "ValueError: boom in game 1 at step 2" in msg and "Traceback (most recent call last)" in msg
    assert "in step" in msg  # the game's frame is in the traceback
    assert wait_gone(pids) == []


def test_killed_worker_is_reported_at_the_next_step():
    env = ProcessBatchedEnv(FakeGame, 4, num_workers=2)
    env.reset()
    pid = env.worker_pids[1]
    os.kill(pid, signal.SIGKILL)
    wait_gone([pid])
    with pytest.raises(
        RuntimeError, match=rf"worker 1 \(pid {pid}, exit code -9 \(killed by SIGKILL\), games 2..3\)"
    ):
        env.step(torch.zeros(4, N, dtype=torch.int64))
    assert wait_gone(env.worker_pids) == []


def test_construction_errors_reach_the_parent():
    before = {p.pid for p in multiprocessing.active_children()}
    with pytest.raises(RuntimeError, match=r"ImportError: No module named 'fakesim' \(pip install fakesim\)"):
        ProcessBatchedEnv(make_broken, 3, num_workers=2)
    with pytest.raises(ValueError, match=r"game.reset\(\)\['obs'\] has shape \[2, 5\], expected \[2, 7\]"):
        ProcessBatchedEnv(BadShapeGame, 2, num_workers=1)
    with pytest.raises(ValueError, match="games report event_names"):
        ProcessBatchedEnv(FakeGame, 2, num_workers=1, event_names=("goal",))
    with pytest.raises(ValueError, match="make_game must be picklable"):
        ProcessBatchedEnv(lambda seed: FakeGame(seed), 2)
    with pytest.raises(ValueError, match="start_method"):
        ProcessBatchedEnv(FakeGame, 2, start_method="fork")
    leftover = [
        p for p in multiprocessing.active_children() if p.pid not in before and p.name.startswith("Process")
    ]
    assert leftover == []


def test_close_context_manager_and_finalizer_leave_no_child():
    with ProcessBatchedEnv(FakeGame, 4, num_workers=2) as env:
        env.reset()
        pids = env.worker_pids
        assert all(live(p) for p in pids)
    assert env.closed and wait_gone(pids, timeout=1.0) == []
    assert not [p for p in multiprocessing.active_children() if p.pid in pids]
    env.close()  # idempotent
    env = ProcessBatchedEnv(FakeGame, 2, num_workers=2)
    pids = env.worker_pids
    del env
    gc.collect()
    assert wait_gone(pids, timeout=5.0) == []
    psutil = pytest.importorskip("psutil")
    assert not any(c.pid in pids for c in psutil.Process().children(recursive=True))


SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, time, numpy as np
    # Ctrl-C as in a terminal: a shell's background job (`cmd &`, e.g. CI under nohup) starts with
    # SIGINT ignored, which children inherit, and then Python raises no KeyboardInterrupt at all.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from zsceval.envs.process_vector import ProcessBatchedEnv, CounterGame
    env = ProcessBatchedEnv(CounterGame, 4, num_workers=2)
    env.reset()
    print(*env.worker_pids, flush=True)
    actions = np.zeros((4, 3), np.int64)
    if sys.argv[1] == "die":
        os._exit(0)  # no finalizer runs: the workers must notice by themselves
    try:
        while True:
            env.step(actions)
            time.sleep(0.02)  # Ctrl-C lands here (outside the env) almost always
    except KeyboardInterrupt:
        print("closed" if env.closed else "open", flush=True)
        if not env.closed:
            env.step(actions)  # the workers ignored SIGINT and still serve
            print("stepped after Ctrl-C", flush=True)
        raise
    """
)


def run_script(mode):
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) == 2, proc.stderr.read()
    return proc, pids


def test_ctrl_c_in_the_parent_closes_the_workers():
    proc, pids = run_script("loop")
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGINT)  # like Ctrl-C: the whole process group gets SIGINT
    try:
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    # the workers ignored SIGINT: they still step after the parent caught KeyboardInterrupt
    # (or, if it landed inside env.step, the env closed them), and the parent exits by it
    assert out.split("\n")[0] in ("open", "closed"), (out, err)
    assert out.startswith("closed") or "stepped after Ctrl-C" in out, (out, err)
    assert err.strip().splitlines()[-1] == "KeyboardInterrupt" and "RuntimeError" not in err, err
    assert wait_gone(pids, timeout=5.0) == []  # closed by the finalizer at exit


def test_workers_exit_when_the_parent_dies():
    proc, pids = run_script("die")
    proc.wait(timeout=20)
    assert wait_gone(pids, timeout=10.0) == []


def test_spawn_and_forkserver_give_the_same_steps():
    gen = torch.Generator().manual_seed(4)
    actions = [torch.randint(0, A, (3, N), generator=gen) for _ in range(15)]
    runs = []
    for method, workers in (("spawn", 1), ("forkserver", 2)):
        with ProcessBatchedEnv(FakeGame, 3, num_workers=workers, seed=9, start_method=method) as env:
            env.reset()
            runs.append([env.step(a) for a in actions])
    for a, b in zip(*runs):
        assert torch.equal(a.obs, b.obs) and torch.equal(a.reward, b.reward) and torch.equal(a.done, b.done)
    assert any(s.done.any() for s in runs[0])
