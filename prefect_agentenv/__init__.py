"""prefect-agentenv: run agent-evaluation tasks (envs over MCP, agents over A2A, judges) as Prefect flows.

The public API. Heavy members (the flow, the blocks) load on first use so that reading and
validating documents stays fast.
"""

from __future__ import annotations

import importlib
from typing import Any

from prefect_agentenv.context import DeployedAgent, DeployedEnv, PromptResponse, RunContext
from prefect_agentenv.documents import Problem, TaskDocument, load_task, validate_data, validate_file
from prefect_agentenv.exceptions import (
    AgentEnvError,
    AgentTimeoutError,
    ConfigurationError,
    DeployError,
    ProtocolError,
    StepError,
    TaskDocumentError,
)
from prefect_agentenv.steps.base import StepModel
from prefect_agentenv.steps.registry import StepDefinition, register

__version__ = "0.1.0"

_LAZY = {
    "agent_task": "prefect_agentenv.flows.agent_task",
    "run_task_document": "prefect_agentenv.flows.agent_task",
    "TaskReport": "prefect_agentenv.flows.report",
}

__all__ = [
    "AgentEnvError",
    "AgentTimeoutError",
    "ConfigurationError",
    "DeployError",
    "DeployedAgent",
    "DeployedEnv",
    "Problem",
    "PromptResponse",
    "ProtocolError",
    "RunContext",
    "StepDefinition",
    "StepError",
    "StepModel",
    "TaskDocument",
    "TaskDocumentError",
    "TaskReport",
    "agent_task",
    "load_task",
    "register",
    "run_task_document",
    "validate_data",
    "validate_file",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'prefect_agentenv' has no attribute {name!r}")
