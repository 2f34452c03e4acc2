"""Replay check of the 2019 human-human trials: which recorded transitions each simulator reproduces.

Loads the trials (``pip install --no-deps overcooked-ai==1.1.0``), steps our engine (batched) and
the reference simulator (PyPI ``overcooked`` 0.2.1, one game) from every recorded state with the
recorded joint action, and prints per layout and split how many transitions each reproduces (state
and reward; see ``zsceval.human.replay``), the reasons for the ones neither reproduces, and the
wall time.

Usage:
    python benchmarks/human/replay.py [--split train|test|both] [--limit N] [--no-reference]
"""

from __future__ import annotations

import argparse

from zsceval.human.replay import replay_table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["train", "test", "both"], default="both")
    parser.add_argument("--limit", type=int, default=None, help="transitions per layout and split")
    parser.add_argument("--layouts", nargs="*", default=None, help="default: all five")
    parser.add_argument("--no-reference", action="store_true", help="skip the reference simulator")
    args = parser.parse_args(argv)
    splits = ["train", "test"] if args.split == "both" else [args.split]
    table, reasons, seconds = replay_table(
        splits, layouts=args.layouts, limit=args.limit, reference=not args.no_reference
    )
    print(table.to_string(index=False))
    what = "our engine misses" if args.no_reference else "neither simulator reproduces"
    print(f"\ntransitions {what}: {sum(reasons.values())}")
    for (layout, split, why), n in sorted(reasons.items()):
        print(f"  {layout:24s} {split:6s} {why}: {n}")
    print("\nwall time: " + ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items()))


if __name__ == "__main__":
    main()
