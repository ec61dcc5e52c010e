"""rubrics_verifier end to end: judge agents and the judge model, over a scripted OpenAI-compatible server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from prefect_agentenv.settings import get_settings
from servers import mock_model

from .helpers import EXAMPLES, run_doc, states

pytestmark = pytest.mark.usefixtures("published")

PLAN = json.loads((EXAMPLES / "plans" / "reply-to-dana.json").read_text())["plan"]
TONE = [{"id": "polite", "criterion": "The email to Dana is polite and signed.", "weight": 1},
        {"id": "explains", "criterion": "The email tells Dana what was done with the Q3 numbers.", "weight": 1}]


@pytest.fixture(scope="module")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The mock model as a separate OpenAI-compatible server whose replies the tests script."""
    with mock_model(tmp_path_factory.mktemp("rubrics-model") / "mock-model.log") as server:
        yield server.base_url


@pytest.fixture
def scripted_model(model_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Point the run's model endpoint at the scriptable server (as OPENAI_BASE_URL would)."""
    httpx.post(f"{model_server}/mock/reset", timeout=5).raise_for_status()
    monkeypatch.setenv("OPENAI_BASE_URL", f"{model_server}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-key-123")
    get_settings.cache_clear()
    yield model_server
    get_settings.cache_clear()


def script(server: str, *replies: Any) -> None:
    httpx.post(f"{server}/mock/script", json={"replies": list(replies)}, timeout=5).raise_for_status()


def requests_seen(server: str) -> list[dict[str, Any]]:
    return httpx.get(f"{server}/mock/requests", timeout=5).json()["requests"]


def dana(plan: dict[str, Any] | None = None, **prompt_extra: Any) -> list[dict[str, Any]]:
    return [
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "inbox", "type": "load_artifact", "env_id": "email", "artifact_id": "inbox", "depends_on": ["email"]},
        {"id": "assistant", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "assistant",
         "env_ids": ["email"], "depends_on": ["email"], "agent_config": {"plan": plan or PLAN}},
        {"id": "reply", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "reply",
         "prompt": "Reply to Dana.", "depends_on": ["inbox", "assistant"], **prompt_extra},
    ]


def tone(**extra: Any) -> dict[str, Any]:
    return {"id": "tone", "type": "rubrics_verifier", "prompt_id": "reply", "verifier_id": "tone",
            "criteria": TONE, "depends_on": ["reply"], **extra}


async def test_the_tone_verifier_gives_one_row_per_criterion_and_an_all_pass_score(scripted_model: str) -> None:
    script(scripted_model, '```json\n[{"id": "c1", "result": "pass", "justification": "signed Sam"},'
                           ' {"id": "c2", "result": "fail", "justification": "no detail"}]\n```')
    report = await run_doc([*dana(), tone()])
    assert report.status == "completed", report.error
    v = report.context.metadata.verifications["tone"]
    assert [(r.id, r.result, r.score, r.weight) for r in v.results] == [
        ("polite", "pass", 1.0, 1.0), ("explains", "fail", 0.0, 1.0)]
    assert v.results[0].justification == "signed Sam"
    judge = v.model_extra["judge"]
    assert v.score == 0.0 and v.format == "rubric_binary"
    assert judge["mode"] == "agent" and judge["mock"] is False and judge["trajectory"]
    assert report.outcome.value == "BELOW_ONE"
    judge_prompt = json.dumps(requests_seen(scripted_model)[-1]["body"]["messages"])
    assert "c1" in judge_prompt and "explains" not in judge_prompt, "criteria are re-keyed for the judge"
    assert "sk-test-secret-key-123" not in report.model_dump_json()


async def test_malformed_judge_output_is_corrected_by_a_retry(scripted_model: str) -> None:
    script(scripted_model, "I think it is fine overall.",
           '{"c1": "pass", "c2": "pass"}')
    report = await run_doc([*dana(), tone(judge_mode="model")])
    assert report.status == "completed", report.error
    v = report.context.metadata.verifications["tone"]
    assert v.score == 1.0 and v.model_extra["judge"]["attempts"] == 2 and v.model_extra["judge"]["mode"] == "model"


