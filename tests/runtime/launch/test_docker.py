"""The docker launcher: argv checks everywhere; real containers of the local test image where a daemon
answers (`make docker-up`), each removed by its id, none left behind."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from image_mode import TEST_IMAGE, bridge_network, containers, require_image_mode
from prefect_agentenv.exceptions import DeployError
from prefect_agentenv.runtime.launch.base import Launcher, LaunchSpec
from prefect_agentenv.runtime.launch.docker import INSTANCE_LABEL, RUN_LABEL, DockerLauncher


def test_the_docker_launcher_follows_the_launcher_interface() -> None:
    assert isinstance(DockerLauncher(), Launcher)


def test_the_container_port_is_published_on_loopback_only_and_secrets_stay_out_of_argv(tmp_path: Path) -> None:
    spec = LaunchSpec(image="envs/email:1", container_port=9000, command=["serve", "--host", "{host}", "--port", "{port}"],
                      env={"MODE": "test", "SELF": "http://{host}:{port}"},
                      secret_env={"API_KEY": SecretStr("s3cret")})
    args = DockerLauncher(run_id="run-7").run_args(spec, instance_id="email-1", cwd=tmp_path,
                                                   extra_env={"EXTRA": "1"})
    assert args[:3] == ["docker", "run", "--detach"]
    assert args[args.index("--publish") + 1] == "127.0.0.1::9000"
    assert f"{RUN_LABEL}=run-7" in args
    assert "MODE=test" in args and "SELF=http://0.0.0.0:9000" in args and "EXTRA=1" in args
    assert "API_KEY" in args and not any("s3cret" in a for a in args)
    assert args[args.index("--workdir") + 1] == str(tmp_path.resolve())
    assert args[-6:] == ["envs/email:1", "serve", "--host", "0.0.0.0", "--port", "9000"]


def test_on_the_host_network_the_server_is_told_a_loopback_port_and_nothing_is_published(tmp_path: Path) -> None:
    spec = LaunchSpec(image="envs/email:1", container_port=9000, command=["serve", "--host", "{host}", "--port", "{port}"],
                      env={"SELF": "http://{host}:{port}"})
    args = DockerLauncher(run_id="run-7").run_args(spec, instance_id="email-1", network="host", host_port=4321)
    assert args[args.index("--network") + 1] == "host" and "--publish" not in args
    assert "SELF=http://127.0.0.1:4321" in args
    assert args[-6:] == ["envs/email:1", "serve", "--host", "127.0.0.1", "--port", "4321"]


async def test_docker_is_unavailable_when_its_cli_is_missing() -> None:
    assert await DockerLauncher.available("/nonexistent/docker") is False


async def test_an_image_without_a_docker_daemon_fails_with_a_clear_deploy_error(tmp_path: Path) -> None:
    launcher = DockerLauncher(docker="/nonexistent/docker")
    with pytest.raises(DeployError, match="no docker daemon answers"):
        await launcher.start(LaunchSpec(image="envs/email:1"), name="email", workdir=tmp_path)


SERVER = """
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.path == "/.well-known/agent-env.json"
        self.send_response(200 if ok else 404); self.end_headers()
        self.wfile.write(json.dumps({"name": "docker-fake"}).encode() if ok else b"")
http.server.HTTPServer((sys.argv[1], int(sys.argv[2])), H).serve_forever()
"""


@pytest.fixture(scope="module")
def daemon_version() -> str:
    return require_image_mode()


@pytest.fixture
def run_id() -> Iterator[str]:
    """A run id of the test's own; after the test no container of that run is left, running or not."""
    run_id = f"docker-test-{uuid.uuid4().hex[:8]}"
    yield run_id
    assert containers(f"{RUN_LABEL}={run_id}") == [], "a container of the test's run was left behind"


def server() -> LaunchSpec:
    return LaunchSpec(image=TEST_IMAGE, container_port=8000, command=["python", "-c", SERVER, "{host}", "{port}"],
                      startup_timeout_seconds=60)


async def test_a_container_starts_answers_on_loopback_and_is_removed_on_stop(daemon_version: str, run_id: str,
                                                                             tmp_path: Path) -> None:
    launcher = DockerLauncher(run_id=run_id)
    instance = await launcher.start(server(), name="email", workdir=tmp_path)
    try:
        assert instance.base_url.startswith("http://127.0.0.1:")
        async with httpx.AsyncClient(trust_env=False) as client:
            card = (await client.get(instance.base_url + "/.well-known/agent-env.json")).json()
        assert card == {"name": "docker-fake"}
        assert containers(f"{INSTANCE_LABEL}={instance.instance_id}") == [(instance.container_id or "")[:12]]
        # Image mode keeps its own isolation and says so: the daemon's version and the network it gave.
        assert instance.confinement is not None and instance.confinement.confined
        assert instance.confinement.mechanism == f"docker {daemon_version}"
        assert instance.confinement.network == ("bridge" if bridge_network() else "host")
    finally:
        await launcher.stop(instance)
    proc = await asyncio.create_subprocess_exec("docker", "inspect", instance.container_id or "",
                                                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    assert await proc.wait() != 0
    assert instance.stderr_path is not None and "GET /.well-known/agent-env.json" in instance.stderr_path.read_text()


async def test_a_server_that_exits_at_start_fails_the_deploy_with_its_exit_code_and_leaves_no_container(
        daemon_version: str, run_id: str, tmp_path: Path) -> None:
    spec = LaunchSpec(image=TEST_IMAGE, command=["python", "-c", "import sys; print('no config', file=sys.stderr); "
                                                 "sys.exit(3)"], startup_timeout_seconds=60)
    with pytest.raises(DeployError, match="exit code 3") as failed:
        await DockerLauncher(run_id=run_id).start(spec, name="broken", workdir=tmp_path)
    assert "no config" in str(failed.value), "the container's stderr is in the error"


async def test_cleanup_removes_the_containers_of_its_run_that_a_killed_runner_left(daemon_version: str, run_id: str,
                                                                                  tmp_path: Path) -> None:
    # A container of the run that no launcher tracks, as a runner killed outright leaves it.
    left = subprocess.run(["docker", "run", "--detach", "--network", "none", "--label", f"{RUN_LABEL}={run_id}",
                           TEST_IMAGE, "python", "-c", "import time; time.sleep(600)"],
                          capture_output=True, text=True, check=True).stdout.strip()
    launcher = DockerLauncher(run_id=run_id)
    tracked = await launcher.start(server(), name="email", workdir=tmp_path)
    assert sorted(containers(f"{RUN_LABEL}={run_id}")) == sorted([left[:12], (tracked.container_id or "")[:12]])

    await launcher.cleanup(run_id, interrupted=True)

    assert containers(f"{RUN_LABEL}={run_id}") == []
