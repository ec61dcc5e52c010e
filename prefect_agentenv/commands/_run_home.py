"""Finding a benchmark run wherever its worker stored it, through the run's own Prefect record.

A benchmark run labels its flow run with where its results go (``agentenv.store``: ``block:NAME``
for an artifact-store block, ``local:PATH`` for a local folder; ``agentenv.results``: the URL of
its ``results.jsonl``). A run on a work pool's worker stores its results in the worker's store;
``view``, ``compare`` and ``control`` in a checkout read this machine's. When a run is not in the
store a command reads, the run's flow run says where it is: its store is opened when this machine
can (the block, or a folder that is here), and otherwise the error says which home and store
were read and where the run's results are.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from prefect_agentenv.artifacts import ArtifactBackend, ArtifactNotFoundError
from prefect_agentenv.flows.control.state import RESULTS_LABEL, STORE_LABEL
from prefect_agentenv.results.store.run_store import RunEntry

BLOCK_VARIABLE = "PREFECT_AGENTENV_ARTIFACT_STORE_BLOCK"


@dataclass(frozen=True)
class RunHome:
    """Where a run's results are, as its flow run's labels say."""

    store: str
    """``block:NAME`` or ``local:PATH``."""
    results_url: str | None


def run_home(run_id: str) -> RunHome | None:
    """The labels of the benchmark flow run ``run_id`` (None: not a flow run here, or it has none)."""
    try:
        flow_run_id = uuid.UUID(run_id.rpartition("/")[2])
    except ValueError:
        return None

    async def read() -> RunHome | None:
        from prefect.client.orchestration import get_client

        async with get_client() as client:
            flow_run = await client.read_flow_run(flow_run_id)
        labels = flow_run.labels or {}
        store = labels.get(STORE_LABEL)
        return RunHome(str(store), str(labels.get(RESULTS_LABEL) or "") or None) if store else None

    try:
        return asyncio.run(read())
    except Exception:  # no server, or no such flow run: the caller's own error stands
        return None


def open_home(home: RunHome) -> ArtifactBackend | None:
    """The run's store, when this machine can open it (its block through the API, its folder here)."""
    kind, _, where = home.store.partition(":")
    if kind == "local" and Path(where).is_dir():
        from prefect_agentenv.artifacts.local import LocalArtifactBackend

        return LocalArtifactBackend(Path(where))
    if kind == "block" and where:
        from prefect_agentenv.artifacts import get_artifact_store
        from prefect_agentenv.settings import get_settings

        before = os.environ.get(BLOCK_VARIABLE)
        os.environ[BLOCK_VARIABLE] = where
        get_settings.cache_clear()
        try:
            return get_artifact_store()
        except Exception:  # the block is not on this server, or cannot be loaded here
            return None
        finally:
            if before is None:
                os.environ.pop(BLOCK_VARIABLE, None)
            else:
                os.environ[BLOCK_VARIABLE] = before
            get_settings.cache_clear()
    return None


def elsewhere(run_id: str, error: ArtifactNotFoundError, read: str) -> ArtifactBackend:
    """The store that has run ``run_id`` (another home's), or the error saying where the run is.

    Args:
        error: the lookup's failure in the store this command reads.
        read: that store's location (said in the error).

    Raises:
        ArtifactNotFoundError: the run's flow run names no store this machine can open.
    """
    home = run_home(run_id)
    if home is None:
        raise error
    store = open_home(home)
    if store is not None:
        return store
    kind, _, where = home.store.partition(":")
    what = f"the artifact-store block {where!r}" if kind == "block" else f"the folder {where} on its worker's machine"
    raise ArtifactNotFoundError(
        f"{error}; run {run_id}'s worker stored it in {what} (results: {home.results_url or 'unknown'}), and this "
        f"command read {read}: run it where that store is, or point PREFECT_AGENTENV_ARTIFACT_STORE_BLOCK (or "
        "PREFECT_AGENTENV_HOME) at it")


@dataclass(frozen=True)
class Located:
    """A run found, and the store it is in (this command's own, or its worker's)."""

    slug: str
    run_id: str
    store: ArtifactBackend
    entry: RunEntry | None


def found_anywhere(store: ArtifactBackend, ref: str) -> Located:
    """The run ``ref`` names (as ``find_run`` takes it), in ``store`` or, failing that, in the store its
    flow run names.

    Raises:
        ArtifactNotFoundError: neither has it (the message says where each was looked for).
    """
    from prefect_agentenv.results.store.run_lookup import find_run

    try:
        found = find_run(store, ref)
        return Located(found.slug, found.run_id, store, found.entry)
    except ArtifactNotFoundError as exc:
        other = elsewhere(ref, exc, store.location)
    found = find_run(other, ref)
    return Located(found.slug, found.run_id, other, found.entry)
