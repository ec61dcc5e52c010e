"""The two Variables of a running benchmark, read and written through Prefect's API.

The benchmark's dispatcher creates both when the run starts, reads the control Variable about
once a second, writes the status Variable when something changed (an operator's change at once,
the counts at most every few seconds), and when the run ends deletes
the control Variable and marks the status one finished (its record stays in the control log, the
summary and the flow run's artifact). The CLI
finds a run by id, or by slug among the runs in progress, and appends its changes.
"""

from __future__ import annotations

import getpass
import socket
import uuid
from typing import TYPE_CHECKING, Any

from prefect.client.orchestration import get_client
from pydantic import ValidationError

from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.flows.control.state import ControlState, RunStatus, control_variable, status_variable

if TYPE_CHECKING:
    from prefect.client.orchestration import PrefectClient

__all__ = ["ControlChannel", "RunNotFoundError", "operator", "new_stamp"]


class RunNotFoundError(ConfigurationError):
    """No benchmark run in progress answers to the id or slug given (or several do)."""


def operator() -> str:
    """Who is making a change from this process: ``user@host``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def new_stamp() -> str:
    return uuid.uuid4().hex[:12]


def _tags(slug: str) -> list[str]:
    return ["agentenv-control", f"benchmark:{slug}"]


class ControlChannel:
    """A run's control and status Variables, through one Prefect client."""

    def __init__(self, client: PrefectClient) -> None:
        self.client = client

    async def read_control(self, run_id: str) -> tuple[ControlState | None, str | None]:
        """The control Variable's value, or ``None`` with why it could not be read (absent, invalid)."""
        variable = await self.client.read_variable_by_name(control_variable(run_id))
        if variable is None:
            return None, f"the control Variable {control_variable(run_id)} does not exist"
        try:
            return ControlState.model_validate(variable.value), None
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors())
            return None, f"the control Variable {control_variable(run_id)} is not valid: {problems}"

    async def write_control(self, state: ControlState) -> None:
        await self._set(control_variable(state.run_id), state.model_dump(mode="json", exclude_defaults=False),
                        state.slug)

    async def read_status(self, run_id: str) -> RunStatus | None:
        variable = await self.client.read_variable_by_name(status_variable(run_id))
        if variable is None:
            return None
        try:
            return RunStatus.model_validate(variable.value)
        except ValidationError:
            return None

    async def write_status(self, status: RunStatus) -> None:
        await self._set(status_variable(status.run_id), status.model_dump(mode="json"), status.slug)

    async def delete_control(self, run_id: str) -> None:
        """Delete the run's control Variable (the run ended: its record is in its results)."""
        await self.client.delete_variable_by_name(control_variable(run_id))

    async def forget_finished(self, slug: str) -> None:
        """Delete the status Variables of the benchmark's finished runs (one is kept per benchmark at most)."""
        for status in await self._statuses(slug):
            if status.state == "finished":
                await self.client.delete_variable_by_name(status_variable(status.run_id))

    async def _set(self, name: str, value: dict[str, Any], slug: str) -> None:
        """Update the Variable, or create it when there is none (one request in the usual case)."""
        import httpx
        from prefect.client.schemas.actions import VariableCreate, VariableUpdate

        try:
            await self.client.update_variable(VariableUpdate(name=name, value=value))
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code != 404:
                raise
            await self.client.create_variable(VariableCreate(name=name, value=value, tags=_tags(slug)))

    async def runs_in_progress(self, slug: str | None = None) -> list[RunStatus]:
        """The status of every benchmark run in progress (of ``slug`` only, when given)."""
        return [status for status in await self._statuses(slug)
                if status.state == "running" and await self._flow_run_live(status.flow_run_id)]

    async def _statuses(self, slug: str | None) -> list[RunStatus]:
        """Every status Variable (of ``slug``'s runs, when given)."""
        tags = _tags(slug) if slug else ["agentenv-control"]
        response = await self.client.request("POST", "/variables/filter",
                                             json={"variables": {"tags": {"all_": tags}}, "limit": 200})
        found: list[RunStatus] = []
        for item in response.json():
            if str(item.get("name", "")).startswith("agentenv-status-"):
                try:
                    found.append(RunStatus.model_validate(item.get("value")))
                except ValidationError:
                    continue
        return found

    async def _flow_run_live(self, flow_run_id: str | None) -> bool:
        """Whether the run's flow run is still going (a killed process leaves its Variables behind)."""
        if flow_run_id is None:
            return True
        try:
            flow_run = await self.client.read_flow_run(uuid.UUID(flow_run_id))
        except Exception:  # a flow run this server does not know: not one in progress here
            return False
        return flow_run.state is None or not flow_run.state.is_final()

    async def find(self, run: str) -> RunStatus:
        """The run in progress named by ``run``: its run id, or the slug of its one run in progress.

        Raises:
            RunNotFoundError: none is, or the slug has several (each listed by id).
        """
        status = await self.read_status(run)
        if status is not None:
            return status
        runs = await self.runs_in_progress(run)
        if len(runs) == 1:
            return runs[0]
        if runs:
            ids = ", ".join(r.run_id for r in runs)
            raise RunNotFoundError(f"{len(runs)} runs of benchmark {run!r} are in progress ({ids}): name one by its run id")
        others = await self.runs_in_progress()
        hint = ("; in progress: " + ", ".join(f"{r.slug} (run {r.run_id})" for r in others)) if others else (
            "; no benchmark run is in progress on this Prefect server")
        raise RunNotFoundError(f"no benchmark run in progress has the id or slug {run!r}{hint}")


def open_channel() -> tuple[ControlChannel, PrefectClient]:
    """A channel on a new client (the caller enters the client's ``async with``)."""
    client = get_client()
    return ControlChannel(client), client
