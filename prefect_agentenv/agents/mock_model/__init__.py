"""The built-in mock model: a server that speaks the model wires agents use, with fixed, labelled answers.

It stands in for a real model when none is configured (so a task runs out of the box, and
its report says the mock answered), in tests, and behind coding-agent harnesses. Serve it with
``python -m prefect_agentenv.agents.mock_model --host 127.0.0.1 --port 8400`` and point an
OpenAI client at ``http://127.0.0.1:8400/v1``, an Anthropic client at the root.
docs/mock-model.md has the same description in full, with examples.

Routes (each API route also bare and under any base path: ``/v1``, ``/openai/v1``, ...):

* ``POST /v1/chat/completions``, ``POST /v1/responses``, ``POST /v1/messages`` — a chat
  completion, a Responses API response, an Anthropic message; whole, or streamed as that API's
  server-sent events when the request says ``"stream": true`` (modules ``chat``, ``responses``,
  ``messages``). Every answer says ``"model": "mock"`` whatever model was asked for, and the
  header ``x-mock-rule`` names the rule that answered (a chat completion also says
  ``system_fingerprint: "mock:<rule>"``).
* ``POST /v1/messages/count_tokens``; ``GET /v1/models`` (and ``/v1/models/{id}``) — one model,
  ``mock``. ``GET /health`` — ``{"status": "ok"}``.
* ``POST /mock/script {"replies": [...]}`` — queue replies, returned in order, one per
  completion request on any API, before any rule applies. A reply is a string (the assistant's
  text) or ``{"content", "tool_calls": [{"name", "arguments": {...} | "text", "id"?}],
  "finish_reason"?, "usage"?, "delay_seconds"?, "error": {"status", "message"}?}``.
  ``finish_reason`` defaults to ``tool_calls`` when there are calls, else ``stop``; give
  ``"length"`` to simulate a truncated response. ``error`` answers with that HTTP status and the
  API's error body; ``delay_seconds`` waits before answering.
* ``GET /mock/requests`` — ``{"requests": [{"path", "api", "has_authorization", "body"}],
  "queued"}``: every completion request received, in order (the key itself is never kept).
* ``POST /mock/reset`` — empty the queue and the request log.

Each API reads its request into one conversation (``conversation``), which the script and the
rules (``rules``) answer. Without a script, the first rule that matches answers:

1. **Judge** — a system message (or the last user message) holds the judge's criteria block
   (``<<<CRITERIA agentenv-judge/v1>>>`` … ``<<<END CRITERIA>>>``, written by
   :func:`prefect_agentenv.grading.judge.build_judge_prompt`): a JSON grading that passes every
   criterion, ``{"results": [{"id": "c1", "result": "pass", "justification": "mock judge: …"}]}``
   (``"score": 1.0`` instead of ``result`` for ``rubric_partial``). The judge's trusted
   instructions may script an erring judge: ``[mock-judge: fail c2 c3]`` fails those
   criteria, ``[mock-judge: unreadable]`` answers with no grading at all.
2. **User simulator** — a system message (or the last user message) contains
   ``[agentenv:user-simulator]``: the text ``{"message": "Thanks, that is all.", "done": true}``.
3. **CALL** — tools are offered and the last user message has lines
   ``CALL tool_name {json args}``: the first line not yet answered by a tool call after that
   message is returned as a tool call (one per completion, in order; a tool exposed as
   ``<server>__tool_name`` matches too). A line naming a tool that is not offered, or with
   arguments that are not a JSON object, gets a text reply saying so; under Codex's code mode
   (one custom ``exec`` tool) the line becomes JavaScript for ``exec`` that calls the nested tool.
4. **Shell** — a shell tool is offered (``bash``, ``terminal``, ``exec_command``, Claude Code's
   ``Bash``, Codex's code-mode ``exec``, ...) and the last user message asks to run a backticked
   command: the tool is called with it, in the shape the tool takes; once its result is back,
   the answer is the command's output (``shell``).
5. **Echo** — ``mock reply: received "<last user message, 200 chars>"`` followed by
   ``; tool results: <tool> -> <result, 160 chars>; …`` for the tool results since that message.

The judge and user-simulator rules come before CALL because their prompts quote untrusted
text that may contain CALL lines or commands.

Tokens are counted as one per four characters, the input over every message, tool call, tool
result and offered tool definition, and reported on every API in its own names. When the
request caps the answer (``max_tokens``, ``max_completion_tokens``, ``max_output_tokens``) and
a rule's text is longer, the text is cut to that many tokens and the answer finishes as
truncated. Tool calls are never cut.
"""

from prefect_agentenv.agents.mock_model.app import MockModelState, build_app, main, mock_model_command
from prefect_agentenv.agents.mock_model.conversation import MOCK_MODEL_NAME
from prefect_agentenv.agents.mock_model.rules import (
    MOCK_JUDGE_JUSTIFICATION,
    USER_SIMULATOR_ANSWER,
    USER_SIMULATOR_MARKER,
    default_answer,
)

__all__ = [
    "MOCK_JUDGE_JUSTIFICATION",
    "MOCK_MODEL_NAME",
    "USER_SIMULATOR_ANSWER",
    "USER_SIMULATOR_MARKER",
    "MockModelState",
    "build_app",
    "default_answer",
    "main",
    "mock_model_command",
]
