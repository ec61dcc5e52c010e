"""Warm pools: env and agent processes kept alive across the task runs of one benchmark.

Starting an env or an agent costs its interpreter and imports (about a second each on a small
machine), and a benchmark pays it for every task run. With ``pool: true`` the benchmark keeps
the instances it started and hands an idle one to the next task run that deploys the same thing:

* an **env** is reset through its data plane (``data/reset``) before the task run sees it. For
  the reference envs that also clears triggers and the virtual clock; an env whose reset
  leaves other state behind leaks it, so pool only envs whose reset means "fresh instance";
* an **agent** gets its sandbox folder emptied and rebuilt (the same path, since the process
  runs in it), is configured again by the task run (MCP servers, agent config, skills) and
  starts a new A2A context with every prompt. Agents are pooled only together with the envs
  they are given (an agent cannot be told to forget an MCP server) and only when their model
  endpoint outlives the task run (not a per-run mock model);
* an instance that stopped answering is replaced, not handed out;
* the blocks an env or agent id resolves to (and the model endpoint) are looked up once per
  benchmark run, pooled or not (:func:`~prefect_agentenv.runtime.run.lookups_of`): a block edited
  while a benchmark runs applies to its next run, as the instances started from it do.

Instances are keyed by what would make them differ (id, launch spec, environment given to the
process); the pool stops everything when the benchmark ends. Steps find the pool with
:func:`active_pool`; the benchmark flow binds it with :func:`bind_pool`.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from prefect_agentenv.exceptions import DeployError
from prefect_agentenv.runtime.launch import Instance, Launcher, LaunchSpec, wait_until_ready
from prefect_agentenv.runtime.sandbox import Sandbox

logger = logging.getLogger("prefect_agentenv.runtime.pool")

_LIVENESS_TIMEOUT = 2.0


@dataclass
class Warm:
    """A pooled instance, its launcher and (for an agent) the sandbox it runs in."""

    instance: Instance
    launcher: Launcher
    spec: LaunchSpec
    sandbox: Sandbox | None = None
    uses: int = 0
    """How many task runs were handed this instance."""


@dataclass
class WarmPool:
    """Instances shared by the task runs of one benchmark run (see the module docstring).

    Args:
        workdir: where pooled agents' sandboxes and the instances' logs live.
    """

    workdir: Path
    _idle: dict[str, list[Warm]] = field(default_factory=dict)
    _all: list[Warm] = field(default_factory=list)

    @staticmethod
    def key(kind: str, name: str, spec: LaunchSpec, extra_env: dict[str, str] | None = None) -> str:
        """What must match for an idle instance to be handed out again."""
        secret = {k: v.get_secret_value() for k, v in spec.secret_env.items()}
        blob = json.dumps([spec.model_dump(mode="json", exclude={"secret_env"}), secret, extra_env or {}],
                          sort_keys=True, default=str)
        return f"{kind}:{name}:{hashlib.sha256(blob.encode()).hexdigest()[:16]}"

    async def acquire(self, key: str, start: Callable[[], Awaitable[Warm]], *, client: httpx.AsyncClient) -> Warm:
        """An idle live instance for ``key``, else a new one from ``start``."""
        idle = self._idle.get(key, [])
        while idle:
            warm = idle.pop()
            if await self._alive(warm, client):
                warm.uses += 1
                return warm
            logger.warning("pooled %s stopped answering; starting a new one", warm.instance.name)
            await self._stop(warm)
        warm = await start()
        warm.uses = 1
        self._all.append(warm)
        return warm

    def release(self, key: str, warm: Warm) -> None:
        """Hand an instance back after its task run; the next one resets it before use."""
        if warm in self._all:
            self._idle.setdefault(key, []).append(warm)

    async def close(self) -> None:
        """Stop every instance the pool started (all at once) and remove its sandboxes."""
        everything, self._all, self._idle = self._all, [], {}
        await asyncio.gather(*(self._stop(w) for w in everything))

    @property
    def size(self) -> int:
        """How many instances the pool runs."""
        return len(self._all)

    async def _alive(self, warm: Warm, client: httpx.AsyncClient) -> bool:
        try:
            await wait_until_ready(warm.spec, warm.instance.base_url, name=repr(warm.instance.name), client=client,
                                   timeout=_LIVENESS_TIMEOUT)
        except DeployError:
            return False
        return True

    async def _stop(self, warm: Warm) -> None:
        if warm in self._all:
            self._all.remove(warm)
        try:
            await warm.launcher.stop(warm.instance)
        except Exception:  # best effort: one failure must not keep the others running
            logger.exception("could not stop pooled %s", warm.instance.name)
        if warm.sandbox is not None:
            warm.sandbox.remove()


_active: contextvars.ContextVar[WarmPool | None] = contextvars.ContextVar("prefect_agentenv_pool", default=None)


def active_pool() -> WarmPool | None:
    """The pool of the benchmark run this code runs in, if it has one."""
    return _active.get()


def bind_pool(pool: WarmPool | None) -> contextvars.Token[WarmPool | None]:
    """Make ``pool`` the active pool for this task and the tasks (and subflows) it starts."""
    return _active.set(pool)


def unbind_pool(token: contextvars.Token[WarmPool | None]) -> None:
    _active.reset(token)
