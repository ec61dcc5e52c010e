"""The commands' Prefect defaults reach Prefect's own settings, and a user's value wins."""

from __future__ import annotations

import json
import os
import subprocess
import sys

_PROBE = """
import json
from prefect_agentenv.prefect_defaults import set_prefect_defaults
set_prefect_defaults()
from prefect.settings import get_current_settings
settings = get_current_settings()
print(json.dumps({"timeout": settings.server.ephemeral.startup_timeout_seconds,
                  "analytics": settings.server.analytics_enabled}))
"""


def _settings_seen_by_prefect(**env: str) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if k not in (
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "PREFECT_SERVER_ANALYTICS_ENABLED")}
    out = subprocess.run([sys.executable, "-c", _PROBE], env={**clean, **env}, capture_output=True, text=True,
                         timeout=120, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_the_temporary_server_gets_two_minutes_to_start_and_analytics_stay_off() -> None:
    assert _settings_seen_by_prefect() == {"timeout": 120, "analytics": False}


def test_a_users_own_values_win() -> None:
    assert _settings_seen_by_prefect(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="45",
                                     PREFECT_SERVER_ANALYTICS_ENABLED="true") == {"timeout": 45, "analytics": True}
