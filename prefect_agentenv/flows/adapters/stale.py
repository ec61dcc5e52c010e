"""Flow runs of this host whose process was killed outright stay RUNNING in Prefect forever;
the next run marks them Crashed (their folders were found by ``runtime.leftovers``)."""

from __future__ import annotations

import logging
from uuid import UUID

from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import StateType
from prefect.settings import get_current_settings
from prefect.states import Crashed

logger = logging.getLogger("prefect_agentenv.stale")

_UNFINISHED = {StateType.RUNNING, StateType.PENDING, StateType.CANCELLING}


async def mark_dead_flow_runs_crashed(flow_run_ids: list[str]) -> list[str]:
    """Set each still-unfinished flow run to Crashed; returns the ids changed. Best effort."""
    if not flow_run_ids or not get_current_settings().api.url:
        return []
    changed: list[str] = []
    try:
        async with get_client() as client:
            for flow_run_id in flow_run_ids:
                flow_run = await client.read_flow_run(UUID(flow_run_id))
                if flow_run.state is None or flow_run.state.type not in _UNFINISHED:
                    continue
                await client.set_flow_run_state(UUID(flow_run_id), Crashed(
                    message="its process was killed (found by the next run on this host); everything it "
                            "started was stopped"), force=True)
                changed.append(flow_run_id)
    except Exception as exc:  # noqa: BLE001 - a cleanup of the past must not stop this run
        logger.warning("could not mark dead flow runs Crashed: %s", exc)
    return changed
