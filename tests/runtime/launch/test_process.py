"""The local-process launcher against real servers on loopback."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from prefect_agentenv.exceptions import DeployError
from prefect_agentenv.runtime.launch.base import Instance, Launcher, LaunchSpec
from prefect_agentenv.runtime.launch.process import ProcessLauncher

from ..launcher_helpers import fake_command, is_gone, read_pid, wait_gone

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and prctl are Linux")


def assert_reaped(pid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def get_json(url: str) -> object:
    async with httpx.AsyncClient(trust_env=False) as client:
        response = await client.get(url)
        response.raise_for_status()
        return response.json()


def test_the_process_launcher_follows_the_launcher_interface() -> None:
    assert isinstance(ProcessLauncher(), Launcher)


async def test_a_started_server_answers_on_loopback_and_stops_by_its_handle(workdir: Path) -> None:
    launcher = ProcessLauncher()
    instance = await launcher.start(LaunchSpec(command=fake_command()), name="email", workdir=workdir)
    try:
        assert instance.kind == "process"
        assert instance.base_url.startswith("http://127.0.0.1:")
        assert instance.mcp_url == instance.base_url + "/mcp"
        assert instance.instance_id.startswith("email-")
        assert instance.pid is not None and os.getpgid(instance.pid) == instance.pid
        card = await get_json(instance.base_url + "/.well-known/agent-env.json")
        assert isinstance(card, dict) and card["name"] == "fake"
        assert instance.stdout_path is not None and instance.stdout_path.parent == workdir / "logs"
        assert "listening on 127.0.0.1" in instance.stdout_path.read_text()
    finally:
        await launcher.stop(instance)
    assert_reaped(instance.pid)
    assert launcher.instances == []


async def test_stopping_an_instance_twice_is_harmless(workdir: Path) -> None:
    launcher = ProcessLauncher()
    instance = await launcher.start(LaunchSpec(command=fake_command()), name="email", workdir=workdir)
    await launcher.stop(instance)
    await launcher.stop(instance)
    assert instance.pid is not None
    assert_reaped(instance.pid)


async def test_env_secrets_and_extra_env_reach_the_server_and_secrets_are_never_logged(
        workdir: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="prefect_agentenv")
    spec = LaunchSpec(command=fake_command(), env={"GREETING": "hello", "OWN_PORT": "{port}"},
                      secret_env={"API_KEY": SecretStr("s3cret-value")})
    launcher = ProcessLauncher()
    instance = await launcher.start(spec, name="email", workdir=workdir, extra_env={"MCP_URL": "http://x/mcp"})
    try:
        env = await get_json(instance.base_url + "/env")
    finally:
        await launcher.stop(instance)
    assert isinstance(env, dict)
    assert env["GREETING"] == "hello"
    assert env["OWN_PORT"] == instance.base_url.rsplit(":", 1)[1]
    assert env["API_KEY"] == "s3cret-value"
    assert env["MCP_URL"] == "http://x/mcp"
    assert "s3cret-value" not in caplog.text
    assert "s3cret-value" not in repr(spec) and "s3cret-value" not in spec.model_dump_json()


async def test_the_server_runs_in_the_working_directory_it_is_given(workdir: Path, tmp_path: Path) -> None:
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    launcher = ProcessLauncher()
    instance = await launcher.start(LaunchSpec(command=fake_command()), name="agent", workdir=workdir, cwd=sandbox)
    try:
        answer = await get_json(instance.base_url + "/cwd")
    finally:
        await launcher.stop(instance)
    assert answer == {"cwd": str(sandbox.resolve())}


async def test_an_mcp_only_server_is_ready_when_its_mcp_endpoint_answers(workdir: Path) -> None:
    launcher = ProcessLauncher()
    instance = await launcher.start(LaunchSpec(command=fake_command("mcp-only")), name="tools", workdir=workdir)
    try:
        async with httpx.AsyncClient(trust_env=False) as client:
            assert (await client.get(instance.base_url + "/.well-known/agent-env.json")).status_code == 404
    finally:
        await launcher.stop(instance)


async def test_a_server_that_crashes_on_start_fails_with_its_exit_code_and_stderr(
        workdir: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    spec = LaunchSpec(command=fake_command("crash", "--pid-file", str(pid_file)), startup_timeout_seconds=10)
    with pytest.raises(DeployError) as caught:
        await ProcessLauncher().start(spec, name="email", workdir=workdir)
    message = str(caught.value)
    assert "'email' exited before it was ready: exit code 3" in message
    assert "fatal: cannot open the mailbox database" in message
    assert_reaped(read_pid(pid_file))


async def test_a_server_that_never_becomes_ready_is_killed_at_the_startup_timeout(
        workdir: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    # Long enough for the supervisor and the fake's interpreter to start on a busy machine, so the
    # server has written its pid before the launcher gives up on it.
    spec = LaunchSpec(command=fake_command("never-ready", "--pid-file", str(pid_file)), startup_timeout_seconds=4)
    started = time.monotonic()
    with pytest.raises(DeployError, match=r"'email' did not become ready within 4s"):
        await ProcessLauncher().start(spec, name="email", workdir=workdir)
    assert time.monotonic() - started < 15
    assert_reaped(read_pid(pid_file))


async def test_a_server_that_ignores_sigterm_is_killed_after_the_grace(workdir: Path) -> None:
    launcher = ProcessLauncher(stop_grace_seconds=0.3)
    instance = await launcher.start(LaunchSpec(command=fake_command("ignore-term")), name="stubborn", workdir=workdir)
    started = time.monotonic()
    await launcher.stop(instance)
    elapsed = time.monotonic() - started
    assert 0.3 <= elapsed < 3
    assert instance.pid is not None
    assert_reaped(instance.pid)


async def test_stop_also_ends_helpers_the_server_started_in_its_process_group(workdir: Path) -> None:
    launcher = ProcessLauncher(stop_grace_seconds=2)
    instance = await launcher.start(LaunchSpec(command=fake_command("with-helper")), name="env", workdir=workdir)
    answer = await get_json(instance.base_url + "/helper-pid")
    assert isinstance(answer, dict)
    helper_pid = answer["pid"]
    assert not is_gone(helper_pid)
    await launcher.stop(instance)
    assert wait_gone(helper_pid)


async def test_a_command_that_cannot_be_run_is_a_deploy_error(workdir: Path) -> None:
    spec = LaunchSpec(command=["/nonexistent/agentenv-server", "--port", "{port}"])
    with pytest.raises(DeployError, match="cannot run '/nonexistent/agentenv-server': .*No such file"):
        await ProcessLauncher().start(spec, name="email", workdir=workdir)


async def test_a_port_taken_before_the_server_binds_is_retried_on_a_new_port(workdir: Path, tmp_path: Path) -> None:
    spec = LaunchSpec(command=fake_command("port-taken", "--marker", str(tmp_path / "tried")))
    launcher = ProcessLauncher()
    instance = await launcher.start(spec, name="email", workdir=workdir)
    await launcher.stop(instance)
    assert (tmp_path / "tried").exists()


async def test_a_server_told_its_port_by_a_variable_is_retried_on_a_new_port_too(workdir: Path, tmp_path: Path) -> None:
    argv = [part for part in fake_command("port-taken", "--marker", str(tmp_path / "tried")) if part not in ("--port", "{port}")]
    launcher = ProcessLauncher()
    instance = await launcher.start(LaunchSpec(command=argv, env={"PORT": "{port}"}), name="email", workdir=workdir)
    await launcher.stop(instance)
    assert (tmp_path / "tried").exists()


async def test_a_server_that_binds_a_port_of_its_own_is_not_retried(workdir: Path, tmp_path: Path) -> None:
    # Its port is not ours to change: a second try would fail alike, so the first failure is the error.
    argv = [part for part in fake_command("port-taken", "--marker", str(tmp_path / "tried")) if part != "{port}"]
    argv.insert(argv.index("--port") + 1, "1")
    with pytest.raises(DeployError, match="Address already in use"):
        await ProcessLauncher().start(LaunchSpec(command=argv), name="email", workdir=workdir)


async def test_instances_started_together_get_their_own_ports(workdir: Path) -> None:
    launcher = ProcessLauncher()
    spec = LaunchSpec(command=fake_command())
    instances = await asyncio.gather(*(launcher.start(spec, name=f"env{i}", workdir=workdir) for i in range(3)))
    try:
        assert len({i.base_url for i in instances}) == 3
    finally:
        await asyncio.gather(*(launcher.stop(i) for i in instances))


async def test_cancelling_a_start_leaves_no_process(workdir: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    spec = LaunchSpec(command=fake_command("never-ready", "--pid-file", str(pid_file)), startup_timeout_seconds=30)
    start = asyncio.create_task(ProcessLauncher().start(spec, name="email", workdir=workdir))
    while not pid_file.exists() or not pid_file.read_text():
        await asyncio.sleep(0.02)
    start.cancel()
    with pytest.raises(asyncio.CancelledError):
        await start
    assert_reaped(read_pid(pid_file))


async def test_cleanup_stops_what_teardown_missed(workdir: Path) -> None:
    launcher = ProcessLauncher(run_id="run-1")
    instance = await launcher.start(LaunchSpec(command=fake_command()), name="email", workdir=workdir)
    await launcher.cleanup("another-run", interrupted=False)
    assert instance.pid is not None and not is_gone(instance.pid)
    await launcher.cleanup("run-1", interrupted=True)
    assert_reaped(instance.pid)
    assert launcher.instances == []


def test_an_instance_outlives_the_short_lived_thread_that_started_it(workdir: Path) -> None:
    # PR_SET_PDEATHSIG fires when the forking *thread* exits; the launcher forks from its own
    # long-lived thread so an event loop running in a worker thread does not kill its servers.
    launcher = ProcessLauncher()
    started: list[Instance] = []
    thread = threading.Thread(target=lambda: started.append(asyncio.run(
        launcher.start(LaunchSpec(command=fake_command()), name="email", workdir=workdir))))
    thread.start()
    thread.join(30)
    instance = started[0]
    assert instance.pid is not None
    time.sleep(0.3)
    assert not is_gone(instance.pid)
    asyncio.run(launcher.stop(instance))
    assert_reaped(instance.pid)


ORPHAN_PARENT = """
import asyncio, sys
from pathlib import Path
from prefect_agentenv.runtime.launch.base import LaunchSpec
from prefect_agentenv.runtime.launch.process import ProcessLauncher

