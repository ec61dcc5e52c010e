"""The benchmark's progress bar: it moves at most every interval while task runs end, and always reaches 100 %."""

from __future__ import annotations

from uuid import UUID

import pytest
from prefect import flow
from prefect.artifacts import acreate_progress_artifact
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterId

from prefect_agentenv.flows.ui.benchmark import ProgressBar

pytestmark = pytest.mark.usefixtures("prefect_harness")


async def _shown(artifact_id: UUID) -> float:
    """Read the one artifact by id: the session's server holds every other test's artifacts too,
    more than one unfiltered page."""
    async with get_client() as client:
        (artifact,) = await client.read_artifacts(
            artifact_filter=ArtifactFilter(id=ArtifactFilterId(any_=[artifact_id]))
        )
    return float(artifact.data)  # type: ignore[arg-type]


async def test_the_bar_skips_moves_within_its_interval_and_always_shows_the_last_one() -> None:
    seen: list[float] = []

    @flow
    async def moves() -> None:
        artifact_id = await acreate_progress_artifact(progress=0.0)
        bar = ProgressBar(artifact_id, 4, interval_s=3600)
        for done in (1, 2, 3):
            await bar.move_to(done)
            seen.append(await _shown(artifact_id))
        await bar.move_to(4)
        seen.append(await _shown(artifact_id))
        every = ProgressBar(artifact_id, 4, interval_s=0)
        await every.move_to(1)
        seen.append(await _shown(artifact_id))

    await moves()
    assert seen == [0.0, 0.0, 0.0, 100.0, 25.0]

