"""Dispatched ATen ops (each one kernel launch on a GPU) per env step, per act and per PPO
minibatch, old path against new, measured in the same run.

* env step at ``--num-envs`` games: ``OvercookedEnv.step`` (validation, a host branch on
  whether a game ended) against ``graph_step`` (no host sync, auto-reset as a masked select; it
  compiles to one graph, checked with dynamo's ``explain``), and their eager wall-clock;
* act: ``Policy.act`` of the quick MLP on ``2 x num_envs`` rows; a pool of 4 quick MLP members
  acting for 512 rows (rows grouped by member on the host, against the ``static`` strategy's
  one forward over every member with no host read); an epsilon-greedy Q-network;
* PPO minibatch (quick preset, counter_circuit): one gradient step, dense first layer
  (``ppo.obs_columns=false``) against the column-compressed one, and their wall-clock.

Usage::

    python benchmarks/perf/ops.py [--layout counter_circuit] [--num-envs 4096] [--threads 1]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch
import torch._dynamo as dynamo

from zsceval.envs.overcooked import OvercookedEnv
from zsceval.execution.dispatch import count_ops
from zsceval.rl.config import resolve_config
from zsceval.rl.policy import Policy, network_spec
from zsceval.rl.population import PolicyPool
from zsceval.rl.qpolicy import QPolicy, epsilon_noise
from zsceval.rl.trainer import Trainer


def _timed(fn, repeats: int) -> float:
    fn()
    t = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - t) / repeats


def env_rows(layout: str, B: int) -> list[tuple[str, int, float, str]]:
    env = OvercookedEnv(layout, B, seed=0)
    env.reset()
    a = torch.randint(0, 6, (B, 2), generator=torch.Generator().manual_seed(0))
    with count_ops() as eager:
        env.step(a)
    with count_ops() as graph:
        env.graph_step(env.state, a)
    explained = dynamo.explain(env.graph_step)(env.state, a)
    note = f"compiles to {explained.graph_count} graph(s), {explained.graph_break_count} break(s)"
    return [
        ("env step (step)", sum(eager.values()), _timed(lambda: env.step(a), 20), ""),
        (
            "env step (graph_step)",
            sum(graph.values()),
            _timed(lambda: env.graph_step(env.state, a), 20),
            note,
        ),
    ]


def agent_rows(layout: str, rows: int = 512, members: int = 4) -> list[tuple[str, int, float, str]]:
    """Pool acting (grouped on the host, and the ``static`` strategy) and epsilon-greedy acting."""
    cfg = resolve_config(preset="quick", overrides=[f"env.layout={layout}"])
    env = OvercookedEnv(layout, rows // 2, seed=0)
    obs = env.reset().obs.reshape(rows, *env.obs_shape)
    spec = network_spec(cfg.model, env.obs_shape, env.obs_shape, 6)
    torch.manual_seed(0)
    pool = PolicyPool.from_policies([Policy(spec) for _ in range(members)])
    h = pool.initial_state(rows, "cpu")
    starts = torch.zeros(rows, dtype=torch.bool)
    member = torch.arange(rows) % members
    noise = torch.rand(rows, 6)
    q = QPolicy(spec)
    eps = torch.tensor(0.1)
    q_noise = epsilon_noise(rows, 6)
    out = []
    grouped = "reads the group sizes"
    for name, fn, note in [
        ("pool act (grouped)", lambda: pool.act(obs, None, h, starts, member, noise=noise), grouped),
        ("pool act (static)", lambda: pool.act(obs, None, h, starts, member, noise=noise,
                                               capacity=rows // members), "no host read"),
        ("Q-network act, eps-greedy", lambda: q.act(obs, None, h[:, :0], starts, noise=q_noise,
                                                    epsilon=eps), ""),
    ]:  # fmt: skip
        with count_ops() as c:
            fn()
        out.append((f"{name} ({rows} rows)", sum(c.values()), _timed(fn, 20), note))
    return out


def core_rows(layout: str, B: int) -> list[tuple[str, int, float, str]]:
    """The act row and the dense and column-compressed PPO minibatch rows."""
    return _core_rows(layout, B, False) + _core_rows(layout, B, True)


def _core_rows(layout: str, B: int, on: bool) -> list[tuple[str, int, float, str]]:
    rows = []
    cfg = resolve_config(preset="quick", overrides=[
        f"env.layout={layout}", f"env.num_envs={B}", "run.num_threads=1",
        f"ppo.obs_columns={str(on).lower()}", "ppo.epochs=1", "ppo.num_minibatches=4",
    ])  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        tr = Trainer(cfg, f"{tmp}/run", progress=False)
        core = tr.core
        if not on:
            p = core.policies[0]
            obs = tr.runner.step_out.obs.reshape(-1, *tr.runner.step_out.obs.shape[2:])
            h = p.initial_state(obs.shape[0], obs.device)
            starts = torch.zeros(obs.shape[0], dtype=torch.bool)
            with count_ops() as act:
                p.act(obs, None, h, starts)
            rows.append((f"act ({obs.shape[0]} rows)", sum(act.values()),
                         _timed(lambda: p.act(obs, None, h, starts), 20), ""))  # fmt: skip
        core.collect(tr.runner, 0)
        core.bootstrap(tr.runner)
        adv, ret = core.advantages()
        step = core.group.step
        counts, seconds = [], []

        def counted(parts, ent):
            t = time.perf_counter()
            with count_ops() as c:
                out = step(parts, ent)
            seconds.append(time.perf_counter() - t)
            counts.append(sum(c.values()))
            return out

        core.group.step = counted
        t = time.perf_counter()
        core.learn(adv, ret, 0, torch.Generator().manual_seed(0))
        learn_s = time.perf_counter() - t
        tr.close()
    name = "PPO minibatch (" + ("obs_columns" if on else "dense first layer") + ")"
    rows.append((name, counts[0], sum(seconds) / len(seconds), f"whole update {learn_s:.2f} s"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layout", default="counter_circuit")
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), layout {args.layout}")
    rows = env_rows(args.layout, args.num_envs) + agent_rows(args.layout) + core_rows(args.layout, 512)
    print(f"{'path':34s} {'ops':>6s} {'ms':>9s}  note")
    for name, ops, sec, note in rows:
        print(f"{name:34s} {ops:6d} {sec * 1e3:9.2f}  {note}")
    (_, e_ops, e_s, _), (_, g_ops, g_s, _) = rows[:2]
    (_, d_ops, d_s, _), (_, c_ops, c_s, _) = rows[-2:]
    print(f"env step: step/graph_step ops {e_ops / g_ops:.2f}x, time {e_s / g_s:.2f}x")
    print(f"PPO minibatch: dense/obs_columns ops {d_ops / c_ops:.2f}x, time {d_s / c_s:.2f}x")


if __name__ == "__main__":
    main()
