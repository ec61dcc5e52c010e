"""Deploying and reaching agents: shared by deploy_agent, prompt_agent, the judge and collect steps.

Each deployed agent runs in its own sandbox (a folder for local processes) and is reached over
A2A with the run's HTTP client. The run's model endpoint for a role is resolved once; when no
endpoint is configured the built-in mock model is started for the run and labelled ``mock``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prefect_agentenv.context import Confinement, DeployedAgent, DeployedEnv, RunContext
from prefect_agentenv.exceptions import DeployError, NotInContextError, StepError
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.run_services.clients import http_client, launchers, peer_read_timeout
from prefect_agentenv.runtime.resources.run import RunResources, current_run
from prefect_agentenv.steps.base import StepModel

if TYPE_CHECKING:  # the runtime (A2A client, launchers, models, pools) loads on use: `validate` stays light
    from prefect_agentenv.protocols.a2a import A2AClient
    from prefect_agentenv.resolution.models import ResolvedModel
    from prefect_agentenv.run_services.skill import Skill
    from prefect_agentenv.runtime.launch.base import Instance, LaunchSpec
    from prefect_agentenv.runtime.resources.sandbox import Sandbox

logger = logging.getLogger("prefect_agentenv.agents")

# Each reference agent's role: which model endpoint role its model comes from ("agent" otherwise).
MODEL_ROLE_OF = {"judge": "judge", "user-sim": "user"}


def deployed_agent(ctx: RunContext, agent_name: str, step: StepModel) -> DeployedAgent:
    """The agent an ancestor deployed under ``agent_name`` (reference wording kept verbatim)."""
    agent = ctx.deployed_agents.get(agent_name)
    if agent is None:
        raise NotInContextError(f"Agent with name '{agent_name}' not found in context.deployed_agents",
                                step=step)
    return agent


def a2a_client(run: RunResources, agent: DeployedAgent) -> A2AClient:
    """One A2A client per agent instance, sharing the run's HTTP client."""
    from prefect_agentenv.protocols.a2a import A2AClient

    clients = run.services.a2a_clients
    if agent.instance_id not in clients:
        clients[agent.instance_id] = A2AClient(agent.a2a_url, http=http_client(run), request_timeout=peer_read_timeout())
    return clients[agent.instance_id]


def sandbox_of(run: RunResources, agent: DeployedAgent) -> Sandbox:
    """The sandbox of a deployed agent."""
    sandboxes = run.services.sandboxes
    if agent.instance_id not in sandboxes:
        raise StepError(f"agent '{agent.agent_name}' has no sandbox in this run")
    return sandboxes[agent.instance_id]


async def model_for(run: RunResources, role: str, model: str | None = None, *,
                    start_mock: bool = True, route: bool = True) -> ResolvedModel:
    """The model endpoint for a role, as the run's model gateway serves it (its URL and a token,
    never the provider's key); starts the run's mock model when nothing is configured (unless
    ``start_mock`` is False: the caller only needs the model's name). ``route=False`` gives the
    endpoint itself, for a caller that only reads its model name or prices."""
    from prefect_agentenv.resolution.models import resolve_model_endpoint
    from prefect_agentenv.run_services.model_door import through_gateway
    from prefect_agentenv.run_services.pooling import resolve_once

    resolved = await resolve_once(("model", role, model or ""), lambda: resolve_model_endpoint(role, model=model))
    if resolved.is_mock and (run.services.mock_model_url is not None or start_mock):
        resolved = resolved.model_copy(update={"base_url": await ensure_mock_model(run)})
    if resolved.api_key is not None:
        run.redact.add(resolved.api_key.get_secret_value())
    return await through_gateway(run, resolved) if route else resolved


async def ensure_mock_model(run: RunResources) -> str:
    """The run's mock model, started by the first step (or the run's lookahead) that asks; the
    others wait for the same start."""
    if run.services.mock_model_url is not None:
        return run.services.mock_model_url
    return await run.services.mock_model_start.get(functools.partial(_start_mock_model, run))


async def _start_mock_model(run: RunResources) -> str:
    """The run's mock model, served from this process (see ``agents.mock_model.in_process``); in a
    benchmark with a warm pool, one the pool hands from task run to task run, cleared in between."""
    from prefect_agentenv.agents.mock_model.in_process import serve_mock_model
    from prefect_agentenv.runtime.launch.base import new_instance_id
    from prefect_agentenv.runtime.resources.pool import active_pool

    pool = active_pool()
    server = await (pool.acquire_model(serve_mock_model) if pool is not None else serve_mock_model())
    label = f"mock model ({new_instance_id('mock-model')})"
    if pool is not None:
        run.teardown.add(f"{label} back to the pool", functools.partial(pool.release_model, server), kind="model")
        run.services.mock_model_pooled = True
    else:
        run.teardown.add(label, server.stop, kind="model")
    url = run.services.mock_model_url = f"{server.base_url}/v1"
    logger.info("no model endpoint configured: the built-in mock model serves at %s (output labelled mock)", url)
    return url


