"""verify_sandbox: probe a sandbox (an agent's or a deploy_sandbox one): files, contents, commands."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.context import RunContext
from prefect_agentenv.exceptions import AgentEnvError, StepError
from prefect_agentenv.grading.verification import scored
from prefect_agentenv.jsontypes import JsonObject, JsonValue
from prefect_agentenv.run_services.sandboxes import sandbox_target
from prefect_agentenv.runtime.resources.run import current_run
from prefect_agentenv.runtime.resources.sandbox import Sandbox
from prefect_agentenv.steps.base import (
    AgentRef,
    FieldError,
    SandboxPath,
    SandboxRef,
    VerifierStep,
    check_sandbox_path,
    listed_field,
)
from prefect_agentenv.steps.registry import StepDefinition

if TYPE_CHECKING:
    from prefect_agentenv.runtime.confinement.grading_box import GradingBox

CheckKind = Literal["file_exists", "dir_exists", "file_contains", "file_matches", "command_succeeds"]

# AgentEnv's probe criterion types and the check kind each one reads as.
_REFERENCE_KINDS = {"probe_file_exists": "file_exists", "probe_dir_exists": "dir_exists",
                    "probe_file_contains": "file_matches", "bash_cmd_succeeds": "command_succeeds"}


class SandboxCheck(BaseModel):
    """One probe of the sandbox."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=attribute_docstrings)

    id: str = Field(min_length=1)
    """Id of the check's row in the verification (unique within the step)."""
    kind: CheckKind
    """What is probed: file_exists, dir_exists, file_contains, file_matches or command_succeeds."""
    path: SandboxPath | None = None
    """Sandbox path; a relative one is under the step's base_dir (the sandbox root when unset)."""
    paths: list[SandboxPath] = Field(default_factory=list)
    """For file_exists and dir_exists: every one of these must exist (besides path)."""
    text: str | None = None
    """Text file_contains looks for."""
    pattern: str | None = None
    """Regular expression file_matches searches the file for."""
    command: list[str] | str | None = None
    """argv run in the sandbox by command_succeeds; a string is run with ``bash -c``."""
    timeout_seconds: float = Field(default=60, gt=0)
    """For command_succeeds: the command is stopped after this long and the check fails."""
    weight: float = 1.0
    """Weight of the row; a negative weight is a penalty (docs/scoring.md)."""
    description: str | None = None
    """What the check means (AgentEnv's ``criterion`` text)."""

    @model_validator(mode="after")
    def _fields_for_kind(self) -> SandboxCheck:
        needs = {"file_exists": (), "dir_exists": (), "file_contains": ("path", "text"),
                 "file_matches": ("path", "pattern"), "command_succeeds": ("command",)}
        missing = [f for f in needs[self.kind] if getattr(self, f) is None]
        if self.kind in ("file_exists", "dir_exists") and self.path is None and not self.paths:
            missing.append("path or paths")
        if missing:
            raise ValueError(f"check '{self.id}' of kind {self.kind} needs {', '.join(missing)}")
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"check '{self.id}': pattern {self.pattern!r} is not a regular expression: {exc}") from None
        return self

    def all_paths(self) -> list[str]:
        return ([self.path] if self.path is not None else []) + self.paths


