"""Agent API configuration: task defaults under explicit agent settings, TOML, network policy,
and the skip policy in task and benchmark documents (no server is started here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from prefect_agentenv import AgentConfig, ScoringConfig, Task, TaskData, load_agent_config, make_agent
from prefect_agentenv.api.scoring import scoring_env, verifier_steps
from prefect_agentenv.documents.benchmarks.document import Benchmark
from prefect_agentenv.documents.compile import expand_tasks
from prefect_agentenv.documents.scoring import runtime_step
from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.grading.outcome import Outcome, task_outcome

SKIPPED = {"skipped": True, "skip_reason": "truncated", "score": None, "weight": 1.0}


def test_explicit_agent_scoring_fields_override_the_task_defaults_and_env_merges() -> None:
    task = Task(TaskData(prompt="x", scoring=ScoringConfig(mode="isolated", env={"A": "task", "B": "task"},
                                                           network="loopback", retries={"max_retries": 5})))
    agent = make_agent(AgentConfig(scoring=ScoringConfig(env={"B": "agent"}, network=["api.example.org"])))
    scoring = agent.scoring_for(task)
    assert scoring.mode == "isolated" and scoring.retries.max_retries == 5   # not set by the agent: the task's
    assert scoring.env == {"A": "task", "B": "agent"}                       # merged, the agent's value wins
    assert scoring.network is not None and scoring.network.allow == ["api.example.org"]  # replaced
    assert make_agent(AgentConfig(scoring=ScoringConfig(mode="shared"))).scoring_for(task).mode == "shared"


def test_scoring_falls_back_to_shared_with_two_retries_and_the_zero_skip_policy() -> None:
    scoring = make_agent(AgentConfig()).scoring_for(Task(TaskData(prompt=None)))
    assert (scoring.mode, scoring.retries.max_retries, scoring.skip_policy) == ("shared", 2, "zero")


def test_scoring_env_templates_are_read_when_scoring_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    scoring = ScoringConfig(env={"TOKEN": "${SEED_TOKEN}", "MODE": "${SEED_MODE:-strict}"}, network="loopback")
    monkeypatch.setenv("SEED_TOKEN", "s3cret-value")
    redact: set[str] = set()
    env = scoring_env(scoring, redact)
    assert env["TOKEN"] == "s3cret-value" and env["MODE"] == "strict" and "s3cret-value" in redact
    assert env["HTTPS_PROXY"] == "http://127.0.0.1:9" and env["NO_PROXY"].startswith("127.0.0.1,localhost")
    monkeypatch.delenv("SEED_TOKEN")
    with pytest.raises(ConfigurationError, match="SEED_TOKEN is not set"):
        scoring_env(scoring, set())


def test_verifiers_get_the_prompt_agent_and_single_env_filled_in() -> None:
    task = TaskData(prompt="x", envs=["records"], verifiers=[
        {"type": "env_state_verifier", "assertions": [{"assert": "record-count", "id": "n", "resource": "r"}]},
        {"type": "rubrics_verifier", "criteria": [{"id": "c", "criterion": "Polite."}]}])
    state, rubric = verifier_steps(task, "agent", {"K": "v"})
    assert (state.id, state.env_id, state.scoring_env) == ("env_state_verifier-1", "records", {"K": "v"})  # type: ignore[attr-defined]
    assert (rubric.prompt_id, rubric.verifier_id) == ("prompt", "rubrics_verifier-2")  # type: ignore[attr-defined]
    assert rubric.agent_name is None  # type: ignore[attr-defined]  # a judge, not the graded agent


TOML = """
[env.agent]
agent = "scripted"
max_turns = 10
max_turn_tokens = 4096

[env.agent.scoring]
skip_on_truncated = true
skip_on_timeout = true
mode = "isolated"
env = { TOKEN = "${TOKEN:-none}" }

