"""TBS pipeline: random reward shaping, best-response seating, scaled reward, and the whole chain
through the CLI with a tiny budget, resuming after a failed stage."""

import dataclasses
import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from click.testing import CliRunner

from zsceval import registry
from zsceval.algorithms.tbs.results import scaled_rewards, summarize
from zsceval.algorithms.tbs.shaping import SHAPING_EVENTS, event_matrix, sample_coefficients
from zsceval.cli import main
from zsceval.envs.overcooked.constants import CLASSIC_EVENTS
from zsceval.execution import jobs as job_mod
from zsceval.rl.checkpoint import load_agent
from zsceval.rl.config import resolve_config
from zsceval.rl.seating import Seating


def test_shaping_events_map_onto_engine_events_and_coefficients_scale_with_magnitude():
    m = event_matrix(CLASSIC_EVENTS)
    assert m.shape == (6, len(CLASSIC_EVENTS)) and m.sum() == 10  # 1 + 1 + 1 + 3 + 3 + 1 engine events
    i = CLASSIC_EVENTS.index
    assert m[0, i("PLACEMENT_IN_POT")] == 1 and m[5, i("delivery")] == 1
    assert m[3, i("pickup_soup_from_X")] == 1 and m[4, i("put_dish_on_X")] == 1
    c = sample_coefficients(4000, seed=3)
    z = np.random.default_rng(3).standard_normal((4000, 6))
    mags = np.array([v[0] for v in SHAPING_EVENTS.values()])
    assert np.allclose(c, mags * z)  # N(0, magnitude^2) per event, agent-major
    assert np.allclose(c.std(0) / mags, 1.0, atol=0.05)
    with pytest.raises(ValueError, match="needs the engine event 'PLACEMENT_IN_POT'"):
        event_matrix(("delivery",))


def _pool(pool_size=2):
    cfg = resolve_config(preset="quick", overrides=["run.algo=tbs-pool", f"algo.pool_size={pool_size}"])
    algo = registry.get("tbs-pool")(cfg, num_envs=3, num_agents=2, device="cpu")
    algo.learners = algo.build_learners(lambda: torch.nn.Linear(1, 1))
    return algo


def test_pool_team_reward_adds_each_agents_own_random_shaping_of_its_events():
    algo = _pool(2)
    coef = algo.coefficients  # [4, 6]: p00_1, p00_2, p01_1, p01_2
    E = len(CLASSIC_EVENTS)
    events = torch.zeros(3, 2, E, dtype=torch.int16)
    events[0, 0, CLASSIC_EVENTS.index("PLACEMENT_IN_POT")] = 1  # pair 0 agent 1 puts an onion in a pot
    events[0, 1, CLASSIC_EVENTS.index("put_onion_on_X")] = 1  # pair 0 agent 2 drops an onion on a counter
    events[1, 1, CLASSIC_EVENTS.index("delivery")] = 1  # pair 1 agent 2 delivers
    shaped = torch.tensor([[3.0, 0], [0, 0], [0, 5]])
    step = SimpleNamespace(
        reward=torch.tensor([0.0, 20.0, 0.0]), shaped_by_agent=shaped, events=events, infos={}
    )
    seating = Seating(
        torch.tensor([[0, 1], [2, 3], [0, 1]]), torch.zeros(3, 2, dtype=torch.int64), torch.tensor([0, 1, 0])
    )
    r = algo.team_reward(step, 0.5, seating)
    expect = torch.tensor([0.5 * 3 + coef[0, 0] + coef[1, 4], 20 + coef[3, 5], 0.5 * 5])
    assert torch.allclose(r, expect)
    algo.num_arms = len(algo.arms())
    assert algo.num_arms == 2 and algo.assign(torch.arange(5), None).tolist() == [0, 1, 0, 1, 0]


def test_pool_seeds_give_different_shaping_and_the_coefficients_resume():
    a, b = _pool(2), _pool(2)
    assert torch.equal(a.coefficients, b.coefficients)
    cfg = resolve_config(preset="quick", overrides=["run.algo=tbs-pool", "algo.pool_size=2", "run.seed=1000"])
    c = registry.get("tbs-pool")(cfg, num_envs=3, num_agents=2, device="cpu")
    c.build_learners(lambda: torch.nn.Linear(1, 1))
    assert not torch.allclose(a.coefficients, c.coefficients)
    # the run's coefficients can be recomputed from its seed and size (the pool diagnostics do)
    from zsceval.algorithms.tbs.shaping import pool_coefficients

    assert torch.equal(c.coefficients, torch.as_tensor(pool_coefficients(2, 1000), dtype=torch.float32))
    assert torch.equal(a.coefficients, torch.as_tensor(pool_coefficients(2, 0), dtype=torch.float32))
    c.load_state_dict(a.state_dict())
    assert torch.equal(c.coefficients, a.coefficients)


