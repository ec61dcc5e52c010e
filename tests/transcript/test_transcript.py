"""The transcript's pieces: pairing tool calls, cutting long values, tokens, env diffs, markdown."""

from __future__ import annotations

from prefect_agentenv.context import PromptResponse, RunContext
from prefect_agentenv.transcript import build_transcript, transcript_markdown
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
