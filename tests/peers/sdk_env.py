"""A notes env written with the AgentEnv server SDK (``agentenv-framework-protocol``), as a user would.

Run with the peers' interpreter: ``.venv-peers/bin/python tests/peers/sdk_env.py``. The SDK reads
``MCP_HOST`` and ``MCP_PORT``; its card, data plane and MCP server are the SDK's own, not ours.
Seed data is ``{"notes": [{"id", "text"}]}`` in a data part or a JSON file part; the ``add_note`` and
``list_notes`` tools work on it; ``urn:example:note-stats/v1`` is a REST extension the SDK advertises.
With ``NOTES_BROKEN_EXPORT=1`` its ``data/get`` fails (the SDK answers a JSON-RPC error), to show
what a check reports about an env that offers an operation and cannot do it.
"""

from __future__ import annotations

import base64
import json
import os
from typing import Annotated, Any

from agentenv_protocol import (
    AgentEnvEnvironment,
    DataPart,
    FilePart,
    add_data,
    environment_card,
    extension,
    get_data,
    reset_data,
    tool,
)
from agentenv_protocol.types import FileWithBytes
from pydantic import Field


@environment_card(name="notes")
class NotesEnv(AgentEnvEnvironment):
    def __init__(self) -> None:
        self.notes: list[dict[str, Any]] = []

    @reset_data
    def reset(self) -> None:
        self.notes = []

    @add_data
    def add(self, parts: list[Any]) -> None:
        for part in parts:
            if isinstance(part, DataPart):
                self.notes.extend(part.data.get("notes", []))
            elif isinstance(part, FilePart) and isinstance(part.file, FileWithBytes):
                self.notes.extend(json.loads(base64.b64decode(part.file.bytes)).get("notes", []))

    @get_data
    def get(self) -> list[DataPart]:
        if os.environ.get("NOTES_BROKEN_EXPORT") == "1":
            raise RuntimeError("the export is broken on purpose")
        return [DataPart(data={"notes": self.notes})]

    @tool(name="list_notes")
    def list_notes(self) -> str:
        """Every note, as a JSON list of {id, text}."""
        return json.dumps(self.notes)

    @tool(name="add_note")
    def add_note(self, text: Annotated[str, Field(description="The note's text.")]) -> str:
        """Add a note; answers with its id."""
        note = {"id": f"n-{len(self.notes) + 1}", "text": text}
        self.notes.append(note)
        return note["id"]

    @extension("urn:example:note-stats/v1", description="How many notes the env holds.")
    def stats(self) -> dict[str, int]:
        return {"count": len(self.notes)}


if __name__ == "__main__":
    NotesEnv().serve()
