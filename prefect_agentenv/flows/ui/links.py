"""Links the Prefect UI can open: flow run pages, presigned URLs of stored files, or the file itself.

Reports keep the store's own addresses (``s3://…``, ``file:///…``); a browser opens neither. What
the UI shows is rewritten here: an S3 object becomes a presigned URL, a task run's report becomes
its flow run's page (its artifacts tab shows the report), and a small text file from a local store
is embedded in the artifact itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote, urlparse

from prefect.settings import get_current_settings

from prefect_agentenv.artifacts import ArtifactBackend
from prefect_agentenv.context import CollectedFiles

EMBED_MAX_BYTES = 20_000
"""Largest local text file copied into a Prefect artifact."""


def flow_run_url(flow_run_id: str | None) -> str | None:
    """The flow run's page in the Prefect UI (None without a UI, e.g. a headless server)."""
    settings = get_current_settings()
    base = settings.ui_url or (str(settings.api.url).removesuffix("/api") if settings.api.url else None)
    return f"{base.rstrip('/')}/runs/flow-run/{flow_run_id}" if base and flow_run_id else None


def run_url(flow_run_id: str | None, task_run_id: str | None = None) -> str | None:
    """The page of a benchmark's task run: its task run's when it ran as one, else its flow run's."""
    if not task_run_id:
        return flow_run_url(flow_run_id)
    page = flow_run_url(task_run_id)
    return page.replace("/runs/flow-run/", "/runs/task-run/") if page else None


def file_links_markdown(store: ArtifactBackend, collected: Mapping[str, CollectedFiles]) -> list[str]:
    """A "Files" section for the collected files of a run: a link each, or its text inline."""
    lines: list[str] = []
    for step_id, record in collected.items():
        for name, url in record.artifacts.items():
            opened = store.browser_url(str(url))
            if opened:
                lines.append(f"- `{step_id}`: [{name}]({opened})")
                continue
            lines.append(f"- `{step_id}`: {name} (`{url}`)")
            lines += _inline(str(url))
    return ["", "## Files", "", *lines] if lines else []


def _inline(url: str) -> list[str]:
    """A local file's text as a fenced block, when it is small text (the artifact is the link)."""
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return []
    path = Path(unquote(parsed.path))
    try:
        if path.stat().st_size > EMBED_MAX_BYTES:
            return []
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    fence = "~~~~" if "```" in text else "```"
    return ["", f"  {fence}", *(f"  {line}" for line in text.splitlines()), f"  {fence}", ""]
