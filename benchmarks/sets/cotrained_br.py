r"""Does a partner set's fresh mid-checkpoint BR reach what the candidate's co-trained BR reaches?

BR-Prox divides an ego's return with a partner by R(BR, partner) (ZSC-Eval Sec. 4.3). For a `final`
partner the BR is the agent it was trained with; for a `mid` partner a BR is trained from scratch
(1e7 env steps in the reference protocol). Any agent's return with a partner is a lower bound on the
best response's, so where the candidate's own co-trained BR (at the mid checkpoint's step, or at
the end of its run) returns more with the mid partner than the fresh BR does, the fresh BR is not
the best response, and the unit's BR-Prox is too high (1 for any ego where the fresh BR returns 0).

For each mid partner of a set this plays the co-trained BR (at both checkpoints where it can)
with the mid checkpoint (as `zsceval eval`, both seatings) and prints them beside the stored
fresh BR returns, per seat (the BR's seat). With ``--results`` it also gives each algorithm's IQM
BR-Prox over the set's units with the stored denominators and with the larger of the stored and the
co-trained returns (a better estimate of the best response, not ZSC-Eval's protocol). A bench made
since the manifest job plays the co-trained BR at the mid step itself (``cotrained_br_returns.parquet``,
named in `zsceval report`'s notes by :func:`zsceval.bench.br_notes.weak_br_notes`, the same criterion);
this script also covers the sets made before it and the co-trained BR at the end of its run.

    python benchmarks/sets/cotrained_br.py BENCH --layout blocked_corridor [--episodes 20] [--results BENCH]
    python benchmarks/sets/cotrained_br.py eval_partners/sets/counter_circuit/v2/test \
        --layout counter_circuit --results docs/data/s12-hsp66-ab1353d

SOURCE is a `zsceval bench` folder with the layout's candidates' training runs
(``LAYOUT/candidates/<id>/train/run``) and its set (``LAYOUT/partners/set``), or a set's test split
exported with ``--full`` (``brs/<candidate>_final``: the co-trained BR at the end only).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from zsceval.evaluation.partner_set import WEAK_BR_MARGIN, WEAK_BR_RATIO, best_known_br_returns
from zsceval.evaluation.requests import EvalRequest, evaluate_request
from zsceval.stats.metrics import br_prox_units, iqm


def play(br: Path, partner: Path, layout: str, episodes: int) -> tuple[float, float]:
    """Mean sparse return of ``br#br`` with ``partner#biased``, with the BR in seat 0 and in seat 1
    (``zsceval eval --agent BR#br --partner PARTNER#biased --layout LAYOUT --seed 0``)."""
    req = EvalRequest(agent=f"{br}#br", partner=f"{partner}#biased", layout=layout, episodes=episodes)
    by_seat = {s["agent_seat"]: s["sparse_return_mean"] for s in evaluate_request(req)["seatings"]}
    return by_seat[0], by_seat[1]


def mid_partners(set_dir: Path) -> list[tuple[str, str, int]]:
    """``(partner id, candidate id, env steps)`` of the set's mid partners (its manifest)."""
    manifest = json.loads((set_dir / "manifest.json").read_text())
    rows = []
    for p in manifest["partners"]:
        if p["id"].endswith("_mid"):
            step = int(re.search(r"step_(\d+)", p["checkpoint"]["path"]).group(1))
            rows.append((p["id"], p["candidate_id"], step))
    return rows


def sources(source: Path, layout: str) -> tuple[Path, list[tuple[str, Path, Path | None, Path]]]:
    """The set folder and, per mid partner, ``(partner id, mid checkpoint, co-trained BR at the mid
    step or None, co-trained BR at the end)``.

    ``source`` is a bench folder (the candidates' training runs hold the co-trained BR at every
    checkpoint) or a full test split of a set (``brs/<candidate>_final``: only the final one).
    """
    if (source / "manifest.json").is_file():  # a set's split, exported with --full
        out = []
        for partner, cand, step in mid_partners(source):
            finals = sorted((source / "brs" / f"{cand}_final").glob("step_*"))
            if not finals:
                raise SystemExit(f"{source}: no brs/{cand}_final (export the set with --full)")
            out.append((partner, source / "policies" / partner / f"step_{step:012d}", None, finals[-1]))
        return source, out
    set_dir = source / layout / "partners" / "set"
    out = []
    for partner, cand, step in mid_partners(set_dir):
        ckpts = source / layout / "candidates" / cand / "train" / "run" / "checkpoints"
        mid = ckpts / f"step_{step:012d}"
        out.append((partner, mid, mid, sorted(ckpts.glob("step_*"))[-1]))
    return set_dir, out


def table(source: Path, layout: str, episodes: int) -> pd.DataFrame:
    """One row per (mid partner, BR seat): fresh, co-trained-at-mid (NaN from a set's split) and
    co-trained-final BR returns, and the largest of them (``best_known``)."""
    set_dir, mids = sources(source, layout)
    stored = pd.read_parquet(set_dir / "br_returns.parquet").groupby(["partner", "seat"])["br_return"].mean()
    rows = []
    for partner, mid, br_mid, br_final in mids:
        at_mid = play(br_mid, mid, layout, episodes) if br_mid is not None else (np.nan, np.nan)
        at_final = play(br_final, mid, layout, episodes)
        for seat in (0, 1):
            rows.append({"partner": partner, "seat": seat, "fresh_br": float(stored[(partner, seat)]),
                         "cotrained_at_mid": at_mid[seat], "cotrained_final": at_final[seat]})  # fmt: skip
        print(f"{partner}: fresh {rows[-2]['fresh_br']:.1f} / {rows[-1]['fresh_br']:.1f}, co-trained at "
              f"the mid step {at_mid[0]:.1f} / {at_mid[1]:.1f}, final {at_final[0]:.1f} / {at_final[1]:.1f}",
              file=sys.stderr, flush=True)  # fmt: skip
    frame = pd.DataFrame(rows)
    frame["best_known"] = frame[["fresh_br", "cotrained_at_mid", "cotrained_final"]].max(axis=1)
    return frame


def iqm_with(results: Path, set_dir: Path, layout: str, mids: pd.DataFrame) -> pd.DataFrame:
    """Each algorithm's IQM BR-Prox over (seed, partner, seat) units of ``results/results.parquet``
    (:func:`~zsceval.stats.metrics.br_prox_units`, ZSC-Eval's rule: 1 where the denominator is <= 0),
    with the set's stored BR returns and with the mid units' best known ones."""
    res = pd.read_parquet(results / "results.parquet")
    res = res[res["layout"] == layout]
    stored = pd.read_parquet(set_dir / "br_returns.parquet").assign(layout=layout)
    stored = stored.groupby(["layout", "partner", "seat"], as_index=False)["br_return"].mean()
    best = best_known_br_returns(stored, mids.rename(columns={"best_known": "cotrained_br_return"}))
    columns = {}
    for name, br in (("stored", stored), ("with_best_known", best)):
        units = br_prox_units(res, br)
        columns[name] = units.groupby("algorithm")["br_prox"].agg(lambda x: iqm(x.to_numpy()))
    return pd.DataFrame(columns).round(3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source", type=Path, help="a finished zsceval bench folder, or a set's full test split")
    ap.add_argument("--layout", required=True)
    ap.add_argument("--episodes", type=int, default=20, help="episodes per seating (20)")
    ap.add_argument(
        "--results",
        type=Path,
        default=None,
        help="a results.parquet folder: also the IQMs with best known returns",
    )
    args = ap.parse_args()
    mids = table(args.source, args.layout, args.episodes)
    with pd.option_context("display.width", 160):
        print(mids.round(1).to_string(index=False))
    below = mids[mids["best_known"] > mids["fresh_br"] * WEAK_BR_RATIO + WEAK_BR_MARGIN]
    zero = int((mids["fresh_br"] <= 0).sum())
    rule = f"{WEAK_BR_RATIO:g} x the fresh BR + {WEAK_BR_MARGIN:g}"
    print(f"\n{len(below)} of {len(mids)} mid (partner, seat) units: a co-trained BR returns more than "
          f"{rule} ({zero} with a fresh BR return <= 0)")  # fmt: skip
    if args.results:
        print("\nIQM BR-Prox over the set's units: stored BR returns, and the mid units' best known returns")
        set_dir, _ = sources(args.source, args.layout)
        print(iqm_with(args.results, set_dir, args.layout, mids).to_string())


if __name__ == "__main__":
    main()
