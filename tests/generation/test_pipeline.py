"""The ZSC-Eval pipeline end to end on a real layout with tiny budgets, resume, and bad input."""

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from tests.evaluation.tiny_bench import TINY, write_suite
from zsceval.bench import budget as bench_mod_budget
from zsceval.bench import plan as bench_mod_plan
from zsceval.bench import suite as bench_mod_suite
from zsceval.bench.report import read_tables, summarize
from zsceval.bench.run import run_bench
from zsceval.bench.suite import SuiteError, load_suite
from zsceval.envs.overcooked import OvercookedEnv
from zsceval.evaluation.ego_evaluation import load_partner_set
from zsceval.evaluation.manifest import ChecksumMismatchError, LayoutMismatchError
from zsceval.evaluation.matches import PartnerSpec, evaluate_agent, play_games
from zsceval.evaluation.partner_set import COTRAINED_BR_TABLE
from zsceval.execution import JobError
from zsceval.execution.jobs import JOB_KINDS
from zsceval.generation import candidates as bench_mod_candidates
from zsceval.generation import pipeline
from zsceval.rl.agent import ActOutput
from zsceval.rl.config import resolve_config

pytestmark = pytest.mark.usefixtures("unimplemented_zsc_algorithm")


def done_times(root: Path) -> dict[str, float]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("DONE.json")}


def test_tiny_bench_produces_tables_manifest_and_br_prox(tiny_bench):
    suite, out, tables = tiny_bench
    assert tables["skipped_algorithms"] == ["pecan"]  # not implemented: reported, not faked
    results, br, features = read_tables(out)
    # 2 ego seeds x 2k=4 partners x 2 seats x 2 episodes
    assert len(results) == 2 * 4 * 2 * 2
    assert set(results["algorithm"]) == {"sp"} and set(results["seat"]) == {0, 1}
    assert set(results["partner_level"]) == {"moderate", "expert"}
    assert len(br) == 4 * 2 * 2 and set(br["partner"]) == set(results["partner"])
    assert features["selected"].sum() == 2 and len(features) == 3
    manifest = json.loads((out / "cramped_room/partners/set/manifest.json").read_text())
    assert {p["level"] for p in manifest["partners"]} == {"final", "mid"}
    assert manifest["selection"]["selected_ids"] == sorted(manifest["selection"]["selected_ids"])
    summary = summarize(results, br, reps=200)
    row = summary[(summary.algorithm == "sp") & (summary.partner_level == "all")].iloc[0]
    assert 0.0 <= row.ci_low <= row.iqm <= row.ci_high <= 1.0
    # the training cost per stage is kept beside the tables: every stage finished, hours logged
    stages = pd.read_parquet(tables["stages"]).set_index("stage")
    expected = bench_mod_budget.env_step_budget(suite, bench_mod_plan.build_phases(suite)[0], out).set_index(
        "stage"
    )
    pd.testing.assert_frame_equal(stages, expected)
    assert (stages["done_steps"] == stages["env_steps"]).all() and (stages["busy_s"] > 0).all()
    assert {"candidates (biased agent + its BR)", "ego: sp", "mid-checkpoint BRs"} <= set(stages.index)
    # the checkpoint each ego's evaluation scored, one row per ego, as its evaluation job recorded it
    scored = pd.read_parquet(tables["scored_checkpoints"])
    assert sorted(zip(scored["algorithm"], scored["ego_seed"])) == [("sp", 0), ("sp", 1)]
    for row in scored.itertuples():
        done = json.loads((out / f"cramped_room/evaluation/sp/s{row.ego_seed}/DONE.json").read_text())
        assert done["result"]["scored_checkpoint"]["step"] == row.step and row.rule


def test_rerun_redoes_nothing_and_a_killed_bench_resumes(tiny_bench, tmp_path, monkeypatch):
    suite, out, _ = tiny_bench
    before = done_times(out)
    run_bench(suite, out, progress=False, log=lambda *_: None)
    assert done_times(out) == before  # every job was already finished

    # A copy whose evaluation jobs are lost and whose next evaluation fails ("killed").
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    for d in (copy / "cramped_room/evaluation").glob("*/*"):
        (d / "DONE.json").unlink()
    kept = done_times(copy)
    calls = []

    def fail(params, out_dir, needs):
        calls.append(params["ego_seed"])
        raise RuntimeError("killed")

    monkeypatch.setitem(JOB_KINDS, "ego.evaluate", fail)
    with pytest.raises(JobError, match="killed"):
        run_bench(suite, copy, progress=False, log=lambda *_: None)
    monkeypatch.undo()
    run_bench(suite, copy, progress=False, log=lambda *_: None)
    after = done_times(copy)
    for job, mtime in kept.items():
        assert after[job] == mtime  # finished training and selection jobs were not redone
    assert len(after) == len(before)


