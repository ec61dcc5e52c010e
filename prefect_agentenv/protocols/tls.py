"""One TLS context per process for every HTTP client the package builds.

An ``httpx`` client made without one builds its own, loading the CA bundle again: ~25 ms of CPU
per client. A run makes a client for its wire calls, each agent's A2A client and each MCP
session, and a benchmark makes them for every task run; an ``SSLContext`` is made to be shared.
"""

from __future__ import annotations

import functools
import ssl


@functools.cache
def ssl_context(*, trust_env: bool = True) -> ssl.SSLContext:
    """The context ``httpx`` would build by default (``trust_env`` honours ``SSL_CERT_FILE`` and
    ``SSL_CERT_DIR``, as the client's own ``trust_env`` does); built once per process."""
    import httpx

    return httpx.create_ssl_context(trust_env=trust_env)
