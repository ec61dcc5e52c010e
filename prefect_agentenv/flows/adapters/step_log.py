"""What each step did, said in its task run's Prefect log: what it deployed and where, what an
agent answered, how a verifier scored, and why it failed.

The lines are computed from the context the step returned compared with the one it was given, so
every step type (plugins included) gets them without logging code of its own. The package's own
loggers (``prefect_agentenv.*``) are also sent to the Prefect API while a flow or task run is
active, so warnings from deep inside a step land on that step's task run too.
"""

from __future__ import annotations

import logging

from prefect.context import FlowRunContext, TaskRunContext
from prefect.logging.handlers import APILogHandler

from prefect_agentenv.context import RunContext
from prefect_agentenv.grading.verification import read_all

_REPLY_CHARS = 300
"""How much of an agent's reply a log line quotes (the report keeps all of it)."""


def describe_step(inputs: list[RunContext], after: RunContext) -> list[str]:
    """One line per thing the step added to the context its dependencies gave it."""
    before = _Seen(inputs)
    lines = [f"deployed env {env_id} {env.version or ''} ({env.instance_id}): MCP at {env.mcp_url}".replace("  ", " ")
             for env_id, env in after.deployed_envs.items() if env_id not in before.envs]
    lines += [f"deployed agent {name} from {agent.a2a_agent_id or '?'} ({agent.instance_id}): A2A at {agent.a2a_url}"
              + (f", model {agent.model}" if agent.model else "") + (f", sandbox {agent.sandbox}" if agent.sandbox else "")
              for name, agent in after.deployed_agents.items() if name not in before.agents]
    for prompt_id, reply in after.prompt_responses.items():
        if before.prompts.get(prompt_id) == reply:
            continue
        if reply.error:
            lines.append(f"prompt {prompt_id}: the agent answered with an error: {reply.error}")
            continue
        text = reply.response if len(reply.response) <= _REPLY_CHARS else reply.response[:_REPLY_CHARS] + "…"
        tools = f" after {reply.tool_call_count} tool call(s)" if reply.tool_call_count is not None else ""
        lines.append(f"prompt {prompt_id}: the agent answered{tools}: {text!r}")
    for verifier_id, verification in read_all(after.metadata.verifications).items():
        if before.verifications.get(verifier_id) != verification:
            lines.append(f"verification {verifier_id}: score {verification.score}"
                         f" ({len(verification.results)} row(s))")
    lines += [f"collected artifact {key}" for key in after.metadata.collected_artifacts
              if key not in before.artifacts]
    return lines


class _Seen:
    """What the inputs already held, without the cost of merging them."""

    def __init__(self, inputs: list[RunContext]) -> None:
        self.envs = {k for ctx in inputs for k in ctx.deployed_envs}
        self.agents = {k for ctx in inputs for k in ctx.deployed_agents}
        self.prompts = {k: v for ctx in inputs for k, v in ctx.prompt_responses.items()}
        self.verifications = {k: v for ctx in inputs for k, v in ctx.metadata.verifications.items()}
        self.artifacts = {k for ctx in inputs for k in ctx.metadata.collected_artifacts}


class _InRunOnly(logging.Filter):
    """Outside a flow or task run (a notebook session, the CLI's validation) there is no run to log to."""

    def filter(self, record: logging.LogRecord) -> bool:
        return FlowRunContext.get() is not None or TaskRunContext.get() is not None


_HANDLER: APILogHandler | None = None


def send_package_logs_to_prefect() -> None:
    """Attach Prefect's API log handler to the package's loggers (once per process), at the level
    they are configured with (warnings by default; ``PREFECT_LOGGING_LEVEL`` style tuning applies)."""
    global _HANDLER
    if _HANDLER is not None:
        return
    _HANDLER = APILogHandler()
    _HANDLER.addFilter(_InRunOnly())
    logging.getLogger("prefect_agentenv").addHandler(_HANDLER)
