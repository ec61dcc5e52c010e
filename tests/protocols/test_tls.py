"""The package's HTTP clients share one TLS context per process, and it still verifies peers."""

from __future__ import annotations

import ssl

import httpx

from prefect_agentenv.protocols.a2a import A2AClient
from prefect_agentenv.protocols.tls import ssl_context


def test_one_verifying_context_per_trust_env_setting_shared_by_the_clients() -> None:
    shared = ssl_context()
    assert ssl_context() is shared and ssl_context(trust_env=False) is ssl_context(trust_env=False)
    assert shared.verify_mode == ssl.CERT_REQUIRED and shared.check_hostname
    assert shared.cert_store_stats()["x509_ca"] > 0  # the CA bundle is loaded: https peers still verify
    client = A2AClient("http://127.0.0.1:9")
    pool = client.http._transport._pool  # httpx keeps the context on its connection pool
    assert isinstance(client.http, httpx.AsyncClient) and pool._ssl_context is shared
