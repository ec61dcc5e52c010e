"""Absorbing a provider's rate limits and outages: a bound on calls in flight per upstream, and retries.

A call is sent again after a 429, a 5xx that means "not now" (500, 502, 503, 504, Anthropic's 529
overloaded) or no answer at all, with exponential backoff and the provider's ``Retry-After``
(seconds or an HTTP date; OpenAI's ``retry-after-ms`` too) honoured. Only before the client got
a byte: once an answer is relayed it is the client's. When the retries or the time allowed are
spent, the last answer is relayed as it is (or a 502 when there was none) and the call is
classified as infrastructure, never as the agent's doing.
"""

from __future__ import annotations

import random
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import anyio
import httpx

from prefect_agentenv.gateway.config import RetryPolicy, Upstream
from prefect_agentenv.gateway.ledger import Failure

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504, 529})


def failure_of(status: int) -> Failure | None:
    """How an upstream's answer with ``status`` is classified: a provider's rate limit or outage is
    infrastructure, any other 4xx the request's own fault."""
    if status in RETRYABLE_STATUSES or status >= 500:
        return "infrastructure"
    return "request" if status >= 400 else None


def retry_after_seconds(headers: httpx.Headers, now: datetime | None = None) -> float | None:
    """The wait the provider asked for: ``retry-after-ms``, else ``Retry-After`` in seconds or as an HTTP date."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(float(millis) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)


def backoff_seconds(policy: RetryPolicy, retry: int) -> float:
    """The wait before retry number ``retry`` (0-based): doubling from the initial wait, capped, with jitter
    so that many clients limited together do not come back together."""
    ceiling = min(policy.initial_backoff_seconds * 2 ** retry, policy.max_backoff_seconds)
    return ceiling * random.uniform(0.5, 1.0)


WINDOW_SECONDS = 60.0
"""The window ``requests_per_minute`` and ``tokens_per_minute`` count over."""


class Slots:
    """The calls in flight to each upstream with a ``max_concurrency``, and the waiting for a free one;
    the calls sent and the tokens spent in the last minute of each upstream with a per-minute quota,
    and the waiting for room in it. A provider's quota is met here before its 429s are."""

    def __init__(self) -> None:
        self._limits: dict[Upstream, anyio.Semaphore] = {}
        self._sent: dict[Upstream, deque[float]] = defaultdict(deque)
        self._spent: dict[Upstream, deque[tuple[float, int]]] = defaultdict(deque)

    def __repr__(self) -> str:
        return f"Slots({len(self._limits)} bounded upstreams)"

    def count(self, upstream: Upstream | None, tokens: int) -> None:
        """An ended call's tokens, against its upstream's ``tokens_per_minute``."""
        if upstream is not None and upstream.tokens_per_minute is not None and tokens:
            self._spent[upstream].append((time.monotonic(), tokens))

    async def acquire(self, upstream: Upstream) -> Callable[[], None]:
        """Wait for room in ``upstream``'s minute and for one of its slots; the function that frees the
        slot (call it once)."""
        await self._pace(upstream)
        if upstream.max_concurrency is None:
            return _nothing
        semaphore = self._limits.get(upstream)
        if semaphore is None:
            semaphore = self._limits[upstream] = anyio.Semaphore(upstream.max_concurrency)
        await semaphore.acquire()
        return semaphore.release


    async def _pace(self, upstream: Upstream) -> None:
        """Wait until a call fits in the upstream's per-minute quotas, then count it as sent."""
        if upstream.requests_per_minute is None and upstream.tokens_per_minute is None:
            return
        while (wait := self._wait(upstream, time.monotonic())) > 0:
            await anyio.sleep(wait)
        self._sent[upstream].append(time.monotonic())

    def _wait(self, upstream: Upstream, now: float) -> float:
        """How long until the minute has room for one more call (0: it has)."""
        sent, spent = self._sent[upstream], self._spent[upstream]
        while sent and sent[0] <= now - WINDOW_SECONDS:
            sent.popleft()
        while spent and spent[0][0] <= now - WINDOW_SECONDS:
            spent.popleft()
        wait = 0.0
        if upstream.requests_per_minute is not None and len(sent) >= upstream.requests_per_minute:
            wait = sent[len(sent) - upstream.requests_per_minute] + WINDOW_SECONDS - now
        if upstream.tokens_per_minute is not None and sum(t for _, t in spent) >= upstream.tokens_per_minute:
            wait = max(wait, spent[0][0] + WINDOW_SECONDS - now)
        return wait


def _nothing() -> None:
    return None


@dataclass
class Sent:
    """The upstream's answer to a call (its headers read, its body not yet), or the error of the last try."""

    response: httpx.Response | None
    error: httpx.HTTPError | None
    retries: int
    release: Callable[[], None]
    """Frees the upstream's slot: when the answer has been relayed (already called when there is none)."""


async def send(http: httpx.AsyncClient, upstream: Upstream, build: Callable[[], httpx.Request],
               slots: Slots) -> Sent:
    """Send a call, retrying the provider's rate limits and outages as ``upstream.retry`` allows."""
    policy, waited, retries = upstream.retry, 0.0, 0
    while True:
        release = await slots.acquire(upstream)
        response: httpx.Response | None = None
        error: httpx.HTTPError | None = None
        try:
            response = await http.send(build(), stream=True)
        except httpx.HTTPError as exc:
            error = exc
        except BaseException:
            release()  # cancelled (the gateway is stopping): the slot must not stay taken
            raise
        if response is not None and response.status_code not in RETRYABLE_STATUSES:
            return Sent(response, None, retries, release)
        wait = _next_wait(policy, retries, waited, response)
        if wait is None:
            if response is None:
                release()
            return Sent(response, error, retries, release)
        if response is not None:
            await response.aclose()
        release()
        started = time.monotonic()
        await anyio.sleep(wait)
        waited += time.monotonic() - started
        retries += 1


def _next_wait(policy: RetryPolicy, retries: int, waited: float, response: httpx.Response | None) -> float | None:
    """How long to wait before trying again; None when the policy's retries or time are spent."""
    if retries >= policy.attempts:
        return None
    asked = retry_after_seconds(response.headers) if response is not None else None
    wait = asked if asked is not None else backoff_seconds(policy, retries)
    return None if waited + wait > policy.max_seconds else wait
