"""Published benchmark versions in the store: written once, never replaced, over a folder and over S3."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import yaml

from prefect_agentenv.artifacts import ArtifactBackend, ArtifactNotFoundError, UnsafeKeyError
from prefect_agentenv.documents.published.snapshot import PublishedBenchmark, freeze_benchmark
from prefect_agentenv.documents.published.store import PublishConflictError, publish, read_published


def test_a_published_version_is_stored_once_and_a_second_writer_cannot_replace_it(store: ArtifactBackend) -> None:
    assert store.put_published_benchmark("nightly", "1", b'{"first": true}') is True
    assert store.put_published_benchmark("nightly", "1", b'{"second": true}') is False
    assert store.put_published_benchmark("nightly", "1", b'{"first": true}') is False
    assert store.get_published_benchmark("nightly", "1") == b'{"first": true}'


def test_of_writers_racing_for_one_version_exactly_one_stores_it(store: ArtifactBackend) -> None:
    start = threading.Barrier(6)
    won: list[bytes] = []

    def write(n: int) -> None:
        data = f'{{"writer": {n}}}'.encode()
        start.wait()
        if store.put_published_benchmark("raced", "1", data):
            won.append(data)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1
    assert store.get_published_benchmark("raced", "1") == won[0]


def test_versions_are_listed_per_slug_and_a_missing_one_names_those_there_are(store: ArtifactBackend) -> None:
    store.put_published_benchmark("nightly", "1", b"{}")
    store.put_published_benchmark("nightly", "2", b"{}")
    store.put_published_benchmark("other", "7", b"{}")
    assert sorted(store.list_published_benchmark("nightly")) == ["1", "2"]
    assert store.list_published_benchmark("never") == []
    with pytest.raises(ArtifactNotFoundError, match=r"nightly@3 is not published .*published versions: 1, 2"):
        store.get_published_benchmark("nightly", "3")


@pytest.mark.parametrize(("slug", "version"), [("../x", "1"), ("a/b", "1"), ("ok", "latest"), ("ok", "1/2"),
                                               ("ok", "a@b")])
def test_slugs_and_versions_that_would_leave_the_store_are_refused(store: ArtifactBackend, slug: str,
                                                                   version: str) -> None:
    with pytest.raises(UnsafeKeyError):
        store.put_published_benchmark(slug, version, b"{}")


def test_a_frozen_benchmark_is_published_read_back_and_guarded_on_each_store(store: ArtifactBackend,
                                                                              tmp_path: Path) -> None:
    store.publish_environment("inbox", "email", "inbox.json", b'{"emails": []}')

    def frozen(score: float) -> PublishedBenchmark:
        path = tmp_path / "bench.yaml"
        path.write_text(yaml.safe_dump({"name": "Stored", "slug": "stored", "tasks": [{"id": "t", "steps": [
            {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
            {"id": "inbox", "type": "load_artifact", "env_id": "email", "artifact_id": "inbox"},
            {"id": "grade", "type": "test_score", "score": score}]}]}))
        return freeze_benchmark(path, store).record

    first = publish(store, frozen(1.0))
    assert first.stored and read_published(store, "stored", "1") == first.record
    assert read_published(store, "stored", "latest").task("t").document["steps"][1]["version"] == "1"
    with pytest.raises(PublishConflictError, match="tasks that differ: t"):
        publish(store, frozen(0.5))
    assert read_published(store, "stored", "1").hash == first.record.hash
