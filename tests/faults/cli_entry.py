"""The real ``prefect-agentenv`` command line with the fault envs added to the reference catalogue."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from envs import install  # noqa: E402 (the path above makes the sibling module importable)

install()

from prefect_agentenv.cli import main  # noqa: E402

main()
