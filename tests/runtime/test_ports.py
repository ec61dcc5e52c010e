"""Ports handed to launches: the kernel may pick a closed port again at once, so two launches in
parallel (a benchmark's task runs) could be given one port and one of them would talk to the other's
server. A port handed out is not handed out again for a while."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from prefect_agentenv.runtime import ports
from prefect_agentenv.runtime.ports import LOOPBACK, forget_handed_out, free_port


@pytest.fixture(autouse=True)
def _fresh_registry() -> Iterator[None]:
    forget_handed_out()
    yield
    forget_handed_out()


def test_the_kernel_alone_picks_a_closed_port_again() -> None:
    """Why the registry exists: thousands of bind-to-0 picks in a row repeat ports."""
    picks = [ports._kernel_pick(LOOPBACK) for _ in range(3000)]
    assert len(set(picks)) < len(picks)


def test_free_port_never_hands_out_a_port_twice_within_the_window() -> None:
    handed = [free_port() for _ in range(3000)]
    assert len(set(handed)) == len(handed)


def test_a_handed_out_port_is_free_and_bindable() -> None:
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, port))


def test_ports_are_remembered_only_for_the_window(monkeypatch: pytest.MonkeyPatch) -> None:
    first = [free_port() for _ in range(20)]
    assert set(first) <= {port for _, port in ports._handed_out}
    monkeypatch.setattr(ports, "HANDED_OUT_SECONDS", 0.0)
    last = free_port()
    assert [port for _, port in ports._handed_out] == [last]  # the older ones were let go
