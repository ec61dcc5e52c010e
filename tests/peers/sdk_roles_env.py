"""A help-desk env written with the AgentEnv server SDK whose tools can be switched off per role.

Run with the peers' interpreter: ``.venv-peers/bin/python tests/peers/sdk_roles_env.py`` (the SDK
reads ``MCP_HOST`` and ``MCP_PORT``). It serves ``urn:agentenv:disable-tool/v1`` and
``urn:agentenv:enable-tool/v1`` as the SDK serves extensions (REST routes advertised on its card),
answering with the role's state after the change: ``{role, disabled, allowed}``.
"""

from __future__ import annotations

from typing import Annotated

from agentenv_protocol import AgentEnvEnvironment, environment_card, extension, tool
from pydantic import Field

TOOLS = ("lookup_order", "issue_refund")


@environment_card(name="desk")
class DeskEnv(AgentEnvEnvironment):
    def __init__(self) -> None:
        self.disabled: dict[str, set[str]] = {}

    @tool(name="lookup_order")
    def lookup_order(self, order_id: Annotated[str, Field(description="The order's id.")]) -> str:
        """The order's status."""
        return f"{order_id}: shipped"

    @tool(name="issue_refund")
    def issue_refund(self, order_id: Annotated[str, Field(description="The order's id.")]) -> str:
        """Refund the order."""
        return f"{order_id}: refunded"

    @extension("urn:agentenv:disable-tool/v1", op="disable", description="Switch tools off for a role.")
    def disable(self, role: str, tools: list[str]) -> dict:
        self.disabled.setdefault(role, set()).update(t for t in tools if t in TOOLS)
        return self._state(role)

    @extension("urn:agentenv:enable-tool/v1", op="enable", description="Switch tools back on for a role.")
    def enable(self, role: str, tools: list[str]) -> dict:
        self.disabled.setdefault(role, set()).difference_update(tools)
        return self._state(role)

    def _state(self, role: str) -> dict:
        off = sorted(self.disabled.get(role, set()))
        return {"role": role, "disabled": off, "allowed": [t for t in TOOLS if t not in off]}


if __name__ == "__main__":
    DeskEnv().serve()
