"""Build the human models that ship with zsceval: H_proxy and BC of the five classic layouts.

Writes ``eval_partners/human/<layout>/{human-proxy,bc}/`` (:func:`zsceval.human.partners.build_human_model`,
seed 0, the defaults of :class:`zsceval.human.bc.BCConfig`) and ``eval_partners/human/index.yaml``
(each model's files with their sha256, checked at every load by
:func:`zsceval.human.partners.shipped_model_dir`), and prints each model's accuracy on its held-out
split. Needs the 2019 trials (``pip install --no-deps overcooked-ai==1.1.0``).

    OMP_NUM_THREADS=1 python benchmarks/human/build_shipped.py [--layouts cramped_room ...]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
import yaml

from zsceval.human.bc import BCConfig
from zsceval.human.partners import HUMAN_PROXY_FILE, ROLES, build_human_model
from zsceval.io import atomic_write_text, sha256_file

LAYOUTS = (
    "cramped_room",
    "asymmetric_advantages",
    "coordination_ring",
    "forced_coordination",
    "counter_circuit",
)
ROOT = Path(__file__).resolve().parents[2] / "eval_partners" / "human"


def files_of(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): sha256_file(p) for p in sorted(folder.rglob("*")) if p.is_file()
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layouts", nargs="+", default=list(LAYOUTS))
    ap.add_argument("--roles", nargs="+", default=list(ROLES), choices=list(ROLES))
    args = ap.parse_args()
    torch.set_num_threads(1)
    index_path = ROOT / "index.yaml"
    index = yaml.safe_load(index_path.read_text()) if index_path.is_file() else None
    index = index or {"format": "zsceval-human-models", "format_version": 1, "models": {}}
    for layout in args.layouts:
        for role in args.roles:
            folder = ROOT / layout / role
            t0 = time.perf_counter()
            record = build_human_model(layout, folder, role, BCConfig())
            m = record["metrics"]["held_out"]
            print(
                f"{layout:<22} {role:<12} fitted on {record['trained_on']:<5} "
                f"held-out ({record['held_out']}) "
                f"accuracy {m['accuracy']:.3f} balanced {m['balanced_accuracy']:.3f} "
                f"(majority {m['majority_accuracy']:.3f} / {m['majority_balanced_accuracy']:.3f}) "
                f"epoch {record['metrics']['best_epoch']}  {time.perf_counter() - t0:.0f} s",
                flush=True,
            )
            assert (folder / HUMAN_PROXY_FILE).is_file()
            index["models"].setdefault(layout, {})[role] = {
                "path": f"human/{layout}/{role}",
                "trained_on": record["trained_on"],
                "files": files_of(folder),
            }
            atomic_write_text(index_path, yaml.safe_dump(index, sort_keys=True))


if __name__ == "__main__":
    main()
