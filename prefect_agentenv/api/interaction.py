"""A rollout held open: the caller plays the user, one turn at a time, and may send messages between.

Each :meth:`Interaction.turn` runs one segment: the message (with any queued ones before it) goes
to the agent in the rollout's A2A context, and the turn ends when the agent answers (it may make
several model and tool calls first). The rollout terminates when the agent fails, the deadline
passes, a response hits ``max_turn_tokens``, or ``max_turns`` segments have run; after that a
turn returns an empty terminated segment and leaves its message alone.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Literal

from prefect_agentenv.api.trace import Receipt, Segment, StopReason, Trace
from prefect_agentenv.exceptions import AgentEnvError
from prefect_agentenv.protocols.a2a import A2AClient, PromptTimeoutError
from prefect_agentenv.protocols.a2a_reply import AgentReply
from prefect_agentenv.protocols.steering import declares_steering

if TYPE_CHECKING:
    from prefect_agentenv.api.config import AgentConfig, Task

_FAILED = ("failed", "rejected", "canceled")


class Interaction:
    """One rollout, turn by turn. Made by ``Agent.interaction(task)``; read ``trace`` after the block."""

    def __init__(self, client: A2AClient, task: Task, config: AgentConfig) -> None:
        self._client = client
        self.task = task
        self.config = config
        self.segments: list[Segment] = []
        self.receipts: list[Receipt] = []
        self.trace: Trace | None = None
        """The scored Trace, set when the ``async with`` block is left."""
        self.context_id: str | None = None
        self._opening_due = task.prompt is not None
        self._pending: list[tuple[Receipt, str]] = []
        self._busy = False
        self._live_task: str | None = None
        """The A2A task of the turn in flight, once the agent has answered the send."""
        self._steered: list[str] = []
        """Messages steered into the turn in flight (they join its segment's messages)."""
        self._woken: asyncio.Task[Segment] | None = None
        self._stop: StopReason | None = None
        self._deadline = asyncio.get_running_loop().time() + config.timeout_seconds

    @property
    def client(self) -> A2AClient:
        """The A2A client of the agent under test."""
        return self._client

    @property
    def live_task_id(self) -> str | None:
        """The A2A task of the turn in flight (None when idle, or until the agent has taken the turn)."""
        return self._live_task

    @property
    def terminated(self) -> bool:
        return self._stop is not None

    @property
    def stop_reason(self) -> StopReason | None:
        return self._stop

    async def turn(self, message: str | None = None) -> Segment:
        """Run one segment and return it.

        With no message: the opening turn (the task's prompt) when it is due, else the turn a
        ``send`` started (once), else the queued messages. After termination: an empty terminated
        segment; the message is not consumed.

        Raises:
            ValueError: a message before the opening turn of a task with a prompt, or no message
                at all when nothing is due.
        """
        if self._woken is not None:
            woken, self._woken = self._woken, None
            segment = await woken
            if message is None and not self._pending:
                return segment
        if self.terminated or self.trace is not None:  # over: nothing is sent, nothing consumed
            return Segment(index=len(self.segments), terminated=True, stop_reason=self._stop)
        if self._opening_due:
            if message is not None:
                raise ValueError("this task has a prompt: call turn() without a message to run the opening turn")
            self._opening_due = False
            assert self.task.prompt is not None
            return await self._exchange([self.task.prompt])
        if message is None and not self._pending:
            raise ValueError("turn() needs a message (the task has no prompt, or its opening turn has run)")
        return await self._exchange([] if message is None else [message])

    async def send(self, message: str, mode: Literal["queue", "steer"] = "steer",
                   message_id: str | None = None) -> Receipt:
        """Send a message while the agent works, or wake an idle interaction with it.

        ``queue`` holds it until the current turn ends and delivers it, with any other queued
        message in order, at the start of the next turn (an idle interaction starts that turn
        now). ``steer`` delivers it at once: into the running A2A task when a turn is in flight
        (the agent's card must declare live steering, else it is rejected), as a turn when idle.
        """
        receipt_id = message_id or uuid.uuid4().hex
        reason = self._refusal()
        if reason is None and mode == "steer" and self._busy and not await self._steerable():
            reason = "the agent takes no live steering (its card declares no steering extension): use mode='queue'"
        if reason is not None:
            return self._keep(Receipt(message_id=receipt_id, mode=mode, accepted=False, status="rejected",
                                      reason=reason))
        receipt = self._keep(Receipt(message_id=receipt_id, mode=mode, accepted=True, status="queued"))
        if mode == "steer" and self._busy:
            receipt.reason = await self._steer(message)
            if receipt.reason is None:
                receipt.status = "delivered"
                return receipt
        self._pending.append((receipt, message))
        if not self._busy:
            # Wake: the turn takes what is queued now; later messages wait for the turn after it.
            self._busy = True
            queued, self._pending = self._take_pending(), []
            self._woken = asyncio.create_task(self._exchange([], queued))
        return receipt

    async def _steer(self, message: str) -> str | None:
        """Send the message into the running task; why it is queued instead (None: delivered)."""
        if self._live_task is None:
            return "the turn's task had not started yet: queued for the next turn"
        try:
            reply = await self._client.start(message, context_id=self.context_id, task_id=self._live_task)
        except AgentEnvError as exc:  # the task ended meanwhile: the agent refuses a finished task
            return f"the turn ended before the message reached it ({exc}): queued for the next turn"
        if reply.state != "working":
            return f"the agent answered with its task {reply.state}: queued for the next turn"
        self._steered.append(message)
        return None

    def _refusal(self) -> str | None:
        if self.trace is not None:
            return "the interaction is over"
        if self.terminated:
            return f"the rollout has terminated ({self._stop})"
        if self._opening_due:
            return "start the opening turn() of this task before sending messages"
        return None

    def _keep(self, receipt: Receipt) -> Receipt:
        self.receipts.append(receipt)
        return receipt

    async def _steerable(self) -> bool:
        try:
            return declares_steering(await self._client.card())
        except AgentEnvError:
            return False

    def _take_pending(self) -> list[str]:
        """The queued messages, in order, marked delivered (they go out with the next turn)."""
        for receipt, _ in self._pending:
            receipt.status = "delivered"
        return [text for _, text in self._pending]

    async def _exchange(self, messages: list[str], queued: list[str] | None = None) -> Segment:
        """Deliver the queued messages and these, wait for the agent's answer, record the segment."""
        self._busy = True
        try:
            if queued is None:
                queued, self._pending = self._take_pending(), []
            delivered = queued + messages
            self._steered = []
            segment = await self._ask("\n\n".join(delivered), delivered)
        finally:
            self._busy, self._live_task = False, None
        if self._steered:
            segment = segment.model_copy(update={"messages": [*segment.messages, *self._steered]})
        self.segments.append(segment)
        return segment

    async def _ask(self, text: str, delivered: list[str]) -> Segment:
        index = len(self.segments)
        left = self._deadline - asyncio.get_running_loop().time()
        if left <= 0:
            return self._end(Segment(index=index, messages=delivered, is_timeout=True), "timeout")
        try:
            reply = await self._client.send(text, context_id=self.context_id, timeout_seconds=left,
                                            on_start=self._started)
        except PromptTimeoutError as exc:
            seen = exc.reply if isinstance(exc.reply, AgentReply) else AgentReply()
            return self._end(Segment(index=index, messages=delivered, last_reply=seen.text, state=seen.state,
                                     is_timeout=True, error=str(exc)), "timeout")
        except AgentEnvError as exc:
            return self._end(Segment(index=index, messages=delivered, error=str(exc)), "error")
        self.context_id = reply.context_id or self.context_id
        segment = Segment(index=index, messages=delivered, last_reply=reply.text, state=reply.state,
                          tool_call_count=reply.tool_call_count, is_truncated=reply.is_truncated,
                          is_timeout=reply.is_timeout,
                          error=(reply.error.message if reply.error else None))
        return self._after(segment, reply)

    def _started(self, reply: AgentReply) -> None:
        """The turn's task exists: a steering message can name it."""
        self._live_task = reply.task_id
        self.context_id = reply.context_id or self.context_id

    def _after(self, segment: Segment, reply: AgentReply) -> Segment:
        if reply.error is not None or reply.state in _FAILED:
            return self._end(segment, "error")
        if reply.is_timeout:
            return self._end(segment, "timeout")
        if reply.is_truncated:
            return self._end(segment, "max_turn_tokens" if self.config.max_turn_tokens else "truncated")
        if self.config.max_turns is not None and segment.index + 1 >= self.config.max_turns:
            return self._end(segment.model_copy(update={"is_truncated": True}), "max_turns")
        return segment

    def _end(self, segment: Segment, reason: StopReason) -> Segment:
        self._stop = reason
        return segment.model_copy(update={"terminated": True, "stop_reason": reason})

    async def close(self) -> None:
        """Cancel what is still pending: queued messages and a turn the caller did not wait for."""
        for receipt, _ in self._pending:
            receipt.status = "cancelled"
        self._pending = []
        if self._woken is not None and not self._woken.done():
            self._woken.cancel()
            try:
                await self._woken
            except (asyncio.CancelledError, AgentEnvError):
                pass
        self._woken = None
