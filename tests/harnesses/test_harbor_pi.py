"""pi on a Harbor task, on the mock model: its ``bash -c`` acts inside the task's environment
(harnesses/harbor_trial.py says what is asserted). Needs the local docker daemon (`make docker-up`)."""

from __future__ import annotations

import pytest

from harnesses.harbor_trial import assert_shell_acts_in_the_environment

pytestmark = pytest.mark.slow


async def test_pi_runs_its_shell_inside_the_task_environment(harness_home: object, daemon: None) -> None:
    await assert_shell_acts_in_the_environment("pi")
