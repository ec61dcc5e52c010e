"""Coding-agent harnesses (OpenCode, Codex CLI, pi, OpenHands, Claude Code, Gemini CLI) behind
AgentEnv's own A2A wrappers, installed by name and run as local processes.

* ``catalog`` — each harness: where its CLI comes from, the Python and Node it needs, the
  variables that give it a world of its own in a sandbox and carry the run's model endpoint.
* ``toolchain`` — the registry clients and interpreters an install uses (npm, Node, uv, Python).
* ``installer`` — ``agent install``: a folder of its own per harness, pinned, idempotent.
* ``installed`` — what is installed (each folder's manifest) and how an installed one launches.
* ``endpoint`` — the run's model endpoint in the variables each wrapper reads.
"""
