"""``zsceval bench --stack`` (:mod:`zsceval.bench.stacking`): a layout's candidate train jobs train
as one stacked phase into their own job folders; the jobs then finish as always (their ``DONE.json``
written by the job runner, the run not trained again), and a candidate's checkpoints are bit for bit
those of the same job run alone."""

import csv
import json

import torch
from safetensors.torch import load_file

from zsceval.bench.stacking import format_stacked, run_stacked, stacked_groups
from zsceval.execution import run_jobs
from zsceval.generation.candidates import PartnerBudget, candidate_jobs

# 2 candidates of 4 games x 12 steps, 2 iterations each
COMMON = {"layout": "cramped_room", "preset": "quick", "device": "cpu",
          "overrides": ["env.num_envs=4", "env.horizon=16", "ppo.rollout_length=12", "run.num_threads=1",
                        "run.eval_episodes=2"]}  # fmt: skip
BUDGET = PartnerBudget(candidates=2, candidate_steps=96, checkpoints=2, k=1)
MODULES = ("zsceval.training.jobs", "zsceval.generation.pipeline")


def _trains():
    trains, _, _ = candidate_jobs("cramped_room", BUDGET, 0, COMMON)
    return trains


def _rows(path):
    with open(path) as f:
        return [{k: v for k, v in r.items() if not any(w in k for w in ("time", "_s", "per_s", "cpu"))}
                for r in csv.DictReader(f)]  # fmt: skip


def test_a_layouts_candidates_train_stacked_and_finish_as_their_jobs(tmp_path):
    trains = _trains()
    groups = stacked_groups(trains, tmp_path / "stacked")
    assert [[j.id for j in g] for g in groups] == [[j.id for j in trains]]
    assert "1 x" not in format_stacked(groups) and "2 x biased" in format_stacked(groups)
    assert "one by one" in format_stacked(groups) and "vmapped" in format_stacked(groups, vmap=True)
    assert run_stacked(trains, tmp_path / "stacked", log=lambda m: None) == 1
    rows = {j.id: _rows(tmp_path / "stacked" / j.out / "run" / "metrics.csv") for j in trains}
    run_jobs(trains, tmp_path / "stacked", modules=MODULES, progress=False)
    for j in trains:
        out = tmp_path / "stacked" / j.out
        assert (out / "DONE.json").is_file()
        assert _rows(out / "run" / "metrics.csv") == rows[j.id]  # finished, not trained again
    assert stacked_groups(trains, tmp_path / "stacked") == []  # done jobs do not stack again
    alone = trains[1]
    run_jobs([alone], tmp_path / "alone", modules=MODULES, progress=False)
    a, b = tmp_path / "stacked" / alone.out / "run", tmp_path / "alone" / alone.out / "run"
    assert _rows(a / "metrics.csv") == _rows(b / "metrics.csv")
    files = sorted((b / "checkpoints").glob("*/*.safetensors"))
    assert len(files) >= 2
    for path in files:
        x, y = load_file(str(a / path.relative_to(b))), load_file(str(path))
        assert x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x), path


def test_mid_checkpoint_brs_stack_once_their_inputs_have_finished(tmp_path):
    """Each BR trains with its own frozen partner (a candidate's mid checkpoint): the BRs of a layout
    stack when their candidates' jobs are done, apart from jobs that run under the training guard."""
    from zsceval.execution import Job

    def br(c):
        params = {
            **COMMON,
            "algo": "br",
            "seed": 500,
            "steps": 96,
            "partner_train": f"t{c}",
            "partner_eval": f"e{c}",
        }
        return Job(f"br{c}", "train", params, needs=(f"t{c}", f"e{c}"), out=f"br{c}")

    inputs = [Job(f"{k}{c}", "train", {}, out=f"{k}{c}") for c in (0, 1) for k in "te"]
    brs = [br(0), br(1)]
    assert stacked_groups(brs, tmp_path, inputs) == []  # the candidates have not finished
    for job in inputs:
        (tmp_path / job.out).mkdir()
        result = {"mid_checkpoint": "run/checkpoints/step_000000000048"}
        (tmp_path / job.out / "DONE.json").write_text(json.dumps({"result": result}))
    groups = stacked_groups([*brs, *_trains()], tmp_path, inputs)
    assert [[j.id for j in g] for g in groups] == [["br0", "br1"], [j.id for j in _trains()]]


def test_vmapped_candidates_train_into_their_job_folders_close_to_the_exact_phase(tmp_path):
    """``zsceval bench --stack --stack-vmap``: the same jobs, every member vmapped (acting and
    update), checkpoints within float tolerance of the exact stacked phase's."""
    from click.testing import CliRunner

    from zsceval.cli import main

    assert "--stack-vmap" in CliRunner().invoke(main, ["bench", "--help"]).output
    trains = _trains()
    logs: list[str] = []
    assert run_stacked(trains, tmp_path / "exact", log=lambda m: None) == 1
    assert run_stacked(trains, tmp_path / "vmap", log=logs.append, vmap=True) == 1
    assert logs == [
        "stacked phase: 2 x biased on cramped_room in one process, vmapped acting and updates"
    ]  # none alone
    for j in trains:
        a, b = tmp_path / "exact" / j.out / "run", tmp_path / "vmap" / j.out / "run"
        files = sorted((a / "checkpoints").glob("*/policies.safetensors"))
        assert len(files) >= 2
        for path in files:
            x, y = load_file(str(path)), load_file(str(b / path.relative_to(a)))
            assert x.keys() == y.keys()
            for k in x:  # bf16 acting on CPUs that have it: rounding apart, not bit for bit
                torch.testing.assert_close(y[k].float(), x[k].float(), rtol=2e-2, atol=2e-2)


def test_stack_vmap_implies_stacked_phases_in_the_plan(tmp_path):
    from click.testing import CliRunner

    from tests.evaluation.tiny_bench import TINY, write_suite
    from zsceval.cli import main

    suite = str(write_suite(tmp_path, TINY.replace("algorithms: [sp, pecan]", "algorithms: [sp]")))
    out = str(tmp_path / "out")

    def plan(*flags):
        res = CliRunner().invoke(main, ["bench", "--suite", suite, "--out", out, "--plan", *flags])
        assert res.exit_code == 0, res.output
        return next(line for line in res.output.splitlines() if line.startswith("stacked phases"))

    assert plan().startswith("stacked phases: off")  # a CPU suite
    assert plan("--stack").endswith("members one by one (--stack-vmap to vmap them)")
    assert plan("--stack-vmap").endswith("vmapped acting and updates")
    assert plan("--stack-vmap", "--no-stack").startswith("stacked phases: off")
    # a CUDA suite stacks by default; its members act one by one until a GPU measures --stack-vmap
    assert plan("--device", "cuda").endswith("members one by one (--stack-vmap to vmap them)")
