"""harbor_agent: the agent's turn on a Harbor task, acting inside the task's environment.

The built-in agents are Harbor's: ``oracle`` uploads ``solution/`` to ``/solution`` and runs
``solve.sh`` there with ``[solution].env`` (its output in ``/logs/agent/oracle.txt``); ``nop`` does
nothing, so an untouched environment is graded. Which one runs is the document's ``a2a_agent_id``,
or ``--override a2a_agent_id=...`` as for any task. An agent past ``[agent].timeout_sec`` is stopped
and recorded as timed out; the verifier still runs, as in Harbor.

Any other agent acts inside the task's container too: a coding-agent harness through its own shell
(``run_services/harbor_agents.py``), an A2A agent through the environment given to it as an MCP server
whose ``bash`` tool runs there (``run_services/harbor_mcp.py``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from prefect_agentenv.context import DeployedEnv, PromptResponse, RunContext
from prefect_agentenv.exceptions import StepError
from prefect_agentenv.run_services.agents import effective_agent_id
from prefect_agentenv.runtime.resources.run import current_run
from prefect_agentenv.steps.base import DEFAULT_AGENT_NAME, StepModel
from prefect_agentenv.steps.harbor_environment import RunningEnvironment, running_environment
from prefect_agentenv.steps.registry import StepDefinition

if TYPE_CHECKING:
    from prefect_agentenv.context import DeployedAgent
    from prefect_agentenv.documents.harbor.folder import HarborStepFiles
    from prefect_agentenv.run_services.harbor_task_mcp import TaskServerBridge, TaskServerRelay

logger = logging.getLogger("prefect_agentenv.harbor")

BUILT_IN = ("oracle", "nop")
NO_LIMIT_SEC = 24 * 3600.0
"""A task with no ``[agent].timeout_sec`` is bounded by the run's own timeout; this only caps the exec."""


class HarborAgentStep(StepModel):
    """Runs the agent on one step of a Harbor task, in the environment sandbox_name started."""

    type: Literal["harbor_agent"] = "harbor_agent"
    task_dir: str = Field(min_length=1)
    """The Harbor task folder (absolute)."""
    sandbox_name: str = "environment"
    """The harbor_environment the agent acts in."""
    step_name: str | None = None
    """The task's step (a multi-step task); None for a single-step task."""
    a2a_agent_id: str | None = Field(default=None, min_length=1)
    """``oracle`` (the default, as Harbor's) or ``nop``."""
    agent_name: str = DEFAULT_AGENT_NAME
    """The name ``--override <agent_name>.a2a_agent_id=...`` uses."""
    instruction_sha256: str | None = None
    """The instruction's hash when the task was compiled (part of the setup's fingerprint)."""
    solution_sha256: str | None = None
    """The solution/ folder's hash when the task was compiled (part of the setup's fingerprint)."""
    after_verifier: str | None = None
    """The verifier of the step before: under its step's min_reward, this step does not run."""


async def run(step: HarborAgentStep, ctx: RunContext) -> RunContext:
    """Upload the step's starting files, then run the agent (or stop early under min_reward)."""
    from prefect_agentenv.run_services.harbor_agents import SHELL_AWARE
    from prefect_agentenv.steps.harbor_verifier import stopped_early

    env = await running_environment(ctx, step.sandbox_name, step.task_dir, step)
    agent_id = effective_agent_id(current_run(), step.agent_name, step.a2a_agent_id or "oracle")
    prompt_id = step.id
    reason = stopped_early(ctx, env.task, step.after_verifier)
    if reason is not None:
        ctx.prompt_responses[prompt_id] = PromptResponse(prompt_id=prompt_id, prompt="", error=reason)
        return ctx
    files = _step_files(env, step.step_name)
    started = time.monotonic()
    if agent_id in SHELL_AWARE:
        # The harness first: its environment is started again with its workspace mounted at the workdir, so
        # the step's starting files (and what its setup.sh does anywhere) go into the container it works in.
        ctx.prompt_responses[prompt_id] = await _harness(step, ctx, env, agent_id, files)
        logger.info("harbor agent %s on %s: %.1fs", agent_id, env.task.name, time.monotonic() - started)
        return ctx
    await _starting_files(step, env, files.workdir)
    if agent_id not in BUILT_IN:
        ctx.prompt_responses[prompt_id] = await _a2a(step, ctx, env, agent_id, files.instruction)
        logger.info("harbor agent %s on %s: %.1fs", agent_id, env.task.name, time.monotonic() - started)
        return ctx
    if agent_id == "oracle":
        response = await _oracle(step, env, files.solution)
    else:
        response = "nop: did nothing"
    timed_out = response is None
    ctx.prompt_responses[prompt_id] = PromptResponse(
        prompt_id=prompt_id, prompt=files.instruction, response=response or "", model=None,
        is_timeout=timed_out, error=f"the agent did not finish within [agent].timeout_sec="
                                    f"{_timeout(env, step):g}s (the verifier still runs)" if timed_out else None)
    logger.info("harbor agent %s on %s: %.1fs", agent_id, env.task.name, time.monotonic() - started)
    return ctx


