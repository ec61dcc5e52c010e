"""The Prefect settings this package's commands choose when the user has not chosen them.

They are environment variables, set before Prefect is imported (Prefect reads its settings once,
at import), and only where unset, so a user's own value always wins.
"""

from __future__ import annotations

import os
import sys

EPHEMERAL_STARTUP_TIMEOUT_SECONDS = 120
"""How long a command waits for Prefect's temporary server (no ``PREFECT_API_URL``) to start.

Its first start on a machine creates and migrates a new database: on a busy 2-core machine that
took longer than Prefect's default of 20 s, and the first ``make demo`` of a fresh clone ended
with "Timed out while attempting to connect to ephemeral Prefect API server". Later starts take
a few seconds; the longer limit only matters when the start is slow."""

CONSOLE_LEVEL_VARIABLE = "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"
"""Prefect's own setting for the level of its console handler (``handlers.console.level`` of its
``logging.yml``). The console handler is the root logger's, where ``prefect.flow_runs`` and
``prefect.task_runs`` propagate; their ``api`` handler, which feeds the Prefect UI, is their own
and is not touched by it."""

QUIET_CONSOLE_LEVEL = "WARNING"
"""The console handler's level for ``run``, ``bench``, ``rescore`` and the demo unless ``--verbose``:
a benchmark of five tasks printed ~80 lines of "Beginning subflow run…" and "Finished in state
Completed()" over its live board. Those lines stay in the Prefect UI and the run's logs."""

BOARD_CONSOLE_LEVEL = "CRITICAL"
"""The console handler's level for ``bench`` unless ``--verbose``: none of Prefect's lines over the live
board, errors included. A sweep with two failing task runs printed 16 ``| ERROR |`` lines and 4 stray
``NoneType: None`` lines above it; each failure is on the board (its error section), and whole in
``view`` and the Prefect UI."""


def set_prefect_defaults() -> None:
    """No analytics ping (offline machines would only time out) and a patient temporary server."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", str(EPHEMERAL_STARTUP_TIMEOUT_SECONDS))


def quiet_engine_logs(*, verbose: bool = False, level: str = QUIET_CONSOLE_LEVEL) -> None:
    """Keep Prefect's per-run INFO lines off the terminal (warnings and errors still show; ``bench``
    passes :data:`BOARD_CONSOLE_LEVEL`: none at all), unless ``verbose`` or the user set the console
    handler's level.

    The level goes through Prefect's own setting, so its API log handler still receives every line
    and the Prefect UI shows them. When Prefect's logging is already set up in this process, it is
    set up again, incrementally, which is how Prefect applies a changed level.
    """
    if verbose or CONSOLE_LEVEL_VARIABLE in os.environ:
        return
    os.environ[CONSOLE_LEVEL_VARIABLE] = level
    configuration = sys.modules.get("prefect.logging.configuration")
    if configuration is not None and configuration.PROCESS_LOGGING_CONFIG:
        configuration.setup_logging(incremental=True)
