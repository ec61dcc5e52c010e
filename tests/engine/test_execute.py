"""One way to run a step: the flow, the step tasks and the Python API (shared and isolated scoring)
record the same failing verifiers alike, and fill ``${VAR}`` placeholders alike.

Each path runs the same rollout for real on loopback (the email env, the scripted agent) and the
same verifiers: a verify script that exits with an error (its rows, and so its axes, come from the
script), a rubric whose judge agent cannot be started (its criteria declare two axes), and a reply
check whose needles are ``${VAR}`` placeholders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from prefect import flow

from prefect_agentenv import AgentConfig, ScoringConfig, Task, TaskData, make_agent
from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.context import RunContext
from prefect_agentenv.documents import validate_data
from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.flows.agent_task import agent_task
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.tasks import (
    agent_prompt_response_verifier,
    agentenv_run,
    deploy_agent,
    deploy_env,
    env_outcome_verifier,
    prompt_agent,
    rubrics_verifier,
)

pytestmark = pytest.mark.usefixtures("prefect_harness", "agentenv_home")

PLAN = {"plan": {"reply": "Done, the reply is sent."}}
PROMPT = "Reply to Dana."
FAILS = "async def verify(mcp_url, run=None):\n    raise SystemExit('the checks could not run')\n"
CHECKS: JsonObject = {"type": "env_outcome_verifier", "verifier_id": "checks", "script_artifact_id": "checks-fail",
                      "fail_task_on_error": False}
TONE: JsonObject = {"type": "rubrics_verifier", "verifier_id": "tone", "judge_agent_id": "no-such-judge",
                    "fail_task_on_error": False, "criteria": [
                        {"id": "polite", "criterion": "The reply is polite.", "axis": "communication", "weight": 2},
                        {"id": "clear", "criterion": "The reply is clear.", "axis": "clarity"}]}
REPLY: JsonObject = {"type": "agent_prompt_response_verifier", "verifier_id": "reply",
                     "response_contains": ["${AGENTENV_AGREE_WORD}", "${AGENTENV_AGREE_UNSET:-sent}"]}
VERIFIERS = ("checks", "tone", "reply")


@pytest.fixture(autouse=True)
def _published(agentenv_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTENV_AGREE_WORD", "Done")
    monkeypatch.delenv("AGENTENV_AGREE_UNSET", raising=False)
    (tmp_path / "verify.py").write_text(FAILS)
    with get_artifact_store() as store:
        store.publish_files("checks-fail", {"verify.py": tmp_path / "verify.py"})


def _document(scoring: JsonObject | None = None, reply: JsonObject = REPLY) -> Any:
    steps = [
        {"id": "email", "type": "deploy_env", "env_id": "email"},
        {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "assistant",
         "env_ids": ["email"], "agent_config": PLAN},
        {"id": "ask", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "ask", "prompt": PROMPT},
        {**CHECKS, "id": "checks", "env_id": "email"},
        {**TONE, "id": "tone", "prompt_id": "ask"},
        {**reply, "id": "reply", "prompt_id": "ask"},
    ]
    result = validate_data({"id": "agree", "steps": steps, **({"scoring": scoring} if scoring else {})})
    assert result.ok, [p.render() for p in result.problems]
    return result.document


async def _by_flow(scoring: JsonObject | None = None) -> dict[str, JsonObject]:
    state = await agent_task(_document(scoring), return_state=True)
    report = await state.result(raise_on_failure=False)
    assert state.is_completed(), report.get("error")
    verifications = report["context"]["metadata"]["verifications"]
    return {vid: verifications[vid] for vid in VERIFIERS}


def _fields(step: JsonObject) -> JsonObject:
    return {k: v for k, v in step.items() if k != "type"}


@flow
async def _by_tasks(reply: JsonObject = REPLY) -> RunContext:
    async with agentenv_run("agree") as ctx:
        ctx = await deploy_env(ctx, env_id="email")
        ctx = await deploy_agent(ctx, agent_name="assistant", a2a_agent_id="scripted", env_ids=["email"],
                                 agent_config=PLAN)
        ctx = await prompt_agent(ctx, agent_name="assistant", prompt_id="ask", prompt=PROMPT)
        ctx = await env_outcome_verifier(ctx, **_fields(CHECKS), env_id="email")
        ctx = await rubrics_verifier(ctx, **_fields(TONE), prompt_id="ask")
        return await agent_prompt_response_verifier(ctx, **_fields(reply), id="reply", prompt_id="ask")


async def _by_api(scoring: ScoringConfig | None = None, reply: JsonObject = REPLY) -> Any:
    task = Task(TaskData(id="agree", prompt=PROMPT, envs={"email": None}, verifiers=[CHECKS, TONE, reply],
                         scoring=scoring or ScoringConfig()))
    async with make_agent(AgentConfig(agent="scripted", agent_config=PLAN)) as agent:
        return await agent.run(task)


async def test_a_failing_verifier_is_recorded_alike_by_the_flow_the_tasks_and_the_python_api() -> None:
    flow_records = await _by_flow()

    tolerated = await _by_tasks()
    trace = await _by_api()
    isolated = await _by_api(ScoringConfig(mode="isolated", retries={"max_retries": 0}))
    flow_isolated = await _by_flow({"mode": "isolated", "retries": {"max_retries": 0}})

    checks, tone, reply = (flow_records[v] for v in VERIFIERS)
    assert checks["errored"] is True and checks["score"] == 0.0 and "axes" not in checks  # rows from a script
    assert checks["error"].endswith("failed (exit 1):\nthe checks could not run")
    assert tone["errored"] is True and tone["axes"] == {"communication": 2.0, "clarity": 1.0}
    assert "no agent 'no-such-judge'" in tone["error"]
    assert [r["id"] for r in checks["results"]] == [r["id"] for r in tone["results"]] == ["verifier_error"]
    assert reply["score"] == 1.0  # both placeholders were filled: the variable and the default
    assert {v: tolerated.metadata.verifications[v].record() for v in VERIFIERS} == flow_records
    assert {v: trace.verifications[v] for v in VERIFIERS} == flow_records
    assert {v: isolated.verifications[v] for v in VERIFIERS} == flow_records
    assert flow_isolated == flow_records
    assert trace.rewards == isolated.rewards == {"checks": 0.0, "tone": 0.0, "reply": 1.0}
    assert [f.step_id for f in tolerated.metadata.failed_steps] == ["env_outcome_verifier", "rubrics_verifier"]


async def test_a_missing_variable_fails_with_the_same_words_on_every_path() -> None:
    missing = {**REPLY, "response_contains": ["${AGENTENV_AGREE_MISSING}"]}
    words = "environment variable AGENTENV_AGREE_MISSING is not set (step 'reply')"

    state = await agent_task(_document(reply=missing), return_state=True)
    report = await state.result(raise_on_failure=False)
    assert state.is_failed() and words in report["error"] and "nothing was deployed" in report["error"]
    assert report["context"]["deployed_envs"] == {}

    with pytest.raises(ConfigurationError, match=rf"{words.replace('(', '[(]').replace(')', '[)]')}"):
        await _by_tasks(missing)

    trace = await _by_api(reply=missing)
    assert words in trace.info["error"] and trace.reward == 0.0 and trace.verifications == {}
