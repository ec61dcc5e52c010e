"""Every exit code the command line gives, in one table (docs/reliability.md draws the same).

A pipeline branches on these numbers, so they never change meaning: a new way to end gets a new
number. The ones a benchmark run ends with are decided in one place,
:mod:`prefect_agentenv.results.run_outcome`, with its Prefect state and its one line.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What a command's exit status means."""

    OK = 0
    """It ran: a task completed (whatever its score), a check passed, a benchmark ran."""
    FAILED = 1
    """It ran and failed: a step failed the task, nothing ran, a check found a problem."""
    INVALID = 2
    """A user mistake found before anything started: a document, an option, a path, a name."""
    CANCELLED = 3
    """Cancelled from Prefect (the UI's Cancel, ``prefect flow-run cancel``)."""
    GATE = 4
    """A gate failed: ``--fail-under`` or ``--fail-on-regression``."""
    INFRASTRUCTURE = 5
    """More task runs failed for infrastructure than ``infrastructure.max_error_rate`` allows."""
    JUDGE_GATE = 6
    """A rubric score rests on a judge setup not calibrated as ``--require-calibrated-judge`` asks."""
    BUDGET = 7
    """The run's budget was spent before every task run started."""
    SIGINT = 130
    """Stopped by Ctrl-C (SIGINT)."""
    SIGTERM = 143
    """Stopped by SIGTERM (``kill``, a worker stopping its run)."""
