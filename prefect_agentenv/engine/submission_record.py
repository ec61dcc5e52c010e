"""A task run's submission kept as a record, so the run can be scored again later (``rescore``).

Every task run of a document keeps what its agents left — each env's exported state, each
agent's sandbox files, and the run context with the replies and their trajectories — in the
artifact store beside its report (``<run id>/submission.json``). Isolated scoring captured it
already (the same :class:`~prefect_agentenv.engine.scoring_placement.Submission`, no second
export); shared scoring captures it once every step has finished, before teardown: the steps of
a shared task interleave, so there is no moment between the rollout and the verifiers. Sandbox
files are base64; every text in the record has the run's secret values masked, as its report does.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import logging
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field, PrivateAttr

from prefect_agentenv.artifacts import ArtifactBackend
from prefect_agentenv.context import RunContext
from prefect_agentenv.engine.scoring_placement import Submission, capture
from prefect_agentenv.exceptions import AgentEnvError
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.redaction import Redactor
from prefect_agentenv.runtime.harbor.kept import masked_archive
from prefect_agentenv.runtime.resources.run import RunResources
from prefect_agentenv.transcript import Transcript

logger = logging.getLogger("prefect_agentenv.scoring")

SUBMISSION_FORMAT = 1
"""The record's format; a reader refuses a newer one instead of misreading it."""


def submission_key(run_id: str) -> str:
    """Where a task run's submission is kept among the store's run records (beside its report)."""
    return f"{run_id}/submission.json"


class StoredSubmission(BaseModel):
    """``<run id>/submission.json``: what a rescore restores into fresh envs and sandboxes."""

    format_version: int = SUBMISSION_FORMAT
    task_id: str
    run_id: str
    captured_at: str
    scoring_mode: Literal["shared", "isolated"] = "shared"
    """Where the run's own verifiers ran (shared: the record was taken after them)."""
    states: dict[str, JsonObject] = Field(default_factory=dict)
    """Each env's exported state (``data/get``), by env id."""
    stateless: dict[str, str] = Field(default_factory=dict)
    """Envs without a data plane (a plain MCP server), with why: no state kept, a rescore deploys
    them fresh."""
    files: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Each agent's sandbox files, base64, by agent name and sandbox path."""
    task_files: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Of those, the files that change what runs as the task loaded them, base64, by agent name and path
    relative to the sandbox: what grading keeps (any other such file is the agent's and set aside)."""
    context: RunContext = Field(default_factory=RunContext)
    """The run context the verifiers start from: deployed envs and agents, replies, trajectories."""
    transcript: Transcript | None = None
    """The run's transcript, step by step, as its report has it."""
    environments: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Container folders steps kept for a rescore (a Harbor verifier's workdir), by step id then path:
    the store key of each one's tar archive (gzipped, kept beside this record, secrets masked)."""
    _archives: dict[str, dict[str, bytes]] = PrivateAttr(default_factory=dict)

    @classmethod
    def of(cls, submission: Submission, *, task_id: str, run_id: str, context: RunContext,
           mode: Literal["shared", "isolated"], transcript: Transcript | None,
           secrets: set[str], stateless: dict[str, str] | None = None) -> StoredSubmission:
        """The record of ``submission``, every text with ``secrets`` masked."""
        redactor = Redactor(secrets)
        files = {agent: {path: base64.b64encode(_masked(redactor, data)).decode() for path, data in paths.items()}
                 for agent, paths in submission.files.items()}
        task_files = {agent: {path: base64.b64encode(_masked(redactor, data)).decode() for path, data in paths.items()}
                      for agent, paths in submission.task_files.items()}
        record = cls(task_id=task_id, run_id=run_id, captured_at=datetime.now(UTC).isoformat(), scoring_mode=mode,
                     states=submission.states, stateless=dict(stateless or {}), files=files, task_files=task_files,
                     context=context, transcript=transcript,
                     environments={step: {path: environment_key(run_id, step, n) for n, path in enumerate(sorted(kept))}
                                   for step, kept in submission.environments.items()})
        stored = cls.model_validate(redactor.data(record.model_dump(mode="json")))
        stored._archives = {step: {path: masked_archive(data, redactor) for path, data in kept.items()}
                            for step, kept in submission.environments.items()}
        return stored

    def submission(self) -> Submission:
        """The captured submission, as isolated scoring restores it."""
        return Submission(states=dict(self.states), files=_decoded(self.files), task_files=_decoded(self.task_files),
                          environments={step: dict(kept) for step, kept in self._archives.items()})

    def start_context(self) -> RunContext:
        """The context verifiers start from: the run's, without the verdicts of its own verifiers."""
        context = self.context.model_copy(deep=True)
        context.metadata.verifications = {}
        context.metadata.failed_steps = []
        return context


def _decoded(files: dict[str, dict[str, str]]) -> dict[str, dict[str, bytes]]:
    return {agent: {path: base64.b64decode(text) for path, text in paths.items()} for agent, paths in files.items()}


def read_submission(store: ArtifactBackend, run_id: str) -> StoredSubmission:
    """The submission a task run kept.

    Raises:
        ArtifactNotFoundError: the run kept none.
        ValueError: the record is not one this version can read (a newer format, or damaged).
    """
    record = StoredSubmission.model_validate_json(store.get_object(submission_key(run_id)))
    if record.format_version > SUBMISSION_FORMAT:
        raise ValueError(f"submission format {record.format_version} is newer than this version reads "
                         f"({SUBMISSION_FORMAT})")
    record._archives = {step: {path: gzip.decompress(store.get_object(key)) for path, key in kept.items()}
                        for step, kept in record.environments.items()}
    return record


def environment_key(run_id: str, step_id: str, index: int) -> str:
    """Where the ``index``-th container folder a step kept is stored (beside the run's submission)."""
    return f"{run_id}/environments/{step_id}/{index}.tar.gz"


def store_submission(store: ArtifactBackend, record: StoredSubmission) -> None:
    """Keep ``record``: its environments' archives first, then the record that names them."""
    for step, kept in record.environments.items():
        for path, key in kept.items():
            store.put_object(key, gzip.compress(record._archives[step][path], compresslevel=6))
    store.put_object(submission_key(record.run_id), record.model_dump_json())


CAPTURE_TIMEOUT_SECONDS = 60.0
"""Bound on capturing one run's submission: a hung env must not hold the run's teardown."""


async def capture_quietly(run: RunResources, context: RunContext,
                          stateless: dict[str, str]) -> tuple[Submission | None, str | None]:
    """The submission of a run's context, or why it could not be captured: a by-product of the run,
    so whatever goes wrong here (an env that died, one that hangs) never fails it. Envs without a
    data plane are listed in ``stateless`` (a rescore deploys them fresh)."""
    try:
        async with asyncio.timeout(CAPTURE_TIMEOUT_SECONDS):
            return await capture(run, context, stateless=stateless), None
    except TimeoutError:
        reason = f"capturing it took over {CAPTURE_TIMEOUT_SECONDS:g}s"
    except Exception as exc:  # noqa: BLE001 - see the docstring
        reason = f"{type(exc).__name__}: {exc}" if not isinstance(exc, AgentEnvError | OSError) else str(exc)
    logger.warning("could not capture the submission: %s", reason)
    return None, f"the submission was not kept, so this run cannot be rescored: {reason}"


def _masked(redactor: Redactor, data: bytes) -> bytes:
    masked = redactor.record(data)
    return masked if isinstance(masked, bytes) else masked.encode()
