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
* ``server`` — ``serve_gateway``: the gateway on a free loopback port, and its handle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefect_agentenv.lazy import lazy_names

if TYPE_CHECKING:
    from prefect_agentenv.gateway.config import GatewayConfig, Upstream, Wire
    from prefect_agentenv.gateway.ledger import CallRecord, RunTotals
    from prefect_agentenv.gateway.server import ModelGateway, serve_gateway

_NAMES = {"GatewayConfig": "prefect_agentenv.gateway.config", "Upstream": "prefect_agentenv.gateway.config",
          "Wire": "prefect_agentenv.gateway.config", "CallRecord": "prefect_agentenv.gateway.ledger",
          "RunTotals": "prefect_agentenv.gateway.ledger", "ModelGateway": "prefect_agentenv.gateway.server",
          "serve_gateway": "prefect_agentenv.gateway.server"}
__getattr__ = lazy_names(__name__, _NAMES, globals())
"""The server (Starlette, uvicorn) loads on first use: a report that holds call records does not start it."""

__all__ = ["CallRecord", "GatewayConfig", "ModelGateway", "RunTotals", "Upstream", "Wire", "serve_gateway"]
