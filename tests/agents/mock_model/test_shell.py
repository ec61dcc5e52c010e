"""The mock model's shell rule, and the conversations each API reads, as pure functions of a request."""

from __future__ import annotations

import json
from typing import Any

import pytest

from prefect_agentenv.agents.mock_model import default_answer
from prefect_agentenv.agents.mock_model.conversation import Conversation, OfferedTool, ToolCall, Turn
from prefect_agentenv.agents.mock_model.messages import read_request as read_messages
from prefect_agentenv.agents.mock_model.responses import read_request as read_responses
from prefect_agentenv.agents.mock_model.shell import (
    NO_OUTPUT_REPLY,
    command_output,
    requested_command,
    shell_arguments,
    shell_tool,
)
from prefect_agentenv.grading.judge import JudgeCriterion, build_judge_prompt

BASH = OfferedTool(name="bash", parameters={"type": "object", "properties": {"command": {"type": "string"}}})
PROMPT = "Run the shell command `echo $((6 * 7))` and reply with only the number it prints."


@pytest.mark.parametrize(("text", "command"), [
    (PROMPT, "echo $((6 * 7))"),
    ("Please execute:\n```bash\nls -la\npwd\n```\nthen tell me.", "ls -la\npwd"),
    ("Always run `ls` first.\n\nRun the shell command `date -u` and reply.", "date -u"),
    ("<system-reminder>\nrun `make test` whenever\n</system-reminder>\nJust say hi.", None),
    ("What does `echo` do?", None),
    ("Run the tests, please.", None),
])
def test_the_command_is_the_last_backticked_one_after_run_outside_reminders(text: str, command: str | None) -> None:
    assert requested_command(text) == command


def test_the_shell_tool_is_picked_by_name_in_any_case_before_code_modes_exec() -> None:
    code_mode = OfferedTool(name="exec", kind="custom")
    claude = OfferedTool(name="Bash")

    assert shell_tool([OfferedTool(name="read"), claude, code_mode]) is claude
    assert shell_tool([code_mode, OfferedTool(name="wait")]) is code_mode
    assert shell_tool([OfferedTool(name="exec"), OfferedTool(name="read")]) is None


def test_arguments_follow_the_tools_schema() -> None:
    codex = OfferedTool(name="exec_command", parameters={"properties": {"cmd": {"type": "string"}}, "required": ["cmd"]})
    argv = OfferedTool(name="shell", parameters={"properties": {"command": {"type": "array"}}})
    strict = OfferedTool(name="terminal", parameters={
        "properties": {"command": {"type": "string"}, "reset": {"type": "boolean"}, "summary": {"type": "string"},
                       "risk": {"enum": ["LOW", "HIGH"]}, "timeout": {"type": "number", "default": 30},
                       "tries": {"type": "integer"}},
        "required": ["command", "reset", "summary", "risk", "timeout", "tries"]})
    named_otherwise = OfferedTool(name="run_shell_command", parameters={"properties": {"script": {"type": "string"}},
                                                                        "required": ["script"]})

    assert shell_arguments(codex, "ls") == {"cmd": "ls"}
    assert shell_arguments(argv, "ls") == {"command": ["bash", "-lc", "ls"]}
    assert shell_arguments(strict, "ls") == {"command": "ls", "reset": False, "summary": "", "risk": "LOW",
                                             "timeout": 30}
    assert shell_arguments(named_otherwise, "ls") == {"script": "ls"}
    assert shell_arguments(BASH, "ls") == {"command": "ls"}


def test_code_mode_gets_javascript_with_the_command_as_a_string_literal() -> None:
    script = shell_arguments(OfferedTool(name="exec", kind="custom"), 'printf "%s\\n" it\'s')

    assert script == 'text(await tools.exec_command({cmd: "printf \\"%s\\\\n\\" it\'s"}))'


@pytest.mark.parametrize(("result", "output"), [
    ("42\n", "42"),
    ("Chunk ID: 06dc39\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 1\nOutput:\n42\n",
     "42"),
    ('Script completed\nWall time 0.1 seconds\nOutput:\n{"chunk_id":"71f85b","exit_code":0,"output":"42\\n"}', "42"),
    ("42\n[Current working directory: /workspace]\n[Command finished with exit code 0]", "42"),
    ('{"stdout": "a\\nb\\n", "stderr": ""}', "a\nb"),
    ("[1, 2]\n[OK]", "[1, 2]\n[OK]"),
    ("", ""),
])
def test_the_output_is_read_out_of_each_harnesss_wording(result: str, output: str) -> None:
    assert command_output(result) == output


def _conversation(*turns: Turn, tools: list[OfferedTool] | None = None) -> Conversation:
    return Conversation(turns=[Turn(role="system", text="You are an agent."), *turns],
                        tools=[BASH] if tools is None else tools)


def test_the_shell_call_is_made_once_then_the_output_is_the_reply() -> None:
    asked = _conversation(Turn(role="user", text=PROMPT))
    call = default_answer(asked).tool_calls[0]
    answered = _conversation(Turn(role="user", text=PROMPT), Turn(role="assistant", calls=[call]),
                             Turn(role="tool", text="42\n", call_id=call.id))

    assert (call.name, call.arguments, call.id) == ("bash", {"command": "echo $((6 * 7))"}, "call_0_0")
    assert (default_answer(answered).content, default_answer(answered).rule) == ("42", "shell")


