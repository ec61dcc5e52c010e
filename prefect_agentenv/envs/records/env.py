"""The records env's backend: the record store behind the data plane, its tools and its triggers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from mcp.server.mcpserver import MCPServer

from prefect_agentenv.envs.records.store import Records
from prefect_agentenv.envs.records.tools import register_tools
from prefect_agentenv.envs.server import EnvBackend, TriggerAction, VirtualClock
from prefect_agentenv.jsontypes import JsonObject


class RecordsEnv(EnvBackend):
    """Business records: patients, referrals, requests with statuses, a document inbox."""

    name = "records"
    version = "1.0.0"
    description = ("Business records of a clinic: patients, referrals, requests (such as prior "
                   "authorizations) with statuses and codes, and an inbox of inbound documents.")

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(clock)
        self.records = Records(clock)

    def reset(self) -> None:
        self.records.reset()

    def load(self, documents: Sequence[JsonObject]) -> None:
        self.records.load(documents)

    def export(self) -> JsonObject:
        return self.records.export()

    def register_tools(self, mcp: MCPServer) -> None:
        register_tools(mcp, self.records)

    def trigger_actions(self) -> Mapping[str, TriggerAction]:
        return {"drop_inbox_document": self._drop_inbox_document, "drop_file_inbox": self._drop_file_inbox,
                "leave_voicemail": self._leave_voicemail, "post_hl7_message": self._post_hl7_message}

    def _drop_inbox_document(self, data: JsonObject, at: datetime) -> None:
        self.records.drop_document(data, at)

    def _drop_file_inbox(self, data: JsonObject, at: datetime) -> None:
        self.records.drop_file(data, at)

    def _post_hl7_message(self, data: JsonObject, at: datetime) -> None:
        self.records.post_hl7(data, at)

    def _leave_voicemail(self, data: JsonObject, at: datetime) -> None:
        self.records.leave_voicemail(data, at)
