"""Task and benchmark documents: models, loading, compiling, validation and JSON Schema.

The task-document side loads with the package; the benchmark side (benchmark models, their
validation, compiling Verial-style tasks, published versions) loads on first use of one of its
names. Importing any module of this package runs this file first, and one task's ``run`` needs
none of the benchmark side: importing it cost ~0.1 s of CPU (22 modules) in every ``run``
process. Type checkers read the same names from the ``TYPE_CHECKING`` imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefect_agentenv.documents.loading import fill_placeholders, parse_text, read_document, resolve_env_vars
from prefect_agentenv.documents.models import AnyStep, TaskDocument
from prefect_agentenv.documents.problems import Problem
from prefect_agentenv.documents.validation import ValidationResult, load_task, validate_data, validate_file
from prefect_agentenv.lazy import lazy_names

if TYPE_CHECKING:  # what checkers and editors see; at run time each name loads on first use
    from prefect_agentenv.documents.benchmarks.document import Benchmark, StepDocumentTask, VerialTask
    from prefect_agentenv.documents.benchmarks.validation import (
        BenchmarkValidationResult,
        load_benchmark,
        validate_any_file,
        validate_benchmark_data,
        validate_benchmark_file,
    )
    from prefect_agentenv.documents.compile import ExpandedTask, compile_verial_task, expand_tasks
    from prefect_agentenv.documents.verial.compile import CriterionRef

_LAZY = {
    "Benchmark": "prefect_agentenv.documents.benchmarks.document",
    "StepDocumentTask": "prefect_agentenv.documents.benchmarks.document",
    "VerialTask": "prefect_agentenv.documents.benchmarks.document",
    "BenchmarkValidationResult": "prefect_agentenv.documents.benchmarks.validation",
    "load_benchmark": "prefect_agentenv.documents.benchmarks.validation",
    "validate_any_file": "prefect_agentenv.documents.benchmarks.validation",
    "validate_benchmark_data": "prefect_agentenv.documents.benchmarks.validation",
    "validate_benchmark_file": "prefect_agentenv.documents.benchmarks.validation",
    "ExpandedTask": "prefect_agentenv.documents.compile",
    "compile_verial_task": "prefect_agentenv.documents.compile",
    "expand_tasks": "prefect_agentenv.documents.compile",
    "CriterionRef": "prefect_agentenv.documents.verial.compile",
}


__getattr__ = lazy_names(__name__, _LAZY, globals())


__all__ = [
    "AnyStep", "Benchmark", "BenchmarkValidationResult", "CriterionRef", "ExpandedTask", "Problem",
    "StepDocumentTask", "TaskDocument", "ValidationResult", "VerialTask", "compile_verial_task", "expand_tasks",
    "fill_placeholders", "load_benchmark", "load_task", "parse_text", "read_document", "resolve_env_vars",
    "validate_any_file", "validate_benchmark_data", "validate_benchmark_file", "validate_data", "validate_file",
]
