"""The JSON Schema of task and benchmark documents, for editors and the Prefect UI."""

from __future__ import annotations

from pydantic.json_schema import models_json_schema

from prefect_agentenv.documents.benchmarks.document import Benchmark
from prefect_agentenv.documents.models import TaskDocument
from prefect_agentenv.jsontypes import JsonObject

_DRAFT = "https://json-schema.org/draft/2020-12/schema"


def document_schema() -> JsonObject:
    """JSON Schema of every document ``prefect-agentenv validate`` accepts.

    ``anyOf``: a task document ``{id, steps}``, a bare list of steps, a benchmark document.
    """
    _, schema = models_json_schema([(TaskDocument, "validation"), (Benchmark, "validation")],
                                   ref_template="#/$defs/{model}")
    defs = schema["$defs"]
    steps = defs["TaskDocument"]["properties"]["steps"]
    # Inline steps stay raw in the model (seed rows may complete them), but an editor should
    # check them like a task document's steps.
    inline = defs["StepDocumentTask"]["properties"]["steps"]
    inline["anyOf"] = [{"$ref": "#/$defs/TaskDocument/properties/steps"}, {"type": "null"}]
    return {
        "$schema": _DRAFT,
        "title": "prefect-agentenv task or benchmark document",
        "anyOf": [{"$ref": "#/$defs/TaskDocument"}, steps, {"$ref": "#/$defs/Benchmark"}],
        "$defs": defs,
    }

