"""Publishing a benchmark: what is frozen, how its artifacts are pinned, what a second publish does,
and how the files are compared with their published version."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from prefect_agentenv.artifacts import ArtifactBackend, ArtifactIntegrityError, get_artifact_store
from prefect_agentenv.documents.published.snapshot import (
    PublishedBenchmark,
    freeze_benchmark,
    parse_published_ref,
    parse_published_task_ref,
)
from prefect_agentenv.documents.published.store import (
    PublishConflictError,
    check,
    list_published,
    publish,
    read_published,
)
from prefect_agentenv.exceptions import TaskDocumentError
from prefect_agentenv.results.store.run_store import ResultsStore

pytestmark = pytest.mark.usefixtures("agentenv_home")

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture
def store() -> Any:
    with get_artifact_store() as backend:
        yield backend


def mailbox(*ids: str) -> bytes:
    return json.dumps({"emails": [{"id": i, "from": "a@x.example", "to": ["b@x.example"], "subject": i, "body": "."}
                                  for i in ids]}).encode()


def write_bench(folder: Path, *, score: float = 1.0, version: int = 1, seeds: list[dict[str, str]] | None = None,
                extra: dict[str, Any] | None = None) -> Path:
    """A benchmark with a task file that loads the `inbox` artifact, an inline task and a Verial-style task."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "mail.json").write_text(json.dumps({"id": "mail", "steps": [
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "inbox", "type": "load_artifact", "env_id": "email", "artifact_id": "inbox"},
        {"id": "grade", "type": "test_score", "score": score}]}))
    data: dict[str, Any] = {"name": "Published", "slug": "pub-bench", "version": version, "tasks": [
        {"id": "mail", "path": "mail.json"},
        {"id": "inline", "steps": [{"id": "hello", "type": "test_noop", "depends_on": []},
                                   {"id": "grade", "type": "test_score", "score": 0.5}]},
        {"id": "ask", "name": "Ask", "env": {"env_id": "email"}, "task_item": {"instruction": "Say hi to <who>."},
         "criteria": [{"label": "Greets", "assertion": {"assert": "response_contains", "needles": ["hi"]}}]}],
        "seeds": seeds or [{"who": "Dana"}], **(extra or {})}
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_benchmark_is_frozen_whole_every_task_hashed_and_its_artifacts_pinned(tmp_path: Path,
                                                                                store: ArtifactBackend) -> None:
    store.publish_environment("inbox", "email", "inbox.json", mailbox("m1"))
    record = freeze_benchmark(write_bench(tmp_path), store).record
    assert (record.slug, record.version, record.name) == ("pub-bench", "1", "Published")
    assert [t.task_id for t in record.tasks] == ["mail", "inline", "ask[seed=0]"]
    mail = record.task("mail")
    assert mail.source == "mail.json" and mail.document["steps"][1]["version"] == "1"  # latest, pinned
    ask = record.task("ask[seed=0]")
    assert "Say hi to Dana." in json.dumps(ask.document) and ask.criteria[0].label == "Greets"  # compiled, seeded
    assert record.seed_rows == [{"who": "Dana"}]
    assert [(a.id, a.version, a.written, a.used_by) for a in record.artifacts] == [
        ("inbox", "1", "latest", ["mail/inbox"])]
    # Each task's hash is the one a run's snapshot of the task takes.
    snapshot = ResultsStore(store, "pub-bench", "r1").snapshot_task("mail.seed0", mail.document)
    assert snapshot.sha256 == mail.sha256
    assert mail.expanded().document.model_dump(mode="json", by_alias=True) == mail.document


def test_the_same_content_published_again_changes_nothing(tmp_path: Path, store: ArtifactBackend) -> None:
    store.publish_environment("inbox", "email", "inbox.json", mailbox("m1"))
    path = write_bench(tmp_path)
    first = publish(store, freeze_benchmark(path, store).record)
    again = publish(store, freeze_benchmark(path, store).record)
    assert first.stored and not again.stored
    assert again.record.hash == first.record.hash and again.record.published_at == first.record.published_at
    assert [r.version for r in list_published(store, "pub-bench")] == ["1"]


def test_other_content_under_a_published_version_is_refused_naming_the_tasks_that_differ(
        tmp_path: Path, store: ArtifactBackend) -> None:
    store.publish_environment("inbox", "email", "inbox.json", mailbox("m1"))
    path = write_bench(tmp_path)
    published = publish(store, freeze_benchmark(path, store).record).record
    write_bench(tmp_path, score=0.25, extra={"epochs": 3})
    with pytest.raises(PublishConflictError) as refused:
        publish(store, freeze_benchmark(path, store).record)
    assert refused.value.tasks == ["mail"]
    assert "pub-bench@1 is already published with other content" in str(refused.value)
    assert "tasks that differ: mail" in str(refused.value)
    assert any(line.startswith("task mail: changed") and "step grade: score default → 0.25" in line
               for line in refused.value.differences), refused.value.differences
    assert "settings: epochs default → 3" in refused.value.differences
    assert read_published(store, "pub-bench", "1").hash == published.hash  # the stored version is untouched
    write_bench(tmp_path, score=0.25, version=2)
    assert publish(store, freeze_benchmark(path, store).record).stored  # a new version is a new record


