"""Per-run tokens: what an agent, judge or user simulator holds instead of a provider's key.

A token names a run and a role, so every call it makes is counted against them; revoking it (or
every token of a run, at the run's end) shuts that door without touching the real keys.
"""

from __future__ import annotations

import secrets

from pydantic import BaseModel, ConfigDict

from prefect_agentenv.gateway.config import GatewayConfig

TOKEN_PREFIX = "agentenv-gw-"
"""Marks a gateway token in a config file or an environment (it is not a provider key)."""


class Grant(BaseModel):
    """Whom a token was issued to."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str
    role: str
    upstreams: GatewayConfig | None = None
    """Where this token's calls go (each role may resolve to its own endpoint); None: the gateway's own."""


class TokenRegistry:
    """Issued tokens and whom each was issued to; a token not here (never issued, or revoked) is refused."""

    def __init__(self) -> None:
        self._grants: dict[str, Grant] = {}

    def __repr__(self) -> str:
        return f"TokenRegistry({len(self._grants)} live tokens)"

    def issue(self, run_id: str, role: str, upstreams: GatewayConfig | None = None) -> str:
        """A fresh token for ``role`` in ``run_id`` (unguessable: 256 random bits), its calls sent to
        ``upstreams`` (the gateway's own when None)."""
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        self._grants[token] = Grant(run_id=run_id, role=role, upstreams=upstreams)
        return token

    def rebind(self, token: str, run_id: str, upstreams: GatewayConfig | None) -> None:
        """Count ``token``'s calls against ``run_id`` from now on, sent to ``upstreams``: a pooled
        agent keeps its token when it is handed to the next task run."""
        grant = self._grants[token]
        self._grants[token] = grant.model_copy(update={"run_id": run_id, "upstreams": upstreams})

    def revoke(self, token: str) -> bool:
        """Refuse ``token`` from now on; False when it was not live."""
        return self._grants.pop(token, None) is not None

    def revoke_run(self, run_id: str) -> int:
        """Refuse every token of ``run_id`` from now on; how many there were."""
        dead = [token for token, grant in self._grants.items() if grant.run_id == run_id]
        for token in dead:
            del self._grants[token]
        return len(dead)

    def grant(self, token: str) -> Grant | None:
        """Whom ``token`` was issued to, or None when it is not live."""
        return self._grants.get(token)
