"""``prefect-agentenv rollout``: one task document through the Python agent API, configured by TOML."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from prefect_agentenv.exit_codes import ExitCode

if TYPE_CHECKING:
    from prefect_agentenv.api import AgentConfig, Task, Trace


def rollout_command(
    task: Annotated[Path, typer.Argument(help="A task document (JSON or YAML) with one prompt and its verifiers.")],
    agent_config: Annotated[Path | None, typer.Option(
        help="TOML with an [env.agent] table (and [env.agent.scoring]); the defaults when omitted.")] = None,
    agent: Annotated[str | None, typer.Option(help="Registry id of the agent, over the TOML's.")] = None,
    message: Annotated[list[str] | None, typer.Option(
        help="A user message; repeat for several turns (the task's prompt, if any, opens).")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the Trace as JSON here.")] = None,
) -> None:
    """Run a task with an agent and print the scored trace. Exit 0 when the rollout ran (whatever
    its reward), 1 when it could not run, 2 for an invalid document or config."""
    # Imported here so the other commands do not pay for Prefect and the store.
    import asyncio

    from prefect_agentenv.api import AgentConfig, Task, load_agent_config
    from prefect_agentenv.exceptions import AgentEnvError, ConfigurationError, TaskDocumentError

    try:
        config = load_agent_config(agent_config) if agent_config else AgentConfig()
        if agent:
            config = config.model_copy(update={"agent": agent})
        rollout_task = Task.from_document(task)
    except (ConfigurationError, TaskDocumentError, ValueError, OSError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(ExitCode.INVALID) from None
    try:
        trace = asyncio.run(_rollout(config, rollout_task, list(message or [])))
    except (AgentEnvError, ValueError) as exc:
        typer.echo(f"error: the rollout could not run: {exc}", err=True)
        raise typer.Exit(ExitCode.FAILED) from None
    if json_out:
        json_out.write_text(trace.model_dump_json(indent=2), encoding="utf-8")
    _print(trace)


async def _rollout(config: AgentConfig, task: Task, messages: list[str]) -> Trace:
    """The opening turn when the task has a prompt, then one turn per message until terminated."""
    from prefect_agentenv.api import make_agent

    async with make_agent(config) as agent:
        async with agent.interaction(task) as chat:
            if chat.task.prompt is not None:
                await chat.turn()
            for text in messages:
                if (await chat.turn(text)).terminated:
                    break
    assert chat.trace is not None
    return chat.trace


def _print(trace: Trace) -> None:
    skipped = trace.info.get("scoring_skipped")
    typer.echo(f"task {trace.task_id}: reward {trace.reward}" + (f" (scoring skipped: {skipped})" if skipped else ""))
    for verifier_id, reward in trace.rewards.items():
        typer.echo(f"  {verifier_id}: {reward}")
    typer.echo(f"turns {len(trace.turns)}, tool calls {trace.tool_call_count}, truncated {trace.is_truncated}, "
               f"timeout {trace.is_timeout}")
    typer.echo(f"reply: {trace.reply}")
