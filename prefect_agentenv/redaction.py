"""One redaction for everything a run stores: reports, trajectories, conversations, judge records,
log lines (:func:`redacting_logs` filters every handler with it) and the log files of what it started.

The secrets are the run's: resolved ``${VAR}`` values, ``secret_env`` values of env and agent
blocks, model API keys. A value shorter than ``MIN_SECRET_LENGTH`` is never masked: masking a
one-character "secret" would garble every message that contains that character, and a value
that short is no secret worth the name (the run warns about it instead).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
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


def redact(value: Any, secrets: set[str]) -> Any:
    """Replace every occurrence of a secret value in strings, at any depth."""
    return Redactor(secrets).data(value)


# Log records. Reports are redacted when they are built; log records are redacted here, by a filter
# put on every handler (Prefect's API handler, the console, a file) while a run is active. The
# filter knows the secret values of every run in progress in this process (a benchmark runs
# several), and rewrites a record only when one of them is in it.

_active: list[set[str]] = []
"""The (growing) secret sets of the runs in progress in this process."""


class _RedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        secrets = set().union(*_active) if _active else set()
        if not secrets:
            return True
        message = record.getMessage()
        redactor = Redactor(secrets)
        clean = redactor.text(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None:
            text = record.exc_text or logging.Formatter().formatException(record.exc_info)
            clean = redactor.text(text)
            if clean != text:
                # Formatters append exc_text as is; without exc_info they never re-render the traceback.
                record.exc_text, record.exc_info = clean, None
        return True


_FILTER = _RedactingFilter()


def _install() -> None:
    """Put the filter on every handler that exists now (Prefect's are set up at import)."""
    loggers = [logging.getLogger()] + [lg for lg in logging.root.manager.loggerDict.values()
                                       if isinstance(lg, logging.Logger)]
    for lg in loggers:
        for handler in lg.handlers:
            if _FILTER not in handler.filters:
                handler.addFilter(_FILTER)


@contextmanager
def redacting_logs(secrets: set[str]) -> Iterator[None]:
    """Redact ``secrets`` (the set may grow while the run goes on) from every log record until exit.

    A run enters it once; a set already registered (the run's scope inside its task run, a scoring
    run sharing its parent's set) is left as it is, so the filter holds each run's set once."""
    if any(held is secrets for held in _active):
        yield
        return
    _install()
    _active.append(secrets)
    try:
        yield
    finally:
        # By identity: another run's set may hold the same values now (two empty sets are equal)
        # and must stay registered while that run goes on.
        del _active[next(i for i, held in enumerate(_active) if held is secrets)]
