"""Resources of one running task, reached from steps through :func:`current_run`."""

from __future__ import annotations

import asyncio
import contextvars
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

from prefect_agentenv.exceptions import AgentEnvError
from prefect_agentenv.runtime.resources.overrides import RunOverrides
from prefect_agentenv.runtime.resources.start_once import StartOnce
from prefect_agentenv.runtime.resources.teardown import TeardownRegistry

if TYPE_CHECKING:  # only named in annotations: `validate` imports the steps, which import this module
    import httpx

    from prefect_agentenv.artifacts import ArtifactBackend
    from prefect_agentenv.gateway.ledger import CallRecord
    from prefect_agentenv.gateway.limits import CallLimits
    from prefect_agentenv.gateway.pooled import PooledGateway
    from prefect_agentenv.protocols.a2a import A2AClient
    from prefect_agentenv.protocols.env import EnvClient
    from prefect_agentenv.runtime.launch.base import Instance
    from prefect_agentenv.runtime.launch.registry import Launchers
    from prefect_agentenv.runtime.resources.sandbox import Sandbox


_T = TypeVar("_T")


async def shared_lookup(table: Lookups, key: tuple[str, ...],
                        lookup: Callable[[], Awaitable[_T]]) -> _T:
    """The first successful ``lookup()`` of ``key`` in ``table``, shared by everyone who asks after
    it, including while it is still in flight (a block lookup is a Prefect API round trip). A
    failed lookup is not kept: the next caller asks again."""
    once = table.get(key)
    if once is None:
        once = table[key] = StartOnce()
    # A key names one lookup, so what is kept under it is what that lookup gives.
    return cast(_T, await once.get(lookup))


Lookups = dict[tuple[str, ...], StartOnce[object]]
"""Block lookups in flight or done, by key (see :func:`shared_lookup`)."""

_benchmark_lookups: contextvars.ContextVar[Lookups | None] = contextvars.ContextVar(
    "prefect_agentenv_benchmark_lookups", default=None)


def bind_lookups(table: Lookups) -> contextvars.Token[Lookups | None]:
    """Share ``table`` among the runs started in this context (a benchmark's task runs in its process)."""
    return _benchmark_lookups.set(table)


def unbind_lookups(token: contextvars.Token[Lookups | None]) -> None:
    _benchmark_lookups.reset(token)


def lookups_of(run: RunResources) -> Lookups:
    """Where ``run`` shares its block lookups: its benchmark run's table when it runs in one (each
    env, agent and model-endpoint block is read once per benchmark run, not once per task run),
    else its own."""
    table = _benchmark_lookups.get()
    return run.services.lookups if table is None else table