async def _a2a(step: HarborAgentStep, ctx: RunContext, env: RunningEnvironment, agent_id: str,
               instruction: str) -> PromptResponse:
    """An A2A agent given the environment as an MCP server (its ``bash`` runs in the container); the
    instruction sent; its reply. A later step of a multi-step task prompts the same agent again: the
    container is the same, so its server still reaches it."""
    from prefect_agentenv.run_services import harbor_agents as joined

    agent = ctx.deployed_agents.get(step.agent_name)
    if agent is None or agent.a2a_agent_id != agent_id:
        agent = await _deploy_a2a(step, ctx, env, agent_id)
    return await _in_turn(step, joined.prompt(step, agent, instruction, _timeout(env, step)))


async def _deploy_a2a(step: HarborAgentStep, ctx: RunContext, env: RunningEnvironment,
                      agent_id: str) -> DeployedAgent:
    """The environment's MCP server started, the agent started with a door to it and given it as an env.

    Raises:
        StepError: the agent cannot be given MCP servers, so it could not act inside the environment (it is
            never run outside it and scored as if it had been inside).
    """
    from prefect_agentenv.run_services.agent_configuration import ConfigRequest, deliver, record, takes_config
    from prefect_agentenv.run_services.agents import a2a_client, start_agent
    from prefect_agentenv.run_services.harbor_mcp import (
        MCP_PATH,
        SERVER_NAME,
        TURN_OVER,
        CommandOutcome,
        environment_mcp_app,
    )
    from prefect_agentenv.runtime.harbor.environment import exec_bash
    from prefect_agentenv.runtime.launch.guest_server import start_guest_server

    run_, user, limit, turn = current_run(), _user(env), _longest_timeout(env), _turn(step)

    async def run_command(command: str) -> CommandOutcome:
        if not turn.is_set():  # what the agent left running on its side, while its work is graded
            return CommandOutcome(126, TURN_OVER)
        done = await exec_bash(env.container, ["-c", command], user=user, timeout=limit, workdir=env.workdir)
        return CommandOutcome(done.exit_code, done.output, done.timed_out)

    app = environment_mcp_app(run_command, task_name=env.task.name, workdir=env.workdir, host="127.0.0.1")
    server = await start_guest_server(app, "127.0.0.1", graceful_shutdown_seconds=1, lifespan=True,
                                      name="Harbor environment's MCP server")
    run_.teardown.add("Harbor environment's MCP server", server.stop, owner_step=step.id, kind="model")
    served = DeployedEnv(env_id=SERVER_NAME, instance_id=env.container, mcp_url=f"{server.base_url}{MCP_PATH}")
    own = await _task_servers(step, env)
    await _connect_task_servers(step, env, own, env.container)
    envs = [served, *(_as_env(bridge, env) for bridge in own)]
    agent, _ = await start_agent(step, agent_name=step.agent_name, a2a_agent_id=agent_id,
                                 model=run_.overrides.model or ctx.metadata.default_agent_model,
                                 mcp_servers={e.env_id: e.mcp_url for e in envs})
    ctx.deployed_agents[step.agent_name] = agent
    client = a2a_client(run_, agent)
    rows = await deliver(step, agent, client, ConfigRequest(envs=envs, implicit={"model": agent.model}))
    lacking = [row for row in rows if row.field == f"env_ids.{SERVER_NAME}"]
    if lacking:
        raise StepError(f"agent '{agent_id}' cannot act inside a Harbor task's environment: it runs its tools where "
                        f"it runs, and it cannot be given the environment's MCP server ({lacking[0].reason}: "
                        f"{lacking[0].extension}); it is not run outside the environment and scored as if it had "
                        "been inside (docs/harbor-tasks.md, \"Agents\")", step=step)
    record(ctx, rows)
    if not await takes_config(client, "model"):
        agent = ctx.deployed_agents[step.agent_name] = agent.model_copy(update={"model": None})
    return agent


