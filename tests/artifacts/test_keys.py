"""Keys derived from document values: what is accepted, and what is refused with a clear reason."""

from __future__ import annotations

import pytest

from prefect_agentenv.artifacts import UnsafeKeyError
from prefect_agentenv.artifacts.keys import check_id, check_path, check_prefix, check_version, file_key, split_ref
from prefect_agentenv.exceptions import ArtifactError


@pytest.mark.parametrize(("bad", "reason"), [
    ("", "is empty"),
    ("/etc/passwd", "is an absolute path"),
    ("../up", r"has a '\.' or '\.\.' segment"),
    ("a/../../b", r"has a '\.' or '\.\.' segment"),
    ("./a", r"has a '\.' or '\.\.' segment"),
    ("a//b", "has an empty path segment"),
    ("a/", "has an empty path segment"),
    ("a\\..\\b", "contains a backslash"),
    ("C:\\Windows", "contains a backslash"),
    ("a\x00b", "contains a NUL character"),
    ("a\tb", "contains a control character"),
    ("x" * 256, "is longer than 255 bytes"),
])
def test_a_path_that_could_leave_the_store_is_refused_with_its_reason(bad: str, reason: str) -> None:
    with pytest.raises(UnsafeKeyError, match=reason):
        check_path(bad)


@pytest.mark.parametrize("good", ["q3.png", "data/inbox.json", "a b/ünïcode.txt", ".hidden", "a..b", "x" * 255])
def test_ordinary_relative_paths_are_kept_as_written(good: str) -> None:
    assert check_path(good) == good


def test_an_unsafe_key_is_an_artifact_error_and_a_value_error() -> None:
    with pytest.raises(ArtifactError):
        check_id("a/b")
    with pytest.raises(ValueError, match="contains '/'"):
        check_id("a/b")


def test_ids_may_not_hold_the_version_separator() -> None:
    with pytest.raises(UnsafeKeyError, match="reserved for ID@VERSION"):
        check_id("inbox@2")


def test_latest_is_a_reference_and_never_a_stored_version() -> None:
    assert check_version("latest", allow_latest=True) == "latest"
    with pytest.raises(UnsafeKeyError, match="cannot be published"):
        check_version("latest")


@pytest.mark.parametrize(("text", "expected"), [
    ("inbox", ("inbox", "latest")),
    ("inbox@3", ("inbox", "3")),
    ("inbox@latest", ("inbox", "latest")),
])
def test_an_id_with_an_optional_version_is_split_at_the_at_sign(text: str, expected: tuple[str, str]) -> None:
    assert split_ref(text) == expected


def test_a_dangling_at_sign_is_refused() -> None:
    with pytest.raises(UnsafeKeyError, match="ends with '@'"):
        split_ref("inbox@")


def test_the_store_prefix_is_normalised_but_confined() -> None:
    assert check_prefix("/team/evals/") == "team/evals"
    assert check_prefix(None) == ""
    with pytest.raises(UnsafeKeyError):
        check_prefix("team/../../other")


def test_file_keys_keep_files_apart_from_version_records() -> None:
    assert file_key("chart", "1", "meta.json") == "artifacts/chart/1/files/meta.json"
