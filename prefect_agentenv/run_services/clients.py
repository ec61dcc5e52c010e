"""Shared clients of one run (HTTP client, launchers, artifact store), created on first use.

Each is registered with the run's teardown registry when it is created, so it is closed after
the instances that were deployed later (the registry stops newest first).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from prefect_agentenv.context import DeployedEnv, RunContext
from prefect_agentenv.exceptions import AgentEnvError, NotInContextError, PeerUnavailableError, StepError
from prefect_agentenv.runtime.resources.run import RunResources, current_run
from prefect_agentenv.steps.base import StepModel

if TYPE_CHECKING:  # the clients load on first use: step modules are imported by `validate`, which stays light
    import httpx

    from prefect_agentenv.artifacts import ArtifactBackend
    from prefect_agentenv.protocols.env import EnvClient
    from prefect_agentenv.runtime.launch.registry import Launchers


def peer_read_timeout() -> float:
    """How long one request to a peer (an agent's card, an extension call) may wait for its answer."""
    from prefect_agentenv.settings import get_settings  # on use: validate stays free of Prefect

    return get_settings().http_read_timeout_seconds


def http_client(run: RunResources) -> httpx.AsyncClient:
    """The run's one HTTP client (card reads, data plane, readiness probes)."""
    import httpx

    from prefect_agentenv.protocols.tls import ssl_context

    client = run.services.http
    if client is None:
        from prefect_agentenv.settings import get_settings

        settings = get_settings()
        timeout = httpx.Timeout(settings.http_read_timeout_seconds, connect=settings.http_connect_timeout_seconds)
        client = run.services.http = httpx.AsyncClient(timeout=timeout, trust_env=False,
                                                       verify=ssl_context(trust_env=False))
        run.teardown.add("http client", client.aclose, kind="client")
    return client


def launchers(run: RunResources) -> Launchers:
    """The run's launchers; their ``cleanup`` runs after every instance was stopped."""
    from prefect_agentenv.runtime.launch.registry import Launchers

    found = run.services.launchers
    if found is None:
        made = found = run.services.launchers = Launchers(run.run_id, http_client=http_client(run))
        run.teardown.add("launcher cleanup", lambda: made.cleanup(interrupted=False), kind="client")
    return found


async def artifact_store(run: RunResources) -> ArtifactBackend:
    """The run's artifact store (the configured block, or the local folder)."""
    from prefect_agentenv.artifacts import get_artifact_store
    from prefect_agentenv.redaction import Redactor

    store = run.services.store
    if store is None:
        made = store = run.services.store = await asyncio.to_thread(get_artifact_store)
        # Trajectories, conversations and judge records pass the run's one redaction on the way in.
        made.record_filter = lambda body: Redactor(run.redact).record(body)
        run.teardown.add("artifact store", lambda: asyncio.to_thread(made.close), kind="client")
    return store


def deployed_env(ctx: RunContext, env_id: str, step: StepModel) -> DeployedEnv:
    """The env an ancestor deployed under ``env_id``."""
    env = ctx.deployed_envs.get(env_id)
    if env is None:
        raise NotInContextError(f"Env '{env_id}' not found in context.deployed_envs", step=step)
    return env


def env_client(ctx: RunContext, env_id: str, step: StepModel) -> EnvClient:
    """A data-plane client for a deployed env (one per instance, card cached)."""
    from prefect_agentenv.protocols.env import EnvClient

    env = deployed_env(ctx, env_id, step)
    run = current_run()
    clients = run.services.env_clients
    if env.instance_id not in clients:
        base = env.base_url or env.mcp_url.rsplit("/", 1)[0]
        clients[env.instance_id] = EnvClient(base, http_client(run), name=env.env_id)
    return clients[env.instance_id]


def as_step_error(exc: AgentEnvError, step: StepModel, doing: str) -> StepError:
    """Wrap a protocol/store error so the report names the step and what it was doing: a
    :class:`PeerUnavailableError` when the store failed or a connection did (see
    :func:`peer_unavailable`), else a plain :class:`StepError`."""
    kind = PeerUnavailableError if peer_unavailable(exc) else StepError
    return kind(f"{doing}: {exc}", step=step)


def peer_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` is the store failing, or a connection refused or dropped under a peer's
    error. Not a timeout (an env the agent overloaded is slow, not gone) and not an answer the
    peer gave (a JSON-RPC error, a missing artifact, a conflict)."""
    import httpx

    from prefect_agentenv.artifacts import ArtifactStoreError

    if isinstance(exc, ArtifactStoreError):
        return True
    seen: BaseException | None = exc
    for _ in range(8):  # the cause chain, bounded
        if seen is None:
            return False
        if isinstance(seen, (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
            return True
        seen = seen.__cause__
    return False


async def read_record(run: RunResources, url: str) -> bytes | None:
    """Read back a run record by the URL ``put_object`` returned; None when it is not in this store."""
    store = await artifact_store(run)
    key = store.key_of(url)
    return None if key is None else await asyncio.to_thread(store.get_object, key)
