"""Build the transcript of a run from its context, its step records and its stored records.

The prompt steps keep the agent's trajectory and the conversation's turns in the artifact
store (``<run id>/trajectories/…``, ``<run id>/conversations/…``), the judges theirs
(``<run id>/judges/…``), snapshot steps the env's exported state: this reads them back. A
record that cannot be read leaves a note in the transcript, never an exception: the
transcript is a view of the run, and the report must be written whatever happens to it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from prefect_agentenv.artifacts import ArtifactBackend, ArtifactError
from prefect_agentenv.context import EnvSnapshot, PromptResponse, RunContext, StepRecord, Verification, VerificationRow
from prefect_agentenv.grading.judge_records import judge_of, panel_of, verdicts_of
from prefect_agentenv.grading.panel import PanelRecord
from prefect_agentenv.grading.verification import read_all
from prefect_agentenv.transcript.diff import MAX_CHANGES, diff_states
from prefect_agentenv.transcript.models import (
    Clip,
    EnvChanges,
    FileLink,
    JudgeInfo,
    PanelInfo,
    PanelVerdict,
    PromptTranscript,
    StepRun,
    Tokens,
    ToolCall,
    Transcript,
    Turn,
    VerifierRow,
    VerifierTranscript,
)

logger = logging.getLogger("prefect_agentenv.transcript")


def build_transcript(*, task_id: str, run_id: str, context: RunContext, steps: Sequence[StepRecord],
                     step_fields: Mapping[str, StepFields] | None = None, error: str | None = None,
                     store: ArtifactBackend | None = None) -> Transcript:
    """The transcript of one run.

    Args:
        steps: the report's step records (``id, type, state, started_at, duration_s, …``).
        step_fields: each step's document fields by step id, to tie prompts and verifiers to
            their steps and to find the agent a prompt went to.
        store: where the run's records are; ``None`` leaves trajectories and snapshots out.
    """
    fields = step_fields or {}
    runs = sorted((_step_run(s) for s in steps), key=lambda s: (s.started_at is None, s.started_at or ""))
    errors = ([error] if error else []) + [f"step '{s.id}': {s.error}" for s in runs if s.error]
    errors += [f"step '{f.step_id}' (tolerated): {f.error}" for f in context.metadata.failed_steps
               if f"step '{f.step_id}': {f.error}" not in errors]
    return Transcript(
        task_id=task_id, steps=runs,
        prompts=[_prompt(r, run_id, fields, store) for r in context.prompt_responses.values()],
        verifiers=[_verifier(vid, v, fields) for vid, v in read_all(context.metadata.verifications).items()],
        env_changes=_env_changes(context, runs, store),
        files=[FileLink(name=name, url=str(url), step_id=sid)
               for sid, record in context.metadata.collected_artifacts.items()
               for name, url in record.artifacts.items()],
        errors=errors,
    )


def _step_run(record: StepRecord) -> StepRun:
    return StepRun(id=record.id, type=record.type, state=record.state,
                   started_at=record.started_at.isoformat() if record.started_at else None,
                   duration_s=record.duration_s, attempts=record.attempts, error=record.error)


class StepFields(BaseModel):
    """The document fields of a step that tie prompts and verifiers to it."""

    type: str
    prompt_id: str | None = None
    verifier_id: str | None = None
    agent_name: str | None = None


def _prompt_step(fields: Mapping[str, StepFields], prompt_id: str) -> str | None:
    return next((sid for sid, f in fields.items() if f.prompt_id == prompt_id and f.type == "prompt_agent"), None)


def _verifier_step(fields: Mapping[str, StepFields], verifier_id: str) -> str | None:
    return next((sid for sid, f in fields.items() if f.verifier_id == verifier_id), None)


# -- prompts ------------------------------------------------------------------------------------


def _prompt(response: PromptResponse, run_id: str, fields: Mapping[str, StepFields],
            store: ArtifactBackend | None) -> PromptTranscript:
    step_id = _prompt_step(fields, response.prompt_id)
    out = PromptTranscript(
        prompt_id=response.prompt_id, step_id=step_id,
        agent_name=fields[step_id].agent_name if step_id else None,
        prompt=Clip.of(response.prompt), reply=Clip.of(response.response),
        tool_call_count=response.tool_call_count, model=response.model, mock=response.model == "mock",
        error=response.error, is_truncated=response.is_truncated, is_timeout=response.is_timeout,
        trajectory_url=response.trajectory,
    )
    if response.usage is not None:
        out.cost_usd = response.usage.cost_usd
        if response.usage.input_tokens is not None or response.usage.output_tokens is not None:
            prompt, completion = response.usage.input_tokens or 0, response.usage.output_tokens or 0
            out.tokens = Tokens(prompt=prompt, completion=completion, total=prompt + completion)
    if store is None:
        return out
    turns = _read_json(store, key=f"{run_id}/conversations/{response.prompt_id}.json", notes=out.notes,
                       what="the conversation's turns")
    if isinstance(turns, list):
        out.turns = [_turn(i, t) for i, t in enumerate(turns, start=1) if isinstance(t, dict)]
    if response.trajectory:
        trajectory = _read_json(store, url=response.trajectory, notes=out.notes, what="the agent's trajectory")
        events = trajectory.get("events") if isinstance(trajectory, dict) else trajectory
        if isinstance(events, list):
            out.tool_calls = tool_calls(events)
            out.tokens = out.tokens or tokens(events)
    else:
        out.notes.append("the agent reported no trajectory, so its tool calls are not shown")
    return out


def _turn(index: int, raw: Mapping[str, Any]) -> Turn:
    role: Literal["user", "agent"] = "user" if raw.get("role") == "user" else "agent"
    message = raw.get("message") if role == "user" else raw.get("prompt")
    return Turn(index=_int(raw.get("turn")) or index, role=role, message=_clip(message), reply=_clip(raw.get("reply")),
                state=_str(raw.get("state")), tool_call_count=_int(raw.get("tool_call_count")),
                done=raw.get("done") if isinstance(raw.get("done"), bool) else None, error=_str(raw.get("error")))


def tool_calls(events: Sequence[Any]) -> list[ToolCall]:
    """Tool calls paired with their results: by call id when the events carry one, else in order per tool.

    Trajectories come in several shapes, all read: this package's agents (``kind: tool_call`` /
    ``tool_result``), Anthropic-style messages whose content blocks are ``tool_use`` /
    ``tool_result``, and AgentEnv gateway events (``event_type: tool_call`` /
    ``tool_call_result`` / ``tool_call_failed``).
    """
    calls: list[ToolCall] = []
    by_id: dict[str, ToolCall] = {}
    waiting: dict[str, list[ToolCall]] = {}
    for item in _tool_items(events):
        if item.call:
            call = ToolCall(name=item.name or "?", server=_str(item.server),
                            arguments=Clip.of(_json(item.arguments or {})))
            calls.append(call)
            if item.id:
                by_id[item.id] = call
            waiting.setdefault(call.name, []).append(call)
            continue
        queue = waiting.get(item.name or "", [])
        answered = (by_id.pop(item.id, None) if item.id else None) or (queue[0] if queue else None)
        if answered is None:
            continue
        if answered in waiting.get(answered.name, []):
            waiting[answered.name].remove(answered)
        answered.result = Clip.of(_body(item.body))
        answered.is_error = bool(item.is_error)
    return calls


@dataclass
class _ToolItem:
    """One tool call (``call``) or tool result of a trajectory, in whichever shape it came."""

    call: bool
    id: str | None
    name: str | None
    arguments: Any = None
    body: Any = None
    is_error: Any = None
    server: Any = None


def _tool_items(events: Sequence[Any]) -> list[_ToolItem]:
    """Each tool call or result of the events."""
    items: list[_ToolItem] = []
    for event in events:
        if not isinstance(event, dict):
            continue
        kind = event.get("kind") or event.get("type") or event.get("event_type")
        message = event.get("message")
        blocks = message.get("content") if isinstance(message, dict) else None
        if isinstance(blocks, list):
            items += _tool_items(blocks)
        elif kind in ("tool_call", "tool_use"):
            spec = event.get("tool_call")
            spec = spec if isinstance(spec, dict) else {}
            items.append(_ToolItem(call=True, id=_str(event.get("call_id") or event.get("id") or event.get("event_id")),
                                   name=_str(event.get("tool") or event.get("name") or spec.get("function_name")),
                                   arguments=event.get("arguments", event.get("input", spec.get("arguments"))),
                                   server=event.get("server")))
        elif kind in ("tool_result", "tool_call_result", "tool_call_failed"):
            body = next((event[k] for k in ("text", "content", "tool_call_result", "output", "error")
                         if event.get(k) not in (None, "", [])), event.get("data", event.get("structured")))
            items.append(_ToolItem(call=False, name=_str(event.get("tool") or event.get("name")),
                                   id=_str(event.get("call_id") or event.get("tool_use_id")
                                           or event.get("tool_call_event_id")),
                                   body=body, is_error=event.get("is_error") or kind == "tool_call_failed"))
    return items


def _body(value: Any) -> str:
    """A tool result as text; content blocks ``[{type: text, text}]`` are joined."""
    if isinstance(value, list) and value and all(isinstance(b, dict) and "text" in b for b in value):
        return "\n".join(str(b["text"]) for b in value)
    return value if isinstance(value, str) else _json(value)


def tokens(events: Sequence[Any]) -> Tokens | None:
    """Tokens summed over the model events that report usage (OpenAI or Anthropic names)."""
    seen, total = False, Tokens()
    for event in events:
        usage = _event_usage(event)
        if usage is None:
            continue
        prompt = _int(usage.get("prompt_tokens", usage.get("input_tokens"))) or 0
        completion = _int(usage.get("completion_tokens", usage.get("output_tokens"))) or 0
        whole = _int(usage.get("total_tokens")) or prompt + completion
        if prompt or completion or whole:
            seen = True
        total = Tokens(prompt=total.prompt + prompt, completion=total.completion + completion,
                       total=total.total + whole)
    return total if seen else None


def _event_usage(event: Any) -> dict[str, Any] | None:
    """An event's token counts: ``usage`` (OpenAI, Anthropic, Codex's ``turn.completed``), or the
    ``tokens`` of an OpenCode ``step_finish`` part (``input``/``output``/``total``)."""
    if not isinstance(event, dict):
        return None
    usage = event.get("usage")
    if isinstance(usage, dict):
        return usage
    part = event.get("part")
    counts = part.get("tokens") if isinstance(part, dict) and part.get("type") == "step-finish" else None
    if not isinstance(counts, dict):
        return None
    return {"input_tokens": counts.get("input"), "output_tokens": counts.get("output"), "total_tokens": counts.get("total")}


# -- verifiers ----------------------------------------------------------------------------------


def _verifier(verifier_id: str, verification: Verification,
              fields: Mapping[str, StepFields]) -> VerifierTranscript:
    given = verification.model_fields_set
    judge = judge_of(verification)
    return VerifierTranscript(
        verifier_id=verifier_id, step_id=_verifier_step(fields, verifier_id),
        format=_str(verification.format), score=_float(verification.score),
        weight=verification.weight if "weight" in given else None, aggregator=_str(verification.aggregator),
        skipped=(verification.skip_reason or "skipped") if verification.skipped else None,
        error=_str(verification.error),
        rows=[_row(r) for r in verification.results],
        judge=None if judge is None else JudgeInfo(
            mode=judge.mode, model=judge.model, mock=judge.mock, agent_name=judge.agent_name,
            attempts=judge.attempts, trajectory_url=judge.trajectory),
        panel=_panel(panel_of(verification)),
    )


def _panel(record: PanelRecord | None) -> PanelInfo | None:
    if record is None:
        return None
    return PanelInfo(rule=record.rule, judges=[str(j.id) for j in record.judges], disagreement=record.disagreement,
                     split_criteria=record.split_criteria, unscored=record.unscored,
                     unreadable_judges=record.unreadable_judges)


def _row(row: VerificationRow) -> VerifierRow:
    given = row.model_fields_set
    extra = row.model_extra or {}
    judges = verdicts_of(row)
    verdicts = None if judges is None else [
        PanelVerdict(judge=j.judge, result=j.result, score=j.score, justification=j.justification) for j in judges]
    return VerifierRow(id=row.id, label=_str(extra.get("label")), axis=row.axis,
                       result=row.result if "result" in given else None, score=row.score if "score" in given else None,
                       weight=row.weight if "weight" in given else None, justification=row.justification,
                       judges=verdicts, disagreement=_float(extra.get("disagreement")))


# -- env changes --------------------------------------------------------------------------------


def _env_changes(context: RunContext, steps: Sequence[StepRun], store: ArtifactBackend | None) -> list[EnvChanges]:
    """Consecutive snapshots of one env, diffed: what the steps between them changed."""
    snapshots = context.metadata.env_snapshots
    if store is None:
        return []
    order = {s.id: i for i, s in enumerate(steps)}
    by_env: dict[str, list[tuple[str, EnvSnapshot]]] = {}
    for step_id, snap in sorted(snapshots.items(), key=lambda kv: order.get(kv[0], len(order))):
        if snap.env_id:
            by_env.setdefault(snap.env_id, []).append((step_id, snap))
    out = []
    for env_id, snaps in by_env.items():
        for (before_id, before), (after_id, after) in zip(snaps, snaps[1:]):
            changes = diff_states(_snapshot_state(store, before), _snapshot_state(store, after))
            out.append(EnvChanges(env_id=env_id, before_step=before_id, after_step=after_id,
                                  before_url=before.url, after_url=after.url,
                                  changes=changes[:MAX_CHANGES], more=max(0, len(changes) - MAX_CHANGES)))
    return out


def _snapshot_state(store: ArtifactBackend, snap: EnvSnapshot) -> Any:
    artifact = snap.artifact
    try:
        return json.loads(store.read_file(artifact.id, version=artifact.version))
    except (ArtifactError, ValueError) as exc:
        logger.info("snapshot %s@%s unreadable: %s", artifact.id, artifact.version, exc)
        return None


# -- helpers ------------------------------------------------------------------------------------


def _read_json(store: ArtifactBackend, *, notes: list[str], what: str, key: str | None = None,
               url: str | None = None) -> Any:
    """A stored record as JSON, or None with a note saying why it is missing."""
    if url is not None:
        key = store.key_of(url)
        if key is None:
            notes.append(f"{what} is stored outside this run's artifact store: {url}")
            return None
    try:
        return json.loads(store.get_object(key or ""))
    except ArtifactError as exc:
        if url is not None:
            notes.append(f"{what} could not be read: {exc}")
        return None
    except ValueError:
        notes.append(f"{what} is not JSON")
        return None


def _clip(value: Any) -> Clip | None:
    return None if value is None else Clip.of(value if isinstance(value, str) else _json(value))


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
