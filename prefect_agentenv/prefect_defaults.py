"""The Prefect settings this package's commands choose when the user has not chosen them.

They are environment variables, set before Prefect is imported (Prefect reads its settings once,
at import), and only where unset, so a user's own value always wins.
"""

from __future__ import annotations

import os

EPHEMERAL_STARTUP_TIMEOUT_SECONDS = 120
"""How long a command waits for Prefect's temporary server (no ``PREFECT_API_URL``) to start.

Its first start on a machine creates and migrates a new database: on a busy 2-core machine that
took longer than Prefect's default of 20 s, and the first ``make demo`` of a fresh clone ended
with "Timed out while attempting to connect to ephemeral Prefect API server". Later starts take
a few seconds; the longer limit only matters when the start is slow."""


def set_prefect_defaults() -> None:
    """No analytics ping (offline machines would only time out) and a patient temporary server."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", str(EPHEMERAL_STARTUP_TIMEOUT_SECONDS))
