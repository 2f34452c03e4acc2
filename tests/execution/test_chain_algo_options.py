"""``zsceval train --set algo.KEY=V`` of a multi-stage algorithm: each option reaches the training jobs
whose algorithm declares it (the rule of ``zsceval bench``'s ``algo_overrides``), and an option no
job takes is refused before anything runs."""

import pytest
from click.testing import CliRunner

from zsceval.bench.chain import chain_job_ids, chain_jobs
from zsceval.cli import main
from zsceval.rl.config import ConfigError


def params(algo, *overrides):
    return {"algo": algo, "layout": "counter_circuit", "seed": 0, "steps": None, "preset": "quick",
            "device": "cpu", "overrides": list(overrides)}  # fmt: skip


def options_by_job(algo, *overrides):
    return {
        j.id: j.params.get("algo_options", {})
        for j in chain_jobs(params(algo, *overrides))
        if j.kind == "train"
    }


def test_a_stage1_option_reaches_the_population_and_not_the_ego():
    plain = options_by_job("trajedi")
    routed = options_by_job("trajedi", "algo.jsd_weight=0.5")
    stage1 = "counter_circuit/stage1/trajedi-stage1"
    assert plain[stage1] == {}
    assert routed[stage1] == {"jsd_weight": 0.5}
    assert routed["ego"] == plain["ego"] and "jsd_weight" not in routed["ego"]
    mep = options_by_job("mep", "algo.prioritized_alpha=2", "algo.entropy_alpha=0.02")
    assert mep["ego"]["prioritized_alpha"] == 2 and "entropy_alpha" not in mep["ego"]
    assert mep["counter_circuit/stage1/mep-stage1"] == {"entropy_alpha": 0.02}


def test_an_ego_option_stays_in_the_ego_and_leaves_a_shared_stage_alone():
    plain = {j.id: j for j in chain_jobs(params("hsp"))}
    routed = {j.id: j for j in chain_jobs(params("hsp", "algo.min_return=-1", "algo.entropy_alpha=0.02"))}
    assert routed["ego"].params["algo_options"]["min_return"] == -1
    assert "entropy_alpha" not in routed["ego"].params["algo_options"]
    mep = "counter_circuit/stage1/mep-stage1"
    assert routed[mep].params["algo_options"] == {"entropy_alpha": 0.02}
    assert plain[mep].params.get("algo_options", {}) == {}
    candidates = [i for i in routed if "/hsp_candidates/" in i and routed[i].kind == "train"]
    assert candidates and all(routed[i] == plain[i] for i in candidates)  # the plug-in's own weights kept


def test_jobs_are_unchanged_without_options_and_for_options_the_ego_takes():
    """Chains started before the routing keep their job fingerprints."""
    from zsceval import registry
    from zsceval.bench.chain import _context

    for algo, over in [("fcp", ()), ("mep", ("algo.prioritized_alpha=2",)), ("tbs", ("algo.pool_size=10",))]:
        raw = registry.get(algo).jobs(_context(params(algo, *over)))
        assert [j.fingerprint for j in chain_jobs(params(algo, *over))] == [j.fingerprint for j in raw]


def test_an_option_no_job_takes_is_refused_with_each_algorithms_options():
    with pytest.raises(ConfigError, match=r"algo.bogus: no training job of trajedi has this option") as err:
        chain_job_ids(params("trajedi", "algo.bogus=1"))
    assert "'trajedi-stage1': ['jsd_games', 'jsd_gamma', 'jsd_weight']" in str(err.value)
    assert "'trajedi': ['population', 'window']" in str(err.value)


def test_the_cli_refuses_the_option_before_creating_the_run(tmp_path):
    out = tmp_path / "run"
    args = [
        "train",
        "--algo",
        "fcp",
        "--layout",
        "cramped_room",
        "--set",
        "algo.jsd_weight=0.5",
        "--out",
        str(out),
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0
    assert "algo.jsd_weight: no training job of fcp has this option" in result.output
    assert not out.exists()


def test_an_option_the_plugin_sets_itself_is_refused_not_dropped():
    """FCP's ego takes ``window`` but the plug-in sets the sliding window itself, which would win."""
    with pytest.raises(
        ConfigError, match=r"fcp sets these options itself, so --set cannot: window \(ego: \[0, 1, 2, 3\]\)"
    ):
        chain_jobs(params("fcp", "algo.window=[0, 1]"))
    ego = next(j for j in chain_jobs(params("fcp", "algo.window=[0, 1, 2, 3]")) if j.id == "ego")
    assert ego.params["algo_options"]["window"] == [0, 1, 2, 3]  # the same value: nothing is lost


def test_an_ego_trained_alone_from_given_inputs_keeps_every_option(tmp_path):
    """With its stage-1 population given, FCP's ego trains alone (no chain): the window the chain's
    plug-in would set is the user's to choose there, so deciding that is not refused."""
    from zsceval import registry
    from zsceval.bench.chain import missing_inputs
    from zsceval.rl.config import resolve_config

    over = [f"algo.population=['{tmp_path}']", "algo.window=[0, 1]"]
    cfg = resolve_config(
        preset="quick", overrides=over, **{"run.algo": "fcp", "env.layout": "counter_circuit"}
    )
    assert missing_inputs(registry.get("fcp"), cfg, params("fcp", *over)) == []
    alone = ["algo.window=[0, 1]"]
    cfg = resolve_config(
        preset="quick", overrides=alone, **{"run.algo": "fcp", "env.layout": "counter_circuit"}
    )
    assert missing_inputs(registry.get("fcp"), cfg, params("fcp", *alone)) == ["population"]


def test_some_of_an_egos_inputs_without_the_others_is_refused_not_overwritten(tmp_path):
    """HSP's ego takes its stage-1 population and its candidates' runs: given the population alone,
    the chain would train its own and drop the user's, so train refuses and names both."""
    from zsceval import registry
    from zsceval.bench.chain import missing_inputs
    from zsceval.rl.config import resolve_config

    over = [f"algo.population=['{tmp_path}']"]
    cfg = resolve_config(
        preset="quick", overrides=over, **{"run.algo": "hsp", "env.layout": "counter_circuit"}
    )
    with pytest.raises(ConfigError, match=r"algo.population given, algo.candidate_runs missing"):
        missing_inputs(registry.get("hsp"), cfg, params("hsp", *over))
    cfg = resolve_config(preset="quick", **{"run.algo": "hsp", "env.layout": "counter_circuit"})
    assert missing_inputs(registry.get("hsp"), cfg, params("hsp")) == [
        "population", "candidate_runs"]  # fmt: skip