def test_pool_preset_gives_every_pair_the_games_of_one_vdn_run_and_anneals_shaping_over_the_run():
    quick = resolve_config(preset="quick", overrides=["run.algo=tbs-pool", "algo.pool_size=5"])
    vdn = resolve_config(preset="quick", overrides=["run.algo=vdn"])
    assert quick.env.num_envs == 5 * vdn.env.num_envs  # 128 games per pair
    assert quick.run.total_steps == 5 * 2_000_000
    assert quick.shaping.horizon == quick.run.total_steps  # the default budget
    given = resolve_config(preset="quick", overrides=["run.algo=tbs-pool", "algo.pool_size=5"],
                           **{"run.total_steps": 7_000_000})  # fmt: skip
    assert given.run.total_steps == 7_000_000 and given.shaping.horizon == 7_000_000  # --steps
    paper = resolve_config(preset="paper", overrides=["run.algo=tbs-pool", "algo.pool_size=3"])
    assert paper.env.num_envs == 3 * 64  # JaxMARL's NUM_ENVS per VDN run
    assert paper.shaping.horizon == 3 * 4_000_000  # TBS Table 4: 4e6 of each pair's 5e6
    user = resolve_config(preset="quick", overrides=["run.algo=tbs-pool", "env.num_envs=24"])
    assert user.env.num_envs == 24  # the command line still wins


def test_best_response_preset_gives_every_learner_the_games_of_one_dqn_run(tmp_path):
    (tmp_path / "clustering.json").write_text(json.dumps({"labels": [0, 1, 2, 0, 1, 3], "k": 4}))
    cfg = resolve_config(preset="quick", overrides=["run.algo=tbs-br", f"algo.clustering={tmp_path}"])
    assert cfg.env.num_envs == (4 + 1) * 128
    before = resolve_config(preset="quick", overrides=["run.algo=tbs-br"])  # not clustered yet
    assert before.env.num_envs == (2 + 1) * 128
    paper = resolve_config(preset="paper", overrides=["run.algo=tbs-br", f"algo.clustering={tmp_path}"],
                           **{"run.total_steps": 8_000_000})  # fmt: skip
    assert paper.env.num_envs == 5 * 64 and paper.shaping.horizon == 6_000_000  # 3e7 of 4e7


def test_read_clusters_groups_pairs_by_label_and_names_a_broken_file(tmp_path):
    from zsceval.algorithms.tbs.jobs import read_clusters
    from zsceval.execution.jobs import JobInputError

    (tmp_path / "clustering.json").write_text(json.dumps({"labels": [1, 0, 2, 0, 1], "k": 3}))
    assert read_clusters(tmp_path) == [[1, 3], [0, 4], [2]]
    (tmp_path / "clustering.json").write_text('{"labels": [0, 1')
    with pytest.raises(JobInputError, match="clustering.json"):
        read_clusters(tmp_path)


def test_best_responses_draw_partners_only_from_their_cluster(tmp_path):
    (tmp_path / "clustering.json").write_text(json.dumps({"labels": [0, 1, 1, 0, 1], "k": 2}))
    cfg = resolve_config(
        preset="quick", overrides=["run.algo=tbs-br", "algo.pool=x", f"algo.clustering={tmp_path}"]
    )
    algo = registry.get("tbs-br")(cfg, num_envs=8, num_agents=2, device="cpu")
    algo.learners = algo.build_learners(lambda: torch.nn.Linear(1, 1))
    assert list(algo.learners) == ["br_0", "br_1", "br_all"]
    algo.partner_sets = [*algo.clusters, list(range(5))]
    arms = algo.arms()
    assert len(arms) == 2 * (2 + 3 + 5)
    g = torch.Generator().manual_seed(0)
    picks = algo.assign(torch.arange(30000), g)
    counts = torch.bincount(picks, minlength=len(arms)).float()
    for name, members in zip(algo.learners, algo.partner_sets, strict=True):
        own = [a for a, arm in enumerate(arms) if any(s[0] == name for s in arm.seats)]
        assert len(own) == 2 * len(members)
        pairs = {int(arm.partner[4:]) for arm in (arms[a] for a in own)}
        assert pairs == set(members)  # cluster j's BR meets only cluster j's pairs
        share = counts[own] / counts.sum()  # a learner is drawn uniformly, then its arm uniformly
        assert abs(float(share.sum()) - 1 / 3) < 0.02
        assert torch.allclose(share, torch.full_like(share, 1 / 3 / len(own)), atol=0.012)
    seat = {a.ego_seat for a in arms}
    assert seat == {0, 1}