def test_partner_set_from_another_layout_or_altered_is_refused_before_compute(tiny_bench, tmp_path):
    _, out, _ = tiny_bench
    manifest = out / "cramped_room/partners/set/manifest.json"
    with pytest.raises(LayoutMismatchError, match="cramped_room"):
        load_partner_set(manifest, "counter_circuit")
    copy = tmp_path / "set"
    shutil.copytree(manifest.parent, copy)
    victim = next((copy / "policies").rglob("policies.safetensors")).parent / "meta.json"
    victim.write_text(victim.read_text().replace('"steps"', '"steps" ', 1))
    with pytest.raises(ChecksumMismatchError):
        load_partner_set(copy / "manifest.json", "cramped_room")


@pytest.mark.parametrize(
    "edit, message",
    [
        (("algorithms: [sp, pecan]", "algorithms: [sp, fpc]"), "did you mean 'fcp'"),
        (("layouts: [cramped_room]", "layouts: [cramped_rom]"), "unknown layout 'cramped_rom'"),
        (("  k: 2", "  k: 5"), "partners.k=5"),
        (("ego_seeds: 2", "ego_seedz: 2"), "did you mean 'ego_seeds'"),
        (("layouts: [cramped_room]", "layouts: [cramped_room"), "tiny.yaml:5:"),
        (("ego_steps: 3200", "ego_steps: 1.5"), "'ego_steps': cannot use 1.5 as int"),
        (("ego_seeds: 2", "ego_seeds: true"), "'ego_seeds': cannot use True as int"),
        (("preset: quick", "preset: quik"), "unknown preset 'quik'"),
        (("env.num_envs=8", "env.num_env=8"), "did you mean 'env.num_envs'"),
        (("  checkpoints: 2", "  checkpoints: 0"), "partners.checkpoints=0 must be >= 1"),
    ],
)
def test_bad_suites_fail_when_loaded(tmp_path, edit, message):
    path = write_suite(tmp_path, TINY.replace(*edit))
    with pytest.raises(SuiteError, match=message.replace("[", r"\[")):
        load_suite(path)


def test_suite_values_are_coerced_to_their_types(tmp_path):
    text = TINY.replace("layouts: [cramped_room]", "layouts: cramped_room").replace(
        "candidate_steps: 6400", "candidate_steps: 1.5e6"
    )
    suite = load_suite(write_suite(tmp_path, text))
    assert suite.layouts == ("cramped_room",)
    assert suite.partners.candidate_steps == 1_500_000 and isinstance(suite.partners.candidate_steps, int)
    assert suite.evaluation_episodes == 2 and suite.overrides == ("env.num_envs=8", "run.eval_episodes=2")


def test_unknown_suite_lists_shipped_ones():
    with pytest.raises(SuiteError, match="overcooked-quick"):
        load_suite("no-such-suite")
    assert {"overcooked", "overcooked-quick"} <= set(bench_mod_suite.list_suites())


def test_selection_refuses_k_larger_than_usable_candidates(tmp_path):
    root = tmp_path
    needs = {}
    for i in range(2):
        d = root / f"l/candidates/c{i:03d}/evaluate"
        d.mkdir(parents=True)
        result = {"final_return": 5.0 + 20 * i, "features": [1.0, float(i)], "feature_names": ["a", "b"]}
        (d / "DONE.json").write_text(json.dumps({"result": result}))
        needs[f"l/candidates/c{i:03d}/evaluate"] = d
    with pytest.raises(ValueError, match="only 1 of 2 candidates"):
        pipeline.partners_select({"k": 2, "min_return": 10.0}, root, needs)


class Scripted(torch.nn.Module):
    """A stand-in policy that always takes one action."""

    hidden_size = 0

    def __init__(self, action: int):
        super().__init__()
        self.action = action

    def initial_state(self, n, device):
        return torch.zeros(n, 0, device=device)

    def act(self, obs, avail, h, starts, generator=None, deterministic=False):
        a = torch.full((obs.shape[0],), self.action, dtype=torch.int64)
        return ActOutput(a, torch.zeros(obs.shape[0]), h)


def test_batched_matches_put_the_ego_in_the_right_seat():
    """Each (partner, seat) game equals a direct rollout with the ego in that seat."""
    west, stay, east = Scripted(3), Scripted(4), Scripted(2)
    partners = [PartnerSpec("stay", "expert", stay), PartnerSpec("east", "moderate", east)]
    frame = evaluate_agent(
        "cramped_room", west, partners, episodes=2, labels={"algorithm": "x", "ego_seed": 0}
    )
    assert len(frame) == 2 * 2 * 2 and set(frame.algorithm) == {"x"}
    for (pid, seat), rows in frame.groupby(["partner", "seat"]):
        partner_action = {"stay": 4, "east": 2}[pid]
        joint = [partner_action, partner_action]
        joint[seat] = 3
        env = OvercookedEnv("cramped_room", num_envs=1)
        env.reset()
        idle = 0
        for _ in range(env.horizon):
            idle += int(
                env.step(torch.tensor([joint])).events[0, seat, env.event_names.index("IDLE_MOVEMENT")]
            )
        assert (rows["ev_IDLE_MOVEMENT"] == idle).all(), (pid, seat)
    # The two seats really differ for the west-walking ego in cramped_room.
    by_seat = frame[frame.partner == "stay"].groupby("seat")["ev_IDLE_MOVEMENT"].first()
    assert by_seat[0] != by_seat[1]


