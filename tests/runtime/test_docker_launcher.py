"""The docker launcher: argv checks everywhere, a real container only where a daemon answers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from prefect_agentenv.exceptions import DeployError
from prefect_agentenv.runtime.docker import RUN_LABEL, DockerLauncher
from prefect_agentenv.runtime.launch import LaunchSpec, Launcher


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
def docker_daemon() -> None:
    if not asyncio.run(DockerLauncher.available()):
        pytest.skip("no docker daemon answers `docker info`")


@pytest.mark.slow
async def test_a_container_starts_answers_on_loopback_and_is_removed_on_stop(docker_daemon: None, tmp_path: Path) -> None:
    spec = LaunchSpec(image="python:3.11-slim", container_port=8000,
                      command=["python", "-c", SERVER, "{host}", "{port}"], startup_timeout_seconds=120)
    launcher = DockerLauncher(run_id="docker-test")
    instance = await launcher.start(spec, name="email", workdir=tmp_path)
    try:
        assert instance.base_url.startswith("http://127.0.0.1:")
        async with httpx.AsyncClient(trust_env=False) as client:
            card = (await client.get(instance.base_url + "/.well-known/agent-env.json")).json()
        assert card == {"name": "docker-fake"}
    finally:
        await launcher.stop(instance)
    proc = await asyncio.create_subprocess_exec("docker", "inspect", instance.container_id or "",
                                                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    assert await proc.wait() != 0
