"""A launch that follows its process tree stops, with the server, what it started outside its group."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import httpx
import pytest

from prefect_agentenv.exceptions import DeployError
from prefect_agentenv.runtime.launch.base import LaunchSpec
from prefect_agentenv.runtime.launch.process import ProcessLauncher
from prefect_agentenv.runtime.launch.tree import INSTANCE_MARKER, tree_of

from ..launcher_helpers import fake_command, is_gone, wait_gone

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and process groups are Linux")


async def get_json(url: str) -> object:
    async with httpx.AsyncClient(trust_env=False) as client:
        response = await client.get(url)
        response.raise_for_status()
        return response.json()


async def test_a_helper_in_a_session_of_its_own_and_its_child_stop_with_a_tree_following_server(workdir: Path) -> None:
    launcher = ProcessLauncher()
    spec = LaunchSpec(command=fake_command("escaping-helper"), follow_tree=True)
    instance = await launcher.start(spec, name="coding-agent", workdir=workdir)
    helpers = await get_json(instance.base_url + "/helper-pid")
    assert isinstance(helpers, dict)
    session_helper, cleared_child = helpers["pid"]
    try:
        assert os.getsid(session_helper) != os.getsid(instance.pid or 0), "the helper left the server's session"
        assert INSTANCE_MARKER.encode() not in Path(f"/proc/{cleared_child}/environ").read_bytes()
        assert {session_helper, cleared_child} <= tree_of(instance.instance_id)
    finally:
        await launcher.stop(instance)
    assert wait_gone(session_helper) and wait_gone(cleared_child)
    assert tree_of(instance.instance_id) == set()


async def test_a_server_that_does_not_follow_its_tree_carries_no_instance_marker(workdir: Path) -> None:
    launcher = ProcessLauncher()
    instance = await launcher.start(LaunchSpec(command=fake_command()), name="env", workdir=workdir)
    try:
        env = await get_json(instance.base_url + "/env")
        assert isinstance(env, dict) and INSTANCE_MARKER not in env
    finally:
        await launcher.stop(instance)
    assert instance.pid is not None and is_gone(instance.pid)


async def test_sandbox_env_names_folders_of_the_server_s_own_made_under_its_working_folder(
        workdir: Path, tmp_path: Path) -> None:
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    spec = LaunchSpec(command=fake_command(), sandbox_env={"XDG_CONFIG_HOME": "home/.config", "WORKSPACE": "."})
    launcher = ProcessLauncher()
    instance = await launcher.start(spec, name="agent", workdir=workdir, cwd=sandbox)
    try:
        env = await get_json(instance.base_url + "/env")
    finally:
        await launcher.stop(instance)
    assert isinstance(env, dict)
    assert env["XDG_CONFIG_HOME"] == str((sandbox / "home" / ".config").resolve())
    assert (sandbox / "home" / ".config").is_dir()
    assert env["WORKSPACE"] == str(sandbox.resolve())


async def test_a_sandbox_env_folder_outside_the_working_folder_is_refused(workdir: Path, tmp_path: Path) -> None:
    spec = LaunchSpec(command=fake_command(), sandbox_env={"HOME": "../elsewhere"})

    with pytest.raises(DeployError, match="leaves the folder"):
        await ProcessLauncher().start(spec, name="agent", workdir=workdir, cwd=tmp_path)
