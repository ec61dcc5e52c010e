"""Secret values never reach a log handler: Prefect's API handler, the console, a file.

Reports are redacted when they are built; log records are redacted here, by a filter put on every
handler while a run is active. The filter knows the secret values of every run in progress in this
process (a benchmark runs several), and rewrites a record only when one of them is in it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from prefect_agentenv.redaction import Redactor

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
    """Redact ``secrets`` (the set may grow while the run goes on) from every log record until exit."""
    _install()
    _active.append(secrets)
    try:
        yield
    finally:
        # By identity: another run's set may hold the same values now (two empty sets are equal)
        # and must stay registered while that run goes on.
        del _active[next(i for i, held in enumerate(_active) if held is secrets)]
