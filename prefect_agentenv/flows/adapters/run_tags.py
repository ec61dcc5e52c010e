"""The task document's tags on the flow run that runs it, where the UI filters by them."""

from __future__ import annotations

import logging
from collections.abc import Iterable

import httpx
from prefect.client.orchestration import get_client
from prefect.context import FlowRunContext

logger = logging.getLogger("prefect_agentenv.flow")


async def add_flow_run_tags(tags: Iterable[str]) -> None:
    """Add ``tags`` to the current flow run (tags are known only once the document is read)."""
    ctx = FlowRunContext.get()
    if ctx is None or ctx.flow_run is None:
        return
    merged = sorted(set(ctx.flow_run.tags) | set(tags))
    if merged == sorted(ctx.flow_run.tags):
        return
    try:
        async with get_client() as client:
            await client.update_flow_run(ctx.flow_run.id, tags=merged)
    except httpx.HTTPError as exc:  # tags are a view; the run goes on without them
        logger.warning("could not tag the flow run with %s: %s", merged, exc)
        return
    ctx.flow_run.tags = merged
