"""OpenHands on a Harbor task, on the mock model: its terminal tool's one interactive bash (in a tmux pane) is
a terminal inside the task's environment (harnesses/harbor_trial.py says what is asserted). Needs the local
docker daemon (`make docker-up`)."""

from __future__ import annotations

import pytest

from harnesses.harbor_trial import assert_shell_acts_in_the_environment

pytestmark = pytest.mark.slow


# OpenHands sets its terminal up assuming a local bash (it types its prompt setup, then `clear`, 0.1 s apart, and
# counts prompts on the screen before and after each command). A terminal in a container starts in about a second
# on a loaded machine, and the mock model answers at once, so its first command may be read as done at the setup's
# late prompt, before its output: run again once (docs/development.md, "Tests that may run twice").
@pytest.mark.flaky(reruns=1, reruns_delay=2)
async def test_openhands_runs_its_terminal_inside_the_task_environment(harness_home: object, daemon: None) -> None:
    await assert_shell_acts_in_the_environment("openhands")
