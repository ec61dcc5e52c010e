"""prompt_agent: send a prompt to a deployed agent (or hold a conversation) and keep the reply."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Annotated, Any, Literal, Required, TypedDict

from pydantic import Field, model_validator

from prefect_agentenv.context import DeployedAgent, PromptResponse, RunContext
from prefect_agentenv.exceptions import AgentEnvError, ProtocolError, StepError
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.run_services.agents import a2a_client, deployed_agent
from prefect_agentenv.run_services.clients import artifact_store, http_client, peer_read_timeout
from prefect_agentenv.run_services.model_door import limit_reached
from prefect_agentenv.run_services.usage import price_of, prompt_usage
from prefect_agentenv.runtime.resources.run import RunResources, current_run
from prefect_agentenv.steps.base import DEFAULT_AGENT_NAME, AgentRef, Provides, StepModel
from prefect_agentenv.steps.registry import StepDefinition

if TYPE_CHECKING:  # the runtime loads on use: `validate` imports step modules and stays light
    from prefect_agentenv.protocols.a2a import AgentReply

logger = logging.getLogger("prefect_agentenv.prompt")


REFERENCE_USER_AGENT = "human_agent"
"""The user a multi-turn prompt talks to when the document names none (AgentEnv's default)."""


def _prompt_from_parts(parts: Any, prompt: Any) -> str:
    """AgentEnv's ``parts`` (A2A parts) as one prompt text: text parts only."""
    if not isinstance(parts, list):
        raise ValueError("parts must be a list of A2A parts")
    texts = [t for p in parts if isinstance(p, dict) and p.get("kind", "text") == "text"
             if isinstance(t := p.get("text"), str)]
    if len(texts) != len(parts):
        raise ValueError("parts: only text parts are supported ({\"kind\": \"text\", \"text\": ...}); "
                         "file and data parts cannot be sent by this runner yet")
    joined = "\n\n".join(texts)
    if isinstance(prompt, str) and prompt and prompt != joined:
        raise ValueError("give prompt or parts, not both")
    return joined


class PromptAgentStep(StepModel):
    """Prompts an agent over A2A and stores its PromptResponse under prompt_id."""

    type: Literal["prompt_agent"] = "prompt_agent"
    agent_name: AgentRef = DEFAULT_AGENT_NAME
    """The deployed agent to prompt (AgentEnv's default-agent when omitted)."""
    prompt_id: Annotated[str, Provides("prompt")]
    """Key of the PromptResponse in prompt_responses (the step id when omitted)."""
    prompt: str
    """The first (or only) message to the agent."""
    timeout_seconds: float = Field(default=1800, gt=0)
    """The whole exchange is cancelled after this long."""
    poll_interval_seconds: float = Field(default=0.5, gt=0)
    """The longest pause between two polls of the agent's task (polling starts at 20 ms and backs off to it)."""
    model: str | None = None
    """Model the agent should use for this prompt, sent through its agent-config extension."""
    max_turns: int | None = Field(default=None, ge=1)
    """Cap on the agent's model turns, sent through its agent-config extension."""
    max_turn_tokens: int | None = Field(default=None, ge=1)
    """Cap on each model response's tokens, sent through its agent-config extension."""
    max_conversation_turns: int = Field(default=1, ge=1)
    """Above 1, the reply goes to a user (agent or person) whose answer is the next turn."""
    user_agent_name: AgentRef | None = None
    """A deployed agent playing the user; answers {message, done}."""
    user_a2a_url: str | None = None
    """A person's A2A endpoint playing the user; their text is the next prompt."""
    context_id: str | None = Field(default=None, min_length=1)
    """Prompts to one agent that name the same context_id continue one conversation (a coding agent
    resumes its session); without it each prompt starts a conversation of its own."""

    accepted_but_ignored = (
        "system_prompt", "model_params", "effort", "max_thinking_tokens", "harness", "agentenv_tools",
        "trajectory_output_prefix", "snapshot_config", "user_system_prompt",
        "user_model", "user_prompt", "output_format", "user_output_format", "live_trajectory", "seed",
        "user_agent_timeout_seconds",
    )

    reference_fields = {"parts": "AgentEnv's A2A parts; text parts are read as the prompt."}
    schema_optional = ("prompt_id", "prompt")

    @classmethod
    def reference_forms(cls, data: JsonObject, notices: list[str]) -> JsonObject:
        """AgentEnv defaults: prompt_id, agent_name, a user named human_agent; ``parts`` as the prompt."""
        for name in ("agent_name", "prompt_id", "user_agent_name", "user_a2a_url", "max_turns", "model"):
            if name in data and data[name] is None:
                del data[name]
        if "prompt_id" not in data and isinstance(data.get("id"), str):
            data["prompt_id"] = data["id"]
        if "parts" in data:
            data["prompt"] = _prompt_from_parts(data.pop("parts"), data.get("prompt"))
        turns = data.get("max_conversation_turns", 1)
        if isinstance(turns, int) and turns > 1 and "user_agent_name" not in data and "user_a2a_url" not in data:
            data["user_agent_name"] = REFERENCE_USER_AGENT
            notices.append(f"a conversation with no user named: the user is the agent '{REFERENCE_USER_AGENT}' "
                           "(AgentEnv's default; deploy it with deploy_human_agent or deploy_agent)")
        return data

    @model_validator(mode="after")
    def _conversation_needs_a_user(self) -> PromptAgentStep:
        if self.user_agent_name and self.user_a2a_url:
            raise ValueError("give user_agent_name or user_a2a_url, not both")
        if self.max_conversation_turns > 1 and not (self.user_agent_name or self.user_a2a_url):
            raise ValueError("max_conversation_turns > 1 needs user_agent_name or user_a2a_url")
        return self


class ConversationTurn(TypedDict, total=False):
    """One turn as the conversation store keeps it (a JSON record; keys in the order written).

    An agent turn has ``prompt`` and ``reply``, ``state`` and ``tool_call_count`` (or ``error``); a
    user turn has ``message`` and ``done``."""

    turn: Required[int]
    role: Required[Literal["agent", "user"]]
    prompt: str
    reply: str
    state: str | None
    tool_call_count: int | None
    error: str
    message: str
    done: bool


async def run(step: PromptAgentStep, ctx: RunContext) -> RunContext:
    """Configure the caps, converse, store the trajectory and turns, record the PromptResponse."""
    from prefect_agentenv.run_services.agent_configuration import ConfigRequest, deliver, record

    agent = deployed_agent(ctx, step.agent_name, step)
    user = deployed_agent(ctx, step.user_agent_name, step) if step.user_agent_name else None
    run_ = current_run()
    caps = {"max_turns": step.max_turns, "max_turn_tokens": step.max_turn_tokens, "model": step.model}
    if any(v is not None for v in caps.values()):
        request = ConfigRequest(explicit={k: (k, v) for k, v in caps.items()})
        record(ctx, await deliver(step, agent, a2a_client(run_, agent), request))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + step.timeout_seconds
    turns: list[ConversationTurn] = []
    reply, error = await _converse(step, agent, user, turns, deadline)
    trajectory, events = await _store_trajectory(run_, step, agent, reply)
    await _store_turns(run_, step, turns)
    model = reply.model or agent.model
    # A model-call limit (or the budget) refused the agent's next call: the reply is cut short, as
    # by max_turn_tokens: truncated, whatever the agent made of the refusal, and not its failure.
    limit = limit_reached(run_)
    response = PromptResponse(
        prompt_id=step.prompt_id, prompt=step.prompt, response=reply.text, trajectory=trajectory,
        tool_call_count=reply.tool_call_count, model=model, error=None if limit else error,
        is_truncated=reply.is_truncated or limit is not None, is_timeout=reply.is_timeout, limit=limit,
        usage=prompt_usage(reply.usage, events, await price_of(run_, model)),
    )
    ctx.prompt_responses[step.prompt_id] = response
    if error and not limit:
        raise StepError(f"agent '{agent.agent_name}' failed: {error}", step=step,
                        context=ctx)
    return ctx


async def _converse(step: PromptAgentStep, agent: DeployedAgent, user: DeployedAgent | None,
                    turns: list[ConversationTurn], deadline: float) -> tuple[AgentReply, str | None]:
    """Single turn, or up to max_conversation_turns exchanges with the user; the last agent reply."""
    from prefect_agentenv.protocols.a2a import AgentReply, PromptTimeoutError

    run_ = current_run()
    client = a2a_client(run_, agent)
    message, context_id = step.prompt, _agent_context(run_, step, agent)
    reply = AgentReply()
    for turn in range(1, step.max_conversation_turns + 1):
        try:
            reply = await client.send(message, context_id=context_id, timeout_seconds=_left(deadline),
                                      poll_interval_seconds=step.poll_interval_seconds)
        except PromptTimeoutError as exc:
            error = f"did not finish within {step.timeout_seconds:g}s (timeout_seconds): {exc}"
            turns.append({"turn": turn, "role": "agent", "prompt": message, "error": error})
            return exc.reply, error
        except ProtocolError as exc:
            turns.append({"turn": turn, "role": "agent", "prompt": message, "error": str(exc)})
            return reply.model_copy(update={"text": ""}), str(exc)
        context_id = reply.context_id
        _remember_context(run_, step, agent, context_id)
        turns.append({"turn": turn, "role": "agent", "prompt": message, "reply": reply.text, "state": reply.state,
                      "tool_call_count": reply.tool_call_count})
        if reply.error or reply.state in ("failed", "rejected", "canceled"):
            return reply, _error_text(reply)
        if turn == step.max_conversation_turns:
            break
        answer, done = await _ask_user(step, user, reply.text, deadline, turns, turn)
        if done or not answer:
            break
        message = answer
    return reply, None


async def _ask_user(step: PromptAgentStep, user: DeployedAgent | None, agent_text: str, deadline: float,
                    turns: list[ConversationTurn], turn: int) -> tuple[str, bool]:
    """The user's next message and whether they are done."""
    from prefect_agentenv.protocols.a2a import A2AClient

    run_ = current_run()
    client = a2a_client(run_, user) if user else A2AClient(step.user_a2a_url or "", http=http_client(run_),
                                                           request_timeout=peer_read_timeout())
    try:
        answer = await client.send(agent_text, context_id=_user_context(run_, step), timeout_seconds=_left(deadline),
                                   poll_interval_seconds=step.poll_interval_seconds)
    except AgentEnvError as exc:
        raise StepError(f"the user ({step.user_agent_name or step.user_a2a_url}) did not answer: {exc}",
                        step=step) from exc
    _user_contexts(run_)[step.id] = answer.context_id
    message, done = _parse_user(answer.text, answer.data) if user else (answer.text, not answer.text.strip())
    turns.append({"turn": turn, "role": "user", "message": message, "done": done})
    return message, done


def _parse_user(text: str, data: JsonObject) -> tuple[str, bool]:
    """A user agent answers ``{message, done}`` (as JSON text or a data part)."""
    message = data.get("message")
    if isinstance(message, str):
        return message, bool(data.get("done"))
    try:
        parsed = json.loads(text)
    except ValueError:
        return text, False
    if isinstance(parsed, dict):
        return str(parsed.get("message", "")), bool(parsed.get("done"))
    return text, False


def _user_contexts(run_: RunResources) -> dict[str, str | None]:
    return run_.services.user_contexts


def _user_context(run_: RunResources, step: PromptAgentStep) -> str | None:
    return _user_contexts(run_).get(step.id)


def _agent_context(run_: RunResources, step: PromptAgentStep, agent: DeployedAgent) -> str | None:
    """The A2A context an earlier prompt with this step's ``context_id`` got from the same agent."""
    if step.context_id is None:
        return None
    return run_.services.agent_contexts.get((agent.instance_id, step.context_id))


def _remember_context(run_: RunResources, step: PromptAgentStep, agent: DeployedAgent, context: str | None) -> None:
    if step.context_id is not None and context:
        run_.services.agent_contexts.setdefault((agent.instance_id, step.context_id), context)


def _left(deadline: float) -> float:
    return max(0.1, deadline - asyncio.get_running_loop().time())


def _error_text(reply: AgentReply) -> str:
    if reply.error:
        code = f" ({reply.error.code})" if reply.error.code else ""
        return f"{reply.error.type}{code}: {reply.error.message}"
    return f"the agent's task ended {reply.state}"


async def _store_trajectory(run_: RunResources, step: PromptAgentStep, agent: DeployedAgent,
                            reply: AgentReply) -> tuple[str | None, list[Any] | None]:
    """Fetch the agent's trajectory (trajectory extension) and keep it in the artifact store; its
    location and its events (for the tokens an agent reports only there)."""
    from prefect_agentenv.protocols.agentenv_ext import AgentEnvExtensions

    if reply.task_id is None and reply.context_id is None:
        return reply.trajectory, None
    try:
        ext = await AgentEnvExtensions.of(a2a_client(run_, agent))
        trajectory = await ext.get_trajectory(task_id=reply.task_id) if reply.task_id else \
            await ext.get_trajectory(context_id=reply.context_id)
        events = trajectory.model_dump(mode="json", exclude={"raw"})
    except AgentEnvError as exc:  # an agent without the extension still has a reply worth grading
        logger.info("no trajectory from %s: %s", agent.agent_name, exc)
        return reply.trajectory, None
    store = await artifact_store(run_)
    key = f"{run_.run_id}/trajectories/{step.prompt_id}.json"
    location = await asyncio.to_thread(store.put_object, key, json.dumps(events, indent=1, default=str))
    listed = events.get("events") if isinstance(events, dict) else None
    return location, listed if isinstance(listed, list) else None


async def _store_turns(run_: RunResources, step: PromptAgentStep, turns: list[ConversationTurn]) -> None:
    """Every turn goes to the conversation store (one record per prompt)."""
    store = await artifact_store(run_)
    key = f"{run_.run_id}/conversations/{step.prompt_id}.json"
    await asyncio.to_thread(store.put_object, key, json.dumps(turns, indent=1, default=str))


definition = StepDefinition(PromptAgentStep, run)
