"""The transcript as markdown: the transcript artifact on the task run's flow run in the Prefect UI."""

from __future__ import annotations

import re

from prefect_agentenv.transcript.models import (
    Clip,
    EnvChanges,
    PromptTranscript,
    Transcript,
    VerifierTranscript,
)

MARKDOWN_VALUE_CHARS = 1500
"""Values are cut tighter in the UI than in report.json: the page must stay readable."""
MAX_MARKDOWN_CHARS = 400_000
"""A bound on the whole artifact; a run with hundreds of tool calls is cut with a note."""


def transcript_markdown(t: Transcript) -> str:
    """The whole transcript: steps, prompts (turns, tool calls, reply), verifiers, env changes, files."""
    lines = [f"# Transcript of `{t.task_id}`", ""]
    if t.errors:
        lines += ["**Errors**", ""] + [f"- {_inline(e)}" for e in t.errors] + [""]
    lines += _steps(t)
    for prompt in t.prompts:
        lines += _prompt(prompt)
    for verifier in t.verifiers:
        lines += _verifier(verifier)
    for changes in t.env_changes:
        lines += _env(changes)
    if t.files:
        lines += ["## Collected files", ""] + [f"- [{_inline(f.name)}]({f.url}) (step `{f.step_id}`)"
                                               for f in t.files] + [""]
    text = "\n".join(lines)
    if len(text) > MAX_MARKDOWN_CHARS:
        text = text[:MAX_MARKDOWN_CHARS] + f"\n\n… [transcript cut: {len(text):,} characters in all; " \
                                           "report.json holds it whole]"
    return text


def _steps(t: Transcript) -> list[str]:
    lines = ["## Steps", "", "| # | step | type | state | started | duration (s) | attempts | error |",
             "|---|---|---|---|---|---|---|---|"]
    for i, s in enumerate(t.steps, start=1):
        duration = "" if s.duration_s is None else f"{s.duration_s:.2f}"
        started = (s.started_at or "")[11:23]
        lines.append(f"| {i} | {s.id} | {s.type} | {s.state} | {started} | {duration} | {s.attempts} | "
                     f"{_cell(s.error or '')} |")
    return lines + [""]


def _prompt(p: PromptTranscript) -> list[str]:
    who = f" → agent `{p.agent_name}`" if p.agent_name else ""
    lines = [f"## Prompt `{p.prompt_id}`{who}", ""]
    facts = [f"model: {p.model or 'unknown'}" + (" (the built-in mock model)" if p.mock else ""),
             f"tool calls: {p.tool_call_count if p.tool_call_count is not None else len(p.tool_calls)}"]
    if p.tokens:
        facts.append(f"tokens: {p.tokens.total:,} ({p.tokens.prompt:,} prompt, {p.tokens.completion:,} completion)")
    if p.cost_usd is not None:
        facts.append(f"cost: ${p.cost_usd:.4f}")
    if p.is_truncated:
        facts.append("truncated")
    if p.is_timeout:
        facts.append("timed out")
    if p.trajectory_url:
        facts.append(f"[trajectory]({p.trajectory_url})")
    lines += [" · ".join(facts), ""]
    if p.error:
        lines += [f"**Error:** {_inline(p.error)}", ""]
    lines += ["**Prompt**", ""] + _block(p.prompt)
    if len(p.turns) > 1:
        lines += ["### Turns", ""]
        for turn in p.turns:
            lines += _turn_lines(turn.index, turn.role, turn.message, turn.reply, turn.error, turn.done)
        lines.append("")
    if p.tool_calls:
        lines += ["### Tool calls", ""]
        for i, call in enumerate(p.tool_calls, start=1):
            where = f" on `{call.server}`" if call.server else ""
            flag = " — **error**" if call.is_error else ""
            lines += [f"{i}. `{call.name}`{where}{flag}", ""] + _block(call.arguments, "json", indent="   ")
            if call.result is not None:
                lines += ["   returned:", ""] + _block(call.result, indent="   ")
    lines += ["**Reply**", ""] + _block(p.reply)
    lines += [f"> {_inline(n)}" for n in p.notes] + ([""] if p.notes else [])
    return lines


