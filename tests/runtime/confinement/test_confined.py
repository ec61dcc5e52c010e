"""The confined launcher, tested as an attacker would use it: a real agent server confined by bubblewrap,
and probes run through the very argv and environment the launcher gives an agent.

The runner (this test process) holds a canary secret in its environment, a file in its working
folder, a file in the run folder and another agent's sandbox beside the confined one: the probes
try to read each, write outside ``/app`` and ``/tmp``, and kill the runner.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from prefect_agentenv.agents.catalog import REFERENCE_AGENTS
from prefect_agentenv.agents.mock_model.in_process import InProcessMockModel, serve_mock_model
from prefect_agentenv.envs.catalog import REFERENCE_ENVS
from prefect_agentenv.exceptions import DeployError
from prefect_agentenv.protocols.a2a import A2AClient
from prefect_agentenv.runtime.confinement.confined import ConfinedLauncher
from prefect_agentenv.runtime.confinement.netns import (
    FORWARDER_INSIDE,
    base_python,
    is_loopback,
    open_doors,
    path_allowed,
    request_framing,
)
from prefect_agentenv.runtime.launch.base import Door, Instance, LaunchSpec
from prefect_agentenv.runtime.launch.process import Command, ProcessLauncher
from prefect_agentenv.runtime.resources.leftovers import RUN_MARKER
from prefect_agentenv.runtime.resources.sandbox import Sandbox, create_sandbox
from prefect_agentenv.settings import get_settings

from ..launcher_helpers import fake_command, is_gone

CARD = "/.well-known/agent-card.json"
CANARY_VARIABLE = "AGENTENV_TEST_RUNNER_SECRET"


def bridge_folders(instance: str) -> list[Path]:
    """The network-bridge folders of an agent instance (their names start with its id) still on disk."""
    return sorted(Path(tempfile.gettempdir()).glob(f"agentenv-net-{instance}-*"))


@dataclass
class World:
    """A runner's world as a confined agent must not see it."""

    canary: str
    runner_file: Path
    run_file: Path
    other_sandbox_file: Path
    sandbox: Sandbox
    run_folder: Path


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    canary = f"canary-{uuid.uuid4().hex}"
    monkeypatch.setenv(CANARY_VARIABLE, canary)
    runner = tmp_path / "runner"
    runner.mkdir()
    monkeypatch.chdir(runner)
    (runner / "secret.txt").write_text(canary)
    run_folder = tmp_path / "home" / "runs" / "r1"
    run_folder.mkdir(parents=True)
    (run_folder / "report.json").write_text(canary)
    other = create_sandbox(run_folder, "other")
    other.path("/app/artifact/answer.txt").write_text(canary)
    return World(canary, runner / "secret.txt", run_folder / "report.json", other.path("/app/artifact/answer.txt"),
                 create_sandbox(run_folder, "agent"), run_folder)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10.0, trust_env=False) as client:
        yield client


