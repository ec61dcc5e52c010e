"""rubrics_verifier with a panel of judges, answered by the built-in mock model (labelled: its judge
rule passes every criterion unless a judge's instructions script it to fail some or answer unreadably)."""

from __future__ import annotations

from typing import Any

import pytest

from prefect_agentenv.documents import validate_data
from prefect_agentenv.results.task_report import verification_rows
from prefect_agentenv.transcript import transcript_markdown
from prefect_agentenv.viewer.transcript_html import transcript_html

from .helpers import run_doc, states
from .test_rubrics_verifier import TONE, dana

pytestmark = pytest.mark.usefixtures("published")


def panel(judges: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"id": "tone", "type": "rubrics_verifier", "prompt_id": "reply", "verifier_id": "tone",
            "criteria": TONE, "depends_on": ["reply"], "judges": judges, **extra}


THREE_WITH_A_DISSENTER = [{"id": "a"}, {"id": "b"}, {"id": "c", "instructions": "[mock-judge: fail c2]"}]


async def test_a_panel_of_three_with_one_dissenter_passes_by_majority_and_reports_its_disagreement() -> None:
    report = await run_doc([*dana(), panel(THREE_WITH_A_DISSENTER)])
    assert report.status == "completed", report.error
    v = report.context.metadata.verifications["tone"]
    assert [(r.id, r.result) for r in v.results] == [("polite", "pass"), ("explains", "pass")]
    assert v.score == 1.0
    explains = v.results[1].model_extra
    assert [(j["judge"], j["result"]) for j in explains["judges"]] == [("a", "pass"), ("b", "pass"), ("c", "fail")]
    assert "fails this criterion" in explains["judges"][2]["justification"]
    # Three pairs, two of them split: 2/3 on 'explains', 0 on 'polite', 1/3 for the run.
    assert explains["disagreement"] == pytest.approx(2 / 3, abs=1e-4)
    assert v.results[0].model_extra["disagreement"] == 0.0
    record = v.model_extra["panel"]
    assert record["rule"] == "majority" and record["split_criteria"] == ["explains"]
    assert record["disagreement"] == pytest.approx(1 / 3)
    assert [j["id"] for j in record["judges"]] == ["a", "b", "c"] and all(j["mock"] for j in record["judges"])
    assert record["unscored"] == [] and record["unreadable_judges"] == []
    table = [row for row in verification_rows(report) if row["verifier"] == "tone"]
    assert table[1]["judges"] == "a: pass; b: pass; c: fail"
    setup = v.model_extra["judge_setup"]
    assert setup["panel_rule"] == "majority" and [j["id"] for j in setup["judges"]] == ["a", "b", "c"]
    # Judge c's own instructions make its prompt, and so the setup, differ from a and b's.
    assert setup["judges"][0]["prompt"] == setup["judges"][1]["prompt"] != setup["judges"][2]["prompt"]


async def test_the_unanimous_rule_fails_what_one_judge_fails_and_the_mean_rule_gives_partial_credit() -> None:
    unanimous = await run_doc([*dana(), panel(THREE_WITH_A_DISSENTER, panel_rule="unanimous")])
    v = unanimous.context.metadata.verifications["tone"]
    assert [(r.id, r.result) for r in v.results] == [("polite", "pass"), ("explains", "fail")] and v.score == 0.0
    mean = await run_doc([*dana(), panel(THREE_WITH_A_DISSENTER, panel_rule="mean",
                                         score_aggregator="weighted_average")])
    v = mean.context.metadata.verifications["tone"]
    assert v.results[1].result == "partial" and v.results[1].score == pytest.approx(2 / 3)
    assert v.score == pytest.approx((1 + 2 / 3) / 2)


async def test_an_unreadable_judge_leaves_its_verdicts_unscored_and_the_others_decide() -> None:
    judges = [{"id": "a"}, {"id": "b", "instructions": "[mock-judge: unreadable]"}]
    report = await run_doc([*dana(), panel(judges, judge_retries=1)])
    assert report.status == "completed", report.error
    v = report.context.metadata.verifications["tone"]
    assert v.model_extra["panel"]["unreadable_judges"] == ["b"]
    assert v.model_extra["panel"]["judges"][1]["attempts"] == 2
    verdicts = v.results[0].model_extra["judges"]
    assert verdicts[1]["result"] == "unscored" and "score" not in verdicts[1]
    assert v.model_extra["panel"]["unscored"] == [] and v.score == 1.0


async def test_a_criterion_no_judge_could_read_is_unscored_never_a_pass_or_a_fail() -> None:
    report = await run_doc([*dana(), panel([{"id": "only", "instructions": "[mock-judge: unreadable]"}],
                                           judge_retries=1)])
    assert states(report)["tone"] == "completed"
    v = report.context.metadata.verifications["tone"]
    assert v.results == [] and v.score is None and v.skipped and v.skip_reason == "unscored"
    assert v.model_extra["panel"]["unscored"] == ["polite", "explains"]
    # The task's skip policy says how an unscored verifier counts: 0 by default, as a skipped one.
    assert report.score == 0.0


async def test_every_judges_verdict_is_in_the_transcript_and_its_html() -> None:
    report = await run_doc([*dana(), panel(THREE_WITH_A_DISSENTER)])
    assert report.transcript is not None
    verifier = next(v for v in report.transcript.verifiers if v.verifier_id == "tone")
    assert verifier.panel is not None and verifier.panel.judges == ["a", "b", "c"]
    assert [(j.judge, j.result) for j in verifier.rows[1].judges or []] == [("a", "pass"), ("b", "pass"), ("c", "fail")]
    html = transcript_html(report.transcript, lambda url: url)
    assert "panel of 3 (a, b, c), rule majority · disagreement 0.33 · split on explains" in html
    assert "fails this criterion" in html and "disagreement 0.67" in html
    markdown = transcript_markdown(report.transcript)
    assert "Judges on `explains` (disagreement 0.67):" in markdown and "- `c`: fail" in markdown


def test_panel_judge_ids_must_differ() -> None:
    result = validate_data([*dana(), panel([{"id": "a"}, {"id": "a"}])], default_id="t")
    assert not result.ok
    assert any("panel judge ids repeat: a" in p.render() for p in result.problems)


async def test_a_panel_judge_can_be_a_judge_agent_started_for_it_beside_a_direct_model_call() -> None:
    judges = [{"id": "direct"}, {"id": "agent", "mode": "agent", "instructions": "[mock-judge: fail c1]"}]
    report = await run_doc([*dana(), panel(judges, panel_rule="unanimous")])
    assert report.status == "completed", report.error
    v = report.context.metadata.verifications["tone"]
    described = {j["id"]: j for j in v.model_extra["panel"]["judges"]}
    assert described["direct"]["mode"] == "model"
    assert described["agent"]["mode"] == "agent" and described["agent"]["agent_name"] == "judge-tone-agent"
    assert [(r.id, r.result) for r in v.results] == [("polite", "fail"), ("explains", "pass")]
