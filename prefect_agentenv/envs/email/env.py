"""The email env's backend: the mailbox behind the data plane, its tools and its triggers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from mcp.server.mcpserver import MCPServer

from prefect_agentenv.envs.email.mailbox import Email, Mailbox
from prefect_agentenv.envs.email.tools import register_tools
from prefect_agentenv.envs.server import EnvBackend, TriggerAction, VirtualClock
from prefect_agentenv.jsontypes import JsonObject


class EmailEnv(EnvBackend):
    """A mailbox with search, read and send tools, a virtual clock and timed deliveries."""

    name = "email"
    version = "1.0.0"
    description = ("A mailbox with search, read and send tools. Sent mail is dated by the env's "
                   "virtual clock; new mail can arrive at set times.")

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(clock)
        self.mailbox = Mailbox(clock)

    def reset(self) -> None:
        self.mailbox.reset()

    def load(self, documents: Sequence[JsonObject]) -> None:
        self.mailbox.load(documents)

    def export(self) -> JsonObject:
        return self.mailbox.export()

    def register_tools(self, mcp: MCPServer) -> None:
        register_tools(mcp, self.mailbox)

    def trigger_actions(self) -> Mapping[str, TriggerAction]:
        return {"deliver_email": self._deliver_email}

    def _deliver_email(self, data: JsonObject, at: datetime) -> None:
        """``data`` is one email (``id`` optional, ``date`` defaults to the trigger's ``at``)."""
        email = Email.model_validate(data)
        if email.id is not None and self.mailbox.has(email.id):
            raise ValueError(f"email id {email.id!r} already present")
        self.mailbox.deliver(email, at)