class VerifySandboxStep(VerifierStep):
    """Scores a sandbox by file and command probes."""

    type: Literal["verify_sandbox"] = "verify_sandbox"
    agent_name: AgentRef | None = None
    """The deployed agent whose sandbox is probed."""
    sandbox_name: SandboxRef | None = None
    """Or a sandbox a deploy_sandbox step made."""
    base_dir: SandboxPath | None = None
    """Sandbox folder relative paths are under and commands run in (the sandbox root when unset)."""
    checks: list[SandboxCheck] = Field(min_length=1)
    """The probes (files, contents, commands); one row each."""
    inputs: list[SandboxPath] | None = None
    """Sandbox paths copied into the fresh confined sandbox the command checks run in (default: the whole
    sandbox but the agent's home). Commands never run in the live sandbox; file checks read it."""

    reference_fields = {"criteria": "AgentEnv's probe criteria, read as checks.",
                        "shell_timeout_seconds": "AgentEnv's per-probe timeout, read as each check's timeout_seconds."}
    reference_alternatives = {"criteria": "checks"}

    @classmethod
    def reference_forms(cls, data: JsonObject, notices: list[str]) -> JsonObject:
        """AgentEnv's probe ``criteria`` (base_dir defaults to /app there) become checks."""
        data = super().reference_forms(data, notices)
        criteria = data.pop("criteria", None)
        timeout = data.pop("shell_timeout_seconds", None)
        if criteria is None:
            return data
        if not isinstance(criteria, list):
            raise ValueError("criteria must be a list of probe criteria")
        data.setdefault("base_dir", "/app")
        checks = listed_field(data, "checks")
        for i, item in enumerate(criteria):
            check = _check_from_criterion(item, i, timeout)
            if check is None:
                kind = item.get("type") if isinstance(item, dict) else None
                notices.append(f"criteria[{i}]: type {kind!r} is not a sandbox probe and is skipped "
                               f"(probes: {', '.join(_REFERENCE_KINDS)})")
                continue
            checks.append(check)
        data["checks"] = checks
        return data

    @model_validator(mode="after")
    def _one_sandbox(self) -> VerifySandboxStep:
        if (self.agent_name is None) == (self.sandbox_name is None):
            raise ValueError("give exactly one of agent_name (an agent's sandbox) or sandbox_name (a deploy_sandbox one)")
        return self


def _check_from_criterion(item: JsonValue, index: int, timeout: JsonValue) -> JsonObject | None:
    """One AgentEnv probe criterion as a check; None for a type that is not a probe."""
    if not isinstance(item, dict):
        return None
    ref_type = item.get("type")
    kind = _REFERENCE_KINDS.get(ref_type) if isinstance(ref_type, str) else None
    if kind is None:
        return None
    text = item.get("criterion")
    check: JsonObject = {"id": str(item.get("id") or text or f"criterion_{index + 1}"), "kind": kind,
                         "weight": item.get("weight", 1.0), "description": text}
    if timeout is not None:
        check["timeout_seconds"] = timeout
    paths = item.get("paths") or []
    _check_criterion_paths(paths, index)
    if kind in ("file_exists", "dir_exists"):
        check["paths"] = paths
    elif kind == "file_matches":
        check["path"] = paths[0] if isinstance(paths, list) and paths else None
        check["pattern"] = item.get("expected") or item.get("value")
    else:
        check["command"] = item.get("bash_cmd")
    return check


def _check_criterion_paths(paths: JsonValue, index: int) -> None:
    """A probe criterion's paths, checked where the document wrote them (``criteria[i].paths[j]``)."""
    for j, path in enumerate(paths if isinstance(paths, list) else []):
        if isinstance(path, str):
            try:
                check_sandbox_path(path)
            except FieldError as exc:
                raise FieldError(str(exc), loc=("criteria", index, "paths", j), hint=exc.hint) from None


async def run(step: VerifySandboxStep, ctx: RunContext) -> RunContext:
    """Run every probe against the sandbox; one row each. Commands run in a fresh confined copy of it."""
    sandbox, env, _ = sandbox_target(ctx, step, agent_name=step.agent_name, sandbox_name=step.sandbox_name)
    box = await _grading_box(step, sandbox)
    try:
        rows = [await _probe(sandbox, box, step, check, {**env, **step.scoring_env}) for check in step.checks]
    finally:
        if box is not None and not current_run().keep:
            box.remove()
    extra = {"grading_sandbox": box.record().as_json()} if box is not None else {}
    ctx.metadata.verifications[step.verifier_id] = scored(rows, aggregator=step.score_aggregator,
                                                          weight=step.weight, fmt="sandbox_checks", **extra)
    return ctx


