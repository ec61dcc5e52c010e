"""``env check`` / ``agent check``: deploy a registered peer, probe it, print what works and what it lacks.

A check is a two-step task run — deploy, then ``verify_env_card`` or ``verify_a2a_core_protocol``
— so it deploys and tears down exactly as a task does, and the probes are the steps' own.
Exit codes: 0 nothing failed (missing capabilities are not failures), 1 a probe or the deploy
failed, 2 the name is not registered.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Literal

import typer

from prefect_agentenv.documents import validate_data
from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.jsontypes import JsonArray, JsonObject

if TYPE_CHECKING:
    from prefect_agentenv.context import Confinement, Verification, VerificationRow
    from prefect_agentenv.results.task_report import TaskReport

_CHECK_STEP = "check"
_MARK = {"ok": "ok", "declared": "declared", "missing": "MISSING", "warning": "WARNING", "failed": "FAILED"}


def check_steps(noun: Literal["env", "agent"], name: str, *, prompt: str | None, startup_timeout: float | None,
                with_env: str | None = None) -> list[JsonObject]:
    """The task a check runs (a task document's steps, before validation); an agent checked ``with_env``
    is given that env first, as a task would."""
    timeout: JsonObject = {"startup_timeout_seconds": startup_timeout} if startup_timeout else {}
    if noun == "env":
        return [{"id": "deploy", "type": "deploy_env", "env_id": name, **timeout},
                {"id": _CHECK_STEP, "type": "verify_env_card", "env_id": name}]
    probe: JsonObject = {"prompt": prompt} if prompt else {}
    env: list[JsonObject] = [{"id": "env", "type": "deploy_env", "env_id": with_env}] if with_env else []
    return [*env,
            {"id": "deploy", "type": "deploy_agent", "a2a_agent_id": name, "agent_name": name,
             "env_ids": [with_env] if with_env else [], **timeout},
            {"id": _CHECK_STEP, "type": "verify_a2a_core_protocol", "agent_name": name, **probe}]


def run_check(noun: Literal["env", "agent"], name: str, *, prompt: str | None = None,
              startup_timeout: float | None = None, with_env: str | None = None, as_json: bool = False) -> int:
    """Deploy, probe, tear down; print the table (or JSON); return the exit code."""
    steps = check_steps(noun, name, prompt=prompt, startup_timeout=startup_timeout, with_env=with_env)
    result = validate_data(steps, default_id=f"{noun}-check-{name}")
    if not result.ok or result.document is None:
        raise ConfigurationError("; ".join(p.render() for p in result.problems))
    # Imported here so the other env/agent commands stay fast: the flow pulls in all of Prefect.
    from prefect_agentenv.flows.task_runner import run_task_document

    report = asyncio.run(run_task_document(result.document, execute_in_prefect=False, publish=False))
    verification = report.context.metadata.verifications.get(_CHECK_STEP)
    failed = report.status != "completed" or verification is None or verification.score != 1.0
    if as_json:
        typer.echo(json.dumps(_json_view(noun, name, report, verification), indent=2))
    else:
        _print_table(noun, name, report, verification)
    return 1 if failed else 0


def _json_view(noun: str, name: str, report: TaskReport, verification: Verification | None) -> JsonObject:
    extra = (verification.model_extra or {}) if verification is not None else {}
    rows: JsonArray = [{"check": r.id, "status": _status(r), "detail": r.justification if "justification" in
                        r.model_fields_set else ""} for r in (verification.results if verification is not None else [])]
    ok = report.status == "completed" and verification is not None and verification.score == 1.0
    confinement = _confinement(report, name)
    return {noun: name, "ok": ok, "url": extra.get("url"), "checks": rows, "card": extra.get("card"),
            "confinement": confinement.model_dump(mode="json") if confinement is not None else None,
            "not_sent": [r.model_dump(mode="json") for r in report.context.metadata.unsupported_agent_config],
            "error": report.error, "teardown_ok": all(t.ok for t in report.teardown)}


def _status(row: VerificationRow) -> str:
    """A probe row's status (``ok``, ``failed``, ``declared``, …): one of its extra keys."""
    return str((row.model_extra or {}).get("status", ""))


def _print_table(noun: str, name: str, report: TaskReport, verification: Verification | None) -> None:
    stopped = f"stopped ({'clean' if all(t.ok for t in report.teardown) else 'with errors'})"
    if verification is None:
        typer.echo(f"{noun} {name}: could not be checked: {report.error or 'the probe did not run'}; {stopped}",
                   err=True)
        return
    rows = [(r.id, _MARK.get(_status(r), _status(r)), r.justification or "") for r in verification.results]
    width = max(len(r[0]) for r in rows) if rows else 5
    typer.echo(f"{noun} {name} at {(verification.model_extra or {}).get('url')}")
    typer.echo(f"  {'CHECK':<{width}}  {'STATUS':<8}  DETAIL")
    for check, status, detail in rows:
        typer.echo(f"  {check:<{width}}  {status:<8}  {detail}")
    for row in report.context.metadata.unsupported_agent_config:
        typer.echo(f"  {row.field:<{width}}  {'NOT SENT':<8}  {row.extension}: {row.reason}")
    _print_confinement(_confinement(report, name))
    failed = [r[0] for r in rows if r[1] == "FAILED"]
    lacks = [r[0] for r in rows if r[1] == "MISSING"]
    verdict = f"FAILED: {', '.join(failed)}" if failed else "ok"
    typer.echo(f"{noun} {name}: {verdict}" + (f" (lacks: {', '.join(lacks)})" if lacks else "") + f"; {stopped}")


def _confinement(report: TaskReport, name: str) -> Confinement | None:
    agent = report.context.deployed_agents.get(name)
    return agent.confinement if agent is not None else None


def _print_confinement(confinement: Confinement | None) -> None:
    """How the checked agent ran: its confinement, network, limits, and what of the host it saw, and why."""
    if confinement is None:
        return
    if not confinement.confined:
        typer.echo(f"  runs unconfined ({confinement.opted_out or confinement.network})")
        return
    doors = f" (doors: {', '.join(confinement.doors)})" if confinement.doors else ""
    limits = ", ".join(f"{k}={v}" for k, v in confinement.limits.items())
    cgroup = f", cgroup {confinement.cgroup}" if confinement.cgroup else ""
    typer.echo(f"  confined by {confinement.mechanism}; network {confinement.network}{doors}; "
               f"limits {limits or 'none'}{cgroup}")
    typer.echo("  sees read-only, besides its sandbox and the system:" if confinement.mounts else
               "  sees its sandbox and the system only")
    for mount in confinement.mounts:
        typer.echo(f"    {mount}")
