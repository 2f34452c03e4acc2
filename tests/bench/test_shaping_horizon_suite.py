"""``overcooked-s12-grid-h1e8`` is ``overcooked-s12-grid`` with ZSC-Eval's shaping horizon (1e8 env
steps) in every job, and nothing else changed."""

from zsceval.bench.plan import build_phases
from zsceval.bench.suite import load_suite
from zsceval.rl.config import resolve_config


def _jobs(name: str) -> dict:
    suite = load_suite(name, layouts=["blocked_corridor"], algorithms=["sp"])
    phases, _ = build_phases(suite)
    return {job.id: job for phase in phases for job in phase}


def test_every_job_anneals_the_shaping_over_1e8_env_steps():
    plain, h1e8 = _jobs("overcooked-s12-grid"), _jobs("overcooked-s12-grid-h1e8")
    assert set(plain) == set(h1e8) and any("candidates" in i for i in plain)
    for job_id, job in h1e8.items():
        params, base = job.params, plain[job_id].params
        if "overrides" not in params:
            continue
        horizon = resolve_config(preset=params["preset"], overrides=params["overrides"]).shaping.horizon
        assert horizon == 100_000_000, job_id
        assert resolve_config(preset=base["preset"], overrides=base["overrides"]).shaping.horizon == 5_000_000
        assert [o for o in params["overrides"] if not o.startswith("shaping.horizon")] == base["overrides"]
