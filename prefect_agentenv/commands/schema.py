"""``prefect-agentenv schema``: the JSON Schema of task and benchmark documents, for editors."""

from __future__ import annotations

import json
import sys


def schema_command() -> None:
    """Print the JSON Schema of task and benchmark documents (point your editor at it)."""
    # Imported here so `--help` does not pay for the documents.
    from prefect_agentenv.documents.schema import document_schema

    json.dump(document_schema(), sys.stdout, indent=2)
    sys.stdout.write("\n")