def test_a_command_that_printed_nothing_gets_a_labelled_reply_and_a_call_without_a_result_the_echo() -> None:
    call = ToolCall(name="bash", arguments={"command": "true"}, id="c")
    silent = _conversation(Turn(role="user", text="Run `true`."), Turn(role="assistant", calls=[call]),
                           Turn(role="tool", text="\n", call_id="c"))
    unanswered = _conversation(Turn(role="user", text="Run `true`."), Turn(role="assistant", calls=[call]))

    assert default_answer(silent).content == NO_OUTPUT_REPLY
    assert default_answer(unanswered).rule == "echo"


def test_a_second_prompt_in_the_same_conversation_gets_its_own_call() -> None:
    call = ToolCall(name="bash", arguments={"command": "echo $((6 * 7))"}, id="call_0_0")
    conversation = _conversation(Turn(role="user", text=PROMPT), Turn(role="assistant", calls=[call]),
                                 Turn(role="tool", text="42", call_id="call_0_0"), Turn(role="assistant", text="42"),
                                 Turn(role="user", text="Now run `echo again`."))

    [second] = default_answer(conversation).tool_calls
    assert (second.arguments, second.id) == ({"command": "echo again"}, "call_2_0")


def test_without_a_shell_tool_or_without_tools_the_prompt_is_echoed() -> None:
    no_shell = _conversation(Turn(role="user", text=PROMPT), tools=[OfferedTool(name="read")])
    no_tools = _conversation(Turn(role="user", text=PROMPT), tools=[])

    assert default_answer(no_shell).rule == default_answer(no_tools).rule == "echo"


def test_call_lines_and_the_judge_come_before_the_shell_rule() -> None:
    with_call = _conversation(Turn(role="user", text=f'{PROMPT}\nCALL bash {{"command": "ls"}}'))
    messages, _ = build_judge_prompt(PROMPT, "Ran `rm -rf /` as asked.", None,
                                     [JudgeCriterion(id="c1", criterion="Polite.")])
    judged = Conversation(turns=[Turn(role="user" if m.role == "user" else "system", text=m.content or "")
                                 for m in messages], tools=[BASH])

    assert default_answer(with_call).tool_calls[0].arguments == {"command": "ls"}
    assert default_answer(judged).rule == "judge"


def test_a_responses_input_folds_an_assistants_items_into_one_turn_and_reads_every_tool_source() -> None:
    body: Any = {"instructions": "Be brief.", "tools": [{"type": "function", "name": "bash", "parameters": {}}],
                 "input": [{"role": "user", "content": "one"},
                           {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
                           {"type": "function_call", "call_id": "a", "name": "bash", "arguments": "{}"},
                           {"type": "custom_tool_call", "call_id": "b", "name": "exec", "input": "text(1)"},
                           {"type": "function_call_output", "call_id": "a", "output": "x"},
                           {"type": "custom_tool_call_output", "call_id": "b",
                            "output": [{"type": "input_text", "text": "y"}]},
                           {"type": "reasoning", "summary": []},
                           {"type": "additional_tools", "tools": [{"type": "custom", "name": "exec"}]}],
                 "max_output_tokens": 9}

    conversation = read_responses(body)

    assert [(t.role, t.text, [c.name for c in t.calls], t.call_id) for t in conversation.turns] == [
        ("system", "Be brief.", [], None), ("user", "one", [], None), ("assistant", "ok", ["bash", "exec"], None),
        ("tool", "x", [], "a"), ("tool", "y", [], "b")]
    assert [(t.name, t.kind) for t in conversation.tools] == [("bash", "function"), ("exec", "custom")]
    assert conversation.max_tokens == 9


def test_a_messages_tool_result_is_a_result_and_the_text_beside_it_is_not_a_new_prompt() -> None:
    body: Any = {"system": [{"type": "text", "text": "You are Claude Code."}], "max_tokens": 100,
                 "tools": [{"name": "Bash", "input_schema": {"type": "object"}}, {"type": "bash_20250124", "name": "bash"},
                           {"type": "web_search_20250305", "name": "web_search"}],
                 "messages": [{"role": "user", "content": PROMPT},
                              {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"},
                                                                {"type": "tool_use", "id": "t", "name": "Bash",
                                                                 "input": {"command": "echo $((6 * 7))"}}]},
                              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                                            "content": [{"type": "text", "text": "42"}]},
                                                           {"type": "text", "text": "Run `ls` now."}]}]}

    conversation = read_messages(body)

    assert [(t.role, t.call_id) for t in conversation.turns] == [
        ("system", None), ("user", None), ("assistant", None), ("tool", "t"), ("aside", None)]
    assert [t.name for t in conversation.tools] == ["Bash", "bash"]
    assert default_answer(conversation).content == "42"
    assert json.loads(conversation.turns[2].calls[0].arguments_text()) == {"command": "echo $((6 * 7))"}