def effective_agent_id(run: RunResources, agent_name: str, a2a_agent_id: str) -> str:
    """Per-run overrides: ``<agent_name>.a2a_agent_id`` first, then ``a2a_agent_id``."""
    return run.overrides.agent_id(agent_name) or a2a_agent_id


async def start_agent(step: StepModel, *, agent_name: str, a2a_agent_id: str, role: str = "agent",
                      model: str | None = None, version: str | None = None,
                      extra_env: dict[str, str] | None = None,
                      mcp_servers: dict[str, str] | None = None,
                      confined_with: dict[str, Any] | None = None) -> tuple[DeployedAgent, Sandbox]:
    """Resolve, sandbox and start an agent; register its teardown; return it once its card answers.
    An agent the run's lookahead launched for this step with the same spec and env is taken as it is.
    ``mcp_servers`` (name: URL) are the env servers it is about to be given: a pooled agent is
    handed only to a task run that gives it the same ones, since an agent cannot forget one."""
    from prefect_agentenv.run_services.pooling import pooled_agent

    run = current_run()
    launch = await _agent_launch(run, step, a2a_agent_id=a2a_agent_id, role=role, model=model, extra_env=extra_env)
    if confined_with:  # more doors and overlays for this task's agent (a Harbor environment's shell)
        launch = _confine_with(launch, step, confined_with)
    early = run.services.early_agents.pop(step.id, None)
    if early is not None and early[0] == launch.key:
        instance, sandbox = await early[1]
    else:
        pooled = await pooled_agent(step, agent_name=agent_name, a2a_agent_id=a2a_agent_id, spec=launch.spec,
                                    env=launch.env, per_run_model=launch.per_run_model,
                                    mcp_servers=mcp_servers or {})
        instance, sandbox = pooled or await _start_own(step, run, launch.spec, agent_name, a2a_agent_id, launch.env)
    run.services.sandboxes[instance.instance_id] = sandbox
    confinement = await network_for_envs(_confinement(launch.spec, instance), instance.instance_id, mcp_servers or {})
    agent = DeployedAgent(agent_name=agent_name, a2a_url=instance.base_url, sandbox=str(sandbox.root),
                          instance_id=instance.instance_id, a2a_agent_id=a2a_agent_id,
                          model=launch.endpoint.model, confinement=confinement)
    return agent, sandbox


def _confine_with(launch: _Launch, step: StepModel, extra: dict[str, Any]) -> _Launch:
    """The launch with ``doors`` added to its network and ``overlays`` to its view; refused unconfined, where
    neither would hold."""
    from prefect_agentenv.runtime.launch.base import CONFINED_KIND

    spec = launch.spec
    if spec.kind != CONFINED_KIND or network_of_spec(spec) == "public":
        raise StepError(f"agent '{step.id}' must run confined with its own network here (docs/security.md)",
                        step=step)
    spec = spec.model_copy(update={"doors": (*spec.doors, *extra.get("doors", ())),
                                   "overlays": (*spec.overlays, *extra.get("overlays", ()))})
    return _Launch(spec, launch.env, launch.endpoint, launch.per_run_model)


def network_of_spec(spec: LaunchSpec) -> object:
    from prefect_agentenv.runtime.confinement.confined import network_of

    return network_of(spec)


def network_to_model(spec: LaunchSpec, endpoint: ResolvedModel) -> LaunchSpec:
    """A confined agent's network opens its model door: the endpoint URL its launch gives it (the run's mock
    model, a configured endpoint or the run's gateway), whichever it is (docs/security.md, "The network")."""
    from prefect_agentenv.runtime.launch.base import CONFINED_KIND, Door

    if spec.kind != CONFINED_KIND or not endpoint.base_url:
        return spec
    return spec.model_copy(update={"doors": (Door.from_url("model", endpoint.base_url),)})


async def network_for_peers(agent: DeployedAgent, peers: list[DeployedAgent]) -> None:
    """A confined agent's network opens the A2A endpoints of the agents it may delegate to (a
    ``peer_agents`` step); nothing for an agent without a confined network."""
    from prefect_agentenv.runtime.confinement.netns import open_doors
    from prefect_agentenv.runtime.launch.base import Door

    await open_doors(agent.instance_id, [Door.from_url("peer", peer.a2a_url) for peer in peers])


