"""The transcript's pieces: pairing tool calls, cutting long values, tokens, env diffs, markdown."""

from __future__ import annotations

import json

from prefect_agentenv.artifacts.local import LocalArtifactBackend
from prefect_agentenv.context import PromptResponse, RunContext, StepRecord
from prefect_agentenv.engine.reporting import build_report
from prefect_agentenv.transcript import StepFields, build_transcript, transcript_markdown
from prefect_agentenv.transcript.build import tokens, tool_calls
from prefect_agentenv.transcript.diff import diff_states
from prefect_agentenv.transcript.models import MAX_VALUE_CHARS, Clip


def test_tool_results_pair_with_their_calls_by_call_id_even_out_of_order() -> None:
    events = [
        {"kind": "tool_call", "call_id": "a", "name": "search", "arguments": {"q": "x"}},
        {"kind": "tool_call", "call_id": "b", "name": "search", "arguments": {"q": "y"}},
        {"kind": "tool_result", "call_id": "b", "name": "search", "content": "found y"},
        {"kind": "tool_result", "call_id": "a", "name": "search", "content": "found x", "is_error": True},
    ]
    calls = tool_calls(events)
    assert [(c.arguments.text, c.result.text if c.result else None, c.is_error) for c in calls] == [
        ('{"q": "x"}', "found x", True), ('{"q": "y"}', "found y", False)]


def test_without_call_ids_results_pair_in_order_per_tool_and_data_stands_in_for_text() -> None:
    events = [{"kind": "tool_call", "tool": "read", "arguments": {"id": 1}},
              {"kind": "tool_call", "tool": "send", "arguments": {}},
              {"kind": "tool_result", "tool": "read", "text": "", "data": {"ok": 1}},
              {"kind": "message", "text": "not a tool"}]
    calls = tool_calls(events)
    assert calls[0].result and calls[0].result.text == '{"ok": 1}'
    assert calls[1].result is None


def test_a_long_value_is_cut_and_says_its_whole_size() -> None:
    clip = Clip.of("x" * (MAX_VALUE_CHARS + 10))
    assert clip.cut and clip.size == MAX_VALUE_CHARS + 10 and len(clip.text) == MAX_VALUE_CHARS
    assert clip.shown(5) == f"xxxxx… [cut: {MAX_VALUE_CHARS + 10:,} characters in all]"
    assert Clip.of("short").shown() == "short"


