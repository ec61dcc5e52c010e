"""Step types used only by the tests, registered as a plugin through entry points.

The engine's test steps are here: every one writes a ``trail`` entry into ``metadata`` (an
extra key) with its start and end times, so tests can check what a step saw and when it ran.
:mod:`agentenv_teststeps.reply_words` is the worked plugin of docs/step-types.md. Like any
plugin, the package takes all it needs from ``prefect_agentenv.plugin``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any, Literal

from prefect_agentenv.plugin import RunContext, StepDefinition, StepModel, Verification, current_run

_attempts: dict[tuple[str, str], int] = {}


def _trail(ctx: RunContext) -> dict[str, Any]:
    extra = ctx.metadata.model_extra
    assert extra is not None
    trail: dict[str, Any] = extra.setdefault("trail", {})
    return trail


def _mark(ctx: RunContext, step_id: str, started: float, **info: object) -> RunContext:
    seen = sorted(_trail(ctx))
    _trail(ctx)[step_id] = {"start": started, "end": time.time(), "seen": seen, **info}
    return ctx


class NoopStep(StepModel):
    """Does nothing but leave its trail."""

    type: Literal["test_noop"] = "test_noop"


class SleepStep(StepModel):
    """Sleeps, then leaves its trail."""

    type: Literal["test_sleep"] = "test_sleep"
    seconds: float = 0.1
    """How long to sleep."""


class FailStep(StepModel):
    """Fails its first ``fail_times`` attempts (every attempt when omitted)."""

    type: Literal["test_fail"] = "test_fail"
    message: str = "planned failure"
    """The error each failing attempt raises (its attempt number appended)."""
    fail_times: int | None = None
    """How many attempts fail before one succeeds; every attempt when omitted."""
    seconds: float = 0.0
    """How long each attempt takes before it fails or succeeds."""


class RecordStep(StepModel):
    """Starts a real child process and registers its teardown, like a deploy does."""

    type: Literal["test_record"] = "test_record"
    marker_file: str | None = None
    """Appended with this step's id when its teardown runs."""
    started_file: str | None = None
    """Written once the process runs and its teardown is registered, so a test can wait for it."""


async def run_noop(step: NoopStep, ctx: RunContext) -> RunContext:
    return _mark(ctx, step.id, time.time())


async def run_sleep(step: SleepStep, ctx: RunContext) -> RunContext:
    started = time.time()
    await asyncio.sleep(step.seconds)
    return _mark(ctx, step.id, started)


async def run_fail(step: FailStep, ctx: RunContext) -> RunContext:
    started = time.time()
    key = (current_run().run_id, step.id)
    _attempts[key] = _attempts.get(key, 0) + 1
    await asyncio.sleep(step.seconds)
    if step.fail_times is None or _attempts[key] <= step.fail_times:
        raise RuntimeError(f"{step.message} (attempt {_attempts[key]})")
    return _mark(ctx, step.id, started, attempts=_attempts[key])


async def run_record(step: RecordStep, ctx: RunContext) -> RunContext:
    started = time.time()
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(120)")

    async def stop() -> None:
        if proc.returncode is None:
            proc.terminate()
            await proc.wait()
        if step.marker_file:
            with Path(step.marker_file).open("a") as f:
                f.write(f"{step.id} {proc.pid}\n")

    current_run().teardown.add(f"test process {proc.pid}", stop, owner_step=step.id, key=step.id)
    if step.started_file:
        Path(step.started_file).write_text(f"{step.id} {proc.pid}\n")
    return _mark(ctx, step.id, started, pid=proc.pid)


class ScoreStep(StepModel):
    """Writes a verification with a fixed score (for benchmark tests)."""

    type: Literal["test_score"] = "test_score"
    verifier_id: str = "score"
    """Key of the verification in metadata.verifications."""
    score: float = 1.0
    """The score written (1.0 passes)."""


async def run_score(step: ScoreStep, ctx: RunContext) -> RunContext:
    passed = step.score >= 1.0
    # A record as a script or an older plugin writes it, read the liberal way (its key order kept).
    record = {"results": [{"id": "fixed", "result": "pass" if passed else "fail", "score": step.score,
                           "weight": 1.0, "axis": "correctness"}],
              "score": step.score, "weight": 1.0}
    ctx.metadata.verifications[step.verifier_id] = Verification.read(record)
    return _mark(ctx, step.id, time.time())


noop_definition = StepDefinition(NoopStep, run_noop)
score_definition = StepDefinition(ScoreStep, run_score)
sleep_definition = StepDefinition(SleepStep, run_sleep)
fail_definition = StepDefinition(FailStep, run_fail)
record_definition = StepDefinition(RecordStep, run_record)
