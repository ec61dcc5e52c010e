"""The artifact store contract, run over both backends: a local folder and S3 (moto's server)."""

from __future__ import annotations

import hashlib
import threading
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from prefect_agentenv.artifacts import (
    ArtifactBackend,
    ArtifactConflictError,
    ArtifactError,
    ArtifactIntegrityError,
    ArtifactMetadata,
    ArtifactNotFoundError,
    ArtifactRef,
    LocalArtifactBackend,
    S3ArtifactBackend,
    UnsafeKeyError,
    keys,
)


def fetch_url(url: str, request: pytest.FixtureRequest) -> bytes:
    """Read an object URL the way a report reader would: the file, or the S3 object."""
    parsed = urlparse(url)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path)).read_bytes()
    assert parsed.scheme == "s3"
    client = request.getfixturevalue("s3_client")
    body: bytes = client.get_object(Bucket=parsed.netloc, Key=parsed.path.lstrip("/"))["Body"].read()
    return body


def test_publishing_without_a_version_assigns_the_next_integer_version(store: ArtifactBackend) -> None:
    first = store.publish_files("notes", {"a.txt": b"one"})
    second = store.publish_files("notes", {"a.txt": b"two"})

    assert (first.version, second.version) == ("1", "2")
    assert first.kind == "file"
    assert store.read_file("notes", "a.txt", version="1") == b"one"


def test_latest_resolves_to_the_newest_version(store: ArtifactBackend) -> None:
    store.publish_files("notes", {"a.txt": b"one"})
    store.publish_files("notes", {"a.txt": b"two"}, version="2024-06")

    assert store.get_metadata("notes").version == "2024-06"
    assert store.get_metadata("notes", "latest").version == "2024-06"
    assert store.read_file("notes") == b"two"
    # Named versions are kept as named; automatic numbering counts integers only.
    assert store.publish_files("notes", {"a.txt": b"three"}).version == "2"


def test_a_published_version_is_immutable(store: ArtifactBackend) -> None:
    store.publish_files("notes", {"a.txt": b"one"}, version="1")

    with pytest.raises(ArtifactConflictError, match=r"notes@1 is already published \(or being published\) with other content"):
        store.publish_files("notes", {"a.txt": b"changed"}, version="1")

    assert store.read_file("notes", "a.txt", version="1") == b"one"


def test_republishing_identical_content_is_idempotent(store: ArtifactBackend) -> None:
    first = store.publish_files("notes", {"a.txt": b"one", "b.txt": b"two"}, version="1")
    again = store.publish_files("notes", {"b.txt": b"two", "a.txt": b"one"}, version="1")

    assert again == first
    assert [m.version for m in store.list_versions("notes")] == ["1"]


def test_every_stored_file_carries_its_sha256_and_size(store: ArtifactBackend) -> None:
    meta = store.publish_files("notes", {"a.txt": b"hello"})

    (entry,) = meta.files
    assert entry.sha256 == hashlib.sha256(b"hello").hexdigest()
    assert entry.size == 5
    assert store.get_metadata("notes", "1") == meta


def test_a_file_whose_bytes_changed_in_the_store_fails_its_hash_check(store: ArtifactBackend) -> None:
    meta = store.publish_files("notes", {"a.txt": b"hello"})
    store._put(keys.file_key("notes", meta.version, "a.txt"), b"tampered")

    with pytest.raises(ArtifactIntegrityError, match="does not match its record"):
        store.read_file("notes", "a.txt")


def test_a_version_record_that_was_edited_in_the_store_is_refused(store: ArtifactBackend) -> None:
    store.publish_files("notes", {"a.txt": b"one"})
    store._put(keys.meta_key("notes", "1"), b'{"id": "notes"}')
    with pytest.raises(ArtifactIntegrityError, match="is not a valid artifact record"):
        store.get_metadata("notes", "1")

    copied = store.publish_files("other", {"a.txt": b"one"})
    store._put(keys.meta_key("notes", "1"), copied.model_dump_json().encode())
    with pytest.raises(ArtifactIntegrityError, match="describes other@1, not notes@1"):
        store.get_metadata("notes", "1")


def test_an_environment_artifact_records_the_env_it_is_for(store: ArtifactBackend) -> None:
    meta = store.publish_environment("inbox", "email", "inbox.json", b'{"emails": []}')

    assert (meta.kind, meta.environment_name) == ("environment", "email")
    assert [f.name for f in meta.files] == ["inbox.json"]
    assert store.read_file("inbox") == b'{"emails": []}'