def test_tokens_are_summed_over_model_events_and_unknown_when_none_report_them() -> None:
    events = [{"kind": "model", "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}},
              {"kind": "model", "usage": {"input_tokens": 3, "output_tokens": 2}}, {"kind": "tool_call"}]
    found = tokens(events)
    assert found is not None and (found.prompt, found.completion, found.total) == (13, 7, 20)
    assert tokens([{"kind": "model", "usage": {}}]) is None


def test_records_are_matched_by_id_so_a_sent_email_is_one_added_record() -> None:
    before = {"account": {"name": "Sam"}, "emails": [{"id": "m1", "read": False}], "sent": []}
    after = {"account": {"name": "Sam R"}, "emails": [{"id": "m1", "read": True}],
             "sent": [{"id": "msg-1", "to": ["dana@x"]}]}
    changes = {(c.change, c.path) for c in diff_states(before, after)}
    assert changes == {("changed", "account.name"), ("changed", "emails[m1]"), ("added", "sent[msg-1]")}


def test_the_markdown_fence_outlasts_backticks_in_a_reply_and_tables_escape_pipes() -> None:
    context = RunContext(prompt_responses={"p": PromptResponse(prompt_id="p", prompt="hi", response="a ``` b")})
    context.metadata.verifications["v"] = {"results": [{"id": "r", "result": "fail", "score": 0,
                                                        "justification": "a | b\nc"}], "score": 0.0}
    t = build_transcript(task_id="t", run_id="r", context=context, steps=[], store=None)
    md = transcript_markdown(t)
    assert "````\na ``` b\n````" in md
    assert "| a \\| b c |" in md


def test_every_turn_of_a_conversation_is_read_back_from_the_store(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = LocalArtifactBackend(tmp_path)
    store.put_object("run1/conversations/chat.json", json.dumps([
        {"turn": 1, "role": "agent", "prompt": "Book a table.", "reply": "For how many?", "state": "completed"},
        {"turn": 1, "role": "user", "message": "Four.", "done": False},
        {"turn": 2, "role": "agent", "prompt": "Four.", "error": "did not finish within 5s (timeout_seconds)"}]))
    trajectory = store.put_object("run1/trajectories/chat.json", json.dumps({"events": [
        {"kind": "model", "usage": {"prompt_tokens": 7, "completion_tokens": 3}},
        {"kind": "tool_call", "tool": "book", "arguments": {"people": 4}}]}))
    context = RunContext(prompt_responses={"chat": PromptResponse(
        prompt_id="chat", prompt="Book a table.", response="", trajectory=trajectory, error="timed out",
        is_timeout=True)})
    t = build_transcript(task_id="t", run_id="run1", context=context, steps=[], store=store,
                         step_fields={"ask": StepFields(type="prompt_agent", prompt_id="chat", agent_name="host"),
                                      "grade": StepFields(type="rubrics_verifier", prompt_id="chat")})
    (prompt,) = t.prompts
    assert (prompt.step_id, prompt.agent_name) == ("ask", "host")
    assert [(turn.index, turn.role, turn.message.text if turn.message else None) for turn in prompt.turns] == [
        (1, "agent", "Book a table."), (1, "user", "Four."), (2, "agent", "Four.")]
    assert prompt.turns[2].error and prompt.turns[1].done is False
    assert [c.name for c in prompt.tool_calls] == ["book"] and prompt.tool_calls[0].result is None
    assert prompt.tokens is not None and prompt.tokens.total == 10
    md = transcript_markdown(t)
    assert "- **turn 1, user:** Four.\n- **turn 2, agent** got: Four." in md and "timed out" in md


def test_a_missing_trajectory_leaves_a_note_instead_of_an_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = LocalArtifactBackend(tmp_path)
    gone = store.object_url("run1/trajectories/p.json")
    context = RunContext(prompt_responses={"p": PromptResponse(prompt_id="p", prompt="x", trajectory=gone)})
    (prompt,) = build_transcript(task_id="t", run_id="run1", context=context, steps=[], store=store).prompts
    assert prompt.tool_calls == [] and "the agent's trajectory could not be read" in prompt.notes[0]


def test_the_runs_error_and_each_failed_steps_come_first_and_the_report_redacts_them() -> None:
    steps = [StepRecord(id="deploy", type="deploy_agent", state="failed", started_at="2026-01-01T00:00:02+00:00",
                        duration_s=1.5, attempts=2, error="agent exited: token s3cret-value rejected"),
             StepRecord(id="env", type="deploy_env", state="completed", started_at="2026-01-01T00:00:01+00:00",
                        duration_s=0.5, attempts=1, error_type=None)]
    t = build_transcript(task_id="t", run_id="r", context=RunContext(), steps=steps, error="step 'deploy' failed")
    assert [s.id for s in t.steps] == ["env", "deploy"]
    assert t.errors == ["step 'deploy' failed", "step 'deploy': agent exited: token s3cret-value rejected"]
    report = build_report(task_id="t", flow_run_id=None, result=None, started_at="2026-01-01T00:00:00+00:00",
                          duration_s=2.0, teardown=[], warnings=[], error="step 'deploy' failed",
                          secrets={"s3cret-value"}, transcript=t)
    assert report.transcript is not None and "s3cret-value" not in report.model_dump_json()
    assert report.transcript.errors[1].endswith("token *** rejected")
    md = transcript_markdown(report.transcript)
    assert md.index("**Errors**") < md.index("## Steps") and "| 2 | deploy | deploy_agent | failed |" in md


def test_anthropic_style_content_blocks_and_agentenv_gateway_events_are_read_too() -> None:
    claude = [{"type": "assistant", "message": {"content": [
                  {"type": "text", "text": "Looking."},
                  {"type": "tool_use", "id": "tu1", "name": "email_search", "input": {"query": "Q3"}}]}},
              {"type": "user", "message": {"content": [
                  {"type": "tool_result", "tool_use_id": "tu1", "content": [{"type": "text", "text": "1 email"}]}]}}]
    (call,) = tool_calls(claude)
    assert (call.name, call.arguments.text, call.result.text if call.result else None) == (
        "email_search", '{"query": "Q3"}', "1 email")
    gateway = [{"event_type": "tool_call", "event_id": "e1", "tool_call": {"function_name": "send",
                                                                            "arguments": {"to": "dana"}}},
               {"event_type": "tool_call_failed", "tool_call_event_id": "e1", "error": "mailbox full"}]
    (call,) = tool_calls(gateway)
    assert call.name == "send" and call.is_error and call.result and call.result.text == "mailbox full"
