"""Live steering for the reference agents: a message into a task that is still working.

The a2a-sdk's request handler runs the messages of one task one after the other: a second
message naming a working task waits until the first ``execute`` has finished, and is dropped
when that finished the task. :class:`SteeringRequestHandler` looks first: a message whose
``taskId`` names a turn that is running (and takes steering) goes into that turn's inbox, and
the answer is the task as it is now (``working``). Every other message goes the SDK's way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from a2a.helpers import get_message_text
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.types.a2a_pb2 import GetTaskRequest, Message, SendMessageRequest, Task
from a2a.utils.errors import InvalidParamsError

from prefect_agentenv.protocols.steering import STEERING_EXTENSION

__all__ = ["STEERING_EXTENSION", "LiveTurn", "SteeringRequestHandler"]


class LiveTurn(Protocol):
    """A running turn that takes steering messages."""

    task_id: str
    context_id: str

    def steer(self, text: str) -> None:
        """Hand a message to the turn; it reads it at its next safe point."""


class SteeringRequestHandler(DefaultRequestHandler):
    """The SDK's handler, except that a message into a running, steerable turn is delivered to it."""

    def __init__(self, *args: object, live: Mapping[str, LiveTurn], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._live = live

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Message | Task:
        turn = self._live.get(params.message.task_id) if params.message.task_id else None
        if turn is None:
            return await super().on_message_send(params, context)
        if params.message.context_id and params.message.context_id != turn.context_id:
            raise InvalidParamsError(message=f"Context {params.message.context_id} does not match "
                                             f"context {turn.context_id} of task {turn.task_id}")
        turn.steer(get_message_text(params.message))
        task = await self.on_get_task(GetTaskRequest(id=turn.task_id), context)
        assert task is not None  # the turn is running, so its task is stored
        return task
