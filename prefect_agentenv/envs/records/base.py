"""The base of every record of the records env."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """Records keep unknown members, so seeds can carry whatever their scenario needs."""

    model_config = ConfigDict(extra="allow")

    def record(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
