"""Task and benchmark documents: models, loading, compiling, validation and JSON Schema."""

from prefect_agentenv.documents.benchmark import Benchmark, StepDocumentTask, VerialTask
from prefect_agentenv.documents.benchmark_validation import (
    BenchmarkValidationResult,
    load_benchmark,
    validate_any_file,
    validate_benchmark_data,
    validate_benchmark_file,
)
from prefect_agentenv.documents.compile import ExpandedTask, compile_verial_task, expand_tasks
from prefect_agentenv.documents.loading import fill_placeholders, parse_text, read_document, resolve_env_vars
from prefect_agentenv.documents.models import AnyStep, TaskDocument
from prefect_agentenv.documents.problems import Problem
from prefect_agentenv.documents.validation import ValidationResult, load_task, validate_data, validate_file
from prefect_agentenv.documents.verial import CriterionRef

__all__ = [
    "AnyStep", "Benchmark", "BenchmarkValidationResult", "CriterionRef", "ExpandedTask", "Problem",
    "StepDocumentTask", "TaskDocument", "ValidationResult", "VerialTask", "compile_verial_task", "expand_tasks",
    "fill_placeholders", "load_benchmark", "load_task", "parse_text", "read_document", "resolve_env_vars",
    "validate_any_file", "validate_benchmark_data", "validate_benchmark_file", "validate_data", "validate_file",
]