def test_play_games_validates_assignment():
    with pytest.raises(ValueError, match="assignment indices"):
        play_games("cramped_room", [Scripted(4)], torch.tensor([[0, 1]]))


def test_eval_command_against_a_partner_set(tiny_bench):
    from click.testing import CliRunner

    from zsceval.cli import main

    _, out, _ = tiny_bench
    manifest = out / "cramped_room/partners/set/manifest.json"
    args = ["eval", "--agent", str(out / "cramped_room/egos/sp/s0/run"), "--layout", "cramped_room",
            "--partner-set", str(manifest), "--episodes", "2", "--json"]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert len(data["units"]) == 4 * 2  # 2k partners x 2 seats
    for u in data["units"]:
        expected = 1.0 if u["br_return"] <= 0 else min(1.0, u["sparse_return"] / u["br_return"])
        assert u["br_prox"] == pytest.approx(expected)
    wrong = CliRunner().invoke(main, args[:5] + ["counter_circuit"] + args[6:])
    assert wrong.exit_code != 0 and "cramped_room" in wrong.output


def test_eval_names_the_mid_units_whose_cotrained_br_beats_the_fresh_one(tiny_bench, tmp_path):
    """With the set's cotrained_br_returns.parquet, `zsceval eval --partner-set` counts the mid units
    whose fresh BR the co-trained BR beats and gives the IQM with the larger return."""
    from click.testing import CliRunner

    from zsceval.cli import main
    from zsceval.stats.metrics import br_prox, iqm

    _, out, _ = tiny_bench
    set_dir = tmp_path / "set"
    shutil.copytree(out / "cramped_room/partners/set", set_dir)
    table = pd.read_parquet(set_dir / COTRAINED_BR_TABLE)
    mid = sorted(table["partner"].unique())[0]
    planted = table.assign(cotrained_br_return=table["cotrained_br_return"].astype(float))
    planted.loc[(planted["partner"] == mid) & (planted["seat"] == 0), "cotrained_br_return"] = 500.0
    planted.to_parquet(set_dir / COTRAINED_BR_TABLE)
    args = ["eval", "--agent", str(out / "cramped_room/egos/sp/s0/run"), "--layout", "cramped_room",
            "--partner-set", str(set_dir / "manifest.json"), "--episodes", "2"]  # fmt: skip
    res = CliRunner().invoke(main, [*args, "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    weak = data["weak_br"]
    assert weak["units"] >= 1 and mid in weak["partners"] and weak["checked"] == 4  # 2 mids x 2 seats
    units = pd.DataFrame(data["units"])
    other = planted.groupby(["partner", "seat"])["cotrained_br_return"].mean()
    best = [max(u.br_return, other.get((u.partner, u.seat), -np.inf)) for u in units.itertuples()]
    expected = iqm(br_prox(units["sparse_return"].to_numpy(), np.array(best)))
    assert weak["br_prox_iqm_best_known"] == pytest.approx(expected)
    text = CliRunner().invoke(main, args).output
    assert f"mid units have a fresh BR that the candidate's co-trained BR beats (partners {mid}" in text
    (set_dir / COTRAINED_BR_TABLE).unlink()  # a set without the table: no such key
    assert "weak_br" not in json.loads(CliRunner().invoke(main, [*args, "--json"]).output)


def test_eval_strata_reports_skilled_semi_skilled_and_unhelpful_partners(tiny_bench):
    """The set's final (expert) and mid (moderate) partners by BR-Prox, and the
    unhelpful partners (stay, uniformly random) by return; the same numbers as the plain report."""
    from click.testing import CliRunner

    from zsceval.cli import main

    _, out, _ = tiny_bench
    manifest = out / "cramped_room/partners/set/manifest.json"
    args = ["eval", "--agent", str(out / "cramped_room/egos/sp/s0/run"), "--layout", "cramped_room",
            "--partner-set", str(manifest), "--episodes", "2"]  # fmt: skip
    plain = json.loads(CliRunner().invoke(main, [*args, "--json"]).output)
    res = CliRunner().invoke(main, [*args, "--json", "--strata"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["summary"] == plain["summary"]  # the unhelpful games draw from their own generators
    assert set(data["unhelpful"]) == {"stay", "random"}
    assert all(u["episodes"] == 2 * 2 for u in data["unhelpful"].values())  # 2 episodes x 2 seatings
    text = CliRunner().invoke(main, [*args, "--strata"]).output
    expert = data["summary"]["expert"]
    assert f"skilled       (expert): BR-Prox IQM {expert['iqm']:.3f}" in text
    assert "semi-skilled  (moderate)" in text and "unhelpful (stay)" in text and "unhelpful (random)" in text
    alone = CliRunner().invoke(main, [*args[:5], "--strata", "--episodes", "2"])
    assert alone.exit_code == 0 and "unhelpful (stay)" in alone.output and "BR-Prox" not in alone.output
    refused = CliRunner().invoke(main, [*args[:5], "--partner", str(out / "cramped_room/egos/sp/s0/run"),
                                        "--strata"])  # fmt: skip
    assert refused.exit_code != 0 and "--strata works with --partner-set" in refused.output


def test_candidate_runs_are_evaluated_as_a_pair(tiny_bench):
    """eval.json of a biased run seats pi_w with its BR, of a mid-BR run the BR with its partner."""
    _, out, _ = tiny_bench
    cand = json.loads((out / "cramped_room/candidates/c000/train/run/eval.json").read_text())
    assert cand["eval_seats"] == ["biased", "br"]
    mid = next((out / "cramped_room/partners/mid_br").glob("*/run/eval.json"))
    assert json.loads(mid.read_text())["eval_seats"] == ["br", "partner"]
    sp = json.loads((out / "cramped_room/egos/sp/s0/run/eval.json").read_text())
    assert sp["eval_seats"] == ["ego", "ego"]


def test_manifest_plays_each_mid_partner_with_its_candidates_cotrained_br(tiny_bench, monkeypatch):
    """cotrained_br_returns.parquet: each mid partner with the co-trained BR of the same checkpoint
    (its weights, not the fresh mid BR's), both seats, its own generator (seed + 1)."""
    from zsceval.rl.checkpoint import load_policy

    suite, out, tables = tiny_bench
    table = pd.read_parquet(tables["cotrained_br_returns"])
    set_dir = out / "cramped_room/partners/set"
    assert table.equals(pd.read_parquet(set_dir / COTRAINED_BR_TABLE))
    phases, infos = bench_mod_plan.build_phases(suite)
    late = bench_mod_plan.late_phases(suite, out, infos)
    by_id = {job.id: job for phase in phases + late for job in phase}
    job = next(j for j in by_id.values() if j.kind == "partners.manifest")
    needs = {n: str(out / by_id[n].out) for n in job.needs}
    manifest = json.loads((set_dir / "manifest.json").read_text())
    mids = [p for p in manifest["partners"] if p["level"] == "mid"]
    partners = [PartnerSpec(p["id"], "moderate", load_policy(set_dir / p["checkpoint"]["path"], "biased")[0])
                for p in mids]  # fmt: skip
    played = []
    real = pipeline.evaluate_br_references

    def spy(layout, specs, **kw):
        played.extend(specs)
        assert kw["generator"].initial_seed() == suite.seed + 1
        return real(layout, specs, **kw)

    monkeypatch.setattr(pipeline, "evaluate_br_references", spy)
    selected = [p["candidate_id"] for p in mids]
    frame = pipeline._cotrained_mid_brs(job.params, needs, selected, partners, "cpu")
    pd.testing.assert_frame_equal(frame, table)  # the job's table, recomputed
    assert [s.id for s in played] == [p["id"] for p in mids] and len(table) == 2 * 2 * 2
    for spec, p in zip(played, mids):
        candidate = out / f"cramped_room/candidates/{p['candidate_id']}"
        done = json.loads((candidate / "evaluate/DONE.json").read_text())
        cotrained = load_policy(candidate / "train" / done["result"]["mid_checkpoint"], "br")[0].state_dict()
        fresh = load_policy(set_dir / p["br"]["checkpoint"]["path"], "br")[0].state_dict()
        weights = spec.br.state_dict()
        assert all(torch.equal(weights[k], cotrained[k]) for k in cotrained)
        assert not all(torch.equal(weights[k], fresh[k]) for k in fresh)


def test_candidate_runs_keep_their_whole_checkpoint_trail(tiny_bench):
    """The mid checkpoint is chosen from every checkpoint of a candidate, so none may be pruned."""
    import yaml

    _, out, _ = tiny_bench
    cfg = yaml.safe_load((out / "cramped_room/candidates/c000/train/run/config.yaml").read_text())
    checkpoints = 2  # TINY's partners.checkpoints
    assert cfg["run"]["keep_checkpoints"] == checkpoints + 1
    assert cfg["run"]["checkpoint_every"] == 6400 // checkpoints


def test_tables_hold_only_this_suites_evaluations(tiny_bench, tmp_path):
    """Results of an earlier, larger suite in the same folder (ego seed 7) are not collected."""
    suite, out, _ = tiny_bench
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    stale = copy / "cramped_room/evaluation/sp/s7"
    shutil.copytree(copy / "cramped_room/evaluation/sp/s0", stale)
    frame = pd.read_parquet(stale / "results.parquet").assign(ego_seed=7)
    frame.to_parquet(stale / "results.parquet")
    run_bench(suite, copy, progress=False, log=lambda *_: None)
    results, _, _ = read_tables(copy)
    assert set(results["ego_seed"]) == {0, 1}


SUITES = Path(__file__).resolve().parents[2] / "benchmarks" / "suites"

# ZSC-Eval reference runs per layout and K (docs/reference-protocol.md "Weight grids", paper Sec. 5).
PAPER_RUNS = {
    "forced_coordination": 30,
    "bothway_coordination": 54,
    "coordination_ring": 176,
    "counter_circuit": 176,
    "blocked_corridor": 124,
    "asymmetric_advantages": 176,
    "forced_coordination_mr": 72,
    "coordination_ring_mr": 72,
    "counter_circuit_mr": 72,
}


def test_paper_suite_matches_the_reference_per_layout():
    suite = load_suite(SUITES / "overcooked.yaml")
    for layout in suite.layouts:
        budget = suite.budget(layout)
        assert budget.k == (15 if layout.endswith("_mr") else 10), layout
        assert budget.weight_sampling == "reference"
        if layout in PAPER_RUNS:
            assert budget.candidates == PAPER_RUNS[layout], layout
    assert set(PAPER_RUNS) <= set(suite.layouts)
    assert suite.budget("random3") == suite.budget("counter_circuit")  # aliases resolve
    assert yaml.safe_load(yaml.safe_dump(suite.to_dict()))["layout_partners"]["counter_circuit_mr"]["k"] == 15


def test_reference_weight_indexing_wraps_like_the_reference():
    from zsceval.generation.reward_space import load_reward_space, sample_weights

    grid = load_reward_space("forced_coordination").candidates()  # 30 points
    budget = bench_mod_candidates.PartnerBudget(candidates=35, k=1)
    weights = bench_mod_candidates.candidate_weights("random0", budget, seed=4)
    # candidate i trains seed 4 + i and grid point (4 + i) % 30: 4..29, then 0..8
    np.testing.assert_array_equal(weights, grid[[(4 + i) % 30 for i in range(35)]])
    random = dataclasses.replace(budget, weight_sampling="random")
    np.testing.assert_array_equal(
        bench_mod_candidates.candidate_weights("random0", random, seed=4),
        sample_weights(load_reward_space("random0"), 35, np.random.default_rng(4)),
    )


@pytest.mark.parametrize(
    "extra, message",
    [
        ("layout_partners:\n  cramped_rom: {k: 1}\n", "unknown layout 'cramped_rom'"),
        ("layout_partners:\n  cramped_room: {kk: 1}\n", "layout_partners.cramped_room.'kk'"),
        ("layout_partners:\n  cramped_room: {k: 4}\n", "layout_partners.cramped_room.k=4"),
        ("layout_partners:\n  simple: {checkpoints: 0}\n", "layout_partners.cramped_room.checkpoints=0"),
        ("layout_partners:\n  cramped_room: {weight_sampling: grid}\n", "valid: reference, random"),
    ],
)
def test_bad_layout_partners_fail_when_loaded(tmp_path, extra, message):
    with pytest.raises(SuiteError, match=message.replace("[", r"\[")):
        load_suite(write_suite(tmp_path, TINY + extra))


def test_layout_partners_change_only_their_layout(tmp_path):
    suite = load_suite(write_suite(tmp_path, TINY + "layout_partners:\n  simple: {k: 3}\n"))
    assert suite.budget("cramped_room").k == 3 and suite.partners.k == 2
    assert suite.budget("cramped_room").candidates == suite.partners.candidates == 3


def test_report_on_a_bench_output(tiny_bench):
    """`zsceval report` on a real (tiny) bench folder: every block, and no paper numbers for Cramped Room."""
    from click.testing import CliRunner

    from zsceval.commands.report import report

    _, out, _ = tiny_bench
    copy = Path(str(out) + "-report")
    shutil.copytree(out, copy, dirs_exist_ok=True)
    result = CliRunner().invoke(report, [str(copy), "--reps", "100", "--compare", "zsceval-paper"])
    assert result.exit_code == 0, result.output
    for text in ("BR-Prox: IQM", "Probability of improvement", "Performance profiles", "Ranks by IQM",
                 "Training cost per stage", "ego: sp"):  # fmt: skip
        assert text in result.stdout
    assert "layout: cramped_room: no reference numbers" in result.stdout
    for name in ("br_prox.png", "br_prox_levels.png", "performance_profiles.png", "ranks.png"):
        assert (copy / "figures" / name).is_file(), name


@pytest.mark.parametrize(
    "extra, message",
    [
        ("algo_ego_steps:\n  fcp: 100\n", "names 'fcp', which the suite does not run"),
        ("algo_ego_steps:\n  sp: 0\n", "algo_ego_steps.sp=0 must be >= 1"),
        ("algo_ego_steps:\n  sp: 1.5\n", "'algo_ego_steps.sp': cannot use 1.5 as int"),
        ("algo_ego_steps: [sp]\n", "algo_ego_steps must map algorithm names to env steps"),
    ],
)
def test_bad_algo_ego_steps_fail_when_loaded(tmp_path, extra, message):
    with pytest.raises(SuiteError, match=message.replace("[", r"\[")):
        load_suite(write_suite(tmp_path, TINY + extra))


def test_algo_ego_steps_give_an_algorithm_its_own_ego_budget(tmp_path):
    """ZSC-Eval trains stage-2 egos 5x SP's steps: the ego jobs of an algorithm with an
    ``algo_ego_steps`` entry get that budget, the others ``ego_steps``."""
    suite = load_suite(write_suite(tmp_path, TINY + "algo_ego_steps:\n  sp: 2.4e4\n"))
    assert suite.ego_budget("sp") == 24_000 and suite.ego_budget("pecan") == 3200
    egos, _ = bench_mod_plan.ego_jobs(suite, "cramped_room", {"layout": "cramped_room", "preset": "quick"})
    assert [(j.params["algo"], j.params["steps"]) for j in egos] == [("sp", 24_000), ("sp", 24_000)]
    assert yaml.safe_load(yaml.safe_dump(suite.to_dict()))["algo_ego_steps"] == {"sp": 24_000}
    # --algos without sp drops its budget, so that the record of such a run matches the full suite's
    only_pecan = load_suite(
        write_suite(tmp_path, TINY + "algo_ego_steps:\n  sp: 2.4e4\n"), algorithms=["pecan"]
    )
    assert only_pecan.algo_ego_steps == ()


def test_shipped_suites_keep_zsceval_budget_ratios():
    """Stage-2 egos (population 12) and COLE (25) train 5x SP's env steps, E3T as many as SP."""
    for name in (
        "overcooked",
        "overcooked-quick-cc",
        "overcooked-quick-sets",
        "overcooked-quick-sets-scores",
    ):
        suite = load_suite(SUITES / f"{name}.yaml")
        sp = suite.ego_budget("sp")
        assert suite.ego_budget("e3t") == sp, name
        for algo in ("fcp", "mep", "trajedi", "hsp", "cole"):
            assert suite.ego_budget(algo) == 5 * sp, (name, algo)
    # the paper suite gives every ego the budget its plug-in's `paper` preset trains alone
    paper = load_suite(SUITES / "overcooked.yaml")
    for algo in paper.algorithms:
        alone = resolve_config(preset="paper", **{"run.algo": algo, "env.layout": "counter_circuit"})
        assert paper.ego_budget(algo) == alone.run.total_steps, algo


def test_quick_sets_scores_trains_the_quick_sets_egos_and_plays_the_sets_that_run_shipped():
    """overcooked-quick-sets-scores: the egos of overcooked-quick-sets, evaluated on the
    zsceval:<layout>@1 sets exported from that suite's run (their manifests name it)."""
    from zsceval.evaluation.shipped_sets import resolve_set

    source = load_suite(SUITES / "overcooked-quick-sets.yaml").to_dict()
    scores = load_suite(SUITES / "overcooked-quick-sets-scores.yaml").to_dict()
    sets = scores.pop("layout_partner_sets")
    assert sets == {layout: f"zsceval:{layout}@1" for layout in source["layouts"]}
    for key in ("name", "layout_partner_sets"):
        source.pop(key, None)
        scores.pop(key, None)
    assert scores == source  # same layouts, algorithms, seeds, budgets, preset and evaluation
    for layout, name in sets.items():
        entry = resolve_set(name)
        assert (entry.layout, entry.split) == (layout, "test")
        assert (entry.provenance.suite, entry.provenance.seed) == ("overcooked-quick-sets", source["seed"])


def test_suite_record_compares_ego_budgets_of_the_algorithms_both_runs_hold(tmp_path):
    out = tmp_path / "bench"
    out.mkdir()
    base = load_suite(write_suite(tmp_path, TINY))
    record = dataclasses.replace(base, algorithms=("sp",)).to_dict()
    (out / bench_mod_suite.SUITE_RECORD).write_text(yaml.safe_dump(record))
    # another algorithm with its own budget only adds jobs
    more = dataclasses.replace(base, algorithms=("pecan",), algo_ego_steps=(("pecan", 9600),))
    assert bench_mod_suite.check_suite_record(more, out) == []
    # a new budget for an algorithm the folder already ran would redo its egos
    changed = dataclasses.replace(base, algorithms=("sp", "pecan"), algo_ego_steps=(("sp", 6400),))
    with pytest.raises(bench_mod_suite.SuiteConflictError, match="algo_ego_steps.sp: 3200 -> 6400"):
        bench_mod_suite.check_suite_record(changed, out)
    assert bench_mod_suite.check_suite_record(changed, out, force=True) == ["algo_ego_steps.sp: 3200 -> 6400"]


def test_suite_record_compares_algo_overrides_of_the_algorithms_both_runs_hold(tmp_path):
    """A bench run first with ``--algos sp`` resumes with more algorithms and their own overrides
    (they reach only those algorithms' jobs); changing the overrides of an algorithm it ran is a
    conflict."""
    out = tmp_path / "bench"
    out.mkdir()
    base = load_suite(write_suite(tmp_path, TINY))
    record = dataclasses.replace(base, algorithms=("sp",), algo_overrides=()).to_dict()
    (out / bench_mod_suite.SUITE_RECORD).write_text(yaml.safe_dump(record))
    more = dataclasses.replace(base, algorithms=("sp", "pecan"), algo_overrides=(("pecan", ("algo.k=6",)),))
    assert bench_mod_suite.check_suite_record(more, out) == []
    changed = dataclasses.replace(base, algorithms=("sp",), algo_overrides=(("sp", ("ppo.lr=1e-4",)),))
    with pytest.raises(
        bench_mod_suite.SuiteConflictError, match=r"algo_overrides.sp: \[\] -> \['ppo.lr=1e-4'\]"
    ):
        bench_mod_suite.check_suite_record(changed, out)


# -- partner strata in the bench ------------------------------------------------------
UNHELPFUL = ["unhelpful-random", "unhelpful-stay"]


def test_bench_plays_every_ego_with_the_unhelpful_partners(tiny_bench):
    """Every ego (algorithm x seed) with both unhelpful partners, in the seats it meets the set in,
    the suite's evaluation episodes each; unhelpful.parquet next to results.parquet."""
    from zsceval.evaluation.ego_checkpoint import scored_ego_checkpoint
    from zsceval.evaluation.strata import unhelpful_results
    from zsceval.rl.checkpoint import load_policy

    suite, out, tables = tiny_bench
    assert suite.strata and suite.strata_episodes is None  # the default: on, the evaluation's episodes
    assert tables["unhelpful"] == str(out / "unhelpful.parquet")
    frame = pd.read_parquet(out / "unhelpful.parquet")
    # sp only (pecan skipped) x 2 seeds x 2 unhelpful partners x 2 seats x 2 episodes
    assert len(frame) == 1 * 2 * 2 * 2 * 2
    counts = frame.groupby(["algorithm", "ego_seed", "partner", "seat"]).size()
    assert sorted(counts.index) == [("sp", s, p, seat) for s in (0, 1) for p in UNHELPFUL for seat in (0, 1)]
    assert (counts == suite.evaluation_episodes).all()
    assert set(frame["partner_level"]) == {"unhelpful"} and set(frame["layout"]) == {"cramped_room"}
    results = pd.read_parquet(out / "results.parquet")
    assert set(frame["seat"]) == set(results["seat"]) == {0, 1}
    seating = {(r.partner, r.seat): r.seating for r in frame.itertuples()}
    assert seating[("unhelpful-stay", 0)] == "ego|unhelpful-stay"
    assert seating[("unhelpful-random", 1)] == "unhelpful-random|ego"
    # the bench's table is its jobs' tables; each job scored the checkpoint ego.evaluate scored
    jobs = [out / f"cramped_room/unhelpful/sp/s{s}" for s in (0, 1)]
    per_job = pd.concat([pd.read_parquet(j / "unhelpful.parquet") for j in jobs], ignore_index=True)
    pd.testing.assert_frame_equal(frame, per_job)
    for s, job in enumerate(jobs):
        scored = json.loads((job / "DONE.json").read_text())["result"]["scored_checkpoint"]
        evaluated = json.loads((out / f"cramped_room/evaluation/sp/s{s}/DONE.json").read_text())
        assert scored == evaluated["result"]["scored_checkpoint"]
    # and the games are those unhelpful_results plays with the suite's seed (replayed here)
    ckpt, _ = scored_ego_checkpoint(out / "cramped_room/egos/sp/s0", "sp")
    ego, _ = load_policy(ckpt, None, "cpu")
    again = unhelpful_results("cramped_room", ego, episodes=2, seed=suite.seed,
                              labels={"algorithm": "sp", "ego_seed": 0})  # fmt: skip
    pd.testing.assert_frame_equal(again, per_job[per_job["ego_seed"] == 0].reset_index(drop=True))


def test_finished_unhelpful_games_are_not_redone_and_a_lost_one_alone_is(tiny_bench, tmp_path, monkeypatch):
    suite, out, _ = tiny_bench
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    before = pd.read_parquet(copy / "unhelpful.parquet")
    (copy / "cramped_room/unhelpful/sp/s1/DONE.json").unlink()  # killed before it finished
    real, calls = JOB_KINDS["ego.unhelpful"], []

    def counting(params, out_dir, needs):
        calls.append(params["ego_seed"])
        return real(params, out_dir, needs)

    monkeypatch.setitem(JOB_KINDS, "ego.unhelpful", counting)
    run_bench(suite, copy, progress=False, log=lambda *_: None)
    assert calls == [1]  # only the lost evaluation ran
    pd.testing.assert_frame_equal(pd.read_parquet(copy / "unhelpful.parquet"), before)  # same seeds
    run_bench(suite, copy, progress=False, log=lambda *_: None)
    assert calls == [1]  # a finished one is not redone


def test_a_suite_with_strata_off_writes_no_unhelpful_table(tiny_bench, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from zsceval.commands.report import report

    suite, out, _ = tiny_bench
    off = load_suite(write_suite(tmp_path, TINY + "  strata: false\n"))
    assert not off.strata
    _, infos = bench_mod_plan.build_phases(off)
    kinds = [j.kind for j in bench_mod_plan.late_phases(off, out, infos)[-1]]
    assert "ego.unhelpful" not in kinds and kinds.count("ego.evaluate") == 2
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    shutil.rmtree(copy / "cramped_room/unhelpful")  # its jobs' folders go; the earlier table stays

    def fail(params, out_dir, needs):
        raise AssertionError("an unhelpful game was played")

    monkeypatch.setitem(JOB_KINDS, "ego.unhelpful", fail)
    tables = run_bench(off, copy, progress=False, log=lambda *_: None)  # turning it off is no conflict
    assert "unhelpful" not in tables and "results" in tables
    assert not (copy / "unhelpful.parquet").exists()  # an earlier setting's table is not shown as this one's
    assert not (copy / "cramped_room/unhelpful").exists()
    text = CliRunner().invoke(report, [str(copy), "--reps", "50", "--no-figures", "--no-stats"]).output
    assert "Partner strata" in text and "no unhelpful-partner games in this folder" in text
    header = next(ln for ln in text.split("Partner strata")[1].splitlines() if ln.startswith("algorithm"))
    assert header.split() == ["algorithm", "skilled", "(expert)", "semi-skilled", "(moderate)"]


def test_a_record_from_before_a_suite_setting_existed_reads_as_its_default(tmp_path):
    """A suite record written before ``layout_partner_sets`` (and the other per-layout and
    per-algorithm mappings) existed ran with their defaults: resuming it is no conflict, while a
    suite that sets one of them is, named."""
    out = tmp_path / "bench"
    out.mkdir()
    base = load_suite(write_suite(tmp_path, TINY))
    record = base.to_dict()
    for key in ("layout_partner_sets", "layout_partners", "algo_overrides", "algo_ego_steps"):
        record.pop(key)
    (out / bench_mod_suite.SUITE_RECORD).write_text(yaml.safe_dump(record))
    assert bench_mod_suite.check_suite_record(base, out) == []
    shipped = dataclasses.replace(base, layout_partner_sets=(("cramped_room", "zsceval:cramped_room"),))
    with pytest.raises(bench_mod_suite.SuiteConflictError, match="layout_partner_sets.cramped_room"):
        bench_mod_suite.check_suite_record(shipped, out)


def test_strata_settings_in_the_suite_record(tmp_path):
    """A record from before the strata keys runs the same jobs as strata on with its episodes;
    other unhelpful episodes would redo the unhelpful games: a conflict, named."""
    out = tmp_path / "bench"
    out.mkdir()
    base = load_suite(write_suite(tmp_path, TINY))
    record = base.to_dict()
    evaluation = {"episodes": 2, "human_proxy": False, "strata": True, "strata_episodes": None}
    assert record["evaluation"] == evaluation
    for key in ("strata", "strata_episodes"):
        record["evaluation"].pop(key)  # written before the keys existed
    (out / bench_mod_suite.SUITE_RECORD).write_text(yaml.safe_dump(record))
    assert bench_mod_suite.check_suite_record(base, out) == []
    assert bench_mod_suite.check_suite_record(dataclasses.replace(base, strata=False), out) == []
    more = load_suite(write_suite(tmp_path, TINY + "  strata_episodes: 5\n"))
    assert more.unhelpful_episodes == 5 and more.evaluation_episodes == 2
    with pytest.raises(bench_mod_suite.SuiteConflictError, match="evaluation.strata_episodes: None -> 5"):
        bench_mod_suite.check_suite_record(more, out)
    plan = bench_mod_plan.build_phases(more)[1]["cramped_room"]
    jobs = bench_mod_plan._evaluation_jobs(more, "cramped_room", plan, "cramped_room/partners/set")
    episodes = {j.kind: j.params["episodes"] for j in jobs}
    assert episodes == {"ego.evaluate": 2, "ego.unhelpful": 5}
    with pytest.raises(SuiteError, match="evaluation.strata_episodes=0 must be >= 1"):
        load_suite(write_suite(tmp_path, TINY + "  strata_episodes: 0\n"))
