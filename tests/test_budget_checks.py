"""Budgets that cannot end an episode are refused before anything trains."""

import pytest
from click.testing import CliRunner

from zsceval.bench import suite as bm_suite
from zsceval.cli import main


def test_a_stage1_budget_that_ends_no_episode_is_refused_up_front(tmp_path):
    out = tmp_path / "F1"
    res = CliRunner().invoke(main, ["train", "--algo", "fcp", "--layout", "cramped_room", "--out", str(out),
                                    "--set", "population.size=3", "--set", "population.stage1_steps=153600",
                                    "--steps", "153600", "--no-progress"])  # fmt: skip
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "population.stage1_steps=153,600 ends no episode" in res.output
    assert ">= 204,800" in res.output and "--resume" not in res.output  # the way out, not a rerun
    assert not out.exists()


def test_a_suite_whose_candidates_end_no_episode_is_refused(tmp_path):
    path = tmp_path / "short.yaml"
    path.write_text("name: short\nlayouts: [cramped_room]\nalgorithms: [sp]\noverrides: [env.num_envs=8]\n"
                    "partners: {candidates: 2, candidate_steps: 3000, k: 1}\n")  # fmt: skip
    msg = r"short.yaml: partners.candidate_steps=3,000 ends no episode.*>= 3,200"
    with pytest.raises(bm_suite.SuiteError, match=msg):
        bm_suite.load_suite(path)
    path.write_text(path.read_text().replace("candidate_steps: 3000", "candidate_steps: 3200"))
    assert bm_suite.load_suite(path).partners.candidate_steps == 3200


def test_a_training_job_whose_inputs_cannot_work_fails_without_advising_a_rerun(tmp_path):
    """A config error met when a job's trainer is built (e.g. HSP with fewer usable biased candidates
    than it needs, FCP without its population) is a JobInputError: no retry, no rerun advice."""
    from zsceval.execution.jobs import JobInputError
    from zsceval.training.jobs import train_job

    params = {"algo": "fcp", "layout": "cramped_room", "seed": 0, "steps": 3200, "preset": "quick",
              "device": "cpu", "overrides": ["env.num_envs=8"]}  # fmt: skip
    with pytest.raises(JobInputError, match="fcp on cramped_room: .*algo.population"):
        train_job(params, tmp_path / "job", {})
