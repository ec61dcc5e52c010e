"""One redaction for everything a run stores: reports, trajectories, conversations, judge records,
log lines (``flows.redaction`` filters every handler with it) and the log files of what it started.

The secrets are the run's: resolved ``${VAR}`` values, ``secret_env`` values of env and agent
blocks, model API keys. A value shorter than ``MIN_SECRET_LENGTH`` is never masked: masking a
one-character "secret" would garble every message that contains that character, and a value
that short is no secret worth the name (the run warns about it instead).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

MASK = "***"
MIN_SECRET_LENGTH = 6
"""Shortest value that is masked (see the module docstring)."""
_MAX_FILE_BYTES = 64 * 1024 * 1024


class Redactor:
    """Masks every occurrence of the given secret values in text and in nested data."""

    def __init__(self, secrets: Iterable[str]) -> None:
        live = sorted({s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_LENGTH}, key=len,
                      reverse=True)
        self._pattern = re.compile("|".join(re.escape(s) for s in live)) if live else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def text(self, value: str) -> str:
        return self._pattern.sub(MASK, value) if self._pattern is not None else value

    def data(self, value: Any) -> Any:
        """``value`` with every string (keys included) redacted, at any depth."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self.data(v) for k, v in value.items()}
        return value

    def record(self, body: bytes | str) -> bytes | str:
        """A stored record's body redacted (bytes that are not UTF-8 text are left alone)."""
        if self._pattern is None:
            return body
        if isinstance(body, str):
            return self.text(body)
        try:
            return self.text(body.decode("utf-8")).encode("utf-8")
        except UnicodeDecodeError:
            return body

    def files(self, folder: Path, patterns: Iterable[str] = ("**/*.log", "**/*.txt", "**/*.json")) -> None:
        """Redact text files under ``folder`` in place (logs of envs and agents, script output)."""
        if self._pattern is None or not folder.is_dir():
            return
        for pattern in patterns:
            for path in folder.glob(pattern):
                try:
                    if not path.is_file() or path.is_symlink() or path.stat().st_size > _MAX_FILE_BYTES:
                        continue
                    data = path.read_bytes()
                    redacted = self.record(data)
                    if redacted != data:
                        path.write_bytes(redacted if isinstance(redacted, bytes) else redacted.encode())
                except OSError:
                    continue
