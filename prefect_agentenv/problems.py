"""A problem found in a document: where it is, what is wrong, and how to fix it.

It lives at the bottom of the package, beside the exception tree, because
:class:`~prefect_agentenv.exceptions.TaskDocumentError` carries a list of them; the document
validators above build them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class Problem:
    """One validation problem or warning.

    Attributes:
        message: what is wrong.
        path: JSON path of the offending value, e.g. ``$[3].agent_name``.
        step_id: id of the step it belongs to, when it belongs to one.
        hint: how to fix it.
        line: line in the source (invalid JSON/YAML only).
        column: column in the source (invalid JSON/YAML only).
    """

    message: str
    path: str = "$"
    step_id: str | None = None
    hint: str | None = None
    line: int | None = None
    column: int | None = None
    severity: Literal["error", "warning", "notice"] = field(default="error")
    """``notice``: how an AgentEnv field was read (accepted, nothing to fix)."""

    def render(self) -> str:
        where = f"step '{shown(self.step_id)}' " if self.step_id else ""
        pos = f" (line {self.line}, column {self.column})" if self.line is not None else ""
        hint = f" — {self.hint}" if self.hint else ""
        return f"{where}at {self.path}{pos}: {self.message}{hint}"

    def to_dict(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def shown(text: str, limit: int = 80) -> str:
    """``text`` safe to print: control characters escaped, cut to ``limit`` characters."""
    safe = text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return safe if len(safe) <= limit else f"{safe[:limit - 1]}…"