def test_a_later_artifact_version_leaves_the_published_one_as_it_was_and_check_reports_it(
        tmp_path: Path, store: ArtifactBackend) -> None:
    store.publish_environment("inbox", "email", "inbox.json", mailbox("m1"))
    path = write_bench(tmp_path)
    publish(store, freeze_benchmark(path, store).record)
    store.publish_environment("inbox", "email", "inbox.json", mailbox("m1", "m2"))
    assert read_published(store, "pub-bench").task("mail").document["steps"][1]["version"] == "1"
    drift = check(store, freeze_benchmark(path, store).record)
    assert drift.drifted and drift.tasks == ["mail"]
    assert "artifact inbox: pinned to 1 → 2" in drift.differences
    assert any("step inbox: version 1 → 2" in line for line in drift.differences), drift.differences


def test_check_compares_the_files_with_their_version_task_by_task(tmp_path: Path, store: ArtifactBackend) -> None:
    store.publish_environment("inbox", "email", "inbox.json", mailbox("m1"))
    path = write_bench(tmp_path)
    assert check(store, freeze_benchmark(path, store).record).published is None  # not published yet
    publish(store, freeze_benchmark(path, store).record)
    same = check(store, freeze_benchmark(path, store).record)
    assert same.published is not None and not same.drifted and same.differences == []
    write_bench(tmp_path, seeds=[{"who": "Dana"}, {"who": "Sam"}])
    drift = check(store, freeze_benchmark(path, store).record)
    assert drift.drifted and drift.tasks == ["ask[seed=1]"]
    assert drift.differences == ["task ask[seed=1]: added", "seed rows: 1 → 2 row(s)"]


def test_an_artifact_that_is_not_published_cannot_be_pinned(tmp_path: Path, store: ArtifactBackend) -> None:
    with pytest.raises(TaskDocumentError) as invalid:
        freeze_benchmark(write_bench(tmp_path), store)
    (problem,) = invalid.value.problems
    assert problem.step_id == "inbox" and "artifact inbox@latest cannot be pinned" in problem.message
    assert problem.hint and "prefect-agentenv artifact put inbox" in problem.hint


def test_an_artifact_the_benchmark_itself_makes_is_left_unpinned(tmp_path: Path, store: ArtifactBackend) -> None:
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "Chain", "slug": "chain", "tasks": [{"id": "snap", "steps": [
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "keep", "type": "snapshot_env", "env_id": "email", "artifact_id": "made-here"},
        {"id": "again", "type": "load_artifact", "env_id": "email", "artifact_id": "made-here"}]}]}))
    frozen = freeze_benchmark(path, store)
    assert "version" not in frozen.record.task("snap").document["steps"][2]
    assert [w.step_id for w in frozen.warnings] == ["again"] and "a step of the benchmark publishes it" in \
        frozen.warnings[0].message


def test_a_record_that_does_not_match_its_hash_is_refused_on_read(tmp_path: Path, store: ArtifactBackend) -> None:
    store.publish_environment("inbox", "email", "inbox.json", mailbox("m1"))
    record = freeze_benchmark(write_bench(tmp_path), store).record
    data = record.model_dump(mode="json")
    data["tasks"][1]["weight"] = 5.0  # an edit behind the store's back
    store.put_published_benchmark("pub-bench", "1", json.dumps(data).encode())
    with pytest.raises(ArtifactIntegrityError, match="does not match its content hash"):
        read_published(store, "pub-bench", "1")


def test_latest_is_the_most_recently_published_version(tmp_path: Path, store: ArtifactBackend) -> None:
    store.publish_environment("inbox", "email", "inbox.json", mailbox("m1"))
    for version in (1, 10, 2):
        publish(store, freeze_benchmark(write_bench(tmp_path, version=version), store).record)
    assert read_published(store, "pub-bench", "latest").version == "2"
    assert [r.version for r in list_published(store, "pub-bench")] == ["1", "10", "2"]


def test_the_example_benchmark_freezes_and_reads_back_unchanged(store: ArtifactBackend) -> None:
    from prefect_agentenv.demo import publish_example_artifacts

    publish_example_artifacts(EXAMPLES)
    record = publish(store, freeze_benchmark(EXAMPLES / "benchmark.yaml", store).record).record
    back = read_published(store, "agentenv-examples", "1")
    assert back == record and back.header().slug == "agentenv-examples"
    for task in back.expanded_tasks():  # what a run snapshots hashes to what was published
        assert PublishedBenchmark.model_validate(back.model_dump()).task(task.task_id).sha256 == \
            back.task(task.task_id).sha256
        assert task.document.model_dump(mode="json", by_alias=True) == back.task(task.task_id).document
    assert {a.id for a in back.artifacts} == {"inbox", "clinic", "verify-delivery"}


@pytest.mark.parametrize(("text", "expected"), [
    ("nightly@3", ("nightly", "3")), ("my-bench@latest", ("my-bench", "latest")), (" a-b@1.2 ", ("a-b", "1.2")),
    ("bench.yaml", None), ("Bench@1", None), ("a@", None), ("a@1/x", None), ("dir/a@1", None)])
def test_published_references_are_read_strictly(text: str, expected: tuple[str, str] | None) -> None:
    assert parse_published_ref(text) == expected


def test_a_published_task_is_named_by_version_and_task_id() -> None:
    assert parse_published_task_ref("nightly@3/reply[seed=1]") == ("nightly", "3", "reply[seed=1]")
    assert parse_published_task_ref("nightly@3") is None
