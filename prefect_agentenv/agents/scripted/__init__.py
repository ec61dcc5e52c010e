"""The ``scripted`` reference agent: does exactly what its plan says, for tests and demos.

Serve it with ``python -m prefect_agentenv.agents.scripted --host 127.0.0.1 --port 9001``.

A plan is a JSON object::

    {
      "tool_calls": [{"server": "email", "tool": "send", "arguments": {"to": "dana@example.com", ...}}],
      "files": [{"path": "/app/artifact/summary.md", "content": "..."}],
      "reply": "Sent {tool_results[0][id]}.",
      "fail": {"error_type": "quota", "message": "out of budget", "error_code": "E42"},   # optional
      "sleep_seconds": 0.5,                                                              # optional
      "die": false                                                                       # optional
    }

Per prompt the agent takes the first plan it finds:

1. a ``PLAN:`` line in the prompt, followed by a JSON object (on the same line or the next
   ones) — handy for multi-turn tests, where each prompt carries its own plan;
2. the agent-config field ``plan`` (an object, or a list whose n-th entry is for the n-th
   prompt of a conversation, the last one repeating);
3. ``plan.json`` in the agent's working folder (object or list, as above);
4. the default plan: no tools, the reply ``I received: {prompt}``.

Running a plan, in order: each tool call goes to the MCP server named ``server`` (the one
configured when there is only one; else the one that has the tool); each file is written
(absolute paths map under the sandbox root, see :func:`~prefect_agentenv.agents.server.sandbox_path`);
the agent sleeps ``sleep_seconds``; with ``die`` the process exits at once (code 17), as a
crashing agent would; with ``fail`` the task ends ``failed`` with that error in the data part;
otherwise the reply is sent. The reply is a ``str.format`` template over ``tool_results``
(each result's structured data, else its text), ``prompt``, ``turn`` and ``steered`` (so
literal braces are written ``{{`` and ``}}``).

The agent takes live steering (its card declares the steering extension,
:mod:`prefect_agentenv.protocols.steering`): a message sent into its task while it is still
``working`` (same ``taskId`` and ``contextId``) is read at its safe point — after the tool calls,
the files and the sleep, just before the reply — recorded in the trajectory as a user message
with ``steered: true``, and given to the reply template as ``steered`` (one message a line)
and to the reply's data part as ``steered``. A tool that answers with an error is an ordinary result, as for any
agent; only a server that cannot be reached fails the task.

``tool_call_count`` counts every tool call of the trajectory: the MCP calls and the file writes
(recorded as the built-in tool ``write_file``).
"""

from prefect_agentenv.agents.scripted.agent import ScriptedAgent
from prefect_agentenv.agents.scripted.plan import Plan, PlanFailure, PlannedFile, PlannedToolCall

__all__ = ["Plan", "PlanFailure", "PlannedFile", "PlannedToolCall", "ScriptedAgent"]