def _turn_lines(index: int, role: str, message: Clip | None, reply: Clip | None, error: str | None,
                done: bool | None) -> list[str]:
    if role == "user":
        end = " (done)" if done else ""
        return [f"- **turn {index}, user{end}:** {_inline(message.shown(300)) if message else '—'}"]
    out = [f"- **turn {index}, agent** got: {_inline(message.shown(300)) if message else '—'}"]
    if reply is not None:
        out.append(f"  - replied: {_inline(reply.shown(300))}")
    if error:
        out.append(f"  - error: {_inline(error)}")
    return out


def _verifier(v: VerifierTranscript) -> list[str]:
    score = "skipped (" + v.skipped + ")" if v.skipped else ("—" if v.score is None else f"{v.score:.3f}")
    how = f" · {v.aggregator}" if v.aggregator else ""
    lines = [f"## Verifier `{v.verifier_id}` — score {score}{how}", ""]
    if v.judge:
        judge = f"judge: {v.judge.mode or '?'}"
        judge += f" `{v.judge.agent_name}`" if v.judge.agent_name else ""
        judge += f", model {v.judge.model or 'unknown'}" + (" (the built-in mock model)" if v.judge.mock else "")
        judge += f", {v.judge.attempts} attempt(s)" if v.judge.attempts else ""
        judge += f" · [judge's trajectory]({v.judge.trajectory_url})" if v.judge.trajectory_url else ""
        lines += [judge, ""]
    if v.panel:
        p = v.panel
        line = f"panel of {len(p.judges)} ({', '.join(p.judges)}), rule {p.rule}"
        line += f", disagreement {p.disagreement:.2f}" if p.disagreement is not None else ""
        line += f", split on {', '.join(p.split_criteria)}" if p.split_criteria else ""
        line += f", **{len(p.unscored)} unscored** ({', '.join(p.unscored)})" if p.unscored else ""
        lines += [line, ""]
    if v.error:
        lines += [f"**Error:** {_inline(v.error)}", ""]
    if v.rows:
        lines += ["| row | axis | result | score | weight | justification |", "|---|---|---|---|---|---|"]
        for r in v.rows:
            name = f"{r.id}: {r.label}" if r.label else r.id
            score_ = "" if r.score is None else f"{r.score:g}"
            weight = "" if r.weight is None else f"{r.weight:g}"
            lines.append(f"| {_cell(name)} | {r.axis or ''} | {r.result or ''} | {score_} | {weight} | "
                         f"{_cell(r.justification or '')} |")
        lines.append("")
        for r in v.rows:
            if r.judges:
                split = "" if r.disagreement is None else f" (disagreement {r.disagreement:.2f})"
                lines += [f"Judges on `{r.id}`{split}:"] + [
                    f"- `{j.judge}`: {j.result} — {_inline(j.justification or '')}" for j in r.judges] + [""]
    return lines


def _env(e: EnvChanges) -> list[str]:
    link = lambda label, url: f"[{label}]({url})" if url else label  # noqa: E731
    lines = [f"## Changes in env `{e.env_id}`", "",
             f"Between {link('snapshot `' + e.before_step + '`', e.before_url)} and "
             f"{link('snapshot `' + e.after_step + '`', e.after_url)}: {len(e.changes) + e.more} change(s).", ""]
    for c in e.changes:
        lines.append(f"- **{c.change}** `{c.path}`")
        if c.before is not None and c.change != "added":
            lines.append(f"  - before: `{_inline(c.before.shown(400))}`")
        if c.after is not None:
            lines.append(f"  - after: `{_inline(c.after.shown(400))}`")
    if e.more:
        lines.append(f"- … and {e.more} more")
    return lines + [""]


def _block(value: Clip, lang: str = "", indent: str = "") -> list[str]:
    """A fenced block whose fence is longer than any backtick run inside, so nothing breaks out."""
    text = value.shown(MARKDOWN_VALUE_CHARS)
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = [f"{indent}{line}" for line in text.splitlines() or [""]]
    return [f"{indent}{fence}{lang}", *body, f"{indent}{fence}", ""]


def _inline(text: str) -> str:
    return " ".join(text.split()).replace("`", "'")


def _cell(text: str) -> str:
    return _inline(text).replace("|", "\\|")[:500]