def test_scaled_reward_divides_by_the_heldout_pairs_self_play_and_summarizes_with_cis():
    rows = []
    for h, sp in ((0, 100.0), (1, 40.0), (2, 0.0)):
        for seat in (0, 1):
            for ep in range(2):
                rows.append(
                    {"agent": "Oracle", "heldout": h, "seat": seat, "episode": ep, "sparse_return": sp}
                )
                rows.append({"agent": "TBS", "heldout": h, "seat": seat, "episode": ep,
                             "sparse_return": sp / 2 + 10 * seat})  # fmt: skip
    frame = scaled_rewards(pd.DataFrame(rows))
    tbs = frame[frame["agent"] == "TBS"]
    assert np.allclose(tbs[tbs["heldout"] == 0]["scaled"], [0.5, 0.5, 0.6, 0.6])
    assert np.allclose(tbs[tbs["heldout"] == 1]["scaled"], [0.5, 0.5, 0.75, 0.75])
    assert tbs[tbs["heldout"] == 2]["scaled"].isna().all()  # no scale for a pair that never scores
    table = summarize(frame, reps=200).set_index("agent")
    assert table.loc["Oracle", "scaled"] == pytest.approx(1.0)
    assert table.loc["TBS", "scaled"] == pytest.approx((0.5 + 0.6 + 0.5 + 0.75) / 4)
    assert table.loc["TBS", "scaled_low"] <= table.loc["TBS", "scaled"] <= table.loc["TBS", "scaled_high"]
    assert table.loc["TBS", "sparse_return"] == pytest.approx(np.mean([50, 60, 20, 30, 0, 10]))


def _run_frame(layout, pairs):
    """Results of one TBS chain: ``pairs`` = [(oracle return, TBS return, BR return)] per held-out
    pair, the same in both seats and 2 episodes."""
    rows = []
    for h, returns in enumerate(pairs):
        for agent, ret in zip(("Oracle", "TBS", "BR"), returns, strict=True):
            for seat in (0, 1):
                for ep in range(2):
                    rows.append({"agent": agent, "heldout": h, "seat": seat, "episode": ep,
                                 "sparse_return": ret, "layout": layout})  # fmt: skip
    return scaled_rewards(pd.DataFrame(rows))


def test_a_single_runs_table_has_its_paired_difference_with_the_br(tmp_path):
    """TBS scaled 0.5 and 1.0, the single BR 0.75 and 0.0 on two held-out pairs: TBS - BR is
    (-0.25 + 1.0) / 2 in scaled reward and (-25 + 80) / 2 in return; no Hypothesis, no row for it."""
    from zsceval.algorithms.tbs.report import format_tbs, paired_with_br, tbs_summary

    frame = _run_frame("counter_circuit", [(100, 50, 75), (80, 80, 0)])
    paired = paired_with_br(frame, reps=200).set_index("agent")
    assert list(paired.index) == ["TBS - BR"]
    assert paired.loc["TBS - BR", "scaled"] == pytest.approx(0.375)
    assert paired.loc["TBS - BR", "sparse_return"] == pytest.approx(27.5)
    path = tmp_path / "run" / "ego" / "tbs_eval" / "results.parquet"
    path.parent.mkdir(parents=True)
    frame.to_parquet(path)
    summary = tbs_summary([path], reps=200).set_index("agent")
    assert (
        summary.loc["TBS - BR", "scaled"] == pytest.approx(0.375) and "Hypothesis - BR" not in summary.index
    )
    assert "TBS - BR" in format_tbs(tbs_summary([path], reps=50))


def test_runs_of_a_layout_pool_their_heldout_pairs_and_the_paired_difference(tmp_path):
    """Two seeds of counter_circuit (2 and 1 held-out pairs with a scale; one that never scores) and a
    single coordination_ring run (not pooled). Pooled TBS = mean of 0.5, 1.0, 0.25 over the three
    scaled pairs; BR = mean of 0.75, 0.0, 0.5; TBS - BR = mean of -0.25, 1.0, -0.25."""
    from zsceval.algorithms.tbs.report import format_tbs, plot_pooled, tbs_pooled, tbs_summary

    runs = {"s0": _run_frame("counter_circuit", [(100, 50, 75), (40, 40, 0)]),
            "s1": _run_frame("counter_circuit", [(200, 50, 100), (0, 0, 20)]),
            "cr": _run_frame("coordination_ring", [(100, 10, 20), (100, 30, 40)])}  # fmt: skip
    paths = []
    for name, frame in runs.items():
        path = tmp_path / name / "ego" / "tbs_eval" / "results.parquet"
        path.parent.mkdir(parents=True)
        frame.to_parquet(path)
        paths.append(path)
    pooled = tbs_pooled(paths, reps=300).set_index("agent")
    assert set(pooled["layout"]) == {"counter_circuit"} and (pooled["runs"] == 2).all()
    assert (pooled["heldout_pairs"] == 3).all()
    assert pooled.loc["TBS", "scaled"] == pytest.approx((0.5 + 1.0 + 0.25) / 3)
    assert pooled.loc["BR", "scaled"] == pytest.approx((0.75 + 0.0 + 0.5) / 3)
    assert pooled.loc["TBS - BR", "scaled"] == pytest.approx((-0.25 + 1.0 - 0.25) / 3)
    assert pooled.loc["Oracle", "scaled"] == pytest.approx(1.0)
    low, high = pooled.loc["TBS - BR", ["scaled_low", "scaled_high"]]
    assert -0.25 - 1e-9 <= low < pooled.loc["TBS - BR", "scaled"] < high <= 1.0 + 1e-9
    text = format_tbs(tbs_summary(paths, reps=50), pooled=tbs_pooled(paths, reps=50))
    assert "counter_circuit  (pooled over 2 runs: 3 held-out pairs with a scale)" in text
    # each run's line counts all its pairs (the sparse return's) and those with a scale (s1's second
    # pair never scores: no scale)
    assert "counter_circuit  (s0/ego, 2 held-out pairs, 2 with a scale)" in text
    assert "counter_circuit  (s1/ego, 2 held-out pairs, 1 with a scale)" in text
    assert "TBS - BR" in text and "coordination_ring  (pooled" not in text
    written = plot_pooled(tbs_pooled(paths, reps=50), tmp_path / "figures")
    assert [p.name for p in written] == ["tbs_pooled_counter_circuit.png"]
    assert written[0].read_bytes()[:4] == b"\x89PNG"


