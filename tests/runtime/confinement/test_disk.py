"""The disk a confined agent fills in its sandbox is bounded: past ``disk_limit_mb`` it is stopped, and the limit
is named as its own failure; one file larger than the bound is refused by the kernel. Real bubblewrap, real
writes."""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path

import pytest

from prefect_agentenv.exceptions import InstanceExitedError, ResourceLimitError
from prefect_agentenv.runtime.confinement.confined import ConfinedLauncher
from prefect_agentenv.runtime.confinement.disk import disk_used
from prefect_agentenv.runtime.launch.base import LaunchSpec
from prefect_agentenv.runtime.resources.sandbox import create_sandbox

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux's")

SERVER = """
import http.server, os, sys, threading, time
os.makedirs('.well-known', exist_ok=True)
open('.well-known/agent-env.json', 'w').write('{}')
first = int(sys.argv[2])
if first:
    open('big', 'wb').write(b'x' * (first << 20))
def fill():
    for i in range(int(sys.argv[3])):
        with open(f'fill{i}', 'wb') as out:
            out.write(os.urandom(1 << 20))
        time.sleep(0.2)
threading.Thread(target=fill, daemon=True).start()
http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), http.server.SimpleHTTPRequestHandler).serve_forever()
"""


def spec(first_mb: int, files: int, limit_mb: int) -> LaunchSpec:
    return LaunchSpec(command=[sys.executable, "-c", SERVER, "{port}", str(first_mb), str(files)], kind="confined",
                      disk_limit_mb=limit_mb, network="public", startup_timeout_seconds=60)


def test_what_a_folder_takes_on_disk_counts_blocks_once_and_follows_no_link(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x" * (1 << 20))
    (tmp_path / "hard").hardlink_to(tmp_path / "a")
    (tmp_path / "link").symlink_to("/usr")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b").write_bytes(b"y" * (1 << 20))
    assert 2 << 20 <= disk_used(tmp_path) < 3 << 20


async def test_an_agent_that_fills_its_sandbox_past_its_disk_limit_is_stopped_and_the_limit_named(
        tmp_path: Path) -> None:
    sandbox = create_sandbox(tmp_path / "run", "filler")
    launcher = ConfinedLauncher(run_id=uuid.uuid4().hex)
    instance = await launcher.start(spec(0, 40, 8), name="filler", workdir=tmp_path / "run", cwd=sandbox.root)
    assert instance.confinement is not None and instance.confinement.limits["disk_mb"] == 8
    for _ in range(300):
        if not launcher.instances or _gone(launcher, instance.instance_id):
            break
        await asyncio.sleep(0.05)
    with pytest.raises(InstanceExitedError) as stopped:
        await launcher.stop(instance)
    assert stopped.value.limit == "disk limit (disk_limit_mb=8)", str(stopped.value)
    assert disk_used(sandbox.root) < 40 << 20, "stopped before it wrote all it meant to"


async def test_one_file_larger_than_the_disk_limit_is_refused_by_the_kernel_and_named(tmp_path: Path) -> None:
    sandbox = create_sandbox(tmp_path / "run", "big")
    launcher = ConfinedLauncher(run_id=uuid.uuid4().hex)
    with pytest.raises(ResourceLimitError) as failed:
        await launcher.start(spec(16, 0, 8), name="big", workdir=tmp_path / "run", cwd=sandbox.root)
    assert "stopped by its disk limit (disk_limit_mb=8)" in str(failed.value)
    assert (sandbox.root / "app" / "big").stat().st_size <= 8 << 20


def _gone(launcher: ConfinedLauncher, instance_id: str) -> bool:
    from prefect_agentenv.runtime.launch.process import _exit_status

    running = launcher._running.get(instance_id)
    return running is None or _exit_status(running.process) is not None
