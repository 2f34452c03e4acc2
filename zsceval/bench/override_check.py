"""Which settings of a suite's training runs its ``overrides`` take from the algorithms.

An algorithm adds to the preset what its runs need (:meth:`~zsceval.rl.algorithm.Algorithm.
preset_config`): a stage-2 ego anneals the shaping over its own run, HSP sets its own ``algo.k``. A
suite's ``overrides`` come after those additions and replace them in every job (except the keys an
addition computes from the user's own value, ``Algorithm.preset_derived``: a stage-1 population
stretches the horizon it is given over its members), so ``shaping.horizon=100000000`` (meant as
SP's horizon) also sets a stage-2 ego's to 1e8 instead of its 5e7 env steps. ``zsceval bench``
prints these replacements with the plan, so that a suite says what its runs get
(docs/differences.md, "Reward-shaping horizon in the population-12 suites").
"""

from __future__ import annotations

from typing import Any

from zsceval.envs.scenarios import env_flags
from zsceval.execution import Job
from zsceval.rl.config import TrainConfig, config_from_dict, config_layers, preset_additions


def overridden_additions(
    *, preset: str, overrides: list[str] | tuple[str, ...], **flags: Any
) -> list[tuple[str, Any, Any]]:
    """What ``overrides`` replace of the algorithm's own preset additions.

    An algorithm's additions (:meth:`~zsceval.rl.algorithm.Algorithm.preset_config`, e.g. a stage-2
    ego's shaping over its run) come before the overrides, so an override of the same key replaces
    them; the keys of ``Algorithm.preset_derived`` are not replaced (the override is their input).

    Args:
        preset: the preset name.
        overrides: ``key=value`` strings.
        **flags: as :func:`resolve_config`'s (``run.algo``, ``env.layout``, ``run.total_steps``, ...).

    Returns:
        ``(key, the algorithm's value, the value the run gets)`` for every overridden key whose
        value the additions set otherwise; empty when none.
    """
    resolve = config_layers(None, preset, None, overrides, flags)
    dynamics, plugin, derived = preset_additions(preset, resolve(None), resolve)
    added = {f"{sec}.{key}" for sec, keys in plugin.items() for key in keys}
    keys = [k for k in (o.split("=", 1)[0].strip() for o in overrides) if k in added]
    if not keys:
        return []
    final = resolve(dynamics, plugin, derived)
    own = config_from_dict(plugin, final)  # the additions' values, as the config's types
    out = []

    def value(cfg: TrainConfig, key: str) -> Any:
        section, name = key.split(".", 1)
        part = getattr(cfg, section)
        return part.get(name) if isinstance(part, dict) else getattr(part, name)  # ``algo`` is a dict

    for key in dict.fromkeys(keys):
        mine, got = value(own, key), value(final, key)
        if mine != got:
            out.append((key, mine, got))
    return out


def overridden_settings(
    phases: list[list[Job]], suite_overrides: list[str] | tuple[str, ...]
) -> list[tuple[str, str, object, object]]:
    """``(algorithm, key, the algorithm's value, the run's value)`` for every training job's setting
    that the suite's ``overrides`` (for every job; not an ``algo_overrides`` entry, which names its
    algorithm) replace (:func:`overridden_additions`), once per (algorithm, key,
    values), in job order."""
    suite_keys = {o.split("=", 1)[0].strip() for o in suite_overrides}
    if not suite_keys:
        return []
    seen: dict[tuple, None] = {}
    done: set[tuple] = set()
    for job in (j for phase in phases for j in phase if j.kind == "train"):
        p = job.params
        overrides = tuple(p.get("overrides", ()))
        sig = (p["algo"], p["layout"], p.get("preset", "quick"), overrides, p.get("steps"))
        if sig in done:
            continue
        done.add(sig)
        flags = {"run.algo": p["algo"], **env_flags(p["layout"]), "run.total_steps": p.get("steps")}
        for key, mine, got in overridden_additions(preset=sig[2], overrides=list(overrides), **flags):
            if key in suite_keys:
                seen.setdefault((p["algo"], key, mine, got), None)
    return list(seen)


def format_overridden(rows: list[tuple[str, str, object, object]]) -> str:
    """The plan's lines for :func:`overridden_settings`; empty when there is nothing to say."""
    if not rows:
        return ""

    def show(v: object) -> str:
        return f"{v:,.0f}" if isinstance(v, float) and v.is_integer() else str(v)

    lines = ["overrides replace what these algorithms set for their runs (the suite's value wins):"]
    lines += [f"  {algo}: {key} {show(mine)} -> {show(got)}" for algo, key, mine, got in rows]
    return "\n".join(lines)
