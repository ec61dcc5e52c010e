"""Per-agent sandboxes: a fresh folder per agent, sandbox paths mapped under it, nothing let out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from prefect_agentenv.exceptions import AgentEnvError
from prefect_agentenv.runtime.resources.sandbox import Sandbox, UnsafeSandboxPathError, create_sandbox


@pytest.fixture
def sandbox(workdir: Path) -> Sandbox:
    return create_sandbox(workdir, "assistant")


def test_a_sandbox_is_a_fresh_folder_with_home_and_the_standard_folders(workdir: Path) -> None:
    first = create_sandbox(workdir, "assistant")
    second = create_sandbox(workdir, "assistant")
    assert first.root != second.root
    assert first.root.parent == (workdir / "sandboxes").resolve()
    assert first.root.name.startswith("assistant-")
    assert first.kind == "dir" and first.agent_name == "assistant"
    for folder in ("home", "app/artifact", "tmp/file_artifacts"):
        assert (first.root / folder).is_dir(), folder


def test_an_agent_name_from_a_document_cannot_pick_the_folder(workdir: Path) -> None:
    sandbox = create_sandbox(workdir, "../../etc/evil agent")
    assert sandbox.root.parent == (workdir / "sandboxes").resolve()
    assert "/" not in sandbox.root.name and ".." not in sandbox.root.name


def test_absolute_sandbox_paths_map_under_the_root(sandbox: Sandbox) -> None:
    assert sandbox.path("/app/artifact/q3.png") == sandbox.root / "app" / "artifact" / "q3.png"
    assert sandbox.path("/tmp/file_artifacts") == sandbox.root / "tmp" / "file_artifacts"
    assert sandbox.path("/") == sandbox.root


def test_relative_paths_are_relative_to_the_root(sandbox: Sandbox) -> None:
    assert sandbox.path("notes/a.txt") == sandbox.root / "notes" / "a.txt"
    assert sandbox.path(".") == sandbox.root
    assert sandbox.path("app/../app/artifact") == sandbox.root / "app" / "artifact"


def test_a_host_path_already_inside_the_root_is_kept(sandbox: Sandbox) -> None:
    inside = sandbox.root / "trajectories" / "t1.json"
    assert sandbox.path(str(inside)) == inside


@pytest.mark.parametrize("escape", ["../outside", "/app/../../outside", "a/../../..", "/../../etc/passwd"])
def test_dot_dot_cannot_leave_the_sandbox(sandbox: Sandbox, escape: str) -> None:
    with pytest.raises(UnsafeSandboxPathError, match="leaves the sandbox"):
        sandbox.path(escape)


def test_a_symlink_pointing_outside_is_refused_however_it_is_reached(sandbox: Sandbox, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not yours")
    (sandbox.root / "app" / "artifact" / "link").symlink_to(outside)
    for path in ("/app/artifact/link", "/app/artifact/link/secret.txt", "app/artifact/link/secret.txt",
                 str(sandbox.root / "app" / "artifact" / "link" / "secret.txt")):
        with pytest.raises(UnsafeSandboxPathError):
            sandbox.path(path)
    with pytest.raises(UnsafeSandboxPathError):
        sandbox.read("/app/artifact/link/secret.txt")


def test_a_symlink_that_stays_inside_is_followed(sandbox: Sandbox) -> None:
    (sandbox.root / "shortcut").symlink_to(sandbox.root / "app" / "artifact")
    assert sandbox.path("/shortcut/x.txt") == sandbox.root / "app" / "artifact" / "x.txt"
    (sandbox.root / "app" / "artifact" / "x.txt").write_bytes(b"x")
    assert sandbox.read("/shortcut/x.txt") == b"x"


def test_a_sandbox_rebuilt_through_a_symlinked_folder_still_knows_its_inside(sandbox: Sandbox,
                                                                             tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(sandbox.root)
    rebuilt = Sandbox(root=alias, agent_name="assistant")
    assert rebuilt.root == sandbox.root
    assert rebuilt.path("/app/artifact") == sandbox.root / "app" / "artifact"


def test_a_refusal_is_an_agentenv_error_and_a_value_error(sandbox: Sandbox) -> None:
    with pytest.raises(AgentEnvError):
        sandbox.path("../x")
    with pytest.raises(ValueError):
        sandbox.path("bad\0name")


def test_the_environment_puts_home_and_the_sandbox_root_in_the_sandbox(sandbox: Sandbox) -> None:
    assert sandbox.env() == {"HOME": str(sandbox.root / "home"), "AGENTENV_SANDBOX_ROOT": str(sandbox.root)}


def test_in_a_container_absolute_sandbox_paths_are_real(workdir: Path) -> None:
    sandbox = create_sandbox(workdir, "boxed", kind="container")
    assert sandbox.env() == {"AGENTENV_SANDBOX_ROOT": "/"}
    assert sandbox.mounts() == {sandbox.root / "app" / "artifact": "/app/artifact",
                                sandbox.root / "tmp" / "file_artifacts": "/tmp/file_artifacts"}


def test_files_copied_in_can_be_listed_and_read_back(sandbox: Sandbox) -> None:
    written = sandbox.copy_in({"report.csv": b"a,b\n", "charts/q3.png": b"\x89PNG"}, "/tmp/file_artifacts")
    assert written == ["/tmp/file_artifacts/report.csv", "/tmp/file_artifacts/charts/q3.png"]
    assert sandbox.list_files("/tmp/file_artifacts") == ["charts/q3.png", "report.csv"]
    assert sandbox.read("/tmp/file_artifacts/charts/q3.png") == b"\x89PNG"
    assert (sandbox.root / "tmp" / "file_artifacts" / "report.csv").read_bytes() == b"a,b\n"


def test_a_host_folder_is_copied_in_without_its_symlinks(sandbox: Sandbox, tmp_path: Path) -> None:
    source = tmp_path / "download"
    (source / "sub").mkdir(parents=True)
    (source / "a.txt").write_text("a")
    (source / "sub" / "b.txt").write_text("b")
    (source / "link.txt").symlink_to(source / "a.txt")
    assert sandbox.copy_in(source, "inbox") == ["inbox/a.txt", "inbox/sub/b.txt"]
    assert sandbox.read("inbox/sub/b.txt") == b"b"
    assert not (sandbox.root / "inbox" / "link.txt").exists()


@pytest.mark.parametrize("name", ["../escape.txt", "/etc/passwd", "a/../../escape.txt", "../../../escape.txt", "."])
def test_a_file_name_cannot_write_outside_its_destination_folder(sandbox: Sandbox, name: str) -> None:
    with pytest.raises(UnsafeSandboxPathError):
        sandbox.copy_in({name: b"x"}, "/tmp/file_artifacts")
    assert sandbox.list_files("/") == []


def test_one_bad_name_means_nothing_is_copied(sandbox: Sandbox) -> None:
    with pytest.raises(UnsafeSandboxPathError):
        sandbox.copy_in({"good.txt": b"x", "../bad.txt": b"y"}, "/tmp/file_artifacts")
    assert sandbox.list_files("/") == []


def test_listing_skips_symlinks_and_does_not_follow_them(sandbox: Sandbox, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.txt").write_text("x")
    artifacts = sandbox.root / "app" / "artifact"
    (artifacts / "real.txt").write_text("ok")
    (artifacts / "nested").mkdir()
    (artifacts / "nested" / "deep.txt").write_text("ok")
    (artifacts / "dir-link").symlink_to(outside)
    (artifacts / "file-link.txt").symlink_to(outside / "leak.txt")
    os.mkfifo(artifacts / "pipe")
    assert sandbox.list_files("/app/artifact") == ["nested/deep.txt", "real.txt"]
    assert sandbox.list_files("/") == ["app/artifact/nested/deep.txt", "app/artifact/real.txt"]


def test_listing_a_folder_the_agent_never_made_is_empty(sandbox: Sandbox) -> None:
    assert sandbox.list_files("/app/artifact/never") == []


def test_removal_deletes_the_folder_even_when_the_agent_made_it_read_only(sandbox: Sandbox) -> None:
    locked = sandbox.root / "app" / "artifact" / "locked"
    locked.mkdir()
    (locked / "f.txt").write_text("x")
    locked.chmod(0o500)
    assert sandbox.remove() is True
    assert not sandbox.root.exists()
    assert sandbox.remove() is True


def test_removal_leaves_what_symlinks_point_to(sandbox: Sandbox, tmp_path: Path) -> None:
    outside = tmp_path / "keep-me"
    outside.mkdir()
    (outside / "precious.txt").write_text("x")
    (sandbox.root / "link").symlink_to(outside)
    assert sandbox.remove()
    assert (outside / "precious.txt").exists()


def test_clearing_a_sandbox_empties_it_and_rebuilds_its_layout_at_the_same_path(tmp_path: Path) -> None:
    sandbox = create_sandbox(tmp_path, "pooled")
    sandbox.path("/app/artifact/report.md").write_text("from the last task run")
    (sandbox.home / ".history").write_text("secret")
    (sandbox.root / "scratch").mkdir()

    sandbox.clear()

    assert sandbox.root.is_dir() and sandbox.list_files() == []
    assert sandbox.home.is_dir() and sandbox.path("/app/artifact").is_dir()
    assert not (sandbox.root / "scratch").exists()


def test_clearing_a_pooled_sandbox_keeps_the_empty_folders_a_confined_agent_mounts_its_code_on(tmp_path: Path) -> None:
    sandbox = create_sandbox(tmp_path, "pooled")
    mount_point = sandbox.root / "tmp" / "ci" / ".venv"  # bwrap made it for a venv under /tmp
    mount_point.mkdir(parents=True)
    (sandbox.root / "tmp" / "scratch").mkdir()
    (sandbox.root / "tmp" / "scratch" / "notes.txt").write_text("left by the last task run")
    (sandbox.root / "app" / "answer.txt").write_text("42")
    sandbox.clear()
    assert mount_point.is_dir()
    assert not (sandbox.root / "tmp" / "scratch").exists()
    assert not (sandbox.root / "app" / "answer.txt").exists()
    assert (sandbox.root / "app" / "artifact").is_dir()
