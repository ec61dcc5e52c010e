"""A task run's transcript as HTML: the drill-down page's body."""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from prefect_agentenv.transcript.models import (
    Clip,
    EnvChanges,
    PromptTranscript,
    Transcript,
    VerifierRow,
    VerifierTranscript,
)

Link = Callable[[str], str]
"""Maps a stored URL to the href the page uses (a copy next to the report, or the URL itself)."""


def transcript_html(t: Transcript, link: Link) -> str:
    """Errors, prompts (turns, tool calls, reply), verifiers, env changes and files."""
    parts: list[str] = []
    if t.errors:
        parts.append('<div class="errors"><b>Errors</b><ul>' + "".join(f"<li>{escape(e)}</li>" for e in t.errors)
                     + "</ul></div>")
    parts += [_prompt(p, link) for p in t.prompts]
    if t.verifiers:
        parts.append("<h2>Verifiers</h2>" + "".join(_verifier(v, link) for v in t.verifiers))
    parts += [_env(e, link) for e in t.env_changes]
    if t.model_calls:
        parts.append(_model_calls(t))
    if t.files:
        parts.append('<h2>Collected files</h2><ul class="files">' + "".join(
            f'<li><a href="{escape(link(f.url))}">{escape(f.name)}</a> <span class="muted">(step '
            f'{escape(f.step_id)})</span></li>' for f in t.files) + "</ul>")
    return "\n".join(parts)


def _model_calls(t: Transcript) -> str:
    """Every model call of the run, as its gateway counted it: who, which API, tokens, time, why it failed."""
    rows = []
    for call in t.model_calls:
        tokens = "—" if call.input_tokens is None and call.output_tokens is None else \
            f"{call.input_tokens or 0:,} in · {call.output_tokens or 0:,} out"
        cost = "" if call.cost_usd is None else f" · ${call.cost_usd:.4f}"
        why = f' <span class="r-fail">{escape(call.failure)}{": " + escape(call.limit) if call.limit else ""}</span>' \
            if call.failure else ""
        rows.append(f"<tr><td>{escape(call.role)}</td><td>{escape(call.wire)}</td><td>{escape(call.model or '—')}</td>"
                    f"<td>{call.status}{why}</td><td>{tokens}{cost}</td><td>{call.latency_seconds:.2f}s</td></tr>")
    return ('<h2>Model calls</h2><p class="muted">counted by the run\'s model gateway</p><table class="calls">'
            "<tr><th>role</th><th>API</th><th>model</th><th>status</th><th>tokens</th><th>time</th></tr>"
            + "".join(rows) + "</table>")


def _pre(value: Clip | None) -> str:
    if value is None:
        return '<p class="muted">—</p>'
    note = f'<p class="muted">cut: {value.size:,} characters in all</p>' if value.cut else ""
    return f"<pre>{escape(value.text)}</pre>{note}"


def _prompt(p: PromptTranscript, link: Link) -> str:
    who = f" → agent <code>{escape(p.agent_name)}</code>" if p.agent_name else ""
    facts = [f"model {escape(p.model or 'unknown')}" + (' <span class="mock">mock</span>' if p.mock else ""),
             f"{p.tool_call_count if p.tool_call_count is not None else len(p.tool_calls)} tool call(s)"]
    if p.tokens:
        facts.append(f"{p.tokens.total:,} tokens ({p.tokens.prompt:,} prompt, {p.tokens.completion:,} completion)")
    if p.cost_usd is not None:
        facts.append(f"${p.cost_usd:.4f}")
    facts += [flag for flag, on in (("truncated", p.is_truncated), ("timed out", p.is_timeout)) if on]
    if p.trajectory_url:
        facts.append(f'<a href="{escape(link(p.trajectory_url))}">trajectory</a>')
    out = [f'<section class="prompt" id="prompt-{escape(p.prompt_id)}"><h2>Prompt <code>{escape(p.prompt_id)}'
           f"</code>{who}</h2>", f'<p class="muted">{" · ".join(facts)}</p>']
    if p.error:
        out.append(f'<p class="errors">{escape(p.error)}</p>')
    out += ["<h3>Prompt</h3>", _pre(p.prompt)]
    if len(p.turns) > 1:
        out.append("<h3>Turns</h3><ol class=\"turns\">")
        for turn in p.turns:
            said = escape(turn.message.shown(600)) if turn.message else "—"
            if turn.role == "user":
                out.append(f"<li><b>user{' (done)' if turn.done else ''}:</b> {said}</li>")
            else:
                reply = escape(turn.reply.shown(600)) if turn.reply else "—"
                err = f' <span class="r-fail">error: {escape(turn.error)}</span>' if turn.error else ""
                out.append(f"<li><b>agent</b> got: {said}<br>replied: {reply}{err}</li>")
        out.append("</ol>")
    if p.tool_calls:
        out.append('<h3>Tool calls</h3><ol class="tool-calls">')
        for call in p.tool_calls:
            where = f" on <code>{escape(call.server)}</code>" if call.server else ""
            flag = ' <span class="r-fail">error</span>' if call.is_error else ""
            out.append(f"<li><details><summary><code>{escape(call.name)}</code>{where}{flag}</summary>"
                       f"<b>arguments</b>{_pre(call.arguments)}<b>returned</b>{_pre(call.result)}</details></li>")
        out.append("</ol>")
    out += ["<h3>Reply</h3>", _pre(p.reply)]
    out += [f'<p class="muted">{escape(n)}</p>' for n in p.notes]
    return "\n".join(out) + "</section>"


