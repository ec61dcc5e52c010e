"""The ``judge`` reference agent: grades a reply against rubric criteria with a model.

Serve it with ``python -m prefect_agentenv.agents.judge --host 127.0.0.1 --port 9004``; its model
endpoint comes from ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and ``AGENTENV_MODEL`` in its
environment (the launcher resolves the judge role and passes them).

Each prompt is the whole grading request as one text, as
:func:`prefect_agentenv.grading.judging.judge_messages_as_text` writes it: the judge's
instructions (the system part, with the criteria block) between
``<<<JUDGE INSTRUCTIONS agentenv-judge/v1>>>`` and ``<<<END JUDGE INSTRUCTIONS>>>`` lines, then
the grading request. The agent gives the model the first part as the system message and the
rest as the user message; a text without that block is one user message. The reply is the
model's answer, unparsed: the caller reads it with
:func:`~prefect_agentenv.grading.judge.parse_judge_output`.

One A2A context is one grading conversation: a corrective follow-up sent with the same
``context_id`` reaches a model that sees the earlier request and its own answer.

The model may call one tool, ``read_file(path)``, to open files the request names: absolute
sandbox paths such as ``/tmp/file_artifacts/q3.png`` map under the sandbox root (see
:func:`~prefect_agentenv.runtime.resources.sandbox.sandbox_path`), text files come back as text and a binary
file is described by name, size and type. Every model call and file read is recorded in the
task's trajectory.

Agent-config: ``system_prompt`` (sent before the judge's instructions), ``model`` (overrides
``AGENTENV_MODEL``), ``max_turns`` (model calls per request, default 8; the last one offers no
tool, so the model must answer) and ``max_turn_tokens`` (a cut-off answer is marked
``is_truncated`` in the reply's data part).
"""

from prefect_agentenv.agents.judge.agent import READ_FILE, JudgeAgent, read_sandbox_file

__all__ = ["READ_FILE", "JudgeAgent", "read_sandbox_file"]
