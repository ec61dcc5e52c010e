"""Probing a running peer: what of the env or agent protocol it speaks, and what it lacks.

Used by ``prefect-agentenv env check`` / ``agent check`` and by the ``verify_env_card`` and
``verify_a2a_core_protocol`` steps. Each probe is one row: ``ok`` (it answered as the card says),
``declared`` (the card offers it; not called because calling would change the peer or this runner
does not use it), ``missing`` (the peer does not offer it; says what that means for a task),
``warning`` (it works, but something is off), ``failed`` (it claims to and does not).

Only ``failed`` rows are hard failures. A missing card is not one: a plain MCP server has none.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Literal
from urllib.parse import urljoin

import httpx
import httpx2
from pydantic import BaseModel, Field

from prefect_agentenv.exceptions import AgentEnvError, McpError, ProtocolError
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.protocols.a2a import DEFAULT_REQUEST_TIMEOUT, A2ACard, A2AClient
from prefect_agentenv.protocols.agentenv_ext import (
    AGENT_CONFIG_EXTENSION,
    MCP_CONFIG_EXTENSION,
    SKILL_CONFIG_EXTENSION,
    TRAJECTORY_EXTENSION,
    AgentEnvExtensions,
)
from prefect_agentenv.protocols.env import (
    CLOCK_EXTENSION,
    DATA_OPERATIONS,
    TRIGGERS_EXTENSION,
    EnvCard,
    EnvClient,
)

ProbeStatus = Literal["ok", "declared", "missing", "warning", "failed"]

_AGENT_LACKS = {
    MCP_CONFIG_EXTENSION: "envs cannot be given to it: a deploy_agent's env_ids are reported, not sent",
    AGENT_CONFIG_EXTENSION: "system_prompt, model and agent_config are reported, not sent",
    SKILL_CONFIG_EXTENSION: "skills are reported, not sent",
    TRAJECTORY_EXTENSION: "no trajectory is stored for its prompts (the reply is still graded)",
}
"""What a task loses when an agent lacks one of the standard extensions."""


class ProbeRow(BaseModel):
    """One thing probed."""

    check: str
    """What was probed: ``card``, ``data/get``, ``mcp tools``, an extension URI, ..."""
    status: ProbeStatus
    detail: str = ""


class ProbeReport(BaseModel):
    """Everything probed on one peer."""

    peer: str
    """``env`` or ``agent``."""
    url: str
    rows: list[ProbeRow] = Field(default_factory=list)
    card: JsonObject | None = None
    """The card as served (``None`` when there is none)."""

    @property
    def ok(self) -> bool:
        """No hard failure."""
        return all(r.status != "failed" for r in self.rows)

    def add(self, check: str, status: ProbeStatus, detail: str = "") -> None:
        self.rows.append(ProbeRow(check=check, status=status, detail=detail))

    async def attempt(self, check: str, call: Callable[[], Awaitable[str]], *, not_found_is: ProbeStatus = "failed",
                      ) -> bool:
        """Run one probe: ``ok`` with what it returned, or ``failed`` with the peer's error.

        Args:
            not_found_is: the status of an HTTP 404 answer (a lookup of something the peer may
                rightly not have, such as the trajectory of a task that made no tool call).
        """
        try:
            self.add(check, "ok", await call())
        except AgentEnvError as exc:
            status = not_found_is if isinstance(exc, ProtocolError) and exc.code == 404 else "failed"
            self.add(check, status, str(exc))
            return False
        return True


# --- env --------------------------------------------------------------------------------------


async def probe_env(base_url: str, *, http: httpx.AsyncClient, mcp_http: httpx2.AsyncClient | None = None,
                    name: str | None = None, mcp_url: str | None = None, mcp_timeout: float = 30.0) -> ProbeReport:
    """Probe an env: card, data plane (``data/get`` only), MCP tool listing, declared extensions.

    Args:
        base_url: the instance's root URL.
        mcp_url: where its MCP endpoint is when the card does not say (default ``/mcp``).
        mcp_timeout: how long each MCP request may wait for its answer (``http``'s own timeouts
            bound the card and data-plane calls).
    """
    report = ProbeReport(peer="env", url=base_url)
    client = EnvClient(base_url, http, name=name)
    card = await _env_card(report, client)
    if card is not None:
        await _env_data_plane(report, client, card)
    served = await _env_tools(report, (card.mcp_url if card else None) or mcp_url or urljoin(client.base_url, "mcp"),
                              mcp_http, mcp_timeout)
    if card is not None:
        _compare_tools(report, card, served)
        await _env_extensions(report, client, card)
    return report


async def _env_card(report: ProbeReport, client: EnvClient) -> EnvCard | None:
    try:
        card = await client.card()
    except ProtocolError as exc:
        if exc.code == 404:
            report.add("card", "missing", "no env card: a plain MCP server (no data plane, no extensions); "
                       "load_artifact, reset_env and state verifiers cannot use it")
        else:
            report.add("card", "failed", str(exc))
        return None
    report.card = client.card_json if isinstance(client.card_json, dict) else card.to_wire()
    report.add("card", "ok", f"{card.name!r}, protocol {card.protocol_version or 'not stated'}")
    return card


async def _env_data_plane(report: ProbeReport, client: EnvClient, card: EnvCard) -> None:
    for operation in DATA_OPERATIONS:
        if not card.supports(operation):
            report.add(operation, "missing", "the card does not offer it" if card.has_data_plane
                       else "no data plane (operations: [])")
        elif operation == "data/get":
            async def get() -> str:
                return f"{len(await client.data_get())} part(s) exported"
            await report.attempt(operation, get)
        else:
            report.add(operation, "declared", "offered; not called, it would change the env's data")


async def _env_tools(report: ProbeReport, url: str, mcp_http: httpx2.AsyncClient | None,
                     timeout: float) -> list[str]:
    names: list[str] = []

    async def listing() -> str:
        # The MCP client is loaded on use: step modules (this one's callers) are imported by `validate`.
        from prefect_agentenv.protocols.mcp import mcp_session

        async with mcp_session(url, http=mcp_http, timeout=timeout) as session:
            names.extend(t.name for t in await session.list_tools())
            version = session.protocol_version
        shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
        return f"{len(names)} tool(s) at {url} (MCP {version}): {shown or 'none'}"

    async def bounded() -> str:
        # The MCP SDK's server/discover probe waits 10 s whatever the timeout, so the whole listing
        # (discover, a legacy initialize, tools/list) is bounded here, in a task of its own: a
        # session's task group cannot be left from inside an outer cancel scope.
        try:
            return await asyncio.wait_for(listing(), timeout=3 * timeout)
        except TimeoutError as exc:
            raise McpError(f"{url} did not answer the MCP session in time ({3 * timeout:g}s)", url=url) from exc

    await report.attempt("mcp tools", bounded)
    return names


def _compare_tools(report: ProbeReport, card: EnvCard, served: list[str]) -> None:
    listed = set(card.tool_names) - {""}
    if served and listed and not listed <= set(served):
        report.add("card tools", "warning", f"the card lists tools MCP does not serve: "
                   f"{', '.join(sorted(listed - set(served)))}")


async def _env_extensions(report: ProbeReport, client: EnvClient, card: EnvCard) -> None:
    calls: dict[str, Callable[[], Awaitable[str]]] = {
        CLOCK_EXTENSION: lambda: _described(client.clock_get(), lambda c: f"virtual time {c.time.isoformat()}"),
        TRIGGERS_EXTENSION: lambda: _described(client.list_triggers(), lambda t: f"{len(t)} trigger(s)"),
    }
    for extension in card.capabilities.extensions:
        call = calls.get(extension.uri)
        if call is None:
            report.add(extension.uri, "declared", extension.description or "not used by this runner")
        else:
            await report.attempt(extension.uri, call)


async def _described(awaitable: Awaitable[Any], describe: Callable[[Any], str]) -> str:
    return describe(await awaitable)


# --- agent ------------------------------------------------------------------------------------


async def probe_agent(url: str, *, http: httpx.AsyncClient, prompt: str | None = "Reply with one word: ready.",
                      timeout_seconds: float = 60.0, request_timeout: float = DEFAULT_REQUEST_TIMEOUT) -> ProbeReport:
    """Probe an agent: card, its A2A endpoint (one prompt sent and polled), each extension.

    Args:
        prompt: the message sent to probe ``message/send`` and ``tasks/get``; ``None`` sends none.
        request_timeout: bound on each exchange other than the probe prompt (card, extensions).
    """
    report = ProbeReport(peer="agent", url=url)
    client = A2AClient(url, http=http, request_timeout=request_timeout)
    try:
        card = await client.card()
    except AgentEnvError as exc:
        report.add("card", "failed", str(exc))
        return report
    report.card = card.raw
    report.add("card", "ok", f"{card.name or 'unnamed'!r} at {card.card_url}")
    if not await report.attempt("a2a endpoint", lambda: _endpoint(card)):
        return report
    task_id = await _prompt(report, client, prompt, timeout_seconds) if prompt is not None else None
    await _agent_extensions(report, AgentEnvExtensions(card, http), task_id)
    return report


async def _endpoint(card: A2ACard) -> str:
    rpc_url, version = card.interface()
    return f"JSON-RPC, A2A {version} at {rpc_url}"


async def _prompt(report: ProbeReport, client: A2AClient, prompt: str, timeout: float) -> str | None:
    found: list[str] = []

    async def send() -> str:
        reply = await client.send(prompt, timeout_seconds=timeout, poll_interval_seconds=0.2)
        if reply.error is not None or reply.state not in ("completed", "input-required"):
            raise ProtocolError(f"the task ended {reply.state}: {reply.error.message if reply.error else reply.text}",
                                url=client.url)
        if reply.task_id:
            found.append(reply.task_id)
        return f"task {reply.state}; reply {reply.text[:60]!r}"

    await report.attempt("message/send + tasks/get", send)
    return found[0] if found else None


async def _agent_extensions(report: ProbeReport, ext: AgentEnvExtensions, task_id: str | None) -> None:
    calls: dict[str, Callable[[], Awaitable[str]]] = {
        MCP_CONFIG_EXTENSION: lambda: _described(ext.list_mcp_servers(), lambda s: f"{len(s)} MCP server(s) held"),
        AGENT_CONFIG_EXTENSION: lambda: _described(ext.get_agent_config(), lambda c: f"config fields: {sorted(c)}"),
        SKILL_CONFIG_EXTENSION: lambda: _described(ext.list_skills(), lambda s: f"{len(s)} skill(s) held"),
    }
    if task_id is not None:
        calls[TRAJECTORY_EXTENSION] = lambda: _described(ext.get_trajectory(task_id=task_id),
                                                         lambda t: f"{len(t.events)} event(s) for the probe's task")
    for uri, lacks in _AGENT_LACKS.items():
        if not ext.has(uri):
            report.add(uri, "missing", lacks)
    for uri, extension in ext.extensions.items():
        readable = {MCP_CONFIG_EXTENSION: "list", AGENT_CONFIG_EXTENSION: "get", SKILL_CONFIG_EXTENSION: "list",
                    TRAJECTORY_EXTENSION: "get"}.get(uri)
        if uri in calls and readable in extension.operations:
            await report.attempt(uri, calls[uri], not_found_is="warning" if uri == TRAJECTORY_EXTENSION else "failed")
        else:
            offered = ", ".join(sorted(extension.operations)) or "no operations listed"
            report.add(uri, "declared", f"{extension.description or 'declared'} ({offered})")
