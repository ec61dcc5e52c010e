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
  they are given (an agent cannot be told to forget an MCP server) and with the model server
  they are given;
* the built-in **mock model** (an in-process server) is held by one task run at a time, its
  script queue and request log cleared when handed back; one still answering a completion
  then (a scripted delay) is stopped instead. So an agent started with a mock model's address
  is pooled along with it: the next task run that takes the same mock model takes the agent
  too;
* an agent that may still be working on a prompt of the task run that ended (the run was cut
  or cancelled while a prompt ran, or the agent never confirmed the cancel of a timed-out one)
  is stopped, not handed back;
* an instance that stopped answering is replaced, not handed out;
* the blocks an env or agent id resolves to (and the model endpoint) are looked up once per
  benchmark run, pooled or not (:func:`~prefect_agentenv.runtime.resources.run.lookups_of`): a block edited
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
from typing import Protocol, TypeVar

import httpx

from prefect_agentenv.exceptions import DeployError
from prefect_agentenv.runtime.launch.base import Instance, Launcher, LaunchSpec, wait_until_ready
from prefect_agentenv.runtime.resources.sandbox import Sandbox

logger = logging.getLogger("prefect_agentenv.runtime.resources.pool")

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


class SharedModel(Protocol):
    """A model server a pool hands from one task run to the next (the in-process mock model)."""

    base_url: str

    @property
    def busy(self) -> bool:
        """A request is being answered."""

    def reset(self) -> None:
        """Forget everything a task run left in it."""

    async def stop(self) -> None:
        """Close it."""


_Shared = TypeVar("_Shared", bound=SharedModel)


@dataclass
class WarmPool:
    """Instances shared by the task runs of one benchmark run (see the module docstring).

    Args:
        workdir: where pooled agents' sandboxes and the instances' logs live.
    """

    workdir: Path
    _idle: dict[str, list[Warm]] = field(default_factory=dict)
    _all: list[Warm] = field(default_factory=list)
    _idle_models: list[SharedModel] = field(default_factory=list)
    _models: list[SharedModel] = field(default_factory=list)
    _idle_gateways: list[SharedModel] = field(default_factory=list)
    _gateways: list[SharedModel] = field(default_factory=list)

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

    async def discard(self, warm: Warm) -> None:
        """Stop an instance instead of taking it back (an agent that may still be working)."""
        await self._stop(warm)

    async def acquire_model(self, start: Callable[[], Awaitable[SharedModel]]) -> SharedModel:
        """An idle model server of the pool, else a new one from ``start``; the task run holds it alone."""
        if self._idle_models:
            return self._idle_models.pop()
        model = await start()
        self._models.append(model)
        return model

    async def release_model(self, model: SharedModel) -> None:
        """Take a model server back, cleared for the next task run; stop it if it is still answering."""
        if model not in self._models:
            return
        if model.busy:
            logger.info("the mock model at %s was still answering when its task run ended; stopped, not pooled",
                        model.base_url)
            self._models.remove(model)
            await model.stop()
            return
        model.reset()
        self._idle_models.append(model)

    async def acquire_gateway(self, start: Callable[[], Awaitable[_Shared]]) -> _Shared:
        """An idle model gateway of the pool, else a new one from ``start``; the task run holds it alone."""
        if self._idle_gateways:
            return self._idle_gateways.pop()  # type: ignore[return-value]
        gateway = await start()
        self._gateways.append(gateway)
        return gateway

    async def release_gateway(self, gateway: SharedModel) -> None:
        """Take a gateway back, its last holder's calls forgotten (its report kept them)."""
        if gateway in self._gateways:
            gateway.reset()
            self._idle_gateways.append(gateway)

    async def close(self) -> None:
        """Stop every instance, model server and gateway the pool started (all at once) and remove its sandboxes."""
        everything, self._all, self._idle = self._all, [], {}
        models, self._models, self._idle_models = self._models, [], []
        gateways, self._gateways, self._idle_gateways = self._gateways, [], []
        await asyncio.gather(*(self._stop(w) for w in everything), *(self._stop_model(m) for m in models))
        # Last: the agents just stopped were the gateways' callers.
        await asyncio.gather(*(self._stop_model(g) for g in gateways))

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

    async def _stop_model(self, model: SharedModel) -> None:
        try:
            await model.stop()
        except Exception:  # best effort, as for the processes
            logger.exception("could not stop the pooled model server at %s", model.base_url)

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