def test_a_universe_pins_each_member_to_the_version_it_resolves_to(store: ArtifactBackend) -> None:
    store.publish_files("chart", {"q3.png": b"png-1"})
    store.publish_files("notes", {"notes.md": b"# notes"})

    universe = store.publish_universe("handoff", ["chart", ArtifactRef(id="notes", version="1")])
    store.publish_files("chart", {"q3.png": b"png-2"})

    assert universe.kind == "universe"
    assert [str(m) for m in universe.members] == ["chart@1", "notes@1"]
    assert store.get_metadata("handoff").members == universe.members


def test_a_universe_lists_file_artifacts_only(store: ArtifactBackend) -> None:
    store.publish_environment("inbox", "email", "inbox.json", b"{}")

    with pytest.raises(ArtifactError, match=r"inbox@1 is not a file artifact \(kind: environment\)"):
        store.publish_universe("handoff", ["inbox"])


def test_downloading_a_universe_puts_every_members_files_side_by_side(store: ArtifactBackend, tmp_path: Path) -> None:
    store.publish_files("chart", {"q3.png": b"png", "data/q3.csv": b"1,2"})
    store.publish_files("notes", {"notes.md": b"# notes"})
    store.publish_universe("handoff", ["chart", "notes"])

    written = store.download("handoff", tmp_path / "sandbox" / "tmp" / "file_artifacts")

    root = tmp_path / "sandbox" / "tmp" / "file_artifacts"
    assert sorted(p.relative_to(root).as_posix() for p in written) == ["data/q3.csv", "notes.md", "q3.png"]
    assert (root / "data" / "q3.csv").read_bytes() == b"1,2"


def test_universe_members_that_disagree_on_a_file_are_a_conflict(store: ArtifactBackend, tmp_path: Path) -> None:
    store.publish_files("a", {"report.md": b"from a"})
    store.publish_files("b", {"report.md": b"from b"})
    store.publish_universe("both", ["a", "b"])

    with pytest.raises(ArtifactConflictError, match="both hold 'report.md'"):
        store.download("both", tmp_path / "out")


def test_a_download_never_writes_outside_its_folder_even_through_a_symlink(store: ArtifactBackend,
                                                                          tmp_path: Path) -> None:
    store.publish_files("notes", {"data/a.txt": b"x"})
    dest = tmp_path / "dest"
    dest.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (dest / "data").symlink_to(tmp_path / "elsewhere")

    with pytest.raises(UnsafeKeyError, match="would be written outside"):
        store.download("notes", dest)
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_file_content_is_bytes_or_a_path_never_an_ambiguous_str(store: ArtifactBackend, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"from disk")
    assert store.read_file(store.publish_files("notes", {"a.txt": tmp_path / "a.txt"})) == b"from disk"

    with pytest.raises(TypeError, match="bytes or a Path"):
        store.publish_files("notes", {"a.txt": "a.txt"})  # type: ignore[dict-item]


def test_object_urls_address_the_stored_files(store: ArtifactBackend, request: pytest.FixtureRequest) -> None:
    meta = store.publish_files("chart", {"out/q3.png": b"png"})

    url = store.file_url(meta, "out/q3.png")

    expected_scheme = "s3" if isinstance(store, S3ArtifactBackend) else "file"
    assert url.startswith(f"{expected_scheme}://") and url.endswith("/artifacts/chart/1/files/out/q3.png")
    assert fetch_url(url, request) == b"png"
    assert store.file_urls("chart") == {"out/q3.png": url}


def test_run_records_round_trip_under_the_runs_area(store: ArtifactBackend, request: pytest.FixtureRequest) -> None:
    url = store.put_object("run-1/trajectories/reply.json", '{"turns": []}')
    store.put_object("run-1/report.json", b"{}")
    store.put_object("run-1/report.json", b'{"score": 1}')  # records may be rewritten

    assert "/runs/run-1/trajectories/reply.json" in url
    assert fetch_url(url, request) == b'{"turns": []}'
    assert store.get_object("run-1/report.json") == b'{"score": 1}'
    assert store.list_objects("run-1") == ["run-1/report.json", "run-1/trajectories/reply.json"]
    assert store.object_url("run-1/report.json").endswith("/runs/run-1/report.json")


def test_a_record_url_reads_back_as_its_key_and_another_stores_as_none(store: ArtifactBackend, tmp_path: Path) -> None:
    from prefect_agentenv.artifacts import LocalArtifactBackend

    url = store.put_object("run-1/trajectories/reply.json", b"{}")
    assert store.key_of(url) == "run-1/trajectories/reply.json"
    assert store.get_object(store.key_of(url) or "") == b"{}"
    other = LocalArtifactBackend(tmp_path / "elsewhere").put_object("run-1/trajectories/reply.json", b"{}")
    assert [store.key_of(other), store.key_of(None), store.key_of("")] == [None, None, None]


