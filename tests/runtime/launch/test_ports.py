"""Ports handed to launches: the kernel may pick a closed port again at once, so two launches at
once (a benchmark's task runs, runs in parallel processes) could be given one port and one of them
would talk to the other's server. A port handed out is not handed out again for a while, by this
process or by another process of the same user."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from prefect_agentenv.runtime.launch import ports
from prefect_agentenv.runtime.launch.ports import LOOPBACK, forget_handed_out, free_port


@pytest.fixture(autouse=True)
def private_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A registry file of this test's own, so the thousands of ports below stay out of the shared one."""
    path = tmp_path / "ports.json"
    monkeypatch.setattr(ports, "shared_registry", lambda: path)
    forget_handed_out()
    yield path
    forget_handed_out()


def test_the_kernel_alone_picks_a_closed_port_again() -> None:
    """Why the registry exists: thousands of bind-to-0 picks in a row repeat ports."""
    picks = [ports._kernel_pick(LOOPBACK) for _ in range(3000)]
    assert len(set(picks)) < len(picks)


def test_free_port_never_hands_out_a_port_twice_within_the_window() -> None:
    handed = [free_port() for _ in range(1000)]
    assert len(set(handed)) == len(handed)


def test_a_handed_out_port_is_free_and_bindable() -> None:
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, port))


_PICKER = """
import json, sys
from pathlib import Path
from prefect_agentenv.runtime.launch import ports
ports.shared_registry = lambda: Path(sys.argv[1])
sys.stdin.readline()  # start together
print(json.dumps([ports.free_port() for _ in range(int(sys.argv[2]))]))
"""


def test_processes_of_one_user_never_share_a_port(private_registry: Path) -> None:
    pickers = [subprocess.Popen([sys.executable, "-c", _PICKER, str(private_registry), "600"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        for picker in pickers:
            assert picker.stdin is not None
            picker.stdin.write("go\n")
            picker.stdin.flush()
        handed = [port for picker in pickers for port in json.loads(picker.communicate(timeout=120)[0])]
    finally:
        for picker in pickers:
            if picker.poll() is None:
                picker.kill()
                picker.wait()
    assert len(handed) == 1200
    assert len(set(handed)) == len(handed)


def test_ports_are_remembered_only_for_the_window(private_registry: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = [free_port() for _ in range(20)]
    assert {f"{LOOPBACK}:{port}" for port in first} <= set(json.loads(private_registry.read_text()))
    monkeypatch.setattr(ports, "HANDED_OUT_SECONDS", 0.0)
    last = free_port()
    assert list(json.loads(private_registry.read_text())) == [f"{LOOPBACK}:{last}"]  # the older ones let go
    assert list(ports._handed_out) == [f"{LOOPBACK}:{last}"]


def test_a_registry_that_cannot_be_used_leaves_this_processs_memory(private_registry: Path) -> None:
    private_registry.write_text("not json")  # a torn file is started again
    assert free_port() > 0
    assert len(json.loads(private_registry.read_text())) == 1
    private_registry.unlink()
    private_registry.symlink_to(private_registry.parent / "elsewhere.json")  # never followed
    handed = [free_port() for _ in range(200)]
    assert len(set(handed)) == len(handed)
    assert not (private_registry.parent / "elsewhere.json").exists()


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX file owners")
def test_the_shared_registry_is_private_to_its_user(private_registry: Path) -> None:
    free_port()
    assert private_registry.stat().st_mode & 0o777 == 0o600
