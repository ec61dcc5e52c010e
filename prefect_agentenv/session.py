"""A Python API for notebooks: deploy envs and an agent, then prompt it or talk to it turn by turn.

```python
from prefect_agentenv.session import AgentSession

async with AgentSession(envs={"email": "inbox"}, agent="scripted",
                        agent_config={"plan": {"reply": "On it."}}) as session:
    reply = await session.prompt("Reply to Dana.")           # a PromptResponse
    async with session.interaction() as chat:                 # you play the user
        segment = await chat.turn("Hi, can you check the Q3 numbers?")
        while not segment.done:
            segment = await chat.turn("Thanks, anything else?")
    state = await session.env_state("email")                  # what the env exports
```

Everything runs on this machine without Prefect, the way a flow run runs its steps: the session
opens its run through the engine's run scope and runs each step (the deploys, each prompt)
through ``execute_step``; every process the session started is stopped when the ``async with``
block ends.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from prefect_agentenv.context import PromptResponse, RunContext
from prefect_agentenv.engine.execute import execute_step
from prefect_agentenv.engine.run_scope import open_run
from prefect_agentenv.exceptions import StepError
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.protocols.a2a import AgentReply
from prefect_agentenv.run_services.agents import a2a_client
from prefect_agentenv.run_services.clients import env_client
from prefect_agentenv.steps import deploy_agent, deploy_env, load_artifact, prompt_agent
from prefect_agentenv.steps.base import StepModel


@dataclass
class Segment:
    """One turn of an interaction: the agent's answer to the caller's message."""

    text: str
    reply: AgentReply
    done: bool
    """True when the agent ended the exchange (failed, rejected or cancelled its task)."""


@dataclass
class Interaction:
    """A conversation in one A2A context; each :meth:`turn` waits for the agent's answer."""

    session: AgentSession
    timeout_seconds: float
    context_id: str | None = None
    segments: list[Segment] = field(default_factory=list)

    async def turn(self, message: str) -> Segment:
        """Send the caller's message; return the agent's answer."""
        client = a2a_client(self.session.run, self.session.ctx.deployed_agents[self.session.agent_name])
        reply = await client.send(message, context_id=self.context_id, timeout_seconds=self.timeout_seconds)
        self.context_id = reply.context_id or self.context_id
        segment = Segment(reply.text, reply, reply.state in ("failed", "rejected", "canceled") or reply.error is not None)
        self.segments.append(segment)
        return segment


class AgentSession:
    """Envs and one agent deployed for interactive use.

    Args:
        envs: env ids to deploy, each mapped to the environment artifact to load (or None).
        agent: registry id of the agent (a block or a reference agent such as ``scripted``, ``llm``).
        agent_name: the name the agent gets.
        agent_config: agent-config fields (system_prompt, model, a scripted plan, …).
        keep: keep the agent's sandbox after the session.
    """

    def __init__(self, *, envs: Mapping[str, str | None] | list[str] = (), agent: str = "llm",  # type: ignore[assignment]
                 agent_name: str = "assistant", agent_config: Mapping[str, Any] | None = None,
                 keep: bool = False) -> None:
        self.envs = dict(envs) if isinstance(envs, Mapping) else {e: None for e in envs}
        self.agent_id, self.agent_name = agent, agent_name
        self.agent_config = dict(agent_config or {})
        self._scope = open_run("session", run_id=f"session-{uuid.uuid4().hex[:12]}", keep=keep)
        self.run = self._scope.run
        self.ctx = RunContext()
        self._prompts = 0

    async def __aenter__(self) -> AgentSession:
        await self._scope.__aenter__()
        try:
            await self._deploy()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop everything the session started (a no-op once done)."""
        await self._scope.close()

    async def _run(self, step: StepModel) -> None:
        """Run one step on the session's context, as a task document's step runs."""
        self.ctx = await execute_step(step, [self.ctx])

    async def _deploy(self) -> None:
        for env_id, artifact in self.envs.items():
            await self._run(deploy_env.DeployEnvStep(id=f"env-{env_id}", env_id=env_id))
            if artifact:
                await self._run(load_artifact.LoadArtifactStep(id=f"load-{env_id}", env_id=env_id, artifact_id=artifact))
        await self._run(deploy_agent.DeployAgentStep(id="agent", a2a_agent_id=self.agent_id, agent_name=self.agent_name,
                                                     env_ids=list(self.envs), agent_config=self.agent_config))

    async def prompt(self, text: str, *, timeout_seconds: float = 600, **options: Any) -> PromptResponse:
        """One prompt, as a prompt_agent step would send it; returns its PromptResponse.

        A failed or timed-out prompt returns its PromptResponse with ``error`` set instead of raising.
        """
        self._prompts += 1
        prompt_id = f"prompt-{self._prompts}"
        step = prompt_agent.PromptAgentStep(id=prompt_id, agent_name=self.agent_name, prompt_id=prompt_id,
                                            prompt=text, timeout_seconds=timeout_seconds, **options)
        try:
            await self._run(step)
        except StepError as exc:
            if exc.context is not None:
                self.ctx = exc.context
            else:
                raise
        return self.ctx.prompt_responses[prompt_id]

    @asynccontextmanager
    async def interaction(self, *, timeout_seconds: float = 600) -> AsyncIterator[Interaction]:
        """Hold a conversation open; the caller plays the user, one :meth:`Interaction.turn` at a time."""
        yield Interaction(self, timeout_seconds)

    async def env_state(self, env_id: str) -> JsonObject:
        """The env's exported state (``data/get``), e.g. to check what the agent did."""
        step = deploy_env.DeployEnvStep(id="state", env_id=env_id)
        return await env_client(self.ctx, env_id, step).export_state()
