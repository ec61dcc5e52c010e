"""A model gateway a benchmark's warm pool hands from task run to task run.

Here, beside the gateway, so that a run's services can name it in their types; the run's model door
(``run_services/model_door.py``) starts, pools and stops it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the gateway's server (Starlette, uvicorn) loads on use
    from prefect_agentenv.gateway.server import ModelGateway

__all__ = ["PooledGateway"]


@dataclass
class PooledGateway:
    """A gateway a warm pool hands from task run to task run, with the tokens it has issued."""

    gateway: ModelGateway
    stack: contextlib.AsyncExitStack
    base_url: str = ""
    tokens: dict[str, str] = field(default_factory=dict)
    """Role → the token issued for it (the same for every task run that holds this gateway)."""
    accounts: set[str] = field(default_factory=set)
    """Whom the holder's calls are counted against
    (see :func:`~prefect_agentenv.run_services.model_door.account_of`)."""
    holder: str | None = None
    """The run that holds it now."""

    @property
    def busy(self) -> bool:
        """Never held back: a call still streaming when its task run ends belongs to an agent that
        may still be working, which is stopped instead of pooled."""
        return False

    def reset(self) -> None:
        """Forget the last holder's calls and limits (its report kept them)."""
        for account in self.accounts:
            self.gateway.forget(account)
        self.accounts.clear()
        self.holder = None

    async def stop(self) -> None:
        await self.stack.aclose()
