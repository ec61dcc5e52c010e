"""The exception tree of prefect-agentenv.

Every error the package raises on purpose derives from ``AgentEnvError``::

    AgentEnvError
    ├── TaskDocumentError        a document is invalid; ``.problems`` lists every problem
    ├── ContextConflictError     two dependencies disagree on one context key
    ├── InstanceExitedError      an env or agent process exited on its own during the run; ``.exit_code``
    ├── ConfigurationError       a registry entry, block or setting is missing or wrong
    │   ├── PrefectApiUnavailableError  the Prefect API failed while a block was loaded (retried)
    │   └── RunNotFoundError     no benchmark run in progress answers to the id or slug given
    ├── InstallError             a harness could not be installed; the message names the package and the answer
    ├── LocalServerError         the home's local Prefect server could not be started or stopped; the message names its log
    ├── BwrapUnavailableError    bubblewrap is missing or cannot make its namespaces here
    ├── FreshContainerError      docker refused to create a grading container (also a ``RuntimeError``)
    ├── ShardTaskRunError        a shard could not start one of its task runs (also a ``RuntimeError``)
    ├── LabelFileError           a human-label file cannot be read; names file, line, field (also a ``ValueError``)
    ├── JudgeGateRefusedError    the judge gate refused a benchmark before any task run started
    ├── ImageError               a Harbor task's image cannot be built or found; names docker's log (also a ``RuntimeError``)
    ├── HarborEnvironmentError   docker refused to start a Harbor task's environment or copy into it (also a ``RuntimeError``)
    ├── StepError                a step failed; ``.step_id`` and ``.step_type`` name it
    │   ├── DeployError          an env or agent could not be deployed or never became ready
    │   │   └── ResourceLimitError   a confined agent hit one of its limits before it was ready; ``.limit``
    │   ├── NotInContextError    a step names an env/agent/prompt no ancestor provided
    │   ├── PeerUnavailableError the store failed, or a peer's connection failed, under a step
    │   └── AgentTimeoutError    an agent did not answer in time (also a ``TimeoutError``)
    │       └── PromptTimeoutError   a prompt timed out; ``.reply`` is the task as last seen
    ├── ProtocolError            a peer answered wrongly or not at all; ``.url`` names it
    │   ├── EnvRpcError               an env answered a JSON-RPC error; ``.code``, ``.data``
    │   ├── UnsupportedOperationError an env's card does not offer the operation (no data plane, …)
    │   └── McpError                  an MCP server answered an error or could not be reached
    │       └── McpToolError          a tool call came back flagged ``isError``
    ├── UnsafeSandboxPathError   a path would leave an agent's sandbox (also a ``ValueError``)
    ├── JudgeOutputError         a judge's answer is not one grade per criterion; ``.corrective_message``
    └── ArtifactError            the artifact store refused or failed an operation
        ├── UnsafeKeyError              a key taken from a document would leave the store
        ├── ArtifactNotFoundError       no such artifact, version, file or record
        ├── ArtifactConflictError       a published version exists with other content
        ├── ArtifactIntegrityError      stored bytes do not match their sha256
        ├── ArtifactStoreError          the store failed or is unreachable (also a ``ProtocolError``)
        └── PublishConflictError        a benchmark version is already published with other content

The classes outside this module live beside what raises them: the ``ArtifactError`` subclasses in
:mod:`prefect_agentenv.artifacts` (``PublishConflictError`` in
:mod:`prefect_agentenv.documents.published.store`), ``PromptTimeoutError`` in
:mod:`prefect_agentenv.protocols.a2a`, ``UnsafeSandboxPathError`` in
:mod:`prefect_agentenv.runtime.resources.sandbox`, ``BwrapUnavailableError`` and
``FreshContainerError`` in :mod:`prefect_agentenv.runtime.confinement`, ``ShardTaskRunError`` in
:mod:`prefect_agentenv.flows.fleet.shards`, ``LabelFileError`` in
:mod:`prefect_agentenv.results.judges.labels`, ``JudgeGateRefusedError`` in
:mod:`prefect_agentenv.flows.judge_preflight`, ``RunNotFoundError`` in
:mod:`prefect_agentenv.flows.control.channel`, ``ImageError`` and ``HarborEnvironmentError`` in
:mod:`prefect_agentenv.runtime.harbor`. ``tests/test_exceptions.py`` holds this drawing to
the code.

Third-party errors (httpx, mcp, a2a, botocore) are mapped to these at the protocol
boundary with ``raise ... from``, so steps never catch foreign types.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    # Names for annotations only: the context package imports this module, and problems.py is plain data.
    from prefect_agentenv.context import RunContext, VerificationRow
    from prefect_agentenv.problems import Problem


class AgentEnvError(Exception):
    """Base class of every error raised on purpose by prefect-agentenv."""


class TaskDocumentError(AgentEnvError):
    """A task or benchmark document is invalid.

    Attributes:
        problems: every problem found, each with its step id, JSON path and a fix hint.
    """

    def __init__(self, problems: list[Problem], source: str | None = None) -> None:
        self.problems = problems
        self.source = source
        where = f"{source}: " if source else ""
        lines = "\n".join(f"  - {p.render()}" for p in problems)
        super().__init__(f"{where}{len(problems)} problem(s) in the document:\n{lines}")


class ContextConflictError(AgentEnvError):
    """Two dependencies of a step returned different values for the same context key."""


class InstanceExitedError(AgentEnvError):
    """An instance the run started (env, agent) was already gone when teardown came to stop it.

    Attributes:
        exit_code: its exit code (negative: the signal that ended it), when known.
    """

    def __init__(self, message: str, exit_code: int | None = None, limit: str | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.limit = limit
        """The resource limit that stopped it (``memory limit (memory_limit_mb=512)``), when one did."""


class ConfigurationError(AgentEnvError):
    """A registry entry, block or setting is missing or inconsistent."""


class PrefectApiUnavailableError(ConfigurationError):
    """The Prefect API failed (a 5xx, a dropped connection) while a block was loaded: a busy
    server's failure, which the same run may not meet again, so a benchmark retries it (a plain
    :class:`ConfigurationError` would fail again and is not retried)."""


class InstallError(AgentEnvError):
    """A coding-agent harness could not be installed: a registry refused a package, a tool is missing."""


class LocalServerError(AgentEnvError):
    """The local Prefect server of the agentenv home did not start (or stop) in time; the message
    names its log, where the server's own words are."""


