"""The JSON Schema of task documents, for editors and the Prefect UI."""

from __future__ import annotations

from typing import Any

from prefect_agentenv.documents.models import TaskDocument


def task_document_schema() -> dict[str, Any]:
    """JSON Schema accepting both forms: ``{id, steps}`` and a bare list of steps."""
    doc = TaskDocument.model_json_schema(ref_template="#/$defs/{model}")
    defs = doc.pop("$defs", {})
    defs["TaskDocument"] = doc
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "prefect-agentenv task document",
        "anyOf": [{"$ref": "#/$defs/TaskDocument"}, doc["properties"]["steps"]],
        "$defs": defs,
    }
