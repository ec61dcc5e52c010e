"""``make_agent(AgentConfig(...))``: an agent that runs tasks and returns scored Traces.

Each rollout deploys the task's envs and the agent in an :class:`~prefect_agentenv.session.AgentSession`
(the same deploy steps a flow run uses), talks to the agent over A2A, then scores the result with
the task's verifier steps (:mod:`prefect_agentenv.api.scoring`) and stops everything it started.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any

from prefect_agentenv.api.config import AgentConfig, ScoringConfig, Task
from prefect_agentenv.api.interaction import Interaction
from prefect_agentenv.api.scoring import (
    PROMPT_ID,
    Scored,
    ScoringInfo,
    capture,
    score,
    skip_reason,
    verifier_steps,
)
from prefect_agentenv.api.trace import Trace
from prefect_agentenv.context import PromptResponse
from prefect_agentenv.exceptions import AgentEnvError
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.protocols.agentenv_ext import AgentEnvExtensions
from prefect_agentenv.redaction import redact
from prefect_agentenv.run_services.agents import a2a_client
from prefect_agentenv.session import AgentSession

logger = logging.getLogger("prefect_agentenv.api")
AGENT_NAME = "agent"


class Agent:
    """A configured agent. Use it as ``async with make_agent(config) as agent``."""

    def __init__(self, config: AgentConfig) -> None:
        self.config = config
        self._open: list[AgentSession] = []

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the sessions of rollouts still open (a rollout normally stops its own)."""
        for session in list(self._open):
            await session.aclose()
        self._open.clear()

    def scoring_for(self, task: Task) -> ScoringConfig:
        """The task's scoring defaults with this agent's explicit settings over them."""
        return self.config.scoring.over(task.data.scoring)

    async def run(self, task: Task) -> Trace:
        """A full rollout: the opening turn with the task's prompt, then scoring.

        Raises:
            ValueError: the task has no prompt (drive it with :meth:`interaction`).
            ConfigurationError: a verifier of the task is not a valid step.
        """
        if task.prompt is None:
            raise ValueError("the task has no prompt: use agent.interaction(task) and write the first message")
        async with self.interaction(task) as interaction:
            await interaction.turn()
        assert interaction.trace is not None
        return interaction.trace

    @asynccontextmanager
    async def interaction(self, task: Task) -> AsyncIterator[Interaction]:
        """Hold the rollout open; leaving the block finalises and scores it (``interaction.trace``)."""
        verifier_steps(task.data, AGENT_NAME)  # a bad verifier fails before anything starts
        session = AgentSession(envs=task.data.envs, agent=self.config.agent, agent_name=AGENT_NAME,
                               agent_config=self.config.deploy_config(), keep=self.config.keep)
        self._open.append(session)
        try:
            async with session:
                client = a2a_client(session.run, session.ctx.deployed_agents[AGENT_NAME])
                interaction = Interaction(client, task, self.config)
                try:
                    yield interaction
                finally:
                    await interaction.close()
                    trace = await self._finish(session, interaction)
                    # Scoring env values (tokens) never leave in clear, whatever a verifier echoed.
                    interaction.trace = Trace.model_validate(redact(trace.model_dump(), session.run.redact))
        finally:
            self._open.remove(session)

    async def _finish(self, session: AgentSession, interaction: Interaction) -> Trace:
        """Finalise (trajectory, counts) and score the rollout, unless the scoring config skips it."""
        segments = interaction.segments
        scoring = self.scoring_for(interaction.task)
        is_truncated = bool(segments) and segments[-1].is_truncated
        is_timeout = interaction.stop_reason == "timeout"
        trace = Trace(task_id=interaction.task.data.id, prompt=interaction.task.prompt,
                      reply=segments[-1].last_reply if segments else "", turns=list(segments),
                      tool_call_count=sum(s.tool_call_count or 0 for s in segments),
                      tool_calls=await _tool_calls(interaction), is_truncated=is_truncated, is_timeout=is_timeout,
                      info={"stop_reason": interaction.stop_reason})
        reason = skip_reason(scoring, is_truncated=is_truncated, is_timeout=is_timeout)
        if reason is not None:
            trace.info["scoring_skipped"] = reason
            trace.reward = 0.0 if scoring.skip_policy == "zero" else None
            return trace
        response = _response(interaction, trace)
        try:
            submission = await capture(session.run, session.ctx, AGENT_NAME, response, scoring)
            scored = await score(session.run, session.ctx, interaction.task.data, scoring, submission, AGENT_NAME)
        except AgentEnvError as exc:
            scored = Scored(ScoringInfo(mode=scoring.mode), reward=0.0, error=str(exc))
        if scored.error is not None:
            logger.warning("scoring failed: %s", redact(scored.error, session.run.redact))
            trace.info["error"] = f"scoring failed: {scored.error}"
        trace.verifications = {vid: v.record() for vid, v in scored.verifications.items()}
        trace.rewards, trace.reward = scored.rewards, scored.reward
        trace.info["scoring"] = scored.info.model_dump(mode="json", exclude_unset=True)
        return trace


def _response(interaction: Interaction, trace: Trace) -> PromptResponse:
    """The rollout as the verifiers read a prompt: the messages sent, and the last answer."""
    sent = [m for s in interaction.segments for m in s.messages]
    errors = [s.error for s in interaction.segments if s.error and s.terminated]
    return PromptResponse(prompt_id=PROMPT_ID, prompt="\n\n".join(sent), response=trace.reply,
                          tool_call_count=trace.tool_call_count, error=errors[-1] if errors else None,
                          is_truncated=trace.is_truncated, is_timeout=trace.is_timeout)


async def _tool_calls(interaction: Interaction) -> list[JsonObject]:
    """The tool calls of the rollout's trajectory ([] when the agent does not share one)."""
    if interaction.context_id is None:
        return []
    try:
        ext = await AgentEnvExtensions.of(interaction.client)
        trajectory = await ext.get_trajectory(context_id=interaction.context_id)
    except AgentEnvError as exc:
        logger.info("no trajectory: %s", exc)
        return []
    return [e for e in trajectory.events if isinstance(e, dict) and e.get("kind") == "tool_call"]


def make_agent(config: AgentConfig | None = None, **fields: Any) -> Agent:
    """An agent from its config (or from AgentConfig fields)."""
    return Agent(config if config is not None else AgentConfig(**fields))