class NamedStep(Protocol):
    """What an error needs of the step it names: its id and type (every step model has both)."""

    @property
    def id(self) -> str: ...

    @property
    def type(self) -> str: ...


class StepError(AgentEnvError):
    """A step failed.

    ``StepError(message, step=step)`` names the step; ``step_id=`` / ``step_type=`` name one
    without a model at hand (and win over ``step`` when both are given).

    Attributes:
        step_id: the id of the failing step, when known.
        step_type: its type, when known.
        context: what the step produced before it failed (a failed prompt still leaves its
            PromptResponse); kept in the run's context when the failure is tolerated or fatal.
    """

    def __init__(self, message: str, *, step: NamedStep | None = None, step_id: str | None = None,
                 step_type: str | None = None, context: RunContext | None = None) -> None:
        super().__init__(message)
        self.step_id = step_id if step_id is not None or step is None else step.id
        self.step_type = step_type if step_type is not None or step is None else step.type
        self.context = context


class DeployError(StepError):
    """An env or agent could not be started, or never became ready."""


class ResourceLimitError(DeployError):
    """A confined agent was stopped by one of its resource limits before it was ready: the agent's failure
    (it used more than the task allows), not the infrastructure's.

    Attributes:
        limit: the limit, as errors name it (``process limit (process_limit=20)``).
    """

    def __init__(self, message: str, *, limit: str) -> None:
        super().__init__(message)
        self.limit = limit


class NotInContextError(StepError):
    """A step names something (env, agent, prompt) that no ancestor put in the context."""


