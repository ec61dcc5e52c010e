"""Kept for plugins written against this path: the run's shared clients live in
:mod:`prefect_agentenv.steps.support.services` now, and a plugin takes them (with everything else
a step type needs) from :mod:`prefect_agentenv.plugin`."""

from prefect_agentenv.steps.support.services import (
    artifact_store,
    as_step_error,
    deployed_env,
    env_client,
    http_client,
    launchers,
    peer_read_timeout,
    read_record,
)

__all__ = [
    "artifact_store",
    "as_step_error",
    "deployed_env",
    "env_client",
    "http_client",
    "launchers",
    "peer_read_timeout",
    "read_record",
]