def confined(world: World, script: str | list[str], **fields: object) -> tuple[Command, subprocess.CompletedProcess[str]]:
    """Run a shell script (or an argv) exactly as the launcher would run an agent's command, in its sandbox. A
    script is the agent's own code, in its sandbox: not on the command line, whose paths the launcher mounts as
    the registrant's."""
    if isinstance(script, str):
        (world.sandbox.root / "app" / ".probe.sh").write_text(script)
    argv = ["/bin/sh", "/app/.probe.sh"] if isinstance(script, str) else script
    spec = LaunchSpec(command=argv, kind="confined", **fields)  # type: ignore[arg-type]
    command = ConfinedLauncher(run_id="r1")._command(spec, name="probe", port=1, cwd=world.sandbox.root,
                                                      extra_env=world.sandbox.env(), instance_id="probe-1")
    done = subprocess.run(command.argv, env=command.env, cwd=command.cwd, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    return command, done


def probe_lines(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)


def test_a_confined_process_sees_its_sandbox_at_app_and_none_of_the_runners_files(world: World) -> None:
    script = "; ".join([
        "echo pwd=$(pwd)",
        f"echo runner_file=$(cat {world.runner_file} 2>/dev/null || echo refused)",
        f"echo run_file=$(cat {world.run_file} 2>/dev/null || echo refused)",
        f"echo other_sandbox=$(cat {world.other_sandbox_file} 2>/dev/null || echo refused)",
        f"echo run_folder=$(ls {world.run_folder} 2>/dev/null || echo refused)",
        f"echo host_sandbox=$(ls {world.sandbox.root} 2>/dev/null || echo refused)",
        "echo root=$(ls / | tr '\\n' ' ')",
        "echo home=$HOME",
        "echo x > /app/artifact/x.txt && echo artifact=written",
        "echo same_file=$(cat $AGENTENV_SANDBOX_ROOT/app/artifact/x.txt)",
    ])
    _, done = confined(world, script)

    seen = probe_lines(done)
    assert done.returncode == 0, done.stderr
    assert seen["pwd"] == "/app"
    assert (seen["runner_file"], seen["run_file"], seen["other_sandbox"]) == ("refused", "refused", "refused")
    assert seen["run_folder"] == "refused" and seen["host_sandbox"] == "refused"
    assert world.canary not in done.stdout
    assert set(seen["root"].split()) <= {"app", "bin", "dev", "etc", "home", "lib", "lib64", "proc", "sbin", "tmp",
                                          "sandbox",
                                          "usr", *Path(sys.prefix).resolve().parts[1:2],
                                          *Path(sys.base_prefix).resolve().parts[1:2], "root", "work"}
    assert seen["home"] == "/home" and seen["artifact"] == "written"
    assert seen["same_file"] == "x", "sandbox paths map under $AGENTENV_SANDBOX_ROOT as on the host"
    assert world.sandbox.path("/app/artifact/x.txt").read_text() == "x\n", "the agent's file is in the host sandbox"


def test_a_confined_process_cannot_write_outside_its_sandbox(world: World) -> None:
    targets = ["/planted", "/usr/planted", "/etc/planted", f"{world.run_folder}/planted", f"{sys.prefix}/planted",
               f"{world.runner_file.parent}/planted"]
    script = "; ".join(f"touch {t} 2>/dev/null && echo wrote={t} || echo refused={t}" for t in targets)
    script += "; touch /tmp/mine /home/.mine && echo own=written"

    _, done = confined(world, script)

    assert "wrote=" not in done.stdout, done.stdout
    assert done.stdout.count("refused=") == len(targets)
    assert "own=written" in done.stdout
    assert (world.sandbox.root / "tmp" / "mine").is_file() and (world.sandbox.home / ".mine").is_file()
    assert not any(Path(t).exists() for t in targets[3:])


def test_a_confined_process_gets_no_variable_of_the_runners_and_cannot_reach_its_process(world: World) -> None:
    runner = os.getpid()
    script = "; ".join([
        f"echo canary=${{{CANARY_VARIABLE}:-absent}}",
        "echo pid1=$(tr '\\0' '\\n' < /proc/1/environ | grep -c AGENTENV_TEST_RUNNER)",
        f"echo runner_environ=$(cat /proc/{runner}/environ 2>/dev/null | tr '\\0' ' ' || echo refused)",
        f"kill -9 {runner} 2>/dev/null && echo kill=delivered || echo kill=refused",
        "echo processes=$(ls /proc | grep -c '^[0-9]')",
        "echo caps=$(grep CapEff /proc/self/status | tr -d '\\t')",
    ])
    command, done = confined(world, script, env={"DECLARED": "yes"})

    seen = probe_lines(done)
    assert seen["canary"] == "absent" and seen["pid1"] == "0"
    assert seen["runner_environ"] in ("", "refused") and seen["kill"] == "refused"
    assert int(seen["processes"]) <= 5, "only its own processes exist in its PID namespace"
    assert seen["caps"] == "CapEff:0000000000000000"
    assert world.canary not in json.dumps(command.env) and world.canary not in " ".join(command.argv)
    assert CANARY_VARIABLE not in command.env and command.env["DECLARED"] == "yes"
    assert not set(command.env) - {"DECLARED", "HOME", "TMPDIR", "LANG", "USER", "LOGNAME", "PATH",
                                   "AGENTENV_SANDBOX_ROOT", "PREFECT_AGENTENV_RUN_ID", "PREFECT_AGENTENV_INSTANCE_ID"}


def test_a_process_over_its_cpu_time_limit_is_stopped_and_the_limit_named(world: World) -> None:
    launcher = ConfinedLauncher(run_id="r1")
    spec = LaunchSpec(command=[sys.executable, "-c", "while True: pass"], kind="confined", cpu_limit_seconds=1)
    command, done = confined(world, spec.command or [], cpu_limit_seconds=1)

    assert done.returncode == 128 + 24  # SIGXCPU, passed on by bwrap
    assert command.confinement is not None and command.confinement.limits["cpu_seconds"] == 1
    assert launcher._exit_reason(spec, done.returncode, None) == (
        "exit code 152, stopped by its cpu time limit (cpu_limit_seconds=1)", "cpu time limit (cpu_limit_seconds=1)")


def test_a_process_over_its_memory_limit_fails_and_the_limit_is_named(world: World, tmp_path: Path) -> None:
    stderr = tmp_path / "stderr.log"
    _, done = confined(world, [sys.executable, "-c", "bytearray(1 << 30)"], memory_limit_mb=256)
    stderr.write_text(done.stderr)

    reason = ConfinedLauncher()._exit_reason(LaunchSpec(command=["x"], kind="confined", memory_limit_mb=256),
                                             done.returncode, stderr)
    assert done.returncode == 1 and "MemoryError" in done.stderr
    assert reason == ("exit code 1, stopped by its memory limit (memory_limit_mb=256)",
                      "memory limit (memory_limit_mb=256)")


def test_without_user_namespaces_the_deploy_fails_in_one_line_saying_how_to_opt_out(world: World) -> None:
    # A real machine without user namespaces: the confined process itself, where bwrap disabled them.
    code = ("from prefect_agentenv.runtime.confinement.confined import ConfinedLauncher\n"
            "from prefect_agentenv.runtime.launch.base import LaunchSpec\n"
            "spec = LaunchSpec(command=['true'], kind='confined')\n"
            "try:\n    ConfinedLauncher()._command(spec, name='agent', port=1, cwd='/app', extra_env={}, instance_id='i')\n"
            "except Exception as exc:\n    print(exc)")
    _, done = confined(world, [sys.executable, "-c", code])

    message = done.stdout.strip()
    assert len(message.splitlines()) == 1, done.stdout + done.stderr
    assert message.startswith("'agent' cannot run confined: bubblewrap cannot create its namespaces here")
    assert "confinement: none" in message and "PREFECT_AGENTENV_AGENT_CONFINEMENT=none" in message


async def test_a_reference_agent_runs_confined_answers_and_writes_its_artifact_in_the_sandbox(
        world: World, http: httpx.AsyncClient) -> None:
    launcher = ConfinedLauncher(run_id="r1", http_client=http)
    spec = LaunchSpec(command=REFERENCE_AGENTS["scripted"].command(), ready_path=CARD, kind="confined")
    instance = await launcher.start(spec, name="agent", workdir=world.run_folder, cwd=world.sandbox.root,
                                    extra_env=world.sandbox.env())
    try:
        plan = {"files": [{"path": "/app/artifact/x.txt", "content": "from inside"}], "reply": "done"}
        reply = await A2AClient(instance.base_url, http=http).send(f"PLAN: {json.dumps(plan)}", timeout_seconds=20,
                                                                   poll_interval_seconds=0.02)
        assert (instance.kind, reply.state, reply.text) == ("confined", "completed", "done")
        assert world.sandbox.path("/app/artifact/x.txt").read_text() == "from inside"
        assert instance.confinement is not None and instance.confinement.mechanism.startswith("bwrap ")
        assert instance.confinement.network == "confined"
    finally:
        await launcher.stop(instance)
    assert instance.pid is not None and is_gone(instance.pid)


async def test_an_install_path_that_would_show_the_run_folder_is_refused(world: World) -> None:
    spec = LaunchSpec(command=["/bin/true"], kind="confined", install_paths=[str(world.run_folder.parent)])

    with pytest.raises(DeployError, match="holds the agent's own sandbox"):
        await ConfinedLauncher(run_id="r1").start(spec, name="agent", workdir=world.run_folder,
                                                  cwd=world.sandbox.root)


# The network: a confined agent reaches its model door and its envs' MCP paths, nothing else.

NET_PROBE = Path(__file__).parents[1] / "net_probe_server.py"
MCP_INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}})
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
DATA_GET = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "data/get", "params": {}})


