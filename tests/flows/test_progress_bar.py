"""The benchmark's progress bar is written beside its task runs: ``set`` never waits on the API,
updates that pile up go as one request, and ``close`` leaves the artifact at the latest share."""

from __future__ import annotations

import asyncio
from typing import Any

import prefect.artifacts
import pytest
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
from prefect.context import FlowRunContext

from prefect_agentenv.flows import progress_bar
from prefect_agentenv.flows.progress_bar import ProgressBar

pytestmark = pytest.mark.usefixtures("prefect_harness")


async def _progress_artifacts(flow_run_id: Any) -> list[Any]:
    async with get_client() as client:
        artifacts = await client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
    return [a for a in artifacts if a.type == "progress"]


def test_the_bar_ends_at_the_latest_share_and_coalesces_updates(monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[tuple[str, float]] = []
    create, update = prefect.artifacts.acreate_progress_artifact, prefect.artifacts.aupdate_progress_artifact

    async def counted_create(progress: float, **kwargs: Any) -> Any:
        writes.append(("create", progress))
        await asyncio.sleep(0.2)  # a slow API: the shares below pile up meanwhile
        return await create(progress=progress, **kwargs)

    async def counted_update(artifact_id: Any, progress: float, **kwargs: Any) -> Any:
        writes.append(("update", progress))
        return await update(artifact_id, progress=progress, **kwargs)

    monkeypatch.setattr(progress_bar, "acreate_progress_artifact", counted_create)
    monkeypatch.setattr(progress_bar, "aupdate_progress_artifact", counted_update)

    @flow
    async def bench_like() -> Any:
        bar = ProgressBar("coalesce", total=10)
        bar.set(0)
        await asyncio.sleep(0)  # the writer starts creating the artifact at 0 %
        for done in range(1, 11):  # ten more shares while the creation is in flight
            bar.set(done)
        await bar.close()
        ctx = FlowRunContext.get()
        assert ctx is not None and ctx.flow_run is not None
        return ctx.flow_run.id

    flow_run_id = asyncio.run(bench_like())
    (artifact,) = asyncio.run(_progress_artifacts(flow_run_id))
    assert artifact.data == 100.0
    assert artifact.key == "bench-coalesce-progress"
    assert writes == [("create", 0.0), ("update", 100.0)]  # the ten shares went as one update


def test_abandon_stops_writing_and_a_failed_creation_stops_the_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    async def refused(**kwargs: Any) -> Any:
        raise RuntimeError("the API refused it")

    @flow
    async def abandoned() -> None:
        bar = ProgressBar("abandoned", total=2)
        bar.set(0)
        bar.set(1)
        await bar.abandon()
        bar.set(2)  # after abandon: a new writer may run; close waits for it
        await bar.close()

    asyncio.run(abandoned())
    monkeypatch.setattr(progress_bar, "acreate_progress_artifact", refused)

    @flow
    async def refused_bar() -> bool:
        bar = ProgressBar("refused", total=2)
        bar.set(0)
        await bar.close()
        bar.set(1)
        await bar.close()
        return bar.artifact_id is None

    assert asyncio.run(refused_bar()) is True