class PeerUnavailableError(StepError):
    """A step failed because the artifact store failed or a peer's connection was refused or
    dropped — the machinery under the step broke, not the agent's work.

    :func:`~prefect_agentenv.run_services.clients.as_step_error` raises it in place of a plain
    :class:`StepError`, so a benchmark can count the failure as infrastructure even after the
    prompt was sent (the error's class is what the report keeps, not its cause).
    """


class AgentTimeoutError(StepError, TimeoutError):
    """An agent, judge or script did not finish within its timeout."""


class ProtocolError(AgentEnvError):
    """A peer (env, agent, model, store) answered with an error or not at all.

    Attributes:
        url: the address that was called.
        code: a protocol error code when the peer sent one (JSON-RPC, HTTP status).
    """

    def __init__(self, message: str, *, url: str | None = None, code: int | str | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.code = code


class ArtifactError(AgentEnvError):
    """The artifact store refused or failed an operation; subclasses in :mod:`prefect_agentenv.artifacts`."""


class EnvRpcError(ProtocolError):
    """An env's JSON-RPC endpoint answered with an error object.

    Attributes:
        code: the JSON-RPC error code (-32601 unknown method, -32602 bad params, -32000 env error).
        data: the error's ``data`` member, as sent.
        method: the JSON-RPC method that was called.
    """

    def __init__(self, message: str, *, url: str | None = None, code: int, data: Any = None,
                 method: str | None = None) -> None:
        super().__init__(message, url=url, code=code)
        self.data = data
        self.method = method

    @property
    def error_code(self) -> str | None:
        """The env's own error name from ``data.code`` (for -32000 errors), when it sent one."""
        if isinstance(self.data, dict):
            value = self.data.get("code")
            return None if value is None else str(value)
        return None


class UnsupportedOperationError(ProtocolError):
    """An env's card says it does not offer an operation, so it is not attempted.

    Raised instead of calling (and possibly hanging on) an env that has no data plane
    (``operations: []``), serves no card at all (a plain MCP server), or does not declare
    the extension a step needs.

    Attributes:
        operation: the data-plane method or extension URI that was wanted.
    """

    def __init__(self, message: str, *, url: str | None = None, operation: str) -> None:
        super().__init__(message, url=url)
        self.operation = operation


class McpError(ProtocolError):
    """An MCP server answered with a JSON-RPC error, or could not be reached or understood.

    Attributes:
        data: the error's ``data`` member when the server sent one.
    """

    def __init__(self, message: str, *, url: str | None = None, code: int | str | None = None,
                 data: Any = None) -> None:
        super().__init__(message, url=url, code=code)
        self.data = data


class McpToolError(McpError):
    """A tool call completed but its result is flagged ``isError``; the message is the tool's text.

    Attributes:
        tool: the name of the tool that failed.
    """

    def __init__(self, message: str, *, url: str | None = None, tool: str) -> None:
        super().__init__(message, url=url)
        self.tool = tool


class JudgeOutputError(AgentEnvError):
    """A judge's answer could not be read as exactly one grade per criterion.

    Raised by the judge-output parser so the caller can ask again: ``corrective_message`` is
    written to be sent back to the judge as the next user message.

    Attributes:
        problems: what is wrong with the answer, one sentence each.
        corrective_message: the message that tells the judge what to fix and restates the format.
        partial_rows: the rows that could be read, for a caller that gives up retrying.
        raw_outputs: every answer the judge gave, in order, when the caller gave up after retrying
            (empty when raised by the parser for one answer).
    """

    def __init__(self, problems: list[str], *, corrective_message: str,
                 partial_rows: list[VerificationRow] | None = None,
                 raw_outputs: list[str] | None = None) -> None:
        self.problems = problems
        self.corrective_message = corrective_message
        self.partial_rows = list(partial_rows or [])
        self.raw_outputs = list(raw_outputs or [])
        super().__init__("the judge's answer could not be graded: " + "; ".join(problems))
