"""Everything a step type of your own needs, from one module (docs/step-types.md walks through one).

A step type is a fields model and an ``async def run(step, ctx) -> ctx``, registered under the
``prefect_agentenv.steps`` entry-point group (entry name == the model's ``type``)::

    from typing import Literal

    from prefect_agentenv.plugin import PromptRef, RunContext, StepDefinition, VerifierStep, normalize_row, scored

    class ShortReplyStep(VerifierStep):
        \"\"\"Passes when the reply has at most max_words words.\"\"\"

        type: Literal["short_reply"] = "short_reply"
        prompt_id: PromptRef
        \"\"\"The reply to check.\"\"\"
        max_words: int = 50
        \"\"\"Longest reply that passes.\"\"\"

    async def run(step: ShortReplyStep, ctx: RunContext) -> RunContext:
        words = len(ctx.prompt_responses[step.prompt_id].response.split())
        row = {"id": "short", "result": "pass" if words <= step.max_words else "fail"}
        ctx.metadata.verifications[step.verifier_id] = scored(
            [normalize_row(row, 0)], aggregator=step.score_aggregator, weight=step.weight)
        return ctx

    definition = StepDefinition(ShortReplyStep, run)

What is here, by the part of a step it serves:

* **fields**: :class:`StepModel` (the fields every step has) and :class:`VerifierStep` (those of
  a step that writes ``metadata.verifications``: ``verifier_id``, ``weight``, ``score_aggregator``
  with the type's ``default_aggregator``, the skip options); :class:`Provides` / :class:`Requires`
  and the ``*Ref`` annotations, which give a field the "no ancestor provides it" check;
  :data:`Identifier` and :data:`SandboxPath` for ids and sandbox paths checked as written;
  :class:`FieldError` for a validator that says where a value is wrong.
* **registration**: :class:`StepDefinition`, :func:`register` (tests and notebooks; installed
  plugins use the entry point), :data:`ENTRY_POINT_GROUP`.
* **the run**: the context a step receives and returns (:class:`RunContext` and the records in
  it), :func:`current_run` (the run's teardown registry, folder, overrides and shared clients),
  and the accessors that find what an ancestor deployed or make a client on first use.
* **verifications**: :func:`scored`, :func:`skipped`, :func:`errored`, :func:`prompt_error`,
  :func:`skip_reason`, :func:`normalize_row` and the models they build.
* **errors**: :class:`StepError` (``StepError(message, step=step)``) and the subclasses a step
  raises; an ``AgentEnvError`` fails the step with its message and no traceback.

Importing this module stays light (no Prefect, no HTTP client): ``validate`` imports every
registered step module, so a step module imports what only ``run`` needs inside ``run``.
"""

from __future__ import annotations

from prefect_agentenv.context import (
    Aggregator,
    DeployedAgent,
    DeployedEnv,
    DeployedSandbox,
    PromptResponse,
    RunContext,
    RunMetadata,
    Verification,
)
from prefect_agentenv.exceptions import (
    AgentEnvError,
    AgentTimeoutError,
    ConfigurationError,
    DeployError,
    NotInContextError,
    PeerUnavailableError,
    ProtocolError,
    StepError,
)
from prefect_agentenv.grading.aggregate import VerificationRow, aggregate
from prefect_agentenv.grading.verification import errored, normalize_row, prompt_error, scored, skip_reason, skipped
from prefect_agentenv.run_services.agents import a2a_client, deployed_agent, sandbox_of
from prefect_agentenv.run_services.clients import (
    artifact_store,
    as_step_error,
    deployed_env,
    env_client,
    http_client,
    launchers,
    peer_read_timeout,
    read_record,
)
from prefect_agentenv.run_services.sandboxes import deployed_sandbox, sandbox_target
from prefect_agentenv.runtime.resources.run import RunResources, current_run
from prefect_agentenv.runtime.resources.sandbox import Sandbox
from prefect_agentenv.runtime.resources.teardown import TeardownRegistry
from prefect_agentenv.steps.base import (
    DEFAULT_AGENT_NAME,
    AgentRef,
    CollectRef,
    EnvRef,
    FieldError,
    Identifier,
    NameKind,
    PromptRef,
    Provides,
    Requires,
    SandboxPath,
    SandboxRef,
    StepModel,
    VerifierRef,
    VerifierStep,
    check_sandbox_path,
    listed_field,
)
from prefect_agentenv.steps.registry import ENTRY_POINT_GROUP, RunFunction, StepDefinition, register

__all__ = [
    "AgentEnvError",
    "AgentRef",
    "AgentTimeoutError",
    "Aggregator",
    "CollectRef",
    "ConfigurationError",
    "DEFAULT_AGENT_NAME",
    "DeployError",
    "DeployedAgent",
    "DeployedEnv",
    "DeployedSandbox",
    "ENTRY_POINT_GROUP",
    "EnvRef",
    "FieldError",
    "Identifier",
    "NameKind",
    "NotInContextError",
    "PeerUnavailableError",
    "PromptRef",
    "PromptResponse",
    "ProtocolError",
    "Provides",
    "Requires",
    "RunContext",
    "RunFunction",
    "RunMetadata",
    "RunResources",
    "Sandbox",
    "SandboxPath",
    "SandboxRef",
    "StepDefinition",
    "StepError",
    "StepModel",
    "TeardownRegistry",
    "Verification",
    "VerificationRow",
    "VerifierRef",
    "VerifierStep",
    "a2a_client",
    "aggregate",
    "artifact_store",
    "as_step_error",
    "check_sandbox_path",
    "current_run",
    "deployed_agent",
    "deployed_env",
    "deployed_sandbox",
    "env_client",
    "errored",
    "http_client",
    "launchers",
    "listed_field",
    "normalize_row",
    "peer_read_timeout",
    "prompt_error",
    "read_record",
    "register",
    "sandbox_of",
    "sandbox_target",
    "scored",
    "skip_reason",
    "skipped",
]
