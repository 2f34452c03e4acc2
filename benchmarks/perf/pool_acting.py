"""Policy pool acting: one batched forward for many members vs one policy, same run.

Measures ``PolicyPool.act`` for R rows (default 4096) over M members (default 36) with a uniform
random member per row, against two references measured in the same run on the same inputs:
ONE ``Policy.act`` for all R rows (the target: pool time <= 2x this), and the naive loop over
members (each member's ``Policy.logits`` on its rows, logits assembled, one ``sample_actions``).
Models: each preset's network (``quick``: MLP 2x64 bf16; ``paper``: CNN, feed-forward as the
preset; ``NAME+gru`` adds the GRU) on the observation shape of the layout (counter_circuit:
5 x 8 x 20, 6 actions). The pool is measured with each batching strategy (``vmap``, ``loop``);
"(auto)" marks the one ``PolicyPool`` picks by default.
Observations are random uint8 in {0, 1, 2}; no row starts an episode. Each cell is the best of
``--rounds`` interleaved rounds (the variants take turns), so load from other processes on the
machine slows all variants of a model alike.

Usage:
    python benchmarks/perf/pool_acting.py [--presets quick paper paper+gru] [--rows 4096] [--members 36]
        [--layout counter_circuit] [--seconds 2] [--rounds 5] [--threads 1] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import time

import torch

from zsceval.envs.overcooked import OvercookedEnv
from zsceval.rl.agent import sample_actions
from zsceval.rl.config import resolve_config
from zsceval.rl.policy import Policy, network_spec
from zsceval.rl.population.functional import Layout
from zsceval.rl.population.pool import PolicyPool


def preset_spec(preset: str, layout: str) -> dict:
    """Network spec of ``preset`` (``NAME+gru``: with ``model.recurrent=true``) on ``layout``."""
    name, _, extra = preset.partition("+")
    overrides = [f"env.layout={layout}"] + (["model.recurrent=true"] if extra == "gru" else [])
    cfg = resolve_config(preset=name, overrides=overrides)
    env = OvercookedEnv(layout, num_envs=1)
    critic = env.obs_shape if cfg.model.critic_obs == "own" else env.critic_obs_shape
    return network_spec(cfg.model, env.obs_shape, critic, env.num_actions)


def best_rates(fns: list, seconds: float, rounds: int, sync) -> list[float]:
    """Calls per second of each of ``fns``: the best of ``rounds`` rounds of ``seconds / rounds``
    each, the functions taking turns (other load on the machine hits all of them alike)."""
    for fn in fns:
        for _ in range(3):
            fn()
    sync()
    best = [0.0] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            calls, start = 0, time.perf_counter()
            while True:
                fn()
                calls += 1
                sync()
                elapsed = time.perf_counter() - start
                if elapsed >= seconds / rounds:
                    break
            best[i] = max(best[i], calls / elapsed)
    return best


def measure(preset: str, args) -> list[tuple]:
    device = args.device
    torch.manual_seed(0)
    spec = preset_spec(preset, args.layout)
    policies = [Policy(spec).to(device).eval() for _ in range(args.members)]
    pool = PolicyPool.from_policies(policies)
    gen = torch.Generator(device=device).manual_seed(0)
    R = args.rows
    obs = torch.randint(0, 3, (R, *spec["obs_shape"]), dtype=torch.uint8, device=device, generator=gen)
    avail = torch.ones(R, spec["num_actions"], dtype=torch.bool, device=device)
    member = torch.randint(0, args.members, (R,), device=device, generator=gen)
    starts = torch.zeros(R, dtype=torch.bool, device=device)
    h = pool.initial_state(R, device)
    rows_of = [torch.nonzero(member == m).squeeze(-1) for m in range(args.members)]
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def one_policy():
        policies[0].act(obs, avail, h, starts, gen)

    def pooled(strategy):
        def fn():
            pool.strategy = strategy
            pool.act(obs, avail, h, starts, member, gen)

        return fn

    def loop():
        logits = torch.empty(R, spec["num_actions"], device=device)
        h_new = torch.empty_like(h)
        for m, rows in enumerate(rows_of):
            logits[rows], h_new[rows] = policies[m].logits(obs[rows], h[rows], starts[rows])
        sample_actions(logits, avail, gen)

    model = spec["model"]
    flags = ("+GRU" if model["recurrent"] else "") + (", bf16" if model["bf16"] else "")
    name = f"{preset} ({model['kind']}{flags})"
    auto = Layout.of(member, args.members).strategy(spec["model"]["kind"], torch.device(device))
    labels = ["one policy"]
    fns = [one_policy]
    for strategy in args.strategies:
        labels.append(f"pool {strategy}{' (auto)' if strategy == auto else ''}, {args.members} members")
        fns.append(pooled(strategy))
    labels.append(f"naive loop over {args.members} Policy.logits")
    fns.append(loop)
    rates = best_rates(fns, args.seconds * len(fns), args.rounds, sync)
    ref = rates[0]
    rows = []
    for label, calls in zip(labels, rates):
        rows.append((name, label, calls * R, ref / calls))
        print(f"  measured {name} {label}: {calls * R:,.0f} rows/s", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--presets", nargs="+", default=["quick", "paper"], help="NAME or NAME+gru (recurrent variant)"
    )
    parser.add_argument("--strategies", nargs="+", default=["vmap", "loop"], help="PolicyPool.strategy")
    parser.add_argument("--layout", default="counter_circuit")
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--members", type=int, default=36)
    parser.add_argument("--seconds", type=float, default=2.0, help="measurement time per cell")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per cell (best kept)")
    parser.add_argument("--threads", type=int, default=1, help="CPU intra-op threads")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    rows = []
    for preset in args.presets:
        rows += measure(preset, args)
    print()
    print(f"device {args.device}, threads {args.threads}, {args.rows} rows, layout {args.layout}")
    print()
    print("| model | acting | rows/s | time / one policy |")
    print("|---|---|---|---|")
    for model_name, label, per_s, ratio in rows:
        print(f"| {model_name} | {label} | {per_s:,.0f} | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