@dataclass
class RunServices:
    """The clients and registries a run's steps share, each made on first use.

    The clients are made (and registered for teardown) by the accessors in
    ``prefect_agentenv.run_services.clients``; the registries are filled by the steps that deploy.
    """

    http: httpx.AsyncClient | None = None
    """The one HTTP client (card reads, data plane, readiness probes)."""
    launchers: Launchers | None = None
    store: ArtifactBackend | None = None
    env_clients: dict[str, EnvClient] = field(default_factory=dict)
    """Data-plane clients by env instance id."""
    a2a_clients: dict[str, A2AClient] = field(default_factory=dict)
    """A2A clients by agent instance id."""
    sandboxes: dict[str, Sandbox] = field(default_factory=dict)
    """Sandbox folders by agent or sandbox instance id."""
    sandbox_env: dict[str, dict[str, str]] = field(default_factory=dict)
    """Env vars a ``deploy_sandbox`` step gave its sandbox's commands, by instance id."""
    mock_model_url: str | None = None
    """The run's one mock model server, once a step needed it."""
    mock_model_start: StartOnce[str] = field(default_factory=StartOnce)
    """The start of that server, shared by the steps (and the run's lookahead) that need it."""
    mock_model_pooled: bool = False
    """That server came from the benchmark's warm pool and goes back to it (it outlives the run)."""
    gateway: PooledGateway | None = None
    """The run's model gateway, once a step needed a model."""
    gateway_start: StartOnce[PooledGateway] = field(default_factory=StartOnce)
    """The start of that gateway, shared by the steps that need it."""
    gateway_pooled: bool = False
    """That gateway came from the benchmark's warm pool and goes back to it."""
    model_limits: CallLimits | None = None
    """The document's limits on the run's model calls, when it sets some."""
    usage_run_id: str | None = None
    """The run whose model calls this run's are counted with (an isolated-scoring run: its parent's)."""
    model_calls: list[CallRecord] | None = None
    """The gateway's records of the run's model calls, kept before it stopped."""
    calls_kept_in: RunServices | None = None
    """Where a gateway this run started keeps its records when it stops (an isolated-scoring run: its parent's)."""
    harbor_turns: dict[str, asyncio.Event] = field(default_factory=dict)
    """By agent name, on a Harbor task: set while that agent's turn is on. Its doors into the environment (the
    exec door, the environment's and the task's MCP servers) run nothing while it is clear."""
    early_agents: dict[str, tuple[str, asyncio.Future[tuple[Instance, Sandbox]]]] = field(default_factory=dict)
    """Agents the run's lookahead launched before their step, by step id: what they were launched
    with, and the launch (an instance and its sandbox)."""
    lookups: Lookups = field(default_factory=dict)
    """Block lookups by key, shared by the run's steps (see :func:`lookups_of`)."""
    user_contexts: dict[str, str | None] = field(default_factory=dict)
    agent_contexts: dict[tuple[str, str], str] = field(default_factory=dict)
    """(agent instance id, a prompt's ``context_id``) → the A2A context the agent answered in, so
    later prompts that name the same ``context_id`` continue that conversation."""
    """The A2A context of the simulated user of each multi-turn prompt, by step id."""
    started_in_task: set[str] = field(default_factory=set)
    """Steps whose body started inside their Prefect task run."""
    without_prefect: str | None = None
    """Why steps stopped being Prefect task runs (the API went away); None while they are."""
    kept_environments: dict[str, dict[str, Path]] = field(default_factory=dict)
    """Container paths a step kept for a later rescore (a Harbor verifier: the workdir the agent
    left), as tar files in the run's folder, by step id then path: part of the run's submission."""
    restored_environments: dict[str, dict[str, bytes]] | None = None
    """In the scoring run of a rescore: the kept tars of the run rescored, by step id then path
    (None outside one: a step then scores the live run)."""


@dataclass
class RunResources:
    """What a run owns besides its context: the teardown registry, its folder, its options.

    Attributes:
        run_id: unique id of the run (the flow run id when there is one).
        task_id: id of the task document.
        workdir: folder for this run's logs and sandboxes.
        keep: keep sandboxes after the run (``--keep``).
        overrides: per-run overrides such as ``a2a_agent_id`` or ``judge_model``.
        services: shared clients and stores, created lazily by the layers that own them.
    """

    run_id: str
    task_id: str
    workdir: Path
    teardown: TeardownRegistry = field(default_factory=TeardownRegistry)
    keep: bool = False
    overrides: RunOverrides = field(default_factory=RunOverrides)
    services: RunServices = field(default_factory=RunServices)
    redact: set[str] = field(default_factory=set)
    """Secret values (resolved ${VAR}s, keys) that must never reach a report or a log."""

    def step_folder(self, area: str, step_id: str) -> Path:
        """``<workdir>/<area>/<step id as one safe path segment>``: a step id comes from a document."""
        return self.workdir / area / safe_segment(step_id)


def safe_segment(name: str) -> str:
    """``name`` as one path segment that cannot climb (``..``) or nest (``/``)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip(".-")[:100] or "step"


_current: contextvars.ContextVar[RunResources | None] = contextvars.ContextVar("prefect_agentenv_run", default=None)


def current_run() -> RunResources:
    """The resources of the run this code executes in.

    Raises:
        AgentEnvError: called outside a run.
    """
    run = _current.get()
    if run is None:
        raise AgentEnvError("no task run is active: steps run inside the agent_task flow")
    return run


def bind_run(run: RunResources) -> contextvars.Token[RunResources | None]:
    """Make ``run`` the current run for this task and the tasks it creates."""
    return _current.set(run)


def unbind_run(token: contextvars.Token[RunResources | None]) -> None:
    _current.reset(token)
