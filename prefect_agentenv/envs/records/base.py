"""The base of every record of the records env."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from prefect_agentenv.jsontypes import JsonObject


class Record(BaseModel):
    """Records keep unknown members, so seeds can carry whatever their scenario needs."""

    model_config = ConfigDict(extra="allow")

    def record(self) -> JsonObject:
        return self.model_dump(mode="json")
