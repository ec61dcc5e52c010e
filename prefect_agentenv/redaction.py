"""One redaction pass for everything a run stores: reports, trajectories, conversations, judge
records, log lines and the log files of what it started.

The secrets are the run's: resolved ``${VAR}`` values, ``secret_env`` values of env and agent
blocks, model API keys. A value shorter than ``MIN_SECRET_LENGTH`` is never masked: masking a
one-character "secret" would garble every message that contains that character, and a value
that short is no secret worth the name (the run warns about it instead).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
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


class _LogFilter(logging.Filter):
    def __init__(self, redact: Callable[[str], str]) -> None:
        super().__init__()
        self._redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = self._redact(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


@contextmanager
def redacted_logs(secrets: set[str]) -> Iterator[None]:
    """While the block runs, every log handler of the process masks the secrets (read live from
    ``secrets``, which grows as the run resolves more of them): the console, files, and the
    handler that ships logs to the Prefect API."""
    log_filter = _LogFilter(lambda text: Redactor(secrets).text(text) if secrets else text)
    handlers = _all_handlers()
    for handler in handlers:
        handler.addFilter(log_filter)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(log_filter)


def _all_handlers() -> list[logging.Handler]:
    loggers = [logging.getLogger()] + [logger for logger in logging.Logger.manager.loggerDict.values()
                                       if isinstance(logger, logging.Logger)]
    return list({id(h): h for logger in loggers for h in logger.handlers}.values())