def test_missing_artifacts_versions_files_and_records_are_reported_as_not_found(store: ArtifactBackend) -> None:
    store.publish_files("notes", {"a.txt": b"one"})

    with pytest.raises(ArtifactNotFoundError, match="'ghost' is not published"):
        store.get_metadata("ghost")
    with pytest.raises(ArtifactNotFoundError, match=r"notes@9 is not published .*\(versions: 1\)"):
        store.get_metadata("notes", "9")
    with pytest.raises(ArtifactNotFoundError, match=r"has no file 'b.txt' \(files: a.txt\)"):
        store.read_file("notes", "b.txt")
    with pytest.raises(ArtifactNotFoundError, match="no run record"):
        store.get_object("run-1/none.json")


def test_listing_shows_ids_and_their_versions_oldest_first(store: ArtifactBackend) -> None:
    assert store.list_ids() == []
    store.publish_files("b", {"x": b"1"})
    store.publish_files("a", {"x": b"1"}, version="v1")
    store.publish_files("a", {"x": b"2"})

    assert store.list_ids() == ["a", "b"]
    assert [m.version for m in store.list_versions("a")] == ["v1", "1"]
    assert store.list_versions("nothing") == []


@pytest.mark.parametrize("bad", ["../escape", "/etc/passwd", "a//b", "a/./b", "dir/", "a\\b", "a\x00b", "", "a\nb"])
def test_file_names_from_documents_cannot_leave_the_store(store: ArtifactBackend, bad: str) -> None:
    with pytest.raises(UnsafeKeyError, match="must stay inside the store"):
        store.publish_files("notes", {bad: b"x"})
    with pytest.raises(UnsafeKeyError):
        store.put_object(bad, b"x")
    assert store.list_ids() == []
    assert store.list_objects() == []


@pytest.mark.parametrize("bad", ["..", ".", "a/b", "a\\b", "a@b", "", "x\x00"])
def test_ids_and_versions_are_single_safe_segments(store: ArtifactBackend, bad: str) -> None:
    with pytest.raises(UnsafeKeyError):
        store.publish_files(bad, {"a.txt": b"x"})
    with pytest.raises(UnsafeKeyError):
        store.publish_files("notes", {"a.txt": b"x"}, version=bad)
    with pytest.raises(UnsafeKeyError):
        store.get_metadata(bad)


def test_latest_cannot_be_published_as_a_version(store: ArtifactBackend) -> None:
    with pytest.raises(UnsafeKeyError, match="'latest' names the newest version"):
        store.publish_files("notes", {"a.txt": b"x"}, version="latest")


def test_concurrent_publishers_get_distinct_versions(store: ArtifactBackend) -> None:
    results: dict[int, ArtifactMetadata] = {}

    def publish(n: int) -> None:
        results[n] = store.publish_files("notes", {"n.txt": str(n).encode()})

    threads = [threading.Thread(target=publish, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert sorted(int(m.version) for m in results.values()) == [1, 2, 3, 4, 5, 6]
    for n, meta in results.items():
        assert store.read_file(meta, "n.txt") == str(n).encode()


def test_an_interrupted_publish_stays_invisible_until_it_is_finished(store: ArtifactBackend) -> None:
    orphan = ArtifactMetadata(id="notes", version="1", kind="file", created_at=datetime.now(UTC),
                              files=({"name": "a.txt", "sha256": hashlib.sha256(b"one").hexdigest(), "size": 3},))
    store._put(keys.claim_key("notes", "1"), orphan.model_dump_json().encode(), if_absent=True)

    assert store.list_versions("notes") == []
    assert store.publish_files("notes", {"a.txt": b"two"}).version == "2"  # the claimed number is skipped
    finished = store.publish_files("notes", {"a.txt": b"one"}, version="1")

    assert finished.created_at == orphan.created_at
    assert store.read_file("notes", version="1") == b"one"


def test_the_store_writes_only_under_its_root_or_prefix(store: ArtifactBackend, tmp_path: Path,
                                                        request: pytest.FixtureRequest) -> None:
    store.publish_files("notes", {"deep/a.txt": b"x"})
    store.put_object("run-1/report.json", b"{}")

    if isinstance(store, LocalArtifactBackend):
        outside = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_relative_to(store.root)]
        assert outside == []
    else:
        assert isinstance(store, S3ArtifactBackend)
        client = request.getfixturevalue("s3_client")
        listed = client.list_objects_v2(Bucket=store.bucket, Prefix=store.prefix + "/")
        assert {o["Key"].split("/", 3)[2] for o in listed["Contents"]} == {"artifacts", "runs"}
