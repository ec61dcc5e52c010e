"""Global concurrency limits per env and agent id: ``env:<env_id>`` and ``agent:<a2a_agent_id>``.

A fleet may run many task runs at once, but an env backed by a sandbox account, or an agent with a
rate-limited API key, may only have so many live instances. Create a Prefect global concurrency
limit named after it (``prefect gcl create env:crm --limit 2``) and every deploy of that id holds
one slot for the instance's whole life: taken before it starts, given back after its teardown
stopped it. Without a limit of that name nothing waits.

Slots are held with a lease (``PREFECT_AGENTENV_CONCURRENCY_LEASE_SECONDS``), so a run killed
with SIGKILL cannot keep its slots forever.

A slot is only asked for when a limit of that name exists: the names of the API's global
concurrency limits are read once and reused for :data:`LIMITS_TTL_SECONDS` (the same listing tells
``flows/adapters/task_tags.py`` which tags to put on task runs). Asking for a slot is a write on the API's
database; on a busy SQLite-backed server it was answered 503 and cost a 2 s client back-off before
deploys that no limit governs. A limit created while a process runs applies to its deploys that
start up to :data:`LIMITS_TTL_SECONDS` later.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Literal
from uuid import UUID

from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.runtime.resources.run import RunResources

logger = logging.getLogger("prefect_agentenv.concurrency")

_LOCKED = 423
"""The API's answer while every slot of the limit is taken; it says when to ask again."""
LIMITS_TTL_SECONDS = 30.0
"""How long the listing of limit names is reused: a limit created meanwhile applies to deploys and
steps that start after that."""
_PAGE = 200

_limits: tuple[float, frozenset[str]] | None = None


class ApiUnreachable(Exception):
    """The Prefect API did not answer at all while its limits were read: no slot could be asked for
    either, and Prefect's own slot requests would retry for about a minute before failing."""


async def limit_names() -> frozenset[str] | None:
    """Names of the API's global concurrency limits; None when the API cannot say (no API, or an
    error it answered with). Raises :class:`ApiUnreachable` when nothing answers."""
    import httpx

    global _limits
    now = time.monotonic()
    if _limits is not None and now - _limits[0] < LIMITS_TTL_SECONDS:
        return _limits[1]
    from prefect.settings import PREFECT_CLIENT_MAX_RETRIES, temporary_settings

    try:
        try:
            # First without the client's retries: a client that has connected before retries a
            # refused connection with back-off for about a minute, and a step would wait all that time.
            with temporary_settings({PREFECT_CLIENT_MAX_RETRIES: 0}):
                names = await _read_limit_names()
        except httpx.HTTPStatusError:
            names = await _read_limit_names()  # a busy server answered: ask again with the client's retries
    except httpx.TransportError as exc:
        raise ApiUnreachable(f"{type(exc).__name__}: {exc or 'no answer'}") from exc
    except Exception as exc:  # unknown limits: ask for every slot rather than risk ignoring a limit
        logger.debug("could not read concurrency limits: %s", exc)
        return None
    _limits = (now, frozenset(names))
    return _limits[1]


async def _read_limit_names() -> set[str]:
    """Every global concurrency limit's name, page by page."""
    from prefect.client.orchestration import get_client

    names: set[str] = set()
    async with get_client() as client:
        offset = 0
        while True:
            page = await client.read_global_concurrency_limits(limit=_PAGE, offset=offset)
            names.update(limit.name for limit in page)
            if len(page) < _PAGE:
                return names
            offset += _PAGE


def forget_limit_names() -> None:
    """Read the limits again on next use (after creating or deleting one in this process)."""
    global _limits
    _limits = None


async def hold_slot(run: RunResources, kind: Literal["env", "agent"], ident: str, *, owner_step: str) -> None:
    """Wait for one slot of the limit ``<kind>:<ident>`` (if it exists) and give it back at teardown."""
    from prefect_agentenv.resolution.block_lookup import prefect_api_configured

    if not prefect_api_configured():
        return
    name = f"{kind}:{ident}"
    try:
        known = await limit_names()
    except ApiUnreachable as exc:
        logger.warning("the concurrency limit %s could not be held: the Prefect API is unreachable (%s)", name, exc)
        return
    if known is not None and name not in known:
        return
    lease = await _acquire(name)
    if lease is None:
        return

    async def release() -> None:
        from prefect.client.orchestration import get_client

        async with get_client() as client:
            await client.release_concurrency_slots_with_lease(lease)

    # Registered before the instance is started: teardown runs newest first, so the slot is given
    # back only after the instance is stopped.
    run.teardown.add(f"concurrency slot {name}", release, owner_step=owner_step, kind="slot")


async def _acquire(name: str) -> UUID | None:
    """The lease of one slot of ``name`` once one is free; None when no limit has that name."""
    import httpx

    # Prefect's client is imported on use: step modules are loaded by `validate`, which must stay light.
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.responses import ConcurrencyLimitWithLeaseResponse

    from prefect_agentenv.settings import get_settings

    lease_seconds = get_settings().concurrency_lease_seconds
    waited = False
    async with get_client() as client:
        while True:
            try:
                response = await client.increment_concurrency_slots_with_lease(
                    names=[name], slots=1, mode="concurrency", lease_duration=lease_seconds)
            except httpx.HTTPStatusError as exc:
                if exc.response.status_code != _LOCKED:
                    raise ConfigurationError(f"the concurrency limit {name!r} refused a slot: {exc}") from None
                if not waited:
                    logger.warning("waiting for a free slot of the concurrency limit %s", name)
                    waited = True
                await asyncio.sleep(min(30.0, float(exc.response.headers.get("Retry-After") or 1)))
                continue
            break
    result = ConcurrencyLimitWithLeaseResponse.model_validate(response.json())
    if not result.limits:
        return None
    return result.lease_id
