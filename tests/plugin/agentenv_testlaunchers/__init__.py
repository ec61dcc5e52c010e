"""A launcher kind from a plugin, used only by the tests (the worked launcher of docs/launchers.md).

``test-process`` starts servers exactly as the built-in process launcher does, and leaves two
traces that it was the one used: every server it starts has ``AGENTENV_TEST_LAUNCHER`` in its
environment, and each start, stop and cleanup is a line of ``test-process.jsonl`` in the folder
it was given. Like any launcher plugin, it takes all it needs from ``prefect_agentenv.runtime.launch.registry``.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from prefect_agentenv.runtime.launch.registry import Instance, LaunchSpec, ProcessLauncher

KIND = "test-process"
MARKER = "AGENTENV_TEST_LAUNCHER"
LEDGER = "test-process.jsonl"


class LabelledProcessLauncher:
    """Starts local processes through the process launcher, labelled and recorded as its own."""

    kind = KIND

    def __init__(self, *, run_id: str | None = None, http_client: httpx.AsyncClient | None = None) -> None:
        self.run_id = run_id
        self._process = ProcessLauncher(run_id=run_id, http_client=http_client)
        self._ledgers: dict[str, Path] = {}

    async def start(self, spec: LaunchSpec, *, name: str, workdir: Path, cwd: Path | None = None,
                    extra_env: dict[str, str] | None = None) -> Instance:
        """Start and wait for readiness as the process launcher does; it also stops a failed start."""
        env = {**(extra_env or {}), MARKER: self.kind}
        started = await self._process.start(spec, name=name, workdir=workdir, cwd=cwd, extra_env=env)
        instance = started.model_copy(update={"kind": self.kind})
        self._ledgers[instance.instance_id] = ledger = Path(workdir) / LEDGER
        _record(ledger, "start", instance)
        return instance

    async def stop(self, instance: Instance) -> None:
        """Stop it (idempotent: an instance already stopped is not recorded twice)."""
        try:
            await self._process.stop(instance)
        finally:
            if (ledger := self._ledgers.pop(instance.instance_id, None)) is not None:
                _record(ledger, "stop", instance)

    async def cleanup(self, run_id: str, interrupted: bool) -> None:
        """Stop whatever the run left running; the process launcher never raises here."""
        if self.run_id is not None and run_id != self.run_id:
            return
        left = list(self._ledgers.items())
        self._ledgers.clear()
        await self._process.cleanup(run_id, interrupted)
        for instance_id, ledger in left:
            _record(ledger, "cleanup", instance_id=instance_id)


def _record(ledger: Path, event: str, instance: Instance | None = None, **fields: object) -> None:
    """Append one event to the ledger (the tests read it to see what this launcher did)."""
    if instance is not None:
        fields.update(instance_id=instance.instance_id, name=instance.name, pid=instance.pid)
    ledger.parent.mkdir(parents=True, exist_ok=True)
    with ledger.open("a") as out:
        out.write(json.dumps({"event": event, **fields}) + "\n")