def test_a_folder_of_tbs_results_gets_the_tbs_report_section(tmp_path):
    """``zsceval report`` names no algorithm: the TBS tables come from the ``tbs`` report section
    (entry-point group ``zsceval.report_sections``), alone in a folder without bench tables."""
    for name, pairs in {"s0": [(100, 50, 75), (40, 40, 0)], "s1": [(200, 50, 100), (0, 0, 20)]}.items():
        path = tmp_path / name / "ego" / "tbs_eval" / "results.parquet"
        path.parent.mkdir(parents=True)
        _run_frame("counter_circuit", pairs).to_parquet(path)
    res = CliRunner().invoke(main, ["report", str(tmp_path), "--reps", "50", "--json", "--no-figures"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.output)
    assert set(payload) == {"tbs", "tbs_pooled"} and {r["agent"] for r in payload["tbs_pooled"]} >= {
        "TBS",
        "BR",
    }
    res = CliRunner().invoke(main, ["report", str(tmp_path), "--reps", "50"])
    assert res.exit_code == 0 and res.output.startswith("TBS protocol"), res.output
    assert "counter_circuit  (pooled over 2 runs: 3 held-out pairs with a scale)" in res.output
    assert (tmp_path / "figures" / "tbs_pooled_counter_circuit.png").read_bytes()[:4] == b"\x89PNG"


def test_pooling_keeps_chain_settings_apart_and_never_pools_one_seed_twice(tmp_path):
    """Chains pool per layout and settings (their chain.json): two paper-rule seeds pool, two fixed-k
    seeds pool apart, and two chains of one seed (one held-out pool, e.g. ToM-seed copies) do not."""
    import json

    from zsceval.algorithms.tbs.report import chain_variant, format_tbs, plot_pooled, tbs_pooled, tbs_summary

    def chain(name, seed, *overrides, pairs, k=None):
        root = tmp_path / name
        path = root / "ego" / "tbs_eval" / "results.parquet"
        path.parent.mkdir(parents=True)
        _run_frame("counter_circuit", pairs).to_parquet(path)
        if k is not None:
            cluster = root / "counter_circuit" / "tbs" / f"cluster_n10_s{seed}"
            cluster.mkdir(parents=True)
            (cluster / "clustering.json").write_text(json.dumps({"k": k, "labels": []}))
        over = ["run.num_threads=1", "algo.pool_size=10", *overrides]
        record = {"algo": "tbs", "layout": "counter_circuit", "seed": seed, "steps": None, "preset": "quick"}
        (root / "chain.json").write_text(json.dumps({**record, "overrides": over}))
        return path

    paths = [
        chain("s0", 0, pairs=[(100, 50, 75)], k=5),
        chain("s1", 1, pairs=[(100, 100, 50)], k=7),
        chain("s0_k2", 0, "algo.fixed_k=2", pairs=[(100, 20, 75)], k=2),
        chain("s1_k2", 1, "algo.fixed_k=2", pairs=[(100, 40, 50)]),
        chain("s0_tom1", 0, "algo.tom_seed=1", pairs=[(100, 0, 75)]),
        chain("s0_tom2", 0, "algo.tom_seed=1", pairs=[(100, 10, 75)]),
    ]
    assert chain_variant(paths[2]) == ("algo.fixed_k=2, algo.pool_size=10", 0)
    assert chain_variant(tmp_path / "none" / "ego" / "tbs_eval" / "results.parquet") == ("", None)
    # an ego job that trained with the ToM prior bias marks its chain, even under an older chain.json
    prior = chain("s0_prior", 0, pairs=[(100, 60, 75)], k=5)
    (prior.parents[1] / "DONE.json").write_text(json.dumps({"job": {"params": {"tom_prior_bias": True}}}))
    assert chain_variant(prior) == ("algo.pool_size=10, algo.tom_prior_bias=true", 0)
    (prior.parents[1] / "DONE.json").write_text(json.dumps({"job": {"params": {"tom_prior_bias": False}}}))
    assert chain_variant(prior) == chain_variant(paths[0])
    with pytest.warns(UserWarning, match=r"repeat a seed \(\[0, 0\]\)"):
        pooled = tbs_pooled(paths, reps=100)
    tbs = pooled[pooled["agent"] == "TBS"].set_index("variant")["scaled"]
    assert tbs.to_dict() == pytest.approx(
        {"algo.pool_size=10": 0.75, "algo.fixed_k=2, algo.pool_size=10": 0.3}
    )
    diff = pooled[pooled["agent"] == "TBS - BR"].set_index("variant")["scaled"]
    assert diff["algo.fixed_k=2, algo.pool_size=10"] == pytest.approx(((0.2 - 0.75) + (0.4 - 0.5)) / 2)
    with pytest.warns(UserWarning):
        text = format_tbs(tbs_summary(paths, reps=50), pooled=tbs_pooled(paths, reps=50))
    assert "(pooled over 2 runs; algo.fixed_k=2, algo.pool_size=10: 2 held-out pairs with a scale)" in text
    # the overview: one line per settings with each run's k (unknown for s1_k2: no clustering record)
    assert pooled.groupby("variant")["k"].first().to_dict() == {
        "algo.pool_size=10": "5, 7", "algo.fixed_k=2, algo.pool_size=10": "2, ?"}  # fmt: skip
    overview = text[text.index("TBS against the single BR by chain settings") :].splitlines()
    rows = {line.split()[0]: line.split() for line in overview[2:4]}
    assert rows["algo.fixed_k=2"][1:5] == ["2", "2,", "?", "0.300"]  # runs, k, TBS
    assert rows["algo.fixed_k=2"][6] == f"{((0.2 - 0.75) + (0.4 - 0.5)) / 2:+.3f}"  # TBS - BR
    assert rows["defaults"][1:5] == ["2", "5,", "7", "0.750"]
    assert overview[4] == "  (every row: algo.pool_size=10)"
    names = sorted(p.name for p in plot_pooled(pooled, tmp_path / "figures"))
    assert names == ["tbs_pooled_counter_circuit_algo.fixed-k-2-algo.pool-size-10.png",
                     "tbs_pooled_counter_circuit_algo.pool-size-10.png"]  # fmt: skip


def test_global_tom_plan_gives_every_best_response_every_cluster_equally():
    from zsceval.algorithms.tbs.jobs import global_tom_plan

    # N = 3, k = 2, 4 episodes per pair: 12 / 4 = 3 per (i, j) block, rounded up to 4 = 2 slots
    assert global_tom_plan([[0, 1], [2]], 4) == [[0, 1, 2, 2], [0, 1, 2, 2]]
    # N = 6, k = 2, 2 per pair: 3 per block -> 2 slots; the 4-member cluster is entered at j x 2
    assert global_tom_plan([[0, 1, 2, 3], [4, 5]], 2) == [[0, 1, 4, 5], [2, 3, 4, 5]]
    # one cluster: the whole budget, games x N episodes
    assert global_tom_plan([[0, 1, 2]], 4) == [[0, 1, 2, 0, 1, 2]]
    plan = global_tom_plan([[0, 3, 5], [1], [2, 4, 6, 7], [8, 9]], 32)  # N = 10, k = 4: 20 per block
    for seq in plan:  # every BR meets every cluster with the same share of episodes
        assert [sum(p in c for p in seq) for c in ([0, 3, 5], [1], [2, 4, 6, 7], [8, 9])] == [10] * 4
    with pytest.raises(ValueError, match="non-empty"):
        global_tom_plan([[0], []], 4)


TINY = ["--steps", "2048", "--no-progress"]
_TINY_SET = ("env.num_envs=16", "env.horizon=100", "algo.pool_size=3", "algo.pool_steps=2048",
             "algo.tom_games=4",
             "algo.tom_epochs=1", "algo.episodes=1")  # fmt: skip
for _key in _TINY_SET:
    TINY += ["--set", _key]


def test_tbs_chain_through_the_cli_resumes_after_a_failed_stage(tmp_path, monkeypatch):
    out = tmp_path / "tbs"
    args = ["train", "--algo", "tbs", "--layout", "cramped_room", "--out", str(out), *TINY]
    real = job_mod.job_function("tbs.ego")  # loads the kind's entry point when run alone
    seen = {}

    def broken(params, out_dir, needs):
        seen.update(params=params, needs=needs)
        raise RuntimeError("killed")

    monkeypatch.setitem(job_mod.JOB_KINDS, "tbs.ego", broken)
    res = CliRunner().invoke(main, args)
    assert res.exit_code != 0 and "--resume" in res.output
    base = out / "cramped_room" / "tbs"
    done = {p.parent.name: p.stat().st_mtime_ns for p in base.glob("*/DONE.json")}
    assert set(done) == {"pool_n3_s0", "heldout_n3_s1000", "cluster_n3_s0", "brs_n3_s0"}
    monkeypatch.setitem(job_mod.JOB_KINDS, "tbs.ego", real)
    res = CliRunner().invoke(main, ["train", "--resume", "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert {p.parent.name: p.stat().st_mtime_ns for p in base.glob("*/DONE.json")} == done  # not redone
    assert "TBS protocol" in res.output and "Oracle" in res.output
    clustering = json.loads((base / "cluster_n3_s0" / "clustering.json").read_text())
    assert len(clustering["labels"]) == 3 and 1 <= clustering["k"] <= 2
    assert clustering["k_rule"] == "paper" and clustering["fixed_k"] is None  # the paper's rule by default
    assert (base / "cluster_n3_s0" / "similarity.png").stat().st_size > 0
    trained = json.loads((base / "brs_n3_s0" / "run" / "eval.json").read_text())["env_steps"]
    per_rollout = 16 * 32  # games x the quick tbs-br rollout
    budget = 2048 * (clustering["k"] + 1)  # --steps per best response
    assert budget <= trained < budget + per_rollout
    tbs, meta = load_agent(out / "ego" / "run")
    assert type(tbs).agent_class == "tbs" and len(tbs.brs) == clustering["k"]
    curves = json.loads((out / "ego" / "run" / "tom_curves.json").read_text())
    assert len(curves["global"]["loss"]) == 1  # tom_epochs=1 over every cluster's episodes
    # Eq. 11: k^2 blocks (partner cluster i, BR j) of ceil(4 x 3 / k^2) episodes rounded up to even
    assert meta["tom"]["global"]["episodes"] == {1: 12, 2: 16}[clustering["k"]]
    sizes = np.bincount(clustering["labels"])
    for j in range(clustering["k"]):  # a cluster model has m_j / N of them: N / m_j passes, the same steps
        assert meta["tom"][f"cluster_{j}"]["episodes"] == 4 * sizes[j]
        assert len(curves[f"cluster_{j}"]["loss"]) == max(1, round(3 / sizes[j]))
    # early stopping on a quarter of each model's episodes (tom_holdout 0.25): the kept epoch is the
    # one of the lowest held-out loss, and the checkpoint's metadata says so
    for name, c in curves.items():
        best = c["val_epoch"][c["val_loss"].index(min(c["val_loss"]))]
        assert c["best_epoch"] == [best]
        assert meta["tom"][name]["best_epoch"] == best and meta["tom"][name]["heldout_loss"] == min(
            c["val_loss"]
        )
    hyp, _ = load_agent(out / "ego" / "run", "hypothesis")  # Hypothetical Minds' rule, same hypotheses
    assert type(hyp).agent_class == "tbs-hypothesis" and len(hyp.brs) == len(hyp.toms) == clustering["k"]
    same = zip(hyp.toms.state_dict().values(), tbs.toms.state_dict().values())
    assert all(torch.equal(a, b) for a, b in same)
    frame = pd.read_parquet(out / "ego" / "tbs_eval" / "results.parquet")
    assert set(frame["agent"]) == {"TBS", "BR", "Hypothesis", "Random", "CEM", "CBPR", "Oracle"}
    assert len(frame) == 7 * 3 * 2  # agents x held-out pairs x seats (1 episode)
    scaled = int(frame[frame["agent"] == "Oracle"].groupby("heldout")["sparse_return"].max().gt(0).sum())
    report_txt = (out / "ego" / "tbs_eval" / "report.txt").read_text()
    assert f"3 held-out pairs, {scaled} with a scale)" in report_txt
    # the report names every ToM model that did not learn (one epoch here: usually some), and only those
    from zsceval.algorithms.tbs.jobs import unlearned_tom_models

    warned = unlearned_tom_models(meta["tom"])
    assert [m for m in meta["tom"] if not meta["tom"][m]["learned"]] == [w.split()[3] for w in warned]
    assert report_txt.count("warning: ToM model") == len(warned) and all(w in report_txt for w in warned)
    # with cluster 0's model marked as not learned, the evaluation job's report names it
    summary_path = out / "ego" / "run" / "eval.json"
    summary = json.loads(summary_path.read_text())
    summary["tom"]["cluster_0"].update(learned=False, heldout_loss=summary["tom"]["cluster_0"]["baseline"])
    summary_path.write_text(json.dumps(summary))
    eval_job = json.loads((out / "ego" / "tbs_eval" / "DONE.json").read_text())["job"]
    again = tmp_path / "eval_again"
    again.mkdir()
    job_mod.job_function("tbs.evaluate")(eval_job["params"], again, {d: out / d for d in eval_job["needs"]})
    assert "warning: ToM model cluster_0 did not learn" in (again / "report.txt").read_text()
    report = CliRunner().invoke(main, ["report", str(out), "--no-figures"])
    assert report.exit_code == 0 and "TBS protocol" in report.output, report.output
    assert "  Hypothesis  " in report.output
    # the selection diagnostics read the chain's folder (benchmarks/learning/tbs_selection.py)
    assert _script("tbs_selection.py").load_chain(out).horizon == 100  # the evaluation's, by default
    (diagnostics,) = _script("tbs_selection.py").main([str(out), "--horizon", "20"])
    assert diagnostics["k"] == clustering["k"] and diagnostics["tracker_agreement"] == 1.0
    # the cluster ablation replays the chain's TBS episode for episode (it exits if not), at the
    # chain's horizon (100, from the evaluation job's params)
    replay = _script("tbs_drop_clusters.py").main([str(out), "--drop"])
    assert replay["ablated"] == replay["TBS"]
    assert replay["mean_return"]["ablated"] == replay["mean_return"]["TBS"]
    # the hypothesis agent's steps to validation on both pools (benchmarks/learning/hypothesis_validation.py)
    (validation,) = _script("hypothesis_validation.py").main([str(out)])
    assert validation["training"]["games"] == validation["held-out"]["games"] == 2 * 3  # seats x pairs
    assert 0.0 <= validation["training"]["never_validated"] <= 1.0
    # what each pool pair does in self-play and what its shaping pays (tbs_pool_behaviour.py)
    behaviour = _script("tbs_pool_behaviour.py")
    pools = behaviour.main([str(out), "--episodes", "2"])
    assert [p["run"].split("/")[-2].split("_")[0] for p in pools] == ["pool", "heldout"]
    for pool in pools:
        assert [p["pair"] for p in pool["pairs"]] == [0, 1, 2]
        for p in pool["pairs"]:
            assert p["label"] == behaviour.label(
                p["sparse_return"], np.array(p["counter_events"]), pool["horizon"]
            )
    # a cluster ToM model retrained from the chain's episodes and seeds (tbs_tom_init.py): with the
    # prior bias (the chain's setting) it is the chain's model again; from a zero bias another one
    rows = _script("tbs_tom_init.py").main([str(out), "--cluster", "0"])
    assert [r["prior_bias"] for r in rows] == [False, True]
    assert rows[1]["best_heldout_loss"] == pytest.approx(meta["tom"]["cluster_0"]["heldout_loss"], rel=1e-4)
    assert rows[0]["best_heldout_loss"] != pytest.approx(rows[1]["best_heldout_loss"], rel=1e-4)
    if clustering["k"] > 1:
        clusters = [[i for i, c in enumerate(clustering["labels"]) if c == j] for j in range(clustering["k"])]
        dropped = _script("tbs_drop_clusters.py").main([str(out), "--drop", "0"])
        assert dropped["kept_clusters"] == clusters[1:]
    _ego_job_resumes_at_the_next_tom_model(real, seen, tbs, tmp_path / "stopped", monkeypatch)


def _ego_job_resumes_at_the_next_tom_model(real, seen, uninterrupted, folder, monkeypatch):
    """The ego job stopped after its first ToM model resumes at the second, and ends with the
    weights of the uninterrupted run of the chain, whatever the process's global RNG state."""
    from zsceval.algorithms.tbs import tom as tom_mod

    train_tom, calls = tom_mod.train_tom, []

    def stopping(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2 and stop:
            raise RuntimeError("stopped")
        return train_tom(*args, **kwargs)

    monkeypatch.setattr(tom_mod, "train_tom", stopping)
    folder.mkdir()
    stop = True
    torch.manual_seed(11)  # not the chain's global RNG state
    with pytest.raises(RuntimeError, match="stopped"):
        real(seen["params"], folder, seen["needs"])
    assert sorted(p.stem for p in (folder / "tom_models").glob("*.json")) == ["cluster_0"]
    calls.clear()
    stop = False
    torch.manual_seed(12)
    real(seen["params"], folder, seen["needs"])
    k = len(uninterrupted.brs)
    assert len(calls) == k  # k + 1 models: the first was loaded, not trained again
    resumed, _ = load_agent(folder / "run")
    want = uninterrupted.state_dict()
    got = resumed.state_dict()
    assert got.keys() == want.keys() and all(torch.equal(got[key], want[key]) for key in want)
    # algo.tom_seed: the chain's seed gives the chain's models; another seed other ToM models over
    # the same best responses (the episodes they learn from do not depend on it)
    seed = int(seen["params"]["seed"])
    for tom_seed, same in ((seed, True), (seed + 1, False)):
        out = folder.parent / f"tom_seed{tom_seed}"
        out.mkdir()
        real({**seen["params"], "tom_seed": tom_seed}, out, seen["needs"])
        other, _ = load_agent(out / "run")
        got = other.state_dict()
        tom_keys = [key for key in want if key.startswith(("toms.", "global_tom."))]
        br_keys = [key for key in want if key.startswith("brs.")]
        assert tom_keys and br_keys
        assert all(torch.equal(got[key], want[key]) for key in br_keys)
        assert all(torch.equal(got[key], want[key]) for key in tom_keys) == same, tom_seed


def test_workers_train_the_two_pools_side_by_side_with_the_same_result(tmp_path, monkeypatch):
    # `zsceval train --workers 2`: the two pools (no inputs) run at once in two processes; the
    # clustering is broken so that the chains stop after them (the worker processes are forked,
    # so they see the patched kind)
    from zsceval.algorithms.tbs.pool import load_pool_agents

    def broken(params, out_dir, needs):
        raise RuntimeError("stop after the pools")

    job_mod.job_function("tbs.cluster")  # loads the kind's entry point (its module registers the kinds)
    monkeypatch.setitem(job_mod.JOB_KINDS, "tbs.cluster", broken)
    pools = ("pool_n2_s0", "heldout_n2_s1000")
    runs = {}
    for workers in (2, 1):
        out = tmp_path / f"w{workers}"
        args = ["train", "--algo", "tbs", "--layout", "cramped_room", "--out", str(out), *TINY,
                "--set", "algo.pool_size=2", "--set", "algo.pool_steps=512", "--set", "run.num_threads=1",
                "--set", "run.compile=false", "--workers", str(workers)]  # fmt: skip
        res = CliRunner().invoke(main, args)
        assert res.exit_code != 0 and "stop after the pools" in res.output and "--resume" in res.output
        base = out / "cramped_room" / "tbs"
        assert {p.parent.name for p in base.glob("*/DONE.json")} == set(pools)
        times = {p: ((base / p / "STARTED.json").stat().st_mtime, (base / p / "DONE.json").stat().st_mtime)
                 for p in pools}  # fmt: skip
        (a0, a1), (b0, b1) = times.values()
        assert (a0 < b1 and b0 < a1) == (workers == 2), times  # overlapping only with two workers
        runs[workers] = [load_pool_agents(base / p / "run") for p in pools]
    for parallel, sequential in zip(runs[2], runs[1]):  # one thread per job either way: same weights
        for a, b in zip([*parallel[0], *parallel[1]], [*sequential[0], *sequential[1]]):
            want = b.state_dict()
            assert all(torch.equal(t, want[key]) for key, t in a.state_dict().items())


def _script(name: str):
    """benchmarks/learning/``name`` as a module."""
    from .scripts import load_script

    return load_script(name, f"{name[:-3]}_in_pipeline")


def test_tom_seed_reaches_only_the_ego_job_and_only_when_set():
    from zsceval.rl.algorithm import JobContext

    def jobs(**options):
        common = {"layout": "counter_circuit", "overrides": []}
        ctx = JobContext("tbs", "counter_circuit", 0, None, "ego", common, ego_options=options)
        return {j.id: j for j in registry.get("tbs").jobs(ctx)}

    plain, seeded = jobs(), jobs(tom_seed=3)
    assert "tom_seed" not in plain["ego"].params  # a chain without it keeps its fingerprints
    assert seeded["ego"].params == {**plain["ego"].params, "tom_seed": 3}
    assert all(seeded[j] == plain[j] for j in plain if j != "ego")  # pools, clusters, BRs, evaluation


def test_unknown_tom_global_is_refused_before_any_job_runs():
    from zsceval.rl.algorithm import JobContext
    from zsceval.rl.config import ConfigError

    ctx = JobContext("tbs", "counter_circuit", 0, None, "ego", {"layout": "counter_circuit", "overrides": []},
                     ego_options={"tom_global": "global"})  # fmt: skip
    with pytest.raises(ConfigError, match="must be one of mixed, matched, got 'global'"):
        registry.get("tbs").jobs(ctx)
    with pytest.raises(job_mod.JobInputError, match="tom_global must be one of mixed, matched"):
        job_mod.JOB_KINDS["tbs.ego"](
            {"tom_global": "matched_", "layout": "counter_circuit", "seed": 0}, None, {}
        )
    ego = [
        j for j in registry.get("tbs").jobs(dataclasses.replace(ctx, ego_options={})) if j.kind == "tbs.ego"
    ]
    assert ego[0].params["tom_global"] == "mixed"  # Eq. 11 by default


def test_partial_flag_gives_every_stage_the_view_radius():
    from zsceval.rl.algorithm import JobContext

    ctx = JobContext("tbs", "counter_circuit", 0, None, "ego", {"layout": "counter_circuit", "overrides": []},
                     ego_options={"partial": True, "view_radius": 3})  # fmt: skip
    jobs = registry.get("tbs").jobs(ctx)
    kinds = {j.kind for j in jobs}
    assert kinds == {"train", "tbs.brs", "tbs.cluster", "tbs.ego", "tbs.evaluate"}
    for j in jobs:
        if j.kind in ("train", "tbs.brs"):  # training runs (tbs.brs wraps train)
            assert "env.view_radius=3" in j.params["overrides"]
        else:
            assert j.params["view_radius"] == 3
    full = registry.get("tbs").jobs(dataclasses.replace(ctx, ego_options={}))
    assert all("view_radius" not in j.params and "env.view_radius=3" not in j.params.get("overrides", [])
               for j in full)  # fmt: skip
    stages = {j.id for j in jobs if not j.id.startswith("ego")}
    assert len(stages) == 4 and stages.isdisjoint({j.id for j in full})  # separate stage folders


def test_the_chains_horizon_reaches_the_clustering_tom_and_evaluation_jobs():
    from zsceval.rl.algorithm import JobContext

    common = {"layout": "counter_circuit", "overrides": ["env.num_envs=16", "env.horizon=100"]}
    jobs = registry.get("tbs").jobs(JobContext("tbs", "counter_circuit", 0, None, "ego", common))
    for j in jobs:
        if j.kind in ("train", "tbs.brs"):  # the training runs read env.horizon from their overrides
            assert "env.horizon=100" in j.params["overrides"]
        else:
            assert j.params["horizon"] == 100, j.kind
    default = {"layout": "counter_circuit", "overrides": ["env.horizon=400"]}  # the default: no param,
    jobs = registry.get("tbs").jobs(JobContext("tbs", "counter_circuit", 0, None, "ego", default))
    assert all("horizon" not in j.params for j in jobs)  # so older chains keep their fingerprints