async def network_for_envs(record: Confinement | None, instance_id: str,
                           mcp_servers: dict[str, str]) -> Confinement | None:
    """A confined agent's network opens the MCP endpoints of the envs it is given (their MCP path only, never
    their data plane); the record then names every door. Unchanged for an agent without a confined network."""
    from prefect_agentenv.runtime.confinement.netns import open_doors
    from prefect_agentenv.runtime.launch.base import Door

    doors = await open_doors(instance_id, [Door.from_url("mcp", url) for url in mcp_servers.values()])
    if record is None or doors is None:
        return record
    return record.model_copy(update={"doors": doors})


def _confinement(spec: LaunchSpec, instance: Instance) -> Confinement | None:
    """What confined the agent, as its launcher said; for a plain local process, that nothing did and why."""
    from prefect_agentenv.runtime.confinement.confined import unconfined_record

    if instance.confinement is not None:
        return instance.confinement
    return unconfined_record(spec) if instance.kind == "process" else None


@dataclass
class _Launch:
    """How an agent is to be started: its spec, its environment and its model."""

    spec: LaunchSpec
    env: dict[str, str]
    endpoint: ResolvedModel
    per_run_model: bool
    """The agent's model lives only as long as the run (the run's own mock model): never pooled."""

    @property
    def key(self) -> str:
        """What an agent launched early must have been launched with to be taken (the warm pool's
        rule for handing an instance out again)."""
        from prefect_agentenv.runtime.resources.pool import WarmPool

        return WarmPool.key("agent", "early", self.spec, self.env)


async def _agent_launch(run: RunResources, step: StepModel, *, a2a_agent_id: str, role: str, model: str | None,
                        extra_env: dict[str, str] | None) -> _Launch:
    from prefect_agentenv.resolution.servers import resolve_agent
    from prefect_agentenv.run_services.pooling import resolve_once
    from prefect_agentenv.runtime.confinement.network_allow import NetworkAllow, widened
    from prefect_agentenv.runtime.launch.base import CONFINED_KIND

    resolved = await resolve_once(("agent", a2a_agent_id), lambda: resolve_agent(a2a_agent_id))
    run.redact.update(resolved.spec.secret_values().values())  # the agent may echo its env in an error
    spec = resolved.spec
    if startup := getattr(step, "startup_timeout_seconds", None):  # deploy_agent's own bound on readiness
        spec = spec.model_copy(update={"startup_timeout_seconds": startup})
    network = getattr(step, "network", None)
    if network == "public" or isinstance(network, NetworkAllow):  # deploy_agent's own widening, for this task
        spec = spec.model_copy(update={"network": widened(spec.network, network)})
    if getattr(step, "confinement", None) == "none" and spec.kind == CONFINED_KIND:  # the task opts out
        spec = spec.model_copy(update={"kind": "process", "confinement": "none"})
    # An agent known to call no model (the scripted one) does not wait for a mock model to start.
    endpoint = await model_for(run, MODEL_ROLE_OF.get(a2a_agent_id, role), model, start_mock=resolved.uses_model)
    _check_wire(resolved.harness, endpoint, step)
    spec = network_to_model(spec, endpoint)
    # The agent holds the run's gateway's URL and token: it may be pooled only with a pooled gateway.
    per_run_model = endpoint.base_url is not None and not run.services.gateway_pooled
    env = {**_model_env(endpoint), **_harness_env(resolved.harness, endpoint), **(extra_env or {})}
    return _Launch(spec, env, endpoint, per_run_model)


async def launch_early(step: StepModel, *, agent_name: str, a2a_agent_id: str, model: str | None,
                       extra_env: dict[str, str] | None) -> None:
    """Launch the agent of ``step`` now, as its step will (see :mod:`prefect_agentenv.run_services.lookahead`);
    the step takes it if it would launch it the same way. Not with a warm pool or a live URL."""
    from prefect_agentenv.runtime.resources.pool import active_pool

    run = current_run()
    launch = await _agent_launch(run, step, a2a_agent_id=a2a_agent_id, role="agent", model=model, extra_env=extra_env)
    if active_pool() is not None or launch.spec.kind == "url" or step.id in run.services.early_agents:
        return
    started = asyncio.ensure_future(_start_own(step, run, launch.spec, agent_name, a2a_agent_id, launch.env))
    run.services.early_agents[step.id] = (launch.key, started)