async def _grading_box(step: VerifySandboxStep, sandbox: Sandbox) -> GradingBox | None:
    """The copy the step's commands run in (none without a command check)."""
    from prefect_agentenv.runtime.confinement.grading_box import open_box

    if not any(check.kind == "command_succeeds" for check in step.checks):
        return None
    try:
        return await asyncio.to_thread(open_box, sandbox, current_run().step_folder("grading", step.id),
                                       inputs=step.inputs)
    except AgentEnvError as exc:
        raise StepError(f"inputs: {exc}", step=step) from None


async def _probe(sandbox: Sandbox, box: GradingBox | None, step: VerifySandboxStep, check: SandboxCheck,
                 env: dict[str, str]) -> dict[str, object]:
    if check.kind == "command_succeeds":
        assert box is not None
        ok, why = await _command(box, step.base_dir, check, env)
    elif check.kind in ("file_exists", "dir_exists"):
        ok, why = _exists(sandbox, step.base_dir, check)
    else:
        ok, why = _contents(sandbox, step.base_dir, check)
    row: dict[str, object] = {"id": check.id, "result": "pass" if ok else "fail", "score": 1.0 if ok else 0.0,
                              "weight": check.weight, "justification": why}
    if check.description:
        row["criterion"] = check.description
    return row


def _host(sandbox: Sandbox, base_dir: str | None, path: str) -> Path:
    if base_dir and not path.startswith("/"):
        path = f"{base_dir.rstrip('/')}/{path}"
    return sandbox.path(path)


def _exists(sandbox: Sandbox, base_dir: str | None, check: SandboxCheck) -> tuple[bool, str]:
    missing = []
    for path in check.all_paths():
        try:
            host = _host(sandbox, base_dir, path)
        except (AgentEnvError, ValueError) as exc:
            return False, f"{path}: {exc}"
        if not (host.is_dir() if check.kind == "dir_exists" else host.exists()):
            missing.append(path)
    return (False, f"missing: {', '.join(missing)}") if missing else (True, "all paths exist")


def _contents(sandbox: Sandbox, base_dir: str | None, check: SandboxCheck) -> tuple[bool, str]:
    path = check.path or ""
    try:
        host = _host(sandbox, base_dir, path)
    except (AgentEnvError, ValueError) as exc:
        return False, f"{path}: {exc}"
    if not host.is_file():
        return False, f"{path} does not exist"
    text = host.read_text(encoding="utf-8", errors="replace")
    if check.kind == "file_matches":
        found = re.search(check.pattern or "", text) is not None
        return found, f"{path} {'matches' if found else 'does not match'} /{check.pattern}/"
    found = (check.text or "") in text
    return found, f"{path} {'contains' if found else 'does not contain'} {check.text!r}"


async def _command(box: GradingBox, base_dir: str | None, check: SandboxCheck,
                   env: dict[str, str]) -> tuple[bool, str]:
    """Run the command in the grading box (cwd base_dir, a fresh HOME, no network), bounded in time and
    output."""
    argv = ["bash", "-c", check.command] if isinstance(check.command, str) else list(check.command or [])
    shown = check.command if isinstance(check.command, str) else " ".join(argv)
    cwd = base_dir or "."
    try:
        if not box.sandbox.path(cwd).is_dir():
            return False, f"base_dir {base_dir} does not exist in the sandbox"
    except (AgentEnvError, ValueError) as exc:
        return False, f"base_dir {base_dir!r}: {exc}"
    try:
        done = await box.run(argv, cwd=cwd, env=env, run_id=current_run().run_id, timeout=check.timeout_seconds,
                             max_output_bytes=64 * 1024, merge_stderr=True)
    except OSError as exc:
        return False, f"{shown} could not start: {exc}"
    if done.timed_out:
        return False, f"{shown} did not finish within {check.timeout_seconds:g}s"
    tail = done.stdout.decode(errors="replace").strip()[-300:]
    return done.returncode == 0, f"{shown} exited {done.returncode}" + (f": {tail}" if tail else "")


definition = StepDefinition(VerifySandboxStep, run)