@dataclass
class Net:
    """What is on the runner's loopback around a confined agent: an env, a model door, an unrelated server."""

    env: Instance
    model: InProcessMockModel
    other: Instance


@pytest.fixture
async def net(world: World, http: httpx.AsyncClient) -> AsyncIterator[Net]:
    launcher = ProcessLauncher(run_id="r1", http_client=http)
    env = await launcher.start(LaunchSpec(command=REFERENCE_ENVS["email"].command()), name="email",
                               workdir=world.run_folder)
    other = await launcher.start(LaunchSpec(command=fake_command()), name="other", workdir=world.run_folder)
    model = await serve_mock_model()
    try:
        yield Net(env, model, other)
    finally:
        await model.stop()
        await launcher.stop(other)
        await launcher.stop(env)


def probe_spec(**fields: Any) -> LaunchSpec:
    fields.setdefault("command", [sys.executable, str(NET_PROBE), "--host", "{host}", "--port", "{port}"])
    return LaunchSpec(ready_path=CARD, kind="confined", install_paths=[str(NET_PROBE.parent)], **fields)


async def from_inside(http: httpx.AsyncClient, agent: Instance, url: str, method: str = "GET", body: str | None = None,
                      headers: dict[str, str] | None = None, raw_target: str | None = None) -> dict[str, Any]:
    """An HTTP request made by the confined agent itself, as it went."""
    answer = await http.post(f"{agent.base_url}/probe", json={"url": url, "method": method, "body": body,
                                                              "headers": headers or {}, "raw_target": raw_target})
    return dict(answer.json())


