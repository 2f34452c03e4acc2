r"""Yōkai per-game records: SP with the MLP and with the relational policy, and the relational policy
with other-play (OP+C+R), with and without perfect memory.

Trains MAPPO on 2-player 3x3 (``benchmarks/learning/yokai.py``'s settings and ``train``) for each
agent x setting x seed, plays every saved checkpoint with itself (``--episodes``
games per seating, both seatings, the same deals for every checkpoint) and writes one row per game
to ``DATA/games.parquet`` (default ``docs/data/yokai-<commit>/``), next to the two scripted
baselines (uniformly random available actions; END at its first chance) played on the same deals:

==============  ============================================================================
``agent``       ``relational`` (SP, ``model.kind=yokai-relational``), ``mlp-gru`` (SP, the quick
                preset's MLP with a GRU), ``relational-op`` (other-play with colour and rotation
                symmetries, ``--algo op``, ``algo.symmetries=C+R``), ``random``, ``end-at-once``
``setting``     ``-M`` (``env.options.perfect_memory=true``: colours seen stay visible, YLE Sec.
                5.1) or ``memory`` (colours visible only while peeking; the agent must remember)
``seed``        training seed (0 for the baselines)
``env_steps``   env steps of the checkpoint (0 for the baselines)
``game``        index of the game within its checkpoint's evaluation (seating-major)
``won``         bool: every colour one cluster at the end (Eq. 2)
``score``       Eq. 1's score of the final layout (the paper's S is ``score`` if ``won``, else 0)
``nc``          colours clustered at the end (NC)
``dnc``         colours clustered by play: NC at the end minus NC of the deal
``ret``         the sparse return (Eq. 3)
==============  ============================================================================

The relational policy uses ``model.hidden_size=32`` and ``model.mlp_layers=2`` relation blocks;
every run uses ``ppo.skip_forced`` (the default). Runs are resumed when they are there, and each
checkpoint's games are cached beside it (``games_<steps>.parquet``), so an interrupted command
continues where it stopped; the table is written to a temporary file and renamed. With ``--merge``
the command's games are added to the table already in ``DATA`` (one command a training seed, each on
its own core, into one table; a game in both must be recorded identically). With ``--keep DIR`` each
run's last checkpoint is kept as an acting-only copy (``strip_checkpoint``: no critic, no training
state, about 170 KB) in ``DIR/<agent>_<setting>/<algo>_s<seed>/`` beside the run's ``config.yaml``, a
run-shaped folder that ``zsceval report DIR/<agent>_<setting>`` reads for the cross-play matrix.

    python benchmarks/learning/yokai_games.py --steps 2e7 --seeds 0 1 2 --out runs/yokai_games
    python benchmarks/learning/yokai_games.py --steps 5e5 --agents relational --settings M --out /tmp/yg
    python benchmarks/learning/yokai_games.py --steps 2e7 --agents relational --settings M --seeds 2 \
        --out /tmp/yg --data docs/data/yokai-5fe33d0-2e7 --merge --keep docs/data/yokai-5fe33d0-2e7-agents
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from yokai import EndAtOnceAgent, train  # noqa: E402  (the learning benchmark's training)

from zsceval.evaluation.episode_infos import InfoRecorder  # noqa: E402
from zsceval.evaluation.strata import UniformRandomAgent  # noqa: E402
from zsceval.evaluation.yokai_games import merge_games  # noqa: E402
from zsceval.io import atomic_directory, atomic_path  # noqa: E402
from zsceval.rl.checkpoint import list_checkpoints, load_agent, strip_checkpoint  # noqa: E402
from zsceval.rl.config import EnvConfig  # noqa: E402
from zsceval.rl.envs import make_env  # noqa: E402
from zsceval.rl.play import play  # noqa: E402

RELATIONAL = ["model.kind=yokai-relational", "model.hidden_size=32", "model.mlp_layers=2"]

AGENTS = {
    "relational": ("sp", RELATIONAL),
    "mlp-gru": ("sp", []),
    "relational-op": ("op", [*RELATIONAL, "algo.symmetries=C+R"]),
}
"""Trained agents: ``(algorithm, overrides on top of the learning benchmark's BENCH)`` (MLP + GRU).
``relational-op`` is other-play with colour and rotation symmetries, OP+C+R (YLE Sec. 5.4)."""

SETTINGS = {"-M": ["env.options.perfect_memory=true"], "memory": ["env.options.perfect_memory=false"]}
"""The paper's perfect-memory ("-M") and implicit-memory settings (``--settings M memory``)."""

COLUMNS = ["agent", "setting", "seed", "env_steps", "game", "won", "score", "nc", "dnc", "ret"]


def games(agent, setting: str, episodes: int, seed: int) -> pd.DataFrame:
    """``2 x episodes`` self-play games of ``agent`` (both seats), one row each (module docstring)."""
    options = {"perfect_memory": setting == "-M"}
    env = make_env(
        EnvConfig(name="yokai", num_envs=min(2 * episodes, 1024), horizon=32, options=options),
        seed=seed,
        evaluation=True,
    )
    recorder = InfoRecorder(env)
    result = play(recorder, [agent, agent], 2 * episodes, torch.Generator().manual_seed(seed + 1))
    infos = recorder.episodes(2 * episodes)
    ev = {name: result.events[:, :, i].sum(1) for i, name in enumerate(result.event_names)}
    return pd.DataFrame(
        {
            "game": np.arange(2 * episodes),
            "won": infos["win"].numpy().astype(bool),
            "score": infos["score"].numpy().astype(np.float64),
            "nc": infos["clustered"].numpy().astype(np.int64),
            "dnc": (ev["colour_clustered"] - ev["colour_unclustered"]).numpy().astype(np.int64),
            "ret": result.sparse.double().numpy(),
        }
    )


def checkpoint_games(run_dir: Path, agent: str, setting: str, seed: int, episodes: int, eval_seed: int):
    """Rows of every checkpoint of ``run_dir``, each cached as ``games_<steps>.parquet`` beside it."""
    frames = []
    for ckpt in list_checkpoints(run_dir):
        steps = int(ckpt.name.split("_")[1])
        cache = ckpt / f"games_{episodes}_{eval_seed}.parquet"
        if cache.is_file():
            df = pd.read_parquet(cache)
        else:
            policy, _ = load_agent(ckpt)
            df = games(policy, setting, episodes, eval_seed)
            _write(df, cache)
        frames.append(df.assign(agent=agent, setting=setting, seed=seed, env_steps=steps))
    return frames


def keep_agent(run_dir: Path, dst: Path) -> Path:
    """Keep ``run_dir``'s last checkpoint as an acting-only copy in the run-shaped folder ``dst``
    (``config.yaml`` + ``checkpoints/<name>/``), replacing an earlier copy; returns its meta.json.

    Raises:
        FileNotFoundError: ``run_dir`` has no checkpoint.
    """
    checkpoints = list_checkpoints(run_dir)
    if not checkpoints:
        raise FileNotFoundError(f"{run_dir}: no checkpoint to keep")
    last = checkpoints[-1]
    with atomic_directory(dst) as tmp:  # replaces an earlier copy only once the new one is whole
        shutil.copyfile(run_dir / "config.yaml", tmp / "config.yaml")
        strip_checkpoint(last, tmp / "checkpoints" / last.name)
    return dst / "checkpoints" / last.name / "meta.json"


def _write(df: pd.DataFrame, path: Path) -> None:
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)


