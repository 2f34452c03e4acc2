"""Fingerprints of what training and evaluation produce, to check that a refactor changes no result.

Runs a fixed set of tiny jobs through the ``zsceval`` command (so the same script runs against any
commit's install), then hashes what they wrote: every tensor of every checkpoint (``*.safetensors``),
every table (``*.parquet``, ``*.csv``) and every JSON result, with timing columns and keys left out
(wall time, steps per second, per-phase seconds, dates, hosts, git revisions, paths).

    python benchmarks/identity.py --out /tmp/fp-new                       # the installed zsceval
    python benchmarks/identity.py --out /tmp/fp-old --zsceval /tmp/old-venv/bin/zsceval
    python benchmarks/identity.py --compare /tmp/fp-old/fingerprints.json /tmp/fp-new/fingerprints.json

The jobs (one thread each, seed 0): quick SP on cramped_room and on counter_circuit, an FCP
population stage 1, a tiny TBS chain and a tiny bench (its tables). ``--compare`` prints each file
whose fingerprint differs and exits 1 if any does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

TIMING = re.compile(
    r"wall|per_s|_s$|seconds|time|date|host|revision|git|version|path|dir|out$|started|finished"
)

TINY_BENCH = """
name: identity
seed: 0
layouts: [cramped_room]
algorithms: [sp, fcp]
ego_seeds: 1
ego_steps: 3200
preset: quick
overrides: [env.num_envs=8, run.eval_episodes=2, run.num_threads=1, population.size=3,
            population.stage1_size=2, population.stage1_steps=3200]
partners:
  candidates: 3
  candidate_steps: 6400
  checkpoints: 2
  feature_episodes: 2
  k: 2
  mid_br_steps: 3200
  dpp_samples: 50
  min_return: -1
evaluation:
  episodes: 2
"""

COMMON = ["--no-progress", "--set", "run.num_threads=1", "--set", "env.num_envs=8",
          "--set", "run.eval_episodes=4"]  # fmt: skip


def jobs(out: Path) -> dict[str, list[str]]:
    """The commands, by name: the arguments after ``zsceval``."""
    suite = out / "identity.yaml"
    suite.write_text(TINY_BENCH)
    tbs = ["--set", "env.num_envs=16", "--set", "env.horizon=100", "--set", "algo.pool_size=3",
           "--set", "algo.pool_steps=2048", "--set", "algo.tom_games=4", "--set", "algo.tom_epochs=1",
           "--set", "algo.episodes=1"]  # fmt: skip
    return {
        "sp_cramped_room": ["train", "--algo", "sp", "--layout", "cramped_room", "--steps", "8000",
                            "--out", str(out / "sp_cramped_room"), *COMMON],
        "sp_counter_circuit": ["train", "--algo", "sp", "--layout", "counter_circuit", "--steps", "8000",
                               "--out", str(out / "sp_counter_circuit"), *COMMON],
        "fcp_chain": ["train", "--algo", "fcp", "--layout", "cramped_room", "--steps", "3200",
                      "--out", str(out / "fcp_chain"), *COMMON, "--set", "population.stage1_size=2",
                      "--set", "population.stage1_steps=3200", "--set", "population.size=3"],
        "tbs_chain": ["train", "--algo", "tbs", "--layout", "cramped_room", "--steps", "2048",
                      "--no-progress", "--out", str(out / "tbs_chain"), "--set", "run.num_threads=1", *tbs],
        "bench": ["bench", "--suite", str(suite), "--out", str(out / "bench"), "--no-report"],
    }  # fmt: skip


def _strip(obj):
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if not TIMING.search(str(k))}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def fingerprint(path: Path) -> str | None:
    """sha256 of a result file's content, timing left out; None for files that hold no result."""
    h = hashlib.sha256()
    if path.suffix == ".safetensors":
        from safetensors.numpy import load_file

        for name, arr in sorted(load_file(str(path)).items()):
            h.update(name.encode() + str(arr.dtype).encode() + str(arr.shape).encode() + arr.tobytes())
    elif path.suffix in (".parquet", ".csv"):
        import pandas as pd

        df = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
        df = df[[c for c in df.columns if not TIMING.search(str(c))]]
        h.update(df.to_csv(index=False).encode())
    elif path.suffix == ".json" and path.name not in ("meta.json", "DONE.json", "train_state.json"):
        h.update(json.dumps(_strip(json.loads(path.read_text())), sort_keys=True).encode())
    else:
        return None
    return h.hexdigest()


def run(out: Path, exe: str) -> dict[str, str]:
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, ZSCEVAL_ACTIVE_DIR=tempfile.mkdtemp(), ZSCEVAL_MAX_THREADS="1")
    for name, args in jobs(out).items():
        print(f"{name}: zsceval {' '.join(args)}", flush=True)
        res = subprocess.run([exe, *args], env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True)
        if res.returncode != 0:
            sys.exit(f"{name} failed ({res.returncode}):\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    prints = {}
    for p in sorted(out.rglob("*")):
        if p.is_file() and (fp := fingerprint(p)) is not None:
            prints[str(p.relative_to(out))] = fp
    (out / "fingerprints.json").write_text(json.dumps(prints, indent=1))
    print(f"{len(prints)} files fingerprinted -> {out / 'fingerprints.json'}")
    return prints


def compare(a: Path, b: Path) -> int:
    old, new = json.loads(a.read_text()), json.loads(b.read_text())
    bad = 0
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            bad += 1
            why = "missing in new" if key not in new else "missing in old" if key not in old else "content"
            print(f"differs: {key} ({why})")
    print(f"{len(set(old) | set(new)) - bad} identical, {bad} different")
    return 1 if bad else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="folder for the jobs' outputs and fingerprints.json")
    ap.add_argument("--zsceval", default="zsceval", help="the zsceval executable to run (default: on PATH)")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"),
                    help="two fingerprints.json files")  # fmt: skip
    args = ap.parse_args()
    if args.compare:
        sys.exit(compare(*args.compare))
    if not args.out:
        ap.error("--out or --compare is required")
    run(args.out, args.zsceval)


if __name__ == "__main__":
    main()
