"""Human-proxy scores: every ego against the layout's behavior-cloned human model, both seats.

Carroll et al. (2019) score agents by their mean sparse return with a BC human model, in both
seats; ZSC-Eval (Sec. 5) replaced that with BR-Prox against generated partners. We report both,
side by side, so a user can see whether they agree. Job kinds (:mod:`zsceval.execution.jobs`):

* ``partners.human_proxy``: fit the layout's H_proxy on the test split
  (:func:`zsceval.human.partners.build_human_proxy`);
* ``ego.human_proxy``: one ego vs the proxy, writes ``human_proxy.parquet`` (one row per episode).

The bench concatenates the per-ego tables into ``human_proxy.parquet`` and ``zsceval report``
shows :func:`human_proxy_summary` beside the BR-Prox table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from zsceval.execution.jobs import job_kind
from zsceval.human.trials import HUMAN_LAYOUTS as _TRIAL_LAYOUTS
from zsceval.stats.metrics import bootstrap_ci, spearman

__all__ = [
    "HUMAN_LAYOUTS",
    "HUMAN_PROXY_TABLE",
    "format_human_proxy",
    "human_proxy_results",
    "human_proxy_summary",
]

HUMAN_PROXY_TABLE = "human_proxy.parquet"
HUMAN_LAYOUTS = tuple(dict.fromkeys(_TRIAL_LAYOUTS.values()))
"""Our layouts with 2019 human-human trials (random0 = forced_coordination, random3 = counter_circuit)."""


def human_proxy_results(
    layout: str,
    agent,
    proxy,
    *,
    episodes: int,
    generator: torch.Generator | None = None,
    device: str | torch.device = "cpu",
    labels: dict | None = None,
) -> pd.DataFrame:
    """Play ``agent`` with the human ``proxy`` in both seats, ``episodes`` episodes each, and count
    each episode's interdependencies ("Who is Helping Whom?"; :mod:`zsceval.evaluation.interdependence`).

    Returns:
        One row per (seat, episode): ``layout, partner ("human_proxy"), partner_level ("human"), seat
        (the ego's), episode, sparse_return``, the interdependence counts
        (:data:`~zsceval.evaluation.interdependence.COUNT_COLUMNS`), and ``labels``.
    """
    from zsceval.envs.overcooked import OvercookedEnv, load_layout
    from zsceval.evaluation.interdependence import play_with_interdependence

    env = OvercookedEnv(load_layout(layout), num_envs=min(episodes, 1024), device=device)
    frame = play_with_interdependence(env, agent, proxy, episodes, generator=generator, labels=labels)
    frame.insert(1, "partner", "human_proxy")
    frame.insert(2, "partner_level", "human")
    return frame


def human_proxy_summary(
    frame: pd.DataFrame, *, seed: int = 0, reps: int = 2000, level: float = 0.95
) -> pd.DataFrame:
    """Mean sparse return with the human proxy per (layout, algorithm), with a bootstrap CI.

    The units are (ego seed, seat) means; the CI is the stratified bootstrap of
    :func:`~zsceval.stats.metrics.bootstrap_ci` over seeds and seats with the mean as statistic.

    Args:
        frame: rows of :func:`human_proxy_results` with ``algorithm`` and ``ego_seed`` columns.

    Returns:
        Columns ``layout, algorithm, seeds, episodes, mean, low, high`` (sorted by layout, mean desc).

    Raises:
        ValueError: missing columns.
    """
    need = {"layout", "algorithm", "ego_seed", "seat", "sparse_return"}
    if not need <= set(frame.columns):
        raise ValueError(f"human-proxy table needs columns {sorted(need)}, has {sorted(frame.columns)}")
    rng = np.random.default_rng([seed, 7])
    rows = []
    for (lay, algo), g in frame.groupby(["layout", "algorithm"], sort=True):
        units = g.groupby(["ego_seed", "seat"])["sparse_return"].mean().unstack("seat")
        ci = bootstrap_ci(units.to_numpy(), np.nanmean, reps=reps, level=level, rng=rng)
        rows.append(
            {"layout": lay, "algorithm": algo, "seeds": len(units), "episodes": len(g),
             "mean": ci.estimate, "low": ci.low, "high": ci.high}
        )  # fmt: skip
    out = pd.DataFrame(rows, columns=["layout", "algorithm", "seeds", "episodes", "mean", "low", "high"])
    return out.sort_values(["layout", "mean"], ascending=[True, False], ignore_index=True)


def format_human_proxy(
    summary: pd.DataFrame, br_prox: pd.DataFrame | None = None, *, level: float = 0.95
) -> str:
    """A text table of :func:`human_proxy_summary`, one block per layout, with each algorithm's
    BR-Prox IQM beside it when ``br_prox`` (rows of
    :func:`~zsceval.stats.metrics.br_prox_summary`) is given, and the Spearman rank correlation
    of the two scores over the algorithms of a layout (3 or more algorithms)."""
    lines = [
        "Human-proxy score: mean sparse return with H_proxy (behavior cloning on the 2019 trials' test "
        f"split), both seats [{level:.0%} CI]"
    ]
    brp = {}
    if br_prox is not None and len(br_prox):
        rows = br_prox[br_prox["partner_level"] == "all"]
        brp = {(r.layout, r.algorithm): (r.iqm, r.ci_low, r.ci_high) for r in rows.itertuples()}
    for lay, g in summary.groupby("layout", sort=True):
        lines.append(f"\n{lay}")
        width = max(len("algorithm"), *(len(a) for a in g["algorithm"]))
        head = f"  {'algorithm':<{width}}  {'human-proxy return':>24}  seeds"
        lines.append(head + (f"  {'BR-Prox IQM':>22}" if brp else ""))
        pairs = []
        for r in g.itertuples():
            cell = f"{r.mean:7.1f} [{r.low:6.1f}, {r.high:6.1f}]"
            line = f"  {r.algorithm:<{width}}  {cell:>24}  {r.seeds:5d}"
            if (lay, r.algorithm) in brp:
                b = brp[(lay, r.algorithm)]
                line += f"  {b[0]:.3f} [{b[1]:.3f}, {b[2]:.3f}]"
                pairs.append((r.mean, b[0]))
            lines.append(line)
        if len(pairs) >= 3:
            rho = spearman([p[0] for p in pairs], [p[1] for p in pairs])
            lines.append(
                f"  Spearman rank correlation (human-proxy vs BR-Prox, {len(pairs)} algorithms): {rho:.2f}"
            )
    return "\n".join(lines)


# -- job kinds -------------------------------------------------------------------------------------------
@job_kind("partners.human_proxy")
def partners_human_proxy(params: dict, out: Path, needs: dict) -> dict:
    """Train a layout's human proxy (params: ``layout, seed, epochs`` (optional)) into ``out``."""
    from zsceval.human.bc import BCConfig
    from zsceval.human.partners import build_human_proxy

    cfg = BCConfig(seed=int(params.get("seed", 0)), epochs=int(params.get("epochs", BCConfig.epochs)))
    record = build_human_proxy(params["layout"], out, cfg)
    return {
        "metrics": {
            k: record["metrics"][k] for k in ("best_epoch", "fit", "held_out") if k in record["metrics"]
        }
    }


@job_kind("ego.human_proxy")
def ego_human_proxy(params: dict, out: Path, needs: dict) -> dict:
    """An ego vs its layout's human proxy (params: ``layout, algorithm, ego_seed, episodes, seed,
    device, ego`` (train-job id) or ``agent`` (an external ``module:attr``,
    :mod:`zsceval.rl.external`), ``proxy`` (proxy-job id)); writes ``human_proxy.parquet``.

    ``scored_checkpoint`` in the result is None for an external agent, as in ``ego.evaluate``."""
    from zsceval.evaluation.ego_checkpoint import load_scored_ego
    from zsceval.human.partners import load_human_proxy

    device = params.get("device", "cpu")
    ego, scored = load_scored_ego(params, needs, device)
    proxy, _ = load_human_proxy(Path(needs[params["proxy"]]), params["layout"], device)
    gen = torch.Generator(device=device).manual_seed(int(params.get("seed", 0)) + 17)
    labels = {"algorithm": params["algorithm"], "ego_seed": int(params["ego_seed"])}
    frame = human_proxy_results(
        params["layout"],
        ego,
        proxy,
        episodes=int(params["episodes"]),
        generator=gen,
        device=device,
        labels=labels,
    )
    frame.to_parquet(out / HUMAN_PROXY_TABLE)
    return {"rows": len(frame), "mean_sparse_return": float(frame["sparse_return"].mean()),
            "scored_checkpoint": scored}  # fmt: skip
