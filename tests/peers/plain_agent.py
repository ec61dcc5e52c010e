"""A plain A2A 1.0 agent built directly on a2a-sdk's server classes, declaring no extensions.

It stands for any agent a user already has: no AgentEnv extension, so it cannot be given MCP
servers, config or skills. It answers every prompt with ``plain agent heard: <prompt>`` and
completes the task. Run with our interpreter: ``python tests/peers/plain_agent.py --port N``.
"""

from __future__ import annotations

import argparse

import uvicorn
from a2a.helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from starlette.applications import Starlette


class EchoExecutor(AgentExecutor):
    """Completes every task with one text reply."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            assert context.message is not None
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        reply = f"plain agent heard: {context.get_user_input()}"
        await updater.complete(updater.new_agent_message([new_text_part(reply)]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.task_id and context.context_id:
            await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def build_app(public_url: str) -> Starlette:
    card = AgentCard(
        name="plain", description="A plain A2A agent with no extensions.", version="1.0.0",
        supported_interfaces=[AgentInterface(url=public_url + "/", protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="Repeats what it heard.", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=EchoExecutor(), task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(build_app(f"http://{args.host}:{args.port}"), host=args.host, port=args.port, log_level="warning")
