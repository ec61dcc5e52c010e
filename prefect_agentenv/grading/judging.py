"""Driving a judge: ask, read the answer, send a corrective message until it is readable.

Pure async and free of Prefect, so the rubrics_verifier step, the judge agent's tests and any
other caller share one retry policy. Who answers is an :data:`Ask` — a function from the
messages so far (and the attempt number) to the judge's raw text:

* :func:`model_ask` — a direct model call over an OpenAI-compatible endpoint;
* :class:`AgentAsk` — an A2A judge agent, prompted with :func:`judge_messages_as_text` on the
  first attempt and with only the corrective message, in the same context, on later ones.

A2A carries one text per prompt, so the judge prompt (a system and a user message) travels as
one text whose system part comes first, between ``<<<JUDGE INSTRUCTIONS agentenv-judge/v1>>>``
and ``<<<END JUDGE INSTRUCTIONS>>>`` lines; :func:`judge_messages_from_text` splits it back,
which is what the reference judge agent does before calling its model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from prefect_agentenv.context import VerificationRow
from prefect_agentenv.exceptions import AgentTimeoutError, JudgeOutputError, ProtocolError
from prefect_agentenv.grading.judge import (
    JUDGE_MARKER,
    OutputFormat,
    RubricCriterion,
    build_judge_prompt,
    parse_judge_output,
)
from prefect_agentenv.protocols.a2a import A2AClient
from prefect_agentenv.protocols.a2a_reply import AgentReply
from prefect_agentenv.protocols.openai import ChatMessage, OpenAIClient

__all__ = [
    "INSTRUCTIONS_CLOSE", "INSTRUCTIONS_OPEN", "AgentAsk", "Ask", "JudgeResult", "judge_messages_as_text",
    "judge_messages_from_text", "model_ask", "run_judge",
]

Ask = Callable[[list[ChatMessage], int], Awaitable[str]]
"""The messages so far and the attempt number (1-based) → the judge's raw answer."""

DEFAULT_RETRIES = 3
INSTRUCTIONS_OPEN = f"<<<JUDGE INSTRUCTIONS {JUDGE_MARKER}>>>"
INSTRUCTIONS_CLOSE = "<<<END JUDGE INSTRUCTIONS>>>"
_EARLIER_ANSWER = "Your previous answer:"

TrajectoryInput = str | Sequence[Mapping[str, Any] | BaseModel] | None
"""The agent's events as dicts or models, rendered text, or None to grade from the reply alone."""


class JudgeResult(BaseModel):
    """A judge's readable grading and how it was obtained."""

    rows: list[VerificationRow]
    """One row per criterion, in criterion order, under the ids the task document used:
    ``{id, result, score, weight, justification}``."""
    attempts: int
    """How many times the judge was asked (1 when its first answer was readable)."""
    raw_outputs: list[str]
    """Every answer the judge gave, in order."""
    judge_ids: dict[str, str]
    """The neutral ids the judge saw (``c1``…) → the criterion ids of the document."""
    messages: list[ChatMessage] = Field(default_factory=list)
    """The whole exchange with the judge, its last answer included."""


async def run_judge(
    ask: Ask,
    *,
    prompt: str,
    reply: str,
    trajectory: TrajectoryInput,
    criteria: Sequence[RubricCriterion],
    output_format: OutputFormat = "rubric_binary",
    grading_policy: str | None = None,
    context_facts: str | Sequence[str] | None = None,
    files: Sequence[str] = (),
    retries: int = DEFAULT_RETRIES,
) -> JudgeResult:
    """Grade ``reply`` against ``criteria``, re-asking the judge while its answer is unreadable.

    An unreadable answer is not a grade: rather than fail a criterion the judge may well have
    passed, the judge is shown its own answer and told exactly what to fix, up to ``retries``
    times.

    Args:
        ask: how to reach the judge (:func:`model_ask`, :class:`AgentAsk`, or a test double).
        prompt: what the agent under test was asked.
        reply: the agent's final reply.
        trajectory: the agent's events, or rendered text; ``None`` to grade from the reply alone.
        criteria: the criteria in document order.
        output_format: ``rubric_binary`` (pass/fail) or ``rubric_partial`` (a score in [0, 1]).
        grading_policy: the task author's grading instructions.
        context_facts: facts the judge may rely on.
        files: sandbox paths of files the judge can open.
        retries: corrective retries after the first answer (0: a single attempt).

    Raises:
        JudgeOutputError: the last answer is still unreadable; ``raw_outputs`` holds every answer
            and ``partial_rows`` what the last one graded readably.
        ValueError: no criteria, or repeated criterion ids.
    """
    messages, id_map = build_judge_prompt(prompt, reply, trajectory, criteria, output_format=output_format,
                                          grading_policy=grading_policy, context_facts=context_facts, files=files)
    weights = {c.id: c.weight for c in criteria}
    raw_outputs: list[str] = []
    attempts = max(0, retries) + 1
    for attempt in range(1, attempts + 1):
        answer = await ask(list(messages), attempt)
        raw_outputs.append(answer)
        messages.append(ChatMessage(role="assistant", content=answer))
        try:
            rows = parse_judge_output(answer, id_map, output_format, weights=weights)
        except JudgeOutputError as error:
            if attempt == attempts:
                raise _gave_up(error, raw_outputs) from error
            messages.append(ChatMessage.user(error.corrective_message))
            continue
        return JudgeResult(rows=rows, attempts=attempt,
                           raw_outputs=raw_outputs, judge_ids=id_map, messages=messages)
    raise AssertionError("unreachable: the last attempt returns or raises")