async def main():
    spec = LaunchSpec(command=sys.argv[2:])
    instance = await ProcessLauncher().start(spec, name="orphan", workdir=Path(sys.argv[1]))
    print(instance.pid, flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


def test_an_instance_dies_when_the_process_that_launched_it_is_sigkilled(workdir: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", ORPHAN_PARENT, str(workdir), *fake_command()],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        line = parent.stdout.readline()
        assert line.strip().isdigit(), "the launching process did not report an instance pid"
        instance_pid = int(line)
        assert not is_gone(instance_pid)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
    assert wait_gone(instance_pid)


@pytest.mark.parametrize("after_s", [0.0, 0.001, 0.005, 0.02])
async def test_a_start_cancelled_while_the_process_is_spawned_leaves_nothing_running(tmp_path: Path,
                                                                                     after_s: float) -> None:
    # The spawn happens in a worker thread: a cancel landing meanwhile must still stop what it starts.
    from prefect_agentenv.runtime.launch.process import _spawner, spawn_supervised
    from prefect_agentenv.runtime.resources.leftovers import RUN_MARKER, _marked_processes

    marker = f"spawn-cancel-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, RUN_MARKER: marker}
    with (tmp_path / "out").open("ab") as out:
        started = asyncio.ensure_future(spawn_supervised([sys.executable, "-c", "import time; time.sleep(60)"],
                                                         env=env, cwd=None, stdout=out, stderr=out))
        await asyncio.sleep(after_s)
        started.cancel()
        try:
            process = await started
        except asyncio.CancelledError:
            process = None
        if process is not None:  # the spawn finished before the cancel: the caller owns its group
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    # The one spawner thread has finished that spawn (and its kill) once it runs the next job.
    await asyncio.get_running_loop().run_in_executor(_spawner, lambda: None)
    for _ in range(100):
        if not _marked_processes({marker}).get(marker):
            break
        await asyncio.sleep(0.05)
    assert not _marked_processes({marker}).get(marker)