[env.agent.scoring.retries]
max_retries = 4
"""


def test_an_agent_config_reads_from_toml(tmp_path: Any) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(TOML)
    for source in (TOML, path):
        config = load_agent_config(source)
        assert (config.agent, config.max_turns, config.max_turn_tokens) == ("scripted", 10, 4096)
        scoring = config.scoring
        assert scoring.skip_on_truncated and scoring.skip_on_timeout and scoring.mode == "isolated"
        assert scoring.retries.max_retries == 4 and scoring.env == {"TOKEN": "${TOKEN:-none}"}
    assert config.deploy_config() == {"max_turns": 10, "max_turn_tokens": 4096}
    with pytest.raises(ValueError, match=r"\[env.agent\]"):
        load_agent_config("[env]\nx = 1\n")


def test_a_skipped_verifier_counts_as_zero_by_default_and_not_at_all_when_excluded() -> None:
    both = {"cut": SKIPPED, "ok": {"score": 1.0, "weight": 1.0}}
    assert task_outcome(both, failed=False) == (Outcome.BELOW_ONE, 0.5)
    assert task_outcome(both, failed=False, skip_policy="exclude") == (Outcome.PASSED, 1.0)
    assert task_outcome({"cut": SKIPPED}, failed=False) == (Outcome.BELOW_ONE, 0.0)
    assert task_outcome({"cut": SKIPPED}, failed=False, skip_policy="exclude") == (Outcome.UNSCORED, None)


STEPS = [{"id": "e", "type": "deploy_env", "env_id": "email"}]


def test_the_skip_policy_comes_from_the_task_then_its_document_then_the_benchmark() -> None:
    bench = Benchmark.model_validate({"name": "b", "slug": "b", "defaults": {"skip_policy": "exclude"}, "tasks": [
        {"id": "plain", "steps": STEPS},
        {"id": "own", "steps": STEPS, "skip_policy": "zero"}]})
    policies = {t.task_id: t.document.skip_policy for t in expand_tasks(bench, ".")}
    assert policies == {"plain": "exclude", "own": "zero"}
    unset = Benchmark.model_validate({"name": "b", "slug": "b", "tasks": [{"id": "plain", "steps": STEPS}]})
    assert expand_tasks(unset, ".")[0].document.skip_policy == "zero"


def test_a_benchmark_scoring_default_is_overridden_field_by_field_by_the_document_then_the_task(
        tmp_path: Path) -> None:
    rollout = [*STEPS, {"id": "a", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "a"},
               {"id": "p", "type": "prompt_agent", "agent_name": "a", "prompt_id": "p", "prompt": "Hi"},
               {"id": "v", "type": "agent_prompt_response_verifier", "prompt_id": "p", "response_contains": ["x"]}]
    (tmp_path / "doc.json").write_text(json.dumps(
        {"id": "doc", "scoring": {"retries": {"max_retries": 5}, "env": {"B": "doc"}}, "steps": rollout}))
    bench = Benchmark.model_validate({"name": "b", "slug": "b", "defaults": {"scoring": {
        "mode": "isolated", "env": {"A": "bench", "B": "bench"}, "network": "loopback", "skip_on_timeout": True}},
        "tasks": [{"id": "plain", "steps": rollout},
                  {"id": "doc", "path": "doc.json", "scoring": {"mode": "shared", "skip_policy": "exclude"}},
                  {"name": "Verial", "task_item": {"instruction": "Hi"}, "env": {"env_id": "email"},
                   "criteria": [{"label": "Says hi", "assertion": {"assert": "response_contains", "needles": ["hi"]}}],
                   "scoring": {"retries": {"max_retries": 0}}}]})
    docs = {t.task_id: t.document for t in expand_tasks(bench, tmp_path)}
    # a dumped benchmark (a deployment's parameter) layers the same: only written fields are dumped
    again = Benchmark.model_validate(bench.model_dump(mode="json", by_alias=True, exclude_none=True))
    assert {t.task_id: t.document.scoring for t in expand_tasks(again, tmp_path)} == {
        k: d.scoring for k, d in docs.items()}
    plain, doc, verial = docs["plain"].scoring, docs["doc"].scoring, docs["verial"].scoring
    assert plain is not None and doc is not None and verial is not None
    assert (plain.mode, plain.retries.max_retries, plain.env, plain.network.mode) == (  # type: ignore[union-attr]
        "isolated", 2, {"A": "bench", "B": "bench"}, "loopback")
    assert (doc.mode, doc.retries.max_retries, doc.env, doc.skip_policy) == (
        "shared", 5, {"A": "bench", "B": "doc"}, "exclude")
    assert docs["doc"].skip_policy == "exclude"
    assert (verial.mode, verial.retries.max_retries) == ("isolated", 0)
    assert [s.skip_on_timeout for s in docs["plain"].steps if s.id == "v"] == [True]  # onto verifiers setting none
    task = Task.from_document(docs["plain"])
    assert task.data.scoring.mode == "isolated" and task.data.scoring.env == {"A": "bench", "B": "bench"}


def test_scoring_runtime_overrides_the_fresh_envs_deploy_fields_and_a_wrong_one_is_named() -> None:
    step = runtime_step("records", "1.0.0", ScoringConfig(runtime={"startup_timeout_seconds": 90}))
    assert (step.env_id, step.version, step.startup_timeout_seconds) == ("records", "1.0.0", 90)
    with pytest.raises(ValidationError, match=r"runtime\n.*startup_timeout: Extra inputs"):
        ScoringConfig(runtime={"startup_timeout": 90})  # named when the config is made, not at scoring


def test_a_task_document_becomes_a_task_with_its_envs_prompt_verifiers_and_skip_policy(tmp_path: Any) -> None:
    examples = Path(__file__).resolve().parents[2] / "examples"
    task = Task.from_document(examples / "tasks" / "reply-to-dana-scripted.json")
    assert (task.prompt, task.data.envs) == ("Reply to Dana.", {"email": "inbox"})
    assert [v["verifier_id"] for v in task.data.verifiers] == ["sent", "tone"]
    assert task.data.verifiers[1]["prompt_id"] == "prompt" and "depends_on" not in task.data.verifiers[1]
    assert [s.id for s in verifier_steps(task.data, "agent")] == ["sent", "tone"]
    doc = tmp_path / "t.yaml"
    doc.write_text("id: t\nskip_policy: exclude\nsteps:\n"
                   "  - {id: email, type: deploy_env, env_id: email}\n"
                   "  - {id: later, type: sync_env_clock, env_id: email, advance_seconds: 60}\n")
    with pytest.raises(ConfigurationError, match=r"later \(sync_env_clock\)"):
        Task.from_document(doc)
    doc.write_text("id: t\nskip_policy: exclude\nsteps:\n  - {id: email, type: deploy_env, env_id: email}\n")
    assert Task.from_document(doc).data.scoring.skip_policy == "exclude"
