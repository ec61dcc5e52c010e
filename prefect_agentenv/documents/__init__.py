"""Task documents: models, loading, validation and JSON Schema."""

from prefect_agentenv.documents.loading import fill_placeholders, parse_text, read_document, resolve_env_vars
from prefect_agentenv.documents.models import AnyStep, TaskDocument
from prefect_agentenv.documents.problems import Problem
from prefect_agentenv.documents.validation import ValidationResult, load_task, validate_data, validate_file

__all__ = [
    "AnyStep", "Problem", "TaskDocument", "ValidationResult", "fill_placeholders", "load_task", "parse_text",
    "read_document", "resolve_env_vars", "validate_data", "validate_file",
]