async def _harness(step: HarborAgentStep, ctx: RunContext, env: RunningEnvironment, agent_id: str,
                   files: HarborStepFiles) -> PromptResponse:
    """The harness (started at the task's first step, and prompted again at each later one, in the same
    container), the step's starting files uploaded, the instruction sent; its reply."""
    from prefect_agentenv.run_services import harbor_agents as joined

    agent = ctx.deployed_agents.get(step.agent_name)
    if agent is None or agent.a2a_agent_id != agent_id:
        agent = await _deploy_harness(step, ctx, env, agent_id)
        env = await running_environment(ctx, step.sandbox_name, step.task_dir, step)
    await _starting_files(step, env, files.workdir)
    return await _in_turn(step, joined.prompt(step, agent, files.instruction, _timeout(env, step)))


async def _deploy_harness(step: HarborAgentStep, ctx: RunContext, env: RunningEnvironment,
                          agent_id: str) -> DeployedAgent:
    """A harness started confined, its workspace the environment's workdir and its shell the environment's
    (run_services/harbor_agents.py), with the task's own tool servers; the environment started again with the
    workspace mounted. Its commands are bounded by the longest step's time limit (one door serves every step);
    each prompt by its own step's."""
    from prefect_agentenv.run_services import harbor_agents as joined
    from prefect_agentenv.run_services.agent_configuration import ConfigRequest, deliver, record
    from prefect_agentenv.run_services.agents import a2a_client, start_agent
    from prefect_agentenv.runtime.harbor.environment import exec_bash
    from prefect_agentenv.runtime.harbor.terminal import Terminal, open_terminal
    from prefect_agentenv.runtime.launch.base import Door
    from prefect_agentenv.runtime.launch.guest_server import start_guest_server

    run_, limit = current_run(), _longest_timeout(env)
    target = joined.ExecTarget(env.container, env.workdir, _user(env))

    async def execute(where: joined.ExecTarget, call: joined.ShellCall) -> joined.ShellResult:
        done = await exec_bash(where.container, list(call.args), user=where.user, timeout=limit, workdir=call.cwd)
        return joined.ShellResult(done.exit_code, done.stdout, done.stderr)

    async def terminal(where: joined.ExecTarget, call: joined.ShellCall, rows: int, cols: int) -> Terminal:
        return await open_terminal(where.container, list(call.args), user=where.user, workdir=call.cwd,
                                   timeout=limit, rows=rows, cols=cols)

    door_app = joined.ExecDoor(target, joined.new_token(), execute, terminal, turn=_turn(step))
    server = await start_guest_server(door_app.app, "127.0.0.1", graceful_shutdown_seconds=1, name="Harbor exec door")
    run_.teardown.add("Harbor exec door", server.stop, owner_step=step.id, kind="model")
    run_.teardown.add("Harbor exec door's terminals", door_app.close, owner_step=step.id, kind="model")
    model = run_.overrides.model or ctx.metadata.default_agent_model
    door = Door(role="environment", host="127.0.0.1", port=int(server.base_url.rsplit(":", 1)[1]), path="/exec")
    overlays = joined.shell_overlays(run_.step_folder("harbor", step.id))
    own = await _task_servers(step, env)
    agent, sandbox = await start_agent(step, agent_name=step.agent_name, a2a_agent_id=agent_id, model=model,
                                       extra_env={"AGENTENV_HARBOR_EXEC": f"{server.base_url}/exec",
                                                  "AGENTENV_HARBOR_TOKEN": door_app.token, "SHELL": "/bin/bash"},
                                       mcp_servers={bridge.name: bridge.url for bridge in own},
                                       confined_with={"doors": (door,), "overlays": tuple(overlays)})
    ctx.deployed_agents[step.agent_name] = agent
    target.container = await _restart_with_workspace(step, ctx, env, sandbox.root / "app")
    if own:  # the task's servers run in the container the agent works in: the one started with its workspace
        await _connect_task_servers(step, env, own, target.container)
        given = ConfigRequest(envs=[_as_env(bridge, env) for bridge in own])
        record(ctx, await deliver(step, agent, a2a_client(run_, agent), given))
    return agent


