"""prefect-agentenv: run agent-evaluation tasks (envs over MCP, agents over A2A, judges) as Prefect flows.

The public API. Every member loads on first use: the reference env and agent servers live in
this package too, and must not pay for importing Prefect when they start. Type checkers read the
same names from the ``TYPE_CHECKING`` imports (tests/test_public_api.py keeps them, ``_LAZY`` and
``__all__`` in step). A step type of your own takes what it needs from :mod:`prefect_agentenv.plugin`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what checkers and editors see; at run time each name loads on first use
    from prefect_agentenv.api import (
        Agent,
        AgentConfig,
        Interaction,
        NetworkPolicy,
        Receipt,
        RetryConfig,
        ScoringConfig,
        Segment,
        Task,
        TaskData,
        Trace,
        load_agent_config,
        make_agent,
    )
    from prefect_agentenv.blocks import A2AAgent, AgentEnvironment, ArtifactStore, ModelEndpoint
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
    from prefect_agentenv.flows.agent_task import agent_task
    from prefect_agentenv.flows.task_runner import run_task_document
    from prefect_agentenv.results.task_report import TaskReport
    from prefect_agentenv.session import AgentSession
    from prefect_agentenv.steps.base import StepModel
    from prefect_agentenv.steps.registry import StepDefinition, register
    from prefect_agentenv.transcript import Transcript

__version__ = "0.1.0"

_LAZY = {
    "DeployedAgent": "prefect_agentenv.context",
    "DeployedEnv": "prefect_agentenv.context",
    "PromptResponse": "prefect_agentenv.context",
    "RunContext": "prefect_agentenv.context",
    "Problem": "prefect_agentenv.documents",
    "TaskDocument": "prefect_agentenv.documents",
    "load_task": "prefect_agentenv.documents",
    "validate_data": "prefect_agentenv.documents",
    "validate_file": "prefect_agentenv.documents",
    "AgentEnvError": "prefect_agentenv.exceptions",
    "AgentTimeoutError": "prefect_agentenv.exceptions",
    "ConfigurationError": "prefect_agentenv.exceptions",
    "DeployError": "prefect_agentenv.exceptions",
    "ProtocolError": "prefect_agentenv.exceptions",
    "StepError": "prefect_agentenv.exceptions",
    "TaskDocumentError": "prefect_agentenv.exceptions",
    "StepModel": "prefect_agentenv.steps.base",
    "StepDefinition": "prefect_agentenv.steps.registry",
    "register": "prefect_agentenv.steps.registry",
    "A2AAgent": "prefect_agentenv.blocks",
    "AgentEnvironment": "prefect_agentenv.blocks",
    "ArtifactStore": "prefect_agentenv.blocks",
    "ModelEndpoint": "prefect_agentenv.blocks",
    "AgentSession": "prefect_agentenv.session",
    "Agent": "prefect_agentenv.api",
    "AgentConfig": "prefect_agentenv.api",
    "Interaction": "prefect_agentenv.api",
    "NetworkPolicy": "prefect_agentenv.api",
    "Receipt": "prefect_agentenv.api",
    "RetryConfig": "prefect_agentenv.api",
    "ScoringConfig": "prefect_agentenv.api",
    "Segment": "prefect_agentenv.api",
    "Task": "prefect_agentenv.api",
    "TaskData": "prefect_agentenv.api",
    "Trace": "prefect_agentenv.api",
    "load_agent_config": "prefect_agentenv.api",
    "make_agent": "prefect_agentenv.api",
    "agent_task": "prefect_agentenv.flows.agent_task",
    "run_task_document": "prefect_agentenv.flows.task_runner",
    "TaskReport": "prefect_agentenv.results.task_report",
    "Transcript": "prefect_agentenv.transcript",
}

__all__ = [
    "A2AAgent",
    "Agent",
    "AgentConfig",
    "AgentEnvError",
    "AgentEnvironment",
    "AgentSession",
    "AgentTimeoutError",
    "ArtifactStore",
    "ConfigurationError",
    "DeployError",
    "DeployedAgent",
    "DeployedEnv",
    "Interaction",
    "ModelEndpoint",
    "NetworkPolicy",
    "Problem",
    "PromptResponse",
    "ProtocolError",
    "Receipt",
    "RetryConfig",
    "RunContext",
    "ScoringConfig",
    "Segment",
    "StepDefinition",
    "StepError",
    "StepModel",
    "Task",
    "TaskData",
    "TaskDocument",
    "TaskDocumentError",
    "TaskReport",
    "Trace",
    "Transcript",
    "agent_task",
    "load_agent_config",
    "load_task",
    "make_agent",
    "register",
    "run_task_document",
    "validate_data",
    "validate_file",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'prefect_agentenv' has no attribute {name!r}")