async def _start_own(step: StepModel, run: RunResources, spec: LaunchSpec, agent_name: str, a2a_agent_id: str,
                     env: dict[str, str]) -> tuple[Instance, Sandbox]:
    """Start the agent for this run alone, in a new sandbox; both go at the run's teardown."""
    from prefect_agentenv.run_services.concurrency_slots import hold_slot
    from prefect_agentenv.runtime.resources.sandbox import create_sandbox

    sandbox = create_sandbox(run.workdir, agent_name)
    if not run.keep:
        run.teardown.add(f"sandbox of {agent_name}", _remover(sandbox), owner_step=step.id, kind="sandbox")
    await hold_slot(run, "agent", a2a_agent_id, owner_step=step.id)
    launcher = launchers(run).for_spec(spec)
    try:
        instance = await launcher.start(spec, name=agent_name, workdir=run.workdir / "agents",
                                        cwd=sandbox.root, extra_env={**sandbox.env(), **env})
    except DeployError as exc:
        exc.step_id, exc.step_type = step.id, step.type
        raise
    run.teardown.add(f"agent {agent_name} ({instance.instance_id})", lambda: launcher.stop(instance),
                     owner_step=step.id, kind="agent", key=agent_name)
    return instance, sandbox


def _remover(sandbox: Sandbox) -> Any:
    async def remove() -> None:
        sandbox.remove()

    return remove


def _model_env(endpoint: ResolvedModel) -> dict[str, str]:
    """How an agent process learns its model endpoint (never logged: the launcher masks nothing here,
    so the key travels only in the child's environment)."""
    env = {"OPENAI_BASE_URL": endpoint.base_url or "", "AGENTENV_MODEL": endpoint.model}
    if endpoint.api_key is not None:
        env["OPENAI_API_KEY"] = endpoint.api_key.get_secret_value()
    return env


def _check_wire(harness_name: str | None, endpoint: ResolvedModel, step: StepModel) -> None:
    """Refuse a harness whose model API no upstream of its endpoint answers (the gateway translates
    nothing between wires), with the fix."""
    from prefect_agentenv.agents.harnesses.catalog import HARNESSES

    if harness_name is None or endpoint.base_url is None:
        return
    harness = HARNESSES[harness_name]
    if harness.wire is None:
        raise DeployError(f"{harness.title} calls {harness.model_api}, which the run's model gateway does not relay "
                          "(it relays chat completions, the Responses API and the Messages API): use another harness",
                          step=step)
    if endpoint.upstreams is not None and endpoint.upstreams.upstream(harness.wire) is None:
        where = {"responses": "responses_base_url (PREFECT_AGENTENV_RESPONSES_BASE_URL)",
                 "messages": "messages_base_url and messages_api_key (ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY)",
                 "chat": "a base_url that answers chat completions"}[harness.wire]
        raise DeployError(f"{harness.title} speaks the {harness.wire!r} model API and the {endpoint.role} model "
                          f"endpoint ({endpoint.source}) has no upstream for it: set {where} on the ModelEndpoint "
                          "block, or point base_url at a gateway that answers every API (LiteLLM)",
                          step=step)


def _harness_env(harness_name: str | None, endpoint: ResolvedModel) -> dict[str, str]:
    """The endpoint in the variables a coding-agent harness's wrapper reads (``LITELLM_*``, its model's)."""
    from prefect_agentenv.agents.harnesses.catalog import HARNESSES
    from prefect_agentenv.agents.harnesses.endpoint import model_env

    if harness_name is None or endpoint.base_url is None:
        return {}
    key = endpoint.api_key.get_secret_value() if endpoint.api_key is not None else None
    return model_env(HARNESSES[harness_name], base_url=endpoint.base_url, api_key=key, model=endpoint.model)


async def configure_agent(step: StepModel, agent: DeployedAgent, *, envs: list[DeployedEnv],
                          config: JsonObject, skills: list[Skill]) -> list[str]:
    """Give the agent envs, skills and config (all taken as asked for by the document).

    What the card cannot take is not sent and does not fail the step (see
    :mod:`prefect_agentenv.run_services.agent_configuration`); its report paths are returned. Steps that
    record rows in the report call :func:`~prefect_agentenv.run_services.agent_configuration.deliver`.
    """
    from prefect_agentenv.run_services.agent_configuration import ConfigRequest, deliver

    await network_for_envs(agent.confinement, agent.instance_id, {env.env_id: env.mcp_url for env in envs})
    request = ConfigRequest(envs=envs, skills=skills, explicit={k: (k, v) for k, v in config.items()})
    rows = await deliver(step, agent, a2a_client(current_run(), agent), request)
    return [row.field for row in rows]
