"""Transient and lasting faults of the peers: an unreachable Prefect API, a silent S3 endpoint,
a silent HTTP peer. Each fails fast with one sentence, within its documented timeouts."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from prefect_agentenv.artifacts.s3 import S3ArtifactBackend
from prefect_agentenv.exceptions import ArtifactError
from prefect_agentenv.settings import get_settings

from .harness import start_cli


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


def test_an_unreachable_prefect_api_is_one_sentence_and_a_report(agentenv_home: Path, tmp_path: Path) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    task = tmp_path / "t.json"
    task.write_text(json.dumps([{"id": "n", "type": "test_noop"}]))
    run = start_cli(["run", str(task)], home=agentenv_home, api_url=f"http://127.0.0.1:{port}/api",
                    report=tmp_path / "r.json")
    code, _, err = run.finish()
    assert code == 1
    assert "Traceback" not in err, err
    assert [line for line in err.splitlines() if "is unreachable" in line]
    report = json.loads(run.report.read_text())
    assert report["status"] == "failed" and "unreachable" in report["error"]


def test_a_silent_s3_endpoint_fails_within_its_timeouts(silent_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_AGENTENV_S3_READ_TIMEOUT_SECONDS", "1")
    monkeypatch.setenv("PREFECT_AGENTENV_S3_CONNECT_TIMEOUT_SECONDS", "1")
    monkeypatch.setenv("PREFECT_AGENTENV_S3_MAX_ATTEMPTS", "1")
    get_settings.cache_clear()
    try:
        store = S3ArtifactBackend("bucket", endpoint_url=f"http://127.0.0.1:{silent_port}",
                                  aws_access_key_id="test-key-id", aws_secret_access_key="test-secret-key",
                                  region_name="us-east-1")
        started = time.monotonic()
        with pytest.raises(ArtifactError):
            store.put_object("run/x.json", "{}")
        assert time.monotonic() - started < 10
    finally:
        get_settings.cache_clear()
