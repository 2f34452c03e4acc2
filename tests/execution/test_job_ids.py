"""Job ids: every builder's id reads back to what built it, and the bench's plan uses them."""

import pytest

from zsceval.execution import job_ids as ids


@pytest.mark.parametrize(
    ("job_id", "expected"),
    [
        (ids.candidate_train("counter_circuit", "c007"),
         ids.JobId("counter_circuit", "candidate", group="candidates", candidate="c007", step="train")),
        (ids.candidate_evaluate("cramped_room", "c000", ids.HSP_CANDIDATES),
         ids.JobId("cramped_room", "candidate", group="hsp_candidates", candidate="c000", step="evaluate")),
        (ids.select("x"), ids.JobId("x", "select")),
        (ids.partner_set("x"), ids.JobId("x", "set")),
        (ids.human_proxy("x"), ids.JobId("x", "proxy")),
        (ids.mid_br("x", "c003"), ids.JobId("x", "mid_br", candidate="c003")),
        (ids.set_br("x", "c001_final+c003_mid"), ids.JobId("x", "set_br", key="c001_final+c003_mid")),
        (ids.stage1("x", "mep-stage1"), ids.JobId("x", "stage1", algo="mep-stage1")),
        (ids.ego("x", "hsp", 2), ids.JobId("x", "ego", algo="hsp", index=2)),
        (ids.ego_evaluation("x", "sp", 0), ids.JobId("x", "evaluation", algo="sp", index=0)),
        (ids.ego_human_proxy("x", "sp", 1), ids.JobId("x", "human_proxy", algo="sp", index=1)),
        (ids.ego_unhelpful("x", "e3t", 12), ids.JobId("x", "unhelpful", algo="e3t", index=12)),
        (ids.ego("x", "tbs", 0) + "/tbs_eval",
         ids.JobId("x", "ego_stage", algo="tbs", index=0, key="tbs_eval")),
        ("x/something/else", ids.JobId("x", "other")),
        ("x/egos/sp/seven", ids.JobId("x", "other")),
    ],
)  # fmt: skip
def test_each_id_reads_back_to_what_built_it(job_id, expected):
    assert ids.parse(job_id) == expected


def test_candidate_names_are_zero_padded_in_weight_row_order():
    assert [ids.candidate_name(i) for i in (0, 7, 51, 175)] == ["c000", "c007", "c051", "c175"]


def test_the_bench_plan_builds_only_ids_the_parser_knows():
    from zsceval.bench.plan import build_phases
    from zsceval.bench.suite import load_suite

    phases, plans = build_phases(load_suite("overcooked-quick"))
    kinds = {ids.parse(j.id).kind for phase in phases for j in phase}
    assert "other" not in kinds and {"candidate", "select", "stage1", "ego"} <= kinds
    plan = plans["cramped_room"]
    assert plan.candidates == [ids.candidate_name(i) for i in range(8)]
    assert plan.select.id == ids.select("cramped_room") and plan.shipped is None