def _verifier(v: VerifierTranscript, link: Link) -> str:
    score = f"skipped ({escape(v.skipped)})" if v.skipped else ("—" if v.score is None else f"{v.score:.3f}")
    head = f"<h3>{escape(v.verifier_id)} — score {score}" + (f" · {escape(v.aggregator)}" if v.aggregator else "")
    out = [f'<section class="verifier" id="verifier-{escape(v.verifier_id)}">{head}</h3>']
    if v.judge:
        judge = f"judge: {escape(v.judge.mode or '?')}"
        judge += f" <code>{escape(v.judge.agent_name)}</code>" if v.judge.agent_name else ""
        judge += f", model {escape(v.judge.model or 'unknown')}"
        judge += ' <span class="mock">mock</span>' if v.judge.mock else ""
        if v.judge.trajectory_url:
            judge += f' · <a class="judge-trajectory" href="{escape(link(v.judge.trajectory_url))}">judge\'s trajectory</a>'
        out.append(f'<p class="muted">{judge}</p>')
    if v.panel:
        out.append(_panel_line(v))
    if v.error:
        out.append(f'<p class="errors">{escape(v.error)}</p>')
    if v.rows:
        out.append("<table><thead><tr><th>row</th><th>axis</th><th>result</th><th>score</th><th>weight</th>"
                   "<th>justification</th></tr></thead><tbody>")
        for r in v.rows:
            name = escape(r.id) + (f"<br><span class=\"muted\">{escape(r.label)}</span>" if r.label else "")
            out.append(f"<tr><td>{name}</td><td>{escape(r.axis or '')}</td>"
                       f"<td class=\"r-{escape(r.result or '')}\">{escape(r.result or '')}</td>"
                       f"<td class=\"num\">{'' if r.score is None else f'{r.score:g}'}</td>"
                       f"<td class=\"num\">{'' if r.weight is None else f'{r.weight:g}'}</td>"
                       f"<td>{escape(r.justification or '')}{_verdicts(r)}</td></tr>")
        out.append("</tbody></table>")
    return "\n".join(out) + "</section>"


def _panel_line(v: VerifierTranscript) -> str:
    """The panel's rule and judges, its disagreement, and what it could not score."""
    assert v.panel is not None
    p = v.panel
    text = f"panel of {len(p.judges)} ({escape(', '.join(p.judges))}), rule {escape(p.rule)}"
    if p.disagreement is not None:
        text += f" · disagreement {p.disagreement:.2f}"
    if p.split_criteria:
        text += f" · split on {escape(', '.join(p.split_criteria))}"
    if p.unscored:
        text += f' · <b class="unscored">{len(p.unscored)} unscored</b> ({escape(", ".join(p.unscored))})'
    if p.unreadable_judges:
        text += f" · unreadable: {escape(', '.join(p.unreadable_judges))}"
    return f'<p class="muted panel">{text}</p>'


def _verdicts(r: VerifierRow) -> str:
    """Each panel judge's verdict under the combined justification."""
    if not r.judges:
        return ""
    items = "".join(f'<li><code>{escape(j.judge)}</code> <span class="r-{escape(j.result)}">{escape(j.result)}</span>'
                    f"{'' if j.score is None else f' ({j.score:g})'}: {escape(j.justification or '')}</li>"
                    for j in r.judges)
    split = "" if r.disagreement is None else f'<span class="muted">disagreement {r.disagreement:.2f}</span>'
    return f'<ul class="verdicts">{items}</ul>{split}'


def _env(e: EnvChanges, link: Link) -> str:
    def snap(step: str, url: str | None) -> str:
        label = f"snapshot <code>{escape(step)}</code>"
        return f'<a href="{escape(link(url))}">{label}</a>' if url else label

    out = [f'<section class="env-changes"><h2>Changes in env <code>{escape(e.env_id)}</code></h2>',
           f"<p>Between {snap(e.before_step, e.before_url)} and {snap(e.after_step, e.after_url)}: "
           f"{len(e.changes) + e.more} change(s).</p>",
           "<table><thead><tr><th>change</th><th>where</th><th>before</th><th>after</th></tr></thead><tbody>"]
    for c in e.changes:
        before = escape(c.before.shown(800)) if c.before is not None and c.change != "added" else ""
        after = escape(c.after.shown(800)) if c.after is not None else ""
        out.append(f"<tr><td>{c.change}</td><td><code>{escape(c.path)}</code></td><td><code>{before}</code></td>"
                   f"<td><code>{after}</code></td></tr>")
    out.append("</tbody></table>" + (f"<p class=\"muted\">… and {e.more} more</p>" if e.more else "") + "</section>")
    return "\n".join(out)
