"""The model gateway: one door through which agents, judges and user simulators reach models.

It runs in the runner, on loopback, and holds the providers' real keys; a caller holds a per-run
token instead. Every call is relayed byte for byte (streams chunk by chunk) and counted from the
upstream's own usage. See ``docs/models-and-keys.md``.

* ``config`` — the upstream of each wire (chat completions, Responses, Messages), its auth style
  and key, and the price table.
* ``tokens`` — per-run tokens: issued, looked up, revoked.
* ``proxy`` — the routes: token check, key swap, forwarding; ``errors`` — the gateway's own refusals.
* ``relay`` — one answer relayed as it arrives, metered, recorded when it ends.
* ``metering`` — model and tokens read from a whole answer or a stream's events.
* ``ledger`` — the call records and per-run totals.
* ``limits`` — per-run ``CallLimits`` and run-wide ``Budget``: what the next call is refused for.
* ``retries`` — per-upstream concurrency, and retries of the provider's 429s and 5xx.
* ``cassette`` — record a run's calls, replay them without a provider.
* ``server`` — ``serve_gateway``: the gateway on a free loopback port, and its handle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefect_agentenv.lazy import lazy_names

if TYPE_CHECKING:
    from prefect_agentenv.gateway.cassette import Cassette, CassetteEntry
    from prefect_agentenv.gateway.config import GatewayConfig, RetryPolicy, Upstream, Wire
    from prefect_agentenv.gateway.ledger import CallRecord, Failure, LimitName, RunTotals
    from prefect_agentenv.gateway.limits import Budget, CallLimits, Spent
    from prefect_agentenv.gateway.server import ModelGateway, serve_gateway

_NAMES = {
    "Cassette": "prefect_agentenv.gateway.cassette",
    "CassetteEntry": "prefect_agentenv.gateway.cassette",
    "GatewayConfig": "prefect_agentenv.gateway.config",
    "RetryPolicy": "prefect_agentenv.gateway.config",
    "Upstream": "prefect_agentenv.gateway.config",
    "Wire": "prefect_agentenv.gateway.config",
    "CallRecord": "prefect_agentenv.gateway.ledger",
    "Failure": "prefect_agentenv.gateway.ledger",
    "LimitName": "prefect_agentenv.gateway.ledger",
    "RunTotals": "prefect_agentenv.gateway.ledger",
    "Budget": "prefect_agentenv.gateway.limits",
    "CallLimits": "prefect_agentenv.gateway.limits",
    "Spent": "prefect_agentenv.gateway.limits",
    "ModelGateway": "prefect_agentenv.gateway.server",
    "serve_gateway": "prefect_agentenv.gateway.server",
}
__getattr__ = lazy_names(__name__, _NAMES, globals())
"""The server (Starlette, uvicorn) loads on first use: a report that holds call records does not start it."""

__all__ = ["Budget", "CallLimits", "CallRecord", "Cassette", "CassetteEntry", "Failure", "GatewayConfig",
           "LimitName", "ModelGateway", "RetryPolicy", "RunTotals", "Spent", "Upstream", "Wire", "serve_gateway"]