async def test_a_judge_that_never_answers_properly_fails_the_step_and_keeps_the_raw_output(scripted_model: str) -> None:
    script(scripted_model, *["no idea"] * 4)
    report = await run_doc([*dana(), tone(judge_mode="model", judge_retries=3, fail_task_on_error=False)])
    assert states(report)["tone"] == "tolerated"
    v = report.context.metadata.verifications["tone"]
    assert v.model_extra["raw_outputs"] == ["no idea"] * 4 and v.score is None


async def test_a_failed_prompt_scores_zero_with_a_prompt_error_row_and_no_judge_call(scripted_model: str) -> None:
    report = await run_doc([*dana({"fail": {"message": "mailbox locked"}}, fail_task_on_error=False),
                            tone(judge_mode="model")])
    v = report.context.metadata.verifications["tone"]
    assert v.score == 0.0 and [r.id for r in v.results] == ["prompt_error"]
    assert requests_seen(scripted_model) == []


async def test_skip_on_timeout_records_a_skip_instead_of_a_score(scripted_model: str) -> None:
    report = await run_doc([*dana({"sleep_seconds": 30}, timeout_seconds=1.5, fail_task_on_error=False),
                            tone(judge_mode="model", skip_on_timeout=True)])
    v = report.context.metadata.verifications["tone"]
    assert v.skipped is True and v.skip_reason == "timeout" and v.score is None
    assert (report.outcome.value, report.score) == ("BELOW_ONE", 0.0)  # skip_policy zero, the default


async def test_skip_on_truncated_applies_to_a_reply_cut_by_max_turn_tokens(scripted_model: str) -> None:
    script(scripted_model, {"content": "This reply is far too long and gets cut off", "finish_reason": "length"})
    steps = dana()
    steps[2] = {**steps[2], "a2a_agent_id": "llm", "agent_config": {}}
    steps[3] = {**steps[3], "max_turn_tokens": 5}
    criteria = [{**TONE[0], "axis": "communication"}, *TONE[1:]]
    report = await run_doc([*steps, tone(judge_mode="model", skip_on_truncated=True, criteria=criteria)])
    assert report.context.prompt_responses["reply"].is_truncated is True
    skipped = report.context.metadata.verifications["tone"]
    # the axes it would have scored, so a benchmark counts them 0 under skip_policy zero
    assert skipped.skip_reason == "truncated" and skipped.axes == ["communication"]


async def test_a_collected_file_is_loaded_into_the_judge_agent_and_graded_by_name(scripted_model: str) -> None:
    chart = {"files": [{"path": "/app/artifact/q3.svg", "content": "<svg><rect/><rect/><rect/></svg>"}],
             "reply": "Saved the Q3 chart as q3.svg."}
    script(scripted_model, '[{"id": "c1", "result": "pass", "justification": "three bars in q3.svg"}]')
    report = await run_doc([
        {"id": "analyst", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "analyst",
         "depends_on": [], "agent_config": {"plan": chart}},
        {"id": "chart", "type": "prompt_agent", "agent_name": "analyst", "prompt_id": "chart",
         "prompt": "Chart Q3 revenue by month.", "depends_on": ["analyst"]},
        {"id": "judge", "type": "deploy_agent", "a2a_agent_id": "judge", "agent_name": "judge", "depends_on": []},
        {"id": "collect", "type": "collect_artifacts", "agent_name": "analyst", "artifact_paths": ["q3.svg"],
         "depends_on": ["chart"]},
        {"id": "handoff", "type": "load_artifact", "agent_name": "judge", "artifact_from_step_id": "collect",
         "depends_on": ["collect", "judge"]},
        {"id": "grade", "type": "rubrics_verifier", "agent_name": "judge", "prompt_id": "chart", "verifier_id": "chart",
         "criteria": [{"id": "bars", "criterion": "q3.svg is a bar chart with one bar per month of Q3."}],
         "depends_on": ["handoff"]},
    ], "chart-q3")
    assert report.status == "completed", report.error
    v = report.context.metadata.verifications["chart"]
    assert v.score == 1.0 and v.model_extra["judge"]["files"] == ["/tmp/file_artifacts/q3.svg"]
    judge_prompt = json.dumps(requests_seen(scripted_model)[-1]["body"]["messages"])
    assert "/tmp/file_artifacts/q3.svg" in judge_prompt
    sandbox = Path(report.context.deployed_agents["judge"].sandbox)
    assert not sandbox.exists()
