"""Learning benchmark: recurrent MAPPO self-play on the 2-player 3x3 Yōkai game, on CPU.

Trains SP (``zsceval train --algo sp --env yokai``) for a budget of env steps per seed, saving a
checkpoint every ``--eval-every`` env steps, then plays every checkpoint with itself
(``zsceval eval --agent CKPT --partner CKPT``: both seatings, ``--episodes`` each, a fixed seed) and
prints the YLE paper's metrics against env steps: return R (Eq. 3), success rate SR (%), colours
clustered NC, successful early ends SEE (%) and the game score S (Eq. 1's score of won games, 0 for
lost ones: what the paper's Table 1 reports as R), with 95% bootstrap CIs, and dNC, the colours
clustered by play (NC at the end minus NC of the deal, from the clustering events: about 4% of deals
are already won and NC of a deal is about 0.8, so NC and SR alone cannot tell an agent that clusters
from one that only leaves the deal's clusters alone)
(``zsceval.stats.episode_metrics``). The same metrics of two players taking uniformly random
*available* actions are the baseline (R about -4.0, SR about 1%, NC about 0.45), next to a scripted
player that ENDs the game at its first chance (R about -2.4, SR about 4%: Eq. 3 charges an early end
only -1, and about 4% of deals are already won, which then score the full 20), the bar any learned
policy must pass before it does more than gamble. The curve (R, SR,
NC and S against env steps, the baselines dashed and dotted) is written as a PNG. With two or more seeds
it also prints the cross-play matrix of the final agents (cells: mean R / SR, diagonal: self-play) and the
SP-XP drop (``zsceval.evaluation.yokai_xp``, what ``zsceval report OUT`` prints).

The default settings (``BENCH``) are the paper's Table 5 where the CPU allows (entropy 0.01, grad
norm 0.5, linearly annealed shaping) on the quick preset's MLP encoder with a GRU: 256 games, 64-step
rollouts, learning rate 3e-3 (at 5e-4 the PPO steps were tiny: approximate KL 3e-4, no clipping, R
still at random's after 500k env steps), shaping annealed to 0 at 70% of the budget. ``--set``
overrides them.
One thread by default (``run.num_threads=1``): on a 2-core machine shared with other runs a second
torch thread only waits.

``--algo op`` trains other-play agents the same way (``zsceval train --algo op``, OP+C+R by default),
into ``OUT/op_s<seed>``; their checkpoints are evaluated in self-play and, with several seeds, in
cross-play, as SP's.

Runs go to ``OUT/<algo>_s<seed>`` and are resumed when they are there (from their last checkpoint, or
from scratch when stopped before the first; ``--no-train`` evaluates what is there without training
further).

Usage (from the repository root)::

    python benchmarks/learning/yokai.py --steps 2e6 --out /tmp/yokai_bench
    python benchmarks/learning/yokai.py --steps 3e5 --seeds 0 1 2 --out /tmp/yokai_xp   # + cross-play
    python benchmarks/learning/yokai.py --algo op --steps 3e5 --seeds 0 1 2 --out /tmp/yokai_op  # OP+C+R
    python benchmarks/learning/yokai.py --out runs/yokai --no-train --json curve.json
    python benchmarks/learning/yokai.py --set model.hidden_size=128 --set ppo.epochs=4
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from zsceval.evaluation.cross_play import cross_play
from zsceval.evaluation.episode_infos import InfoRecorder
from zsceval.evaluation.strata import UniformRandomAgent
from zsceval.evaluation.yokai_xp import cross_play_matrix, format_yokai_report
from zsceval.rl.checkpoint import list_checkpoints
from zsceval.rl.config import EnvConfig, resolve_config
from zsceval.rl.envs import make_env
from zsceval.rl.play import play
from zsceval.rl.trainer import Trainer
from zsceval.stats.episode_metrics import YLE_METRICS, metrics_dict, yle_metrics

LAYOUT = "yokai-3x3-2p"
BENCH = [
    "env.num_envs=256",
    "env.horizon=32",
    "ppo.rollout_length=64",
    "model.recurrent=true",
    "model.chunk_length=16",
    "ppo.lr=3e-3",
    "ppo.max_grad_norm=0.5",
    "ppo.entropy_coefs=[0.01]",
    "ppo.entropy_milestones=[0]",
    "run.num_threads=1",
]
"""Overrides of the quick preset (module docstring); ``--set`` goes after them."""


def train(seed: int, steps: int, eval_every: int, overrides: list[str], out: Path, algo: str = "sp") -> Path:
    """Train (or resume) ``algo`` (``sp`` or ``op``) for ``steps`` env steps into
    ``out/<algo>_s<seed>``; return the run dir."""
    flags = {
        "env.name": "yokai",
        "run.seed": seed,
        "run.device": "cpu",
        "run.algo": algo,
        "run.total_steps": steps,
        "run.checkpoint_every": eval_every,
        "run.keep_checkpoints": 10_000,
        "shaping.horizon": 0.7 * steps,
    }
    cfg = resolve_config(preset="quick", overrides=[*BENCH, *overrides], **flags)
    run_dir = out / f"{algo}_s{seed}"
    resume = (run_dir / "config.yaml").is_file()  # a run stopped before its first checkpoint starts over
    trainer = Trainer(cfg, run_dir, resume=resume, progress=False)
    if trainer.env_steps >= steps:
        trainer.close()
        return run_dir
    start = time.perf_counter()
    trainer.train()
    print(
        f"seed {seed}: {trainer.env_steps:,} env steps, {time.perf_counter() - start:.0f} s "
        f"({trainer.env_steps / trainer.wall_time:,.0f} env steps/s training)",
        flush=True,
    )
    return run_dir


def nc_gain(events_by_seat: list[dict[str, float]]) -> float:
    """Colours clustered by play per game: the ``colour_clustered`` minus ``colour_unclustered``
    events of every seat (mean per episode). Only moves change the clusters and each move's events
    count the colours it joins and splits, so this is NC at the end minus NC of the deal."""
    return sum(e["colour_clustered"] - e["colour_unclustered"] for e in events_by_seat)


def curve(run_dir: Path, episodes: int, seed: int) -> pd.DataFrame:
    """Self-play metrics of every checkpoint of ``run_dir``: one row per checkpoint (the YLE
    metrics with their CIs and ``dNC``, :func:`nc_gain` averaged over the seatings)."""
    rows = []
    for ckpt in list_checkpoints(run_dir):
        out = cross_play(str(ckpt), str(ckpt), LAYOUT, episodes, "cpu", seed)
        m = out["pooled"]["yle_metrics"]
        row = {"env_steps": int(ckpt.name.split("_")[1])}
        for k in YLE_METRICS:
            row[k], (row[f"{k}_low"], row[f"{k}_high"]) = m[k]["mean"], m[k]["ci95"]
        row["dNC"] = float(np.mean([nc_gain(s["events_mean_by_seat"]) for s in out["seatings"]]))
        rows.append(row)
    return pd.DataFrame(rows)


class EndAtOnceAgent(UniformRandomAgent):
    """ENDs the game whenever END is available (its first phase 1), else a uniformly random
    available action."""

    def act(self, obs, avail, state, starts, generator=None, deterministic=False):
        out = super().act(obs, avail, state, starts, generator, deterministic)
        end = avail[:, -1] if avail is not None else torch.zeros_like(out.actions, dtype=torch.bool)
        out.actions = torch.where(end, avail.shape[-1] - 1, out.actions)
        return out


def random_baseline(episodes: int, seed: int, scripted: type = UniformRandomAgent) -> dict:
    """R, SR, NC, SEE, S of two scripted players (default: uniformly random over their available
    actions) over ``2 x episodes`` games, as a checkpoint's self-play, ``{name: {"mean", "ci95"}}``,
    and ``dNC`` (:func:`nc_gain`, a float)."""
    env = make_env(
        EnvConfig(name="yokai", num_envs=min(2 * episodes, 1024), horizon=32), seed=seed, evaluation=True
    )
    recorder = InfoRecorder(env)
    agent = scripted({"num_actions": env.num_actions})
    result = play(recorder, [agent, agent], 2 * episodes, torch.Generator().manual_seed(seed + 1))
    infos = recorder.episodes(2 * episodes)
    ev = {name: result.events[:, :, i].sum(1).double() for i, name in enumerate(result.event_names)}
    m = yle_metrics(
        result.sparse.double().numpy(),
        infos["win"].numpy(),
        infos["ended_early"].numpy(),
        infos["clustered"].numpy(),
        infos["score"].numpy(),
        rng=np.random.default_rng(seed),
    )
    return {**metrics_dict(m), "dNC": float((ev["colour_clustered"] - ev["colour_unclustered"]).mean())}


def plot(curves: dict[int, pd.DataFrame], rand: dict, end: dict, path: Path) -> Path:
    """R, SR, NC and S against env steps per seed (95% CI bands), random play dashed, END at once
    dotted."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(17, 3.6))
    labels = ("return R (Eq. 3)", "success rate SR (%)", "colours clustered NC", "game score S (paper's R)")
    for ax, k, label in zip(axes, ("R", "SR", "NC", "S"), labels, strict=True):
        for seed, df in curves.items():
            ax.plot(df["env_steps"], df[k], marker="o", ms=3, label=f"SP seed {seed}")
            ax.fill_between(df["env_steps"], df[f"{k}_low"], df[f"{k}_high"], alpha=0.2)
        ax.axhline(rand[k]["mean"], ls="--", color="k", label="random legal actions")
        ax.axhline(end[k]["mean"], ls=":", color="r", label="END at once")
        ax.set_xlabel("env steps")
        ax.set_title(label)
    axes[0].legend(fontsize=8)
    fig.suptitle("Yōkai 2-player 3x3: recurrent MAPPO self-play (95% bootstrap CIs)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _fmt(m: dict, k: str) -> str:
    lo, hi = m[k]["ci95"] if isinstance(m[k], dict) else (m[f"{k}_low"], m[f"{k}_high"])
    mean = m[k]["mean"] if isinstance(m[k], dict) else m[k]
    return f"{mean:6.2f} [{lo:6.2f}, {hi:6.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=float, default=2e6, help="env steps per seed (default 2e6)")
    parser.add_argument(
        "--algo", choices=["sp", "op"], default="sp",
        help="sp, or other-play with the env's symmetries (op: OP+C+R unless --set algo.symmetries=C)",
    )  # fmt: skip
    parser.add_argument("--seeds", nargs="+", type=int, default=[0], help="training seeds (default 0)")
    parser.add_argument(
        "--eval-every",
        type=float,
        default=None,
        help="env steps between evaluated checkpoints (default steps / 10)",
    )
    parser.add_argument(
        "--episodes",
        type=int,
        default=250,
        help="evaluation episodes per seating of each checkpoint and pair (default 250)",
    )
    parser.add_argument("--eval-seed", type=int, default=0, help="seed of every evaluation (default 0)")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        help="config override key=value, after the benchmark's (repeatable)",
    )
    parser.add_argument("--out", type=Path, default=None, help="run directories (default: a temp dir)")
    parser.add_argument(
        "--no-train", action="store_true", help="evaluate the runs already in --out, train nothing"
    )
    parser.add_argument(
        "--figure", type=Path, default=None, help="curve PNG (default OUT/yokai_learning.png)"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write curves, baseline and XP as JSON")
    args = parser.parse_args()
    steps = int(args.steps)
    eval_every = int(args.eval_every) if args.eval_every else max(steps // 10, 1)
    out = args.out or Path(tempfile.mkdtemp(prefix="zsceval-yokai-"))
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}; runs in {out}", flush=True)
    runs = []
    for seed in args.seeds:
        run_dir = out / f"{args.algo}_s{seed}"
        if not args.no_train:
            run_dir = train(seed, steps, eval_every, args.overrides, out, args.algo)
        if list_checkpoints(run_dir):
            runs.append((seed, run_dir))
    if not runs:
        raise SystemExit(f"no trained runs in {out}")
    rand = random_baseline(args.episodes, args.eval_seed)
    end = random_baseline(args.episodes, args.eval_seed, EndAtOnceAgent)
    for label, m in (("random legal actions", rand), ("END at once", end)):
        print(
            f"\n{label:<20} ({2 * args.episodes} games):  "
            + "  ".join(f"{k} {_fmt(m, k)}" for k in YLE_METRICS)
            + f"  dNC {m['dNC']:+.2f}",
            flush=True,
        )
    curves = {}
    for seed, run_dir in runs:
        df = curves[seed] = curve(run_dir, args.episodes, args.eval_seed)
        print(f"\nseed {seed}: self-play per checkpoint ({2 * args.episodes} games each, 95% CIs)")
        print(f"{'env steps':>10}  " + "  ".join(f"{k:^22}" for k in YLE_METRICS) + "    dNC")
        for _, r in df.iterrows():
            cells = "  ".join(_fmt(r, k) for k in YLE_METRICS)
            print(f"{int(r['env_steps']):>10,}  {cells}  {r['dNC']:+.2f}", flush=True)
    figure = plot(curves, rand, end, args.figure or out / "yokai_learning.png")
    print(f"\ncurve: {figure}")
    payload = {
        "random": rand,
        "end_at_once": end,
        "curves": {s: df.to_dict(orient="records") for s, df in curves.items()},
    }
    if len(runs) >= 2:
        matrix = cross_play_matrix(
            [(f"{args.algo}_s{s}", d) for s, d in runs], episodes=args.episodes, seed=args.eval_seed
        )
        print("\n" + format_yokai_report(matrix))
        from zsceval.evaluation.yokai_xp import yokai_report_json

        payload["cross_play"] = yokai_report_json(matrix)
    if args.json:
        args.json.write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
