"""A whole rollout of T steps with no host synchronization: the PPO core's
step loop (acting, critic values, env step, training rewards, buffer writes, episode records,
resets) dispatches no data-dependent op for self-play, and the episode table built once after it
equals the one the old per-step bookkeeping (``done.any()``, ``nonzero`` at every step) gives."""

import contextlib

import pytest
import torch

from zsceval import registry
from zsceval.envs.overcooked import OvercookedEnv
from zsceval.execution.dispatch import allow_host_sync, forbid_host_sync
from zsceval.rl.algorithm import Algorithm
from zsceval.rl.config import resolve_config
from zsceval.rl.envs import make_env
from zsceval.rl.population import PolicyPool
from zsceval.rl.population.functional import Layout
from zsceval.rl.seating import ego_partner_arms
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
    """Replay ``actions int64 [T, B, n]`` in a fresh env with the runner's bookkeeping before compiled graphs:
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
            episodes = tr.core.collect_steps(tr.runner, it * tr.steps_per_iteration)
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


class _PoolPartners(Algorithm):
    """The ego with one of 3 frozen pool members, arm drawn per game at every episode start."""

    def build_partners(self, make_policy):
        torch.manual_seed(7)
        return {"pool": PolicyPool.from_policies([make_policy() for _ in range(3)])}

    def arms(self):
        return ego_partner_arms("ego", "pool", self.num_agents, members=range(3))


@pytest.fixture
def pool_partners():
    registry.register("pool_partners_sync_test", cls=_PoolPartners)
    yield "run.algo=pool_partners_sync_test"
    registry._registry.pop("pool_partners_sync_test", None)


def _collect_twice(tr, forbid: bool):
    """Two sync-free rollouts; under ``forbid`` only the runner's re-seats may read the host.
    Returns the buffers' tensors, the episode tables and the number of re-seats."""
    _graph_env_step(tr)
    tr.core.sync_free = True
    seats = []
    seat = tr.runner._seat

    def counted_seat(games):
        seats.append(games)
        with allow_host_sync():
            seat(games)

    tr.runner._seat = counted_seat
    out, tables = [], []
    for it in range(2):
        with forbid_host_sync() if forbid else contextlib.nullcontext():
            episodes = tr.core.collect_steps(tr.runner, it * tr.steps_per_iteration)
        b = tr.core.buffer
        out.append({k: getattr(b, k).clone() for k in ("obs", "actions", "log_probs", "rewards", "actor")})
        tables.append(episodes.table(tr.runner.arm_table.arms, tuple(tr.env.event_names), 2, tr.runner.E))
    return out, tables, seats


def test_a_population_rollout_reads_the_host_only_to_re_seat_once_per_episode(tmp_path, pool_partners,
                                                                             monkeypatch):  # fmt: skip
    """Population seatings on Overcooked (games in lockstep): the runner knows on the host when
    every episode ends, so the only host reads of two rollouts are the three re-seats (episode ends
    at steps 19, 39 and 59), and the pool groups its rows once per seating. The buffers and episode
    tables equal those of the per-step ``done.any()`` path (the env's clock hidden)."""
    calls = []
    of = Layout.of
    monkeypatch.setattr(Layout, "of", classmethod(lambda cls, m, M: calls.append(1) or of(m, M)))
    tr, _ = _trainer(tmp_path, "a", pool_partners)
    assert not tr.runner.static_seating and tr.env.lockstep_timestep == 0
    calls.clear()
    new, new_tables, seats = _collect_twice(tr, forbid=True)
    assert [len(g) for g in seats] == [6, 6, 6]  # every game, at each of the three episode ends
    assert len(calls) == len(seats)  # the pool groups its rows once per re-seat, never per step
    tr.close()
    with monkeypatch.context() as m:  # the old path: done.any() read at every step
        m.setattr(OvercookedEnv, "lockstep_timestep", property(lambda self: None))
        tr, _ = _trainer(tmp_path, "b", pool_partners)
        old, old_tables, old_seats = _collect_twice(tr, forbid=False)
        tr.close()
    assert [len(g) for g in old_seats] == [6, 6, 6]
    for a, b in zip(new, old):
        for key in a:
            assert torch.equal(a[key], b[key]), key
    for a, b in zip(new_tables, old_tables):
        assert torch.equal(a.arm, b.arm) and torch.equal(a.sparse, b.sparse)
    assert len(torch.unique(torch.cat([t.arm for t in new_tables]))) > 1  # games were re-seated


def test_the_runner_refuses_an_env_clock_that_disagrees_with_done(tmp_path, pool_partners):
    """A lockstep clock that is wrong (here: forged mid-episode) stops the run instead of
    re-seating games whose episodes did not end."""
    tr, _ = _trainer(tmp_path, "a", pool_partners)
    tr.env._clock = tr.env.horizon - 1  # claims every episode ends at the next step
    with pytest.raises(RuntimeError, match="lockstep_timestep disagrees"):
        tr.core.collect_steps(tr.runner, 0)
    tr.close()