def _commit() -> str:
    try:
        cmd = ["git", "rev-parse", "--short", "HEAD"]
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Mean SR (%), NC, dNC and S (score of won games, 0 otherwise) per agent, setting, seed and
    checkpoint."""
    t = table.assign(S=table["score"].where(table["won"], 0.0), SR=100 * table["won"].astype(float))
    keys = ["agent", "setting", "seed", "env_steps"]
    return t.groupby(keys, sort=True)[["SR", "nc", "dnc", "S", "ret"]].mean().reset_index()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=float, default=2e7, help="env steps per run (default 2e7)")
    ap.add_argument("--eval-every", type=float, default=None, help="env steps between checkpoints (/10)")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--agents", nargs="+", default=list(AGENTS), choices=list(AGENTS))
    ap.add_argument("--settings", nargs="+", default=["M", "memory"], choices=["M", "memory"])
    ap.add_argument("--episodes", type=int, default=250, help="games per seating of each checkpoint (250)")
    ap.add_argument("--eval-seed", type=int, default=0, help="seed of every evaluation: the same deals (0)")
    ap.add_argument("--set", dest="overrides", action="append", default=[], help="extra config override")
    ap.add_argument("--out", type=Path, required=True, help="run directories")
    ap.add_argument("--data", type=Path, default=None, help="table folder (default docs/data/yokai-<commit>)")
    ap.add_argument("--no-train", action="store_true", help="evaluate the runs in --out, train nothing")
    ap.add_argument("--merge", action="store_true", help="add the games to the table already in --data")
    ap.add_argument("--keep", type=Path, default=None, help="keep acting-only copies of the runs here")
    args = ap.parse_args()
    torch.set_num_threads(1)
    steps = int(args.steps)
    eval_every = int(args.eval_every) if args.eval_every else max(steps // 10, 1)
    data = args.data or Path("docs/data") / f"yokai-{_commit()}"
    frames = []
    for setting in ("-M" if s == "M" else s for s in args.settings):
        for name, scripted in (("random", UniformRandomAgent), ("end-at-once", EndAtOnceAgent)):
            agent = scripted({"num_actions": 1068})
            df = games(agent, setting, args.episodes, args.eval_seed)
            frames.append(df.assign(agent=name, setting=setting, seed=0, env_steps=0))
        for name in args.agents:
            for seed in args.seeds:
                algo, agent_overrides = AGENTS[name]
                out = args.out / f"{name}_{setting}"
                run_dir = out / f"{algo}_s{seed}"
                if not args.no_train:
                    start = time.perf_counter()
                    overrides = [*SETTINGS[setting], *agent_overrides, *args.overrides]
                    run_dir = train(seed, steps, eval_every, overrides, out, algo=algo)
                    took = time.perf_counter() - start
                    print(f"{name} {setting} seed {seed}: trained in {took:.0f} s", flush=True)
                frames += checkpoint_games(run_dir, name, setting, seed, args.episodes, args.eval_seed)
                if args.keep is not None:
                    kept = keep_agent(run_dir, args.keep / f"{name}_{setting}" / run_dir.name)
                    print(f"kept {kept.parent}", flush=True)
    table = pd.concat(frames, ignore_index=True)[COLUMNS]
    if args.merge and (data / "games.parquet").is_file():
        table = merge_games(pd.read_parquet(data / "games.parquet"), table)
    _write(table, data / "games.parquet")
    with pd.option_context("display.width", 160, "display.max_rows", 400):
        print(summary(table).round(3).to_string(index=False))
    print(f"\n{len(table):,} games -> {data / 'games.parquet'}")


if __name__ == "__main__":
    main()