def forwarders(run_id: str) -> list[int]:
    """Live network forwarders of a run's confined agents (the base Python running the forwarder, with the run
    marker in its environment; the supervisor's and bwrap's command lines name the forwarder too)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if (argv[0] == str(base_python()).encode() and FORWARDER_INSIDE.encode() in argv
                    and f"{RUN_MARKER}={run_id}".encode() in (entry / "environ").read_bytes()):
                found.append(int(entry.name))
        except (OSError, ValueError):
            continue
    return found


async def test_a_confined_agent_reaches_its_model_and_its_env_s_mcp_path_and_nothing_else(
        world: World, http: httpx.AsyncClient, net: Net, prefect_harness: None) -> None:
    from prefect.settings import PREFECT_API_URL

    run_id = f"net-{uuid.uuid4().hex}"
    launcher = ConfinedLauncher(run_id=run_id, http_client=http)
    model_url = f"{net.model.base_url}/v1"
    agent = await launcher.start(probe_spec(doors=(Door.from_url("model", model_url),)), name="agent",
                                 workdir=world.run_folder, cwd=world.sandbox.root, extra_env=world.sandbox.env())
    env_url = net.env.base_url
    try:
        assert await open_doors(agent.instance_id, [Door.from_url("mcp", net.env.mcp_url)]) == [
            f"model {model_url.split('//')[1].rsplit('/', 1)[0]}", f"mcp {net.env.mcp_url.split('//')[1]}"]

        model = await from_inside(http, agent, f"{model_url}/models")
        mcp = await from_inside(http, agent, net.env.mcp_url, "POST", MCP_INITIALIZE, MCP_HEADERS)
        data_plane = await from_inside(http, agent, f"{env_url}/agentenv", "POST", DATA_GET,
                                       {"Content-Type": "application/json"})
        card = await from_inside(http, agent, f"{env_url}/.well-known/agent-env.json")
        dotted = await from_inside(http, agent, f"{env_url}/mcp/../agentenv", "POST", DATA_GET,
                                   raw_target="/mcp/../agentenv")
        encoded = await from_inside(http, agent, f"{env_url}/mcp", "POST", DATA_GET, raw_target="/mcp%2F..%2Fagentenv")
        other = await from_inside(http, agent, f"{net.other.base_url}/env")
        prefect_api = await from_inside(http, agent, f"{PREFECT_API_URL.value()}/health")
        internet = (await http.post(f"{agent.base_url}/connect", json={"host": "1.1.1.1", "port": 443})).json()

        assert model["status"] == 200 and "mock" in model["body"], model
        assert mcp["status"] == 200 and '"serverInfo"' in mcp["body"], mcp
        for refused in (data_plane, card, dotted, encoded):
            assert refused["status"] == 403, refused
            assert len(refused["body"].strip().splitlines()) == 1
            assert "may reach only /mcp" in refused["body"], refused
        assert "ConnectionRefusedError" in other["error"], other
        assert "ConnectionRefusedError" in prefect_api["error"], prefect_api
        assert "unreachable" in internet["error"], internet
        assert agent.confinement is not None and agent.confinement.network == "confined"
        assert len(forwarders(run_id)) == 1
    finally:
        await launcher.stop(agent)
    assert agent.pid is not None and is_gone(agent.pid)
    assert forwarders(run_id) == [], "the forwarder inside died with the agent's sandbox"
    assert bridge_folders(agent.instance_id) == [], "the bridge's folder is gone"
    with pytest.raises(httpx.ConnectError):
        await http.get(f"{agent.base_url}{CARD}")


async def test_after_the_agent_stops_its_bridge_is_gone_port_folder_and_connections(
        world: World, http: httpx.AsyncClient) -> None:
    launcher = ConfinedLauncher(run_id="r1", http_client=http)
    agent = await launcher.start(probe_spec(), name="agent", workdir=world.run_folder, cwd=world.sandbox.root,
                                 extra_env=world.sandbox.env())
    bridge = launcher._bridges[agent.instance_id]
    folder, port = bridge.folder, bridge.port
    assert (folder / "a2a.sock").exists() and (folder / "control.sock").exists()
    held = await asyncio.open_connection("127.0.0.1", port)  # a connection still open at stop is cut

    await launcher.stop(agent)

    assert not folder.exists() and await open_doors(agent.instance_id, []) is None
    assert await held[0].read() == b""
    held[1].close()
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind: TIME_WAIT is no listener
        probe.bind(("127.0.0.1", port))  # nothing listens on the host port any more


async def test_a_port_taken_before_the_bridge_binds_it_is_retried_on_a_new_one_for_a_port_given_by_variable(
        world: World, http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> None:
    # Another program (or an outgoing connection) may take a port between its pick and the bridge's bind.
    import prefect_agentenv.runtime.launch.process as process

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        picks = [taken.getsockname()[1]]
        real = process.free_port
        monkeypatch.setattr(process, "free_port", lambda host: picks.pop() if picks else real(host))
        spec = probe_spec(command=[sys.executable, str(NET_PROBE), "--host", "{host}"], env={"PORT": "{port}"})
        launcher = ConfinedLauncher(run_id="r1", http_client=http)
        agent = await launcher.start(spec, name="agent", workdir=world.run_folder, cwd=world.sandbox.root,
                                     extra_env=world.sandbox.env())
        try:
            assert not picks and agent.base_url != f"http://127.0.0.1:{taken.getsockname()[1]}"
            assert (await http.get(agent.base_url + CARD)).status_code == 200
        finally:
            await launcher.stop(agent)


async def test_a_block_widens_the_network_and_the_record_says_so(world: World, http: httpx.AsyncClient,
                                                                 net: Net) -> None:
    launcher = ConfinedLauncher(run_id="r1", http_client=http)
    allowed = net.other.base_url.split("//", 1)[1]
    widened = await launcher.start(probe_spec(network={"allow": [allowed]}), name="widened", workdir=world.run_folder,
                                   cwd=world.sandbox.root, extra_env=world.sandbox.env())
    try:
        other = await from_inside(http, widened, f"{net.other.base_url}/env")
        env = await from_inside(http, widened, f"{net.env.base_url}{CARD}")
        assert other["status"] == 200 and "ConnectionRefusedError" in env["error"], (other, env)
        assert widened.confinement is not None and widened.confinement.doors == [f"allowed {allowed}"]
    finally:
        await launcher.stop(widened)
    public = await launcher.start(probe_spec(network="public"), name="public", workdir=world.run_folder,
                                  cwd=world.sandbox.root, extra_env=world.sandbox.env())
    try:
        data_plane = await from_inside(http, public, f"{net.env.base_url}/agentenv", "POST", DATA_GET,
                                       {"Content-Type": "application/json"})
        assert data_plane["status"] == 200, "public is the host's network, as an unconfined agent has it"
        assert public.confinement is not None and (public.confinement.network, public.confinement.doors) == (
            "public", [])
    finally:
        await launcher.stop(public)


async def test_a_model_door_off_the_loopback_fails_the_deploy_in_one_line_saying_how_to_widen(
        world: World, http: httpx.AsyncClient) -> None:
    spec = probe_spec(doors=(Door.from_url("model", "https://models.example.org/v1"),))
    name = f"offsite-{uuid.uuid4().hex[:6]}"

    with pytest.raises(DeployError) as raised:
        await ConfinedLauncher(run_id="r1", http_client=http).start(spec, name=name, workdir=world.run_folder,
                                                                    cwd=world.sandbox.root)
    assert len(str(raised.value).splitlines()) == 1
    assert "model models.example.org:443 is not on this machine's loopback" in str(raised.value)
    assert "network: public" in str(raised.value)
    assert bridge_folders(name) == [], "the failed start left no folder"


@pytest.mark.parametrize(("path", "allowed"), [
    ("/mcp", True), ("/mcp/", True), ("/mcp/messages", True), ("/mcpx", False), ("/agentenv", False),
    ("/mcp/../agentenv", False), ("/mcp/%2e%2e/agentenv", False), ("/mcp%2F..%2Fagentenv", False),
    ("/mcp/.%2e/agentenv", False), ("/MCP", False), ("/mcp\\..\\agentenv", False), ("/", False)])
def test_an_mcp_door_lets_through_its_path_and_below_only(path: str, allowed: bool) -> None:
    assert path_allowed(path, "/mcp") is allowed


def test_a_request_with_an_ambiguous_body_or_an_upgrade_is_refused_before_it_reaches_the_env() -> None:
    door = [Door.from_url("mcp", "http://127.0.0.1:5000/mcp")]

    def head(*lines: str) -> bytes:
        return ("\r\n".join(["POST /mcp HTTP/1.1", "Host: 127.0.0.1:5000", *lines]) + "\r\n\r\n").encode()

    assert request_framing(head("Content-Length: 12"), door) == 12
    assert request_framing(head("Transfer-Encoding: chunked"), door) is None
    assert "both" in str(request_framing(head("Content-Length: 3", "Transfer-Encoding: chunked"), door))
    assert "ambiguous" in str(request_framing(head("Content-Length: 3", "Content-Length: 4"), door))
    assert "upgrade" in str(request_framing(head("Upgrade: websocket", "Connection: Upgrade"), door))
    assert "may reach only /mcp" in str(request_framing(b"GET http://127.0.0.1:5000/agentenv HTTP/1.1\r\n\r\n", door))
    assert "may reach only /mcp" in str(request_framing(b"CONNECT 127.0.0.1:5000 HTTP/1.1\r\n\r\n", door))


NO_NETWORK_NAMESPACES = "echo 0 > /proc/sys/user/max_net_namespaces && exec \"$0\" \"$@\""
"""Run a command in a user namespace of its own where no network namespace may be created (a real limit
of the kernel's, as a locked-down machine sets it), user namespaces still allowed."""


def test_without_network_namespaces_the_deploy_fails_in_one_line_saying_how_to_opt_out(tmp_path: Path) -> None:
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("util-linux's unshare is not installed: no way to take network namespaces away here")
    code = ("import asyncio, sys\nfrom pathlib import Path\n"
            "from prefect_agentenv.runtime.confinement.confined import ConfinedLauncher\n"
            "from prefect_agentenv.runtime.launch.base import LaunchSpec\n"
            "async def main():\n"
            "    folder = Path(sys.argv[1])\n"
            "    try:\n"
            "        await ConfinedLauncher().start(LaunchSpec(command=['/bin/true'], kind='confined'), name='agent',"
            " workdir=folder, cwd=folder)\n"
            "    except Exception as exc:\n        print(exc)\n"
            "asyncio.run(main())\n")
    done = subprocess.run([unshare, "--user", "--map-root-user", "sh", "-c", NO_NETWORK_NAMESPACES, sys.executable,
                           "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)

    message = done.stdout.strip()
    assert len(message.splitlines()) == 1, done.stdout + done.stderr
    assert message.startswith("'agent' cannot run confined: bubblewrap cannot create a network namespace here")
    assert "network: public" in message and "confinement: none" in message
    assert not list(tmp_path.iterdir()) or all(p.name == "logs" for p in tmp_path.iterdir())


async def test_an_agent_that_swaps_its_a2a_socket_for_a_link_to_a_host_socket_gets_no_runner_traffic_through_it(
        world: World, http: httpx.AsyncClient, tmp_path: Path) -> None:
    reached: list[bytes] = []

    async def host_service(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        reached.append(await reader.read(1024))
        writer.close()

    service = await asyncio.start_unix_server(host_service, str(tmp_path / "service.sock"))
    launcher = ConfinedLauncher(run_id="r1", http_client=http)
    agent = await launcher.start(probe_spec(), name="agent", workdir=world.run_folder, cwd=world.sandbox.root,
                                 extra_env=world.sandbox.env())
    try:
        relinked = await http.post(f"{agent.base_url}/relink", json={"path": "/run/agentenv-net/a2a.sock",
                                                                     "target": str(tmp_path / "service.sock")})
        assert relinked.json() == {"relinked": True}
        async with httpx.AsyncClient(timeout=5.0, trust_env=False) as fresh:  # a new connection, not a kept one
            with pytest.raises(httpx.HTTPError):
                await fresh.get(f"{agent.base_url}{CARD}")
        assert reached == [], "the runner's request never reached the host's socket"
    finally:
        await launcher.stop(agent)
        service.close()
        await service.wait_closed()


async def test_the_setting_gives_every_agent_without_a_widening_of_its_own_the_host_s_network(
        world: World, http: httpx.AsyncClient, net: Net, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_AGENTENV_AGENT_NETWORK", "public")
    get_settings.cache_clear()
    launcher = ConfinedLauncher(run_id="r1", http_client=http)
    try:
        agent = await launcher.start(probe_spec(), name="agent", workdir=world.run_folder, cwd=world.sandbox.root,
                                     extra_env=world.sandbox.env())
        try:
            other = await from_inside(http, agent, f"{net.other.base_url}/env")
            assert other["status"] == 200 and agent.confinement is not None
            assert agent.confinement.network == "public"
        finally:
            await launcher.stop(agent)
    finally:
        get_settings.cache_clear()


def test_only_loopback_addresses_and_localhost_are_loopback_doors() -> None:
    assert all(is_loopback(host) for host in ("127.0.0.1", "127.1.2.3", "localhost", "::1"))
    assert not any(is_loopback(host) for host in ("127.example.org", "10.0.0.1", "localhost.example.org", "0.0.0.0"))


def test_two_envs_on_one_host_port_share_a_listener_and_each_path_is_let_through() -> None:
    doors = [Door.from_url("mcp", "http://127.0.0.1:5000/mcp"), Door.from_url("mcp", "http://localhost:5000/tools")]
    request = "POST {} HTTP/1.1\r\nContent-Length: 0\r\n\r\n"

    assert request_framing(request.format("/tools/x").encode(), doors) == 0
    assert request_framing(request.format("/mcp").encode(), doors) == 0
    assert "only /mcp or /tools" in str(request_framing(request.format("/agentenv").encode(), doors))


async def test_an_allowed_endpoint_on_an_env_s_port_shares_its_listener_and_opens_the_whole_port(
        world: World, http: httpx.AsyncClient, net: Net) -> None:
    launcher = ConfinedLauncher(run_id="r1", http_client=http)
    address = net.env.base_url.split("//", 1)[1]
    spec = probe_spec(doors=(Door.from_url("mcp", net.env.mcp_url),), network={"allow": [address]})
    agent = await launcher.start(spec, name="agent", workdir=world.run_folder, cwd=world.sandbox.root,
                                 extra_env=world.sandbox.env())
    try:
        data_plane = await from_inside(http, agent, f"{net.env.base_url}/agentenv", "POST", DATA_GET,
                                       {"Content-Type": "application/json"})
        assert data_plane["status"] == 200, "a block that allows the env's port widens past its /mcp, recorded"
        assert agent.confinement is not None
        assert agent.confinement.doors == [f"mcp {net.env.mcp_url.split('//', 1)[1]}", f"allowed {address}"]
    finally:
        await launcher.stop(agent)
