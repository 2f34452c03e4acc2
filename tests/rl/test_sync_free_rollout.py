"""A whole rollout of T steps with no host synchronization (issue 34 items 1-2): the PPO core's
step loop (acting, critic values, env step, training rewards, buffer writes, episode records,
resets) dispatches no data-dependent op for self-play, and the episode table built once after it
equals the one the old per-step bookkeeping (``done.any()``, ``nonzero`` at every step) gives."""

import pytest
import torch

from zsceval.execution.dispatch import HostSyncError, forbid_host_sync
from zsceval.rl.config import resolve_config
from zsceval.rl.envs import make_env
from zsceval.rl.trainer import Trainer

# horizon 20 and T = 30: the games' episodes end at steps 19, 39 and 59, i.e. once in the first
# rollout and twice in the second (mid-rollout and at its last step), each time in all 6 games
SP = ["run.algo=sp", "env.layout=cramped_room", "env.num_envs=6", "env.horizon=20", "ppo.rollout_length=30",
      "run.num_threads=1", "run.eval_episodes=0"]  # fmt: skip


def _trainer(tmp_path, name, *overrides):
    cfg = resolve_config(preset="quick", overrides=[*SP, *overrides])
    return Trainer(cfg, tmp_path / name, progress=False), cfg


def _graph_env_step(tr):
    """The compiled env step's path, run eagerly (``graph_step`` as the compiled function): the
    step that sets ``final_obs`` every step and checks actions with an asynchronous assert."""
    tr.env._compiled_step = tr.env.graph_step


def _old_episode_rows(cfg, actions):
    """Replay ``actions int64 [T, B, n]`` in a fresh env with the runner's bookkeeping before issue 34:
    in-place totals, and at every step ``done.any()`` on the host and ``nonzero`` of the games."""
    env = make_env(cfg.env, device="cpu", seed=cfg.run.seed)
    env.reset()
    B, n, E = env.num_envs, env.num_agents, len(env.event_names)
    sparse, shaped, events = torch.zeros(B), torch.zeros(B, n), torch.zeros(B, n, E)
    rows = []
    for a in actions:
        s = env.step(a)
        sparse += s.reward
        shaped += s.shaped_by_agent
        events += s.events
        if bool(s.done.any()):
            games = s.done.nonzero().squeeze(-1)
            rows.append((games, sparse[games], shaped[games], events[games]))
            keep = (~s.done).float()
            sparse *= keep
            shaped *= keep[:, None]
            events *= keep[:, None, None]
    return [torch.cat(c) for c in zip(*rows)]


def test_a_self_play_rollout_runs_with_no_host_sync_and_records_the_old_episode_table(tmp_path):
    tr, cfg = _trainer(tmp_path, "a")
    _graph_env_step(tr)
    tr.core.sync_free = True
    assert tr.runner.static_seating  # SP: one arm, drawn by the base assign
    actions, tables = [], []
    for it in range(2):
        with forbid_host_sync():
            episodes = tr.core.collect_steps(tr.runner, it * tr.cfg.steps_per_iteration)
            tr.core.bootstrap(tr.runner)
        actions.append(tr.core.buffer.actions.clone())
        tables.append(episodes.table(tr.runner.arm_table.arms, tuple(tr.env.event_names), 2, tr.runner.E))
    tr.close()
    assert [len(t) for t in tables] == [6, 12]
    game, sparse, shaped, events = _old_episode_rows(cfg, torch.cat(actions))
    assert torch.equal(torch.cat([t.game for t in tables]), game)
    assert torch.equal(torch.cat([t.sparse for t in tables]), sparse)
    assert torch.equal(torch.cat([t.shaped for t in tables]), shaped)
    assert torch.equal(torch.cat([t.events for t in tables]), events)
    assert all(int(t.arm.abs().sum()) == 0 and int(t.ego_seat.abs().sum()) == 0 for t in tables)
    assert float(events.sum()) > 0  # the random policies did something the table had to count


def test_the_sync_free_rollout_fills_the_buffer_as_the_eager_one(tmp_path):
    """Same seed: the sync-free collect (V(final obs) every step, graph env step) stores what the
    default one does (V(final obs) only after ``truncated.any()``), so the learning is unchanged."""
    bufs = []
    for name, sync_free in (("a", False), ("b", True)):
        tr, _ = _trainer(tmp_path, name)
        if sync_free:
            _graph_env_step(tr)
        tr.core.sync_free = sync_free
        tr.core.collect(tr.runner, 0)
        tr.core.bootstrap(tr.runner)
        adv, ret = tr.core.advantages()
        bufs.append((tr.core.buffer, adv, ret))
        tr.close()
    (a, adv_a, ret_a), (b, adv_b, ret_b) = bufs
    for key in ("obs", "actions", "log_probs", "values", "rewards", "starts", "truncated"):
        assert torch.equal(getattr(a, key), getattr(b, key)), key
    cut = a.truncated.unsqueeze(-1).expand_as(a.truncated_values[: a.T])
    assert bool(cut.any())
    assert torch.equal(a.truncated_values[: a.T][cut], b.truncated_values[: b.T][cut])
    assert torch.equal(adv_a, adv_b) and torch.equal(ret_a, ret_b)


def test_population_seatings_still_read_the_host(tmp_path):
    """A run with several arms draws each new episode's arm in Python: that path still syncs
    (once per step, ``done.any()``), and the runner says so."""
    tr, _ = _trainer(tmp_path, "a")
    _graph_env_step(tr)
    tr.core.sync_free = True
    tr.runner.set_arms([*tr.runner.arm_table.arms, tr.runner.arm_table.arms[0]])
    assert not tr.runner.static_seating
    with pytest.raises(HostSyncError), forbid_host_sync():
        tr.core.collect_steps(tr.runner, 0)
    tr.close()