async def _task_servers(step: HarborAgentStep, env: RunningEnvironment) -> list[TaskServerBridge | TaskServerRelay]:
    """The task's own ``[[environment.mcp_servers]]``, each served on loopback for the agent (connected to the
    environment by ``_connect_task_servers``) and stopped with the run: a stdio one by a bridge to its command, a
    streamable-HTTP one by a relay into the environment's network, an SSE one by a bridge reading it through a
    relay."""
    from prefect_agentenv.documents.harbor.compile import given_server
    from prefect_agentenv.run_services.harbor_task_mcp import TaskServerBridge, TaskServerRelay

    run_, served = current_run(), []
    for spec in env.task.config.environment.mcp_servers:
        if not given_server(spec):
            continue  # validate's notice says why it is not given
        errlog = run_.step_folder("harbor", step.id) / f"mcp-{spec.name}.stderr"
        bridge: TaskServerBridge | TaskServerRelay
        if spec.transport == "stdio":
            bridge = TaskServerBridge(spec.name, errlog, turn=_turn(step))
        elif spec.transport == "sse":  # read through the run's own relay; the agent gets streamable HTTP
            relay = TaskServerRelay(spec.name, spec.url or "")
            await relay.serve()
            bridge = TaskServerBridge(spec.name, errlog, turn=_turn(step), relay=relay)
        else:
            bridge = TaskServerRelay(spec.name, spec.url or "", turn=_turn(step))
        await bridge.serve()
        run_.teardown.add(f"task MCP server {spec.name}", bridge.stop, owner_step=step.id, kind="model")
        served.append(bridge)
    return served


def _as_env(bridge: TaskServerBridge | TaskServerRelay, env: RunningEnvironment) -> DeployedEnv:
    """A task server as the agent is given it: an env, under the task's name for it."""
    return DeployedEnv(env_id=bridge.name, instance_id=f"{env.task.name}:{bridge.name}", mcp_url=bridge.url)


async def _connect_task_servers(step: HarborAgentStep, env: RunningEnvironment,
                                servers: list[TaskServerBridge | TaskServerRelay], container: str) -> None:
    """Each task server connected to ``container``: a stdio server's command started there (as ``[agent].user``, in
    the workdir) and its session opened; a URL server's relay pointed into its network.

    Raises:
        DeployError: a server did not answer its handshake (the environment's failure, with its stderr's end).
    """
    from prefect_agentenv.exceptions import DeployError
    from prefect_agentenv.run_services.harbor_task_mcp import StdioCommand, TaskServerError, TaskServerRelay

    specs = {spec.name: spec for spec in env.task.config.environment.mcp_servers}
    for bridge in servers:
        spec = specs[bridge.name]
        if isinstance(bridge, TaskServerRelay):
            bridge.connect(container)
            continue
        where: StdioCommand | str
        if bridge.relay is not None:
            bridge.relay.connect(container)
            where = bridge.relay.url
        else:
            where = StdioCommand(container, spec.command or "", tuple(spec.args), _user(env), env.workdir)
        try:
            await bridge.connect(where)
        except TaskServerError as exc:
            raise DeployError(str(exc), step=step) from None


