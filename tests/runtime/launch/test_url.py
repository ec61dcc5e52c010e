"""The live-URL launcher: readiness only, no lifecycle."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefect_agentenv.exceptions import DeployError
from prefect_agentenv.runtime.launch.base import Launcher, LaunchSpec
from prefect_agentenv.runtime.launch.ports import free_port
from prefect_agentenv.runtime.launch.process import ProcessLauncher
from prefect_agentenv.runtime.launch.url import UrlLauncher

from ..launcher_helpers import fake_command


def test_the_url_launcher_follows_the_launcher_interface() -> None:
    assert isinstance(UrlLauncher(), Launcher)


async def test_a_live_server_is_handed_out_once_it_answers_and_is_never_stopped(workdir: Path) -> None:
    processes = ProcessLauncher()
    server = await processes.start(LaunchSpec(command=fake_command()), name="live", workdir=workdir)
    try:
        launcher = UrlLauncher()
        instance = await launcher.start(LaunchSpec(url=server.base_url + "/"), name="email", workdir=workdir)
        assert instance.kind == "url"
        assert instance.base_url == server.base_url
        assert instance.mcp_url == server.base_url + "/mcp"
        assert instance.pid is None and instance.container_id is None
        await launcher.stop(instance)
        await launcher.cleanup("run", interrupted=True)
        await UrlLauncher().start(LaunchSpec(url=server.base_url), name="again", workdir=workdir)
    finally:
        await processes.stop(server)


async def test_a_url_that_never_answers_fails_at_the_startup_timeout(workdir: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    # Nothing listens: the probes are refused (and repeated often, as the server is still starting).
    with pytest.raises(DeployError, match=r"'email' did not become ready within 0.3s .*\(last: connection refused\)"):
        await UrlLauncher().start(LaunchSpec(url=url, startup_timeout_seconds=0.3), name="email", workdir=workdir)