def _gave_up(error: JudgeOutputError, raw_outputs: list[str]) -> JudgeOutputError:
    return JudgeOutputError(error.problems, corrective_message=error.corrective_message,
                            partial_rows=error.partial_rows, raw_outputs=list(raw_outputs))


# --- the judge prompt as one A2A text --------------------------------------------------------

def judge_messages_as_text(messages: Sequence[ChatMessage]) -> str:
    """The messages as the one text an A2A judge agent receives.

    The system part comes first, between ``INSTRUCTIONS_OPEN`` and ``INSTRUCTIONS_CLOSE`` lines
    (a judge agent that knows the convention gives it to its model as the system message; any
    other reads it as plain instructions), then the other messages in order, blank-line
    separated; an earlier judge answer is labelled as such.
    """
    system = "\n\n".join(m.content or "" for m in messages if m.role == "system")
    rest = [_as_text(m) for m in messages if m.role != "system"]
    parts = [f"{INSTRUCTIONS_OPEN}\n{system}\n{INSTRUCTIONS_CLOSE}"] if system else []
    return "\n\n".join(parts + [text for text in rest if text])


def judge_messages_from_text(text: str) -> list[ChatMessage]:
    """Split a text made by :func:`judge_messages_as_text` back into a system and a user message.

    A text without the instructions block (a corrective follow-up, or a caller that does not
    use the convention) is one user message. The split is at the first closing line: the
    instructions come from the trusted caller, and everything untrusted comes after them.
    """
    stripped = text.lstrip()
    end = stripped.find(INSTRUCTIONS_CLOSE)
    if not stripped.startswith(INSTRUCTIONS_OPEN) or end < 0:
        return [ChatMessage.user(text)]
    system = stripped[len(INSTRUCTIONS_OPEN):end].strip()
    user = stripped[end + len(INSTRUCTIONS_CLOSE):].strip()
    return [ChatMessage.system(system)] + ([ChatMessage.user(user)] if user else [])


def _as_text(message: ChatMessage) -> str:
    content = message.content or ""
    return f"{_EARLIER_ANSWER}\n{content}" if message.role == "assistant" else content


# --- ways to ask -----------------------------------------------------------------------------

def model_ask(client: OpenAIClient, model: str, *, timeout: float | None, max_tokens: int | None = None,
              temperature: float | None = None) -> Ask:
    """An :data:`Ask` that calls a model directly with the whole conversation each time.

    Args:
        client: the judge role's model endpoint.
        model: the model to request.
        timeout: seconds for each attempt; ``None`` waits as long as the client does.
        max_tokens: cap on each answer.
        temperature: sampling temperature; the endpoint's default when ``None`` (some models
            accept no other).

    The returned function raises ``AgentTimeoutError`` when an attempt runs out of time and
    ``ProtocolError`` when the endpoint fails.
    """

    async def ask(messages: list[ChatMessage], attempt: int) -> str:
        try:
            async with asyncio.timeout(timeout):
                completion = await client.chat(messages, model=model, max_tokens=max_tokens, temperature=temperature)
        except TimeoutError as exc:
            raise AgentTimeoutError(f"the judge model {model!r} did not answer attempt {attempt} "
                                    f"within {timeout:g}s") from exc
        return completion.message.content or ""

    return ask


class AgentAsk:
    """An :data:`Ask` over A2A: one judge agent, one context for every attempt of a grading.

    The first attempt sends the whole prompt (:func:`judge_messages_as_text`) in a new context;
    later ones send only what came after the judge's last answer — the corrective message — in
    the same context, since the agent keeps the history. Make one per grading.

    Args:
        client: the judge agent's client.
        timeout_seconds: bound on each attempt; the agent's task is cancelled past it.
        poll_interval_seconds: the longest pause between two polls of the task (see ``A2AClient.send``).

    Attributes:
        replies: the agent's replies, one per attempt (task ids, trajectory locations).
    """

    def __init__(self, client: A2AClient, *, timeout_seconds: float, poll_interval_seconds: float = 0.5) -> None:
        self.client = client
        self.timeout_seconds = timeout_seconds
        self.poll_interval_seconds = poll_interval_seconds
        self.replies: list[AgentReply] = []

    @property
    def context_id(self) -> str | None:
        """The conversation the attempts share, once the agent has answered."""
        return self.replies[-1].context_id if self.replies else None

    async def __call__(self, messages: list[ChatMessage], attempt: int) -> str:
        """Send this attempt's text and return the judge's answer.

        Raises:
            PromptTimeoutError: the agent did not answer within ``timeout_seconds``.
            ProtocolError: the agent could not be reached or ended its task without an answer.
        """
        context_id = self.context_id
        text = judge_messages_as_text(messages if context_id is None else _after_last_answer(messages))
        reply = await self.client.send(text, context_id=context_id, timeout_seconds=self.timeout_seconds,
                                       poll_interval_seconds=self.poll_interval_seconds)
        self.replies.append(reply)
        if reply.error is not None or reply.state != "completed":
            why = reply.error.message if reply.error is not None else f"the task ended {reply.state}"
            raise ProtocolError(f"the judge agent at {self.client.url} gave no answer to attempt {attempt}: {why}",
                                url=self.client.url)
        return reply.text


def _after_last_answer(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    return list(messages[last + 1:])