async def _restart_with_workspace(step: HarborAgentStep, ctx: RunContext, env: RunningEnvironment,
                                  workspace: Path) -> str:
    """The environment started again with the agent's workspace (a copy of the workdir) mounted at the workdir."""
    from prefect_agentenv.runtime.harbor.environment import copy_out, remove_environment
    from prefect_agentenv.steps.harbor_environment import start_container

    if not await copy_out(env.container, f"{env.workdir}/.", workspace):
        raise StepError(f"cannot copy the environment's {env.workdir} into the agent's workspace", step=step)
    await remove_environment(env.container)
    container = await start_container(step, env.task, env.image, env.workdir, workspace=workspace)
    deployed = ctx.deployed_sandboxes[step.sandbox_name]
    ctx.deployed_sandboxes[step.sandbox_name] = deployed.model_copy(update={"instance_id": container})
    return container


def _turn(step: HarborAgentStep) -> asyncio.Event:
    """Set while the agent's turn is on: its doors into the environment run nothing outside it."""
    return current_run().services.harbor_turns.setdefault(step.agent_name, asyncio.Event())


async def _in_turn(step: HarborAgentStep, prompting: Awaitable[PromptResponse]) -> PromptResponse:
    """The agent's turn: its doors into the environment open for the prompt, closed again when it ends, however
    it ends (a process the agent leaves on its own side cannot act in the environment while it is graded)."""
    turn = _turn(step)
    turn.set()
    try:
        return await prompting
    finally:
        turn.clear()


def _step_files(env: RunningEnvironment, step_name: str | None) -> HarborStepFiles:
    for files in env.task.steps:
        if step_name is None or files.name == step_name:
            return files
    raise StepError(f"the task has no step '{step_name}'")


def _timeout(env: RunningEnvironment, step: HarborAgentStep) -> float:
    config = env.task.config
    if step.step_name is not None:
        for s in config.steps:
            if s.name == step.step_name and s.agent.timeout_sec is not None:
                return s.agent.timeout_sec
    return config.agent.timeout_sec or NO_LIMIT_SEC


def _longest_timeout(env: RunningEnvironment) -> float:
    """What bounds one command of an A2A agent: its step's limit, or on a multi-step task (one server serves
    every step) the longest step's; each prompt is still bounded by its own step's limit."""
    config = env.task.config
    limits = [s.agent.timeout_sec or config.agent.timeout_sec or NO_LIMIT_SEC for s in config.steps]
    return max([*limits, config.agent.timeout_sec or NO_LIMIT_SEC])


def _user(env: RunningEnvironment) -> str | None:
    user = env.task.config.agent.user
    return None if user is None else str(user)


async def _starting_files(step: HarborAgentStep, env: RunningEnvironment, workdir_files: Path | None) -> None:
    """A step's ``workdir/`` uploaded to the workdir; its ``setup.sh`` run, then deleted (Harbor's contract)."""
    from prefect_agentenv.runtime.harbor.environment import copy_in, exec_in

    if workdir_files is None:
        return
    await copy_in(env.container, workdir_files, env.workdir)
    if (workdir_files / "setup.sh").is_file():
        done = await exec_in(env.container, "bash ./setup.sh; code=$?; rm -f ./setup.sh; exit $code", user=None,
                             timeout=600, workdir=env.workdir)
        if done.exit_code != 0:
            raise StepError(f"the step's setup.sh exited {done.exit_code}: {done.output.strip()[-300:]}", step=step)


async def _oracle(step: HarborAgentStep, env: RunningEnvironment, solution: Path | None) -> str | None:
    """``solve.sh`` run in the workdir; its output, or None when it ran past the agent's timeout."""
    from prefect_agentenv.runtime.harbor.environment import copy_in, exec_in

    if solution is None or not (solution / "solve.sh").is_file():
        raise StepError("the oracle runs solution/solve.sh, and this task has none", step=step)
    await copy_in(env.container, solution, "/solution")
    variables = {**env.task.config.solution.env, "DEBIAN_FRONTEND": "noninteractive"}
    command = "bash /solution/solve.sh > /logs/agent/oracle.txt 2>&1; code=$?; " \
              "[ $code -eq 0 ] || echo $code > /logs/agent/exit-code.txt; cat /logs/agent/oracle.txt; exit $code"
    done = await exec_in(env.container, command, user=_user(env), timeout=_timeout(env, step), env=variables,
                         workdir=env.workdir)
    if done.timed_out:
        return None
    return f"solve.sh exited {done.exit_code}\n{done.output[-4000:]}"


definition = StepDefinition(HarborAgentStep, run)
