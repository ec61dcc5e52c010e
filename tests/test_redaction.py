"""The log filter holds each run's secrets once, and masks them in every handler while a run is on."""

from __future__ import annotations

import io
import logging

from prefect_agentenv import redaction
from prefect_agentenv.redaction import MASK, redacting_logs


def _captured() -> tuple[logging.Logger, io.StringIO, logging.Handler]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("prefect_agentenv.test_redaction")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    return logger, stream, handler


def test_a_run_entered_twice_is_registered_once_and_masked_until_its_outer_exit() -> None:
    logger, stream, handler = _captured()
    secrets = {"s3cr3t-value"}
    try:
        with redacting_logs(secrets):
            with redacting_logs(secrets):  # the run's scope inside its task run
                assert sum(held is secrets for held in redaction._active) == 1
                logger.info("inner %s", "s3cr3t-value")
            logger.info("outer s3cr3t-value")  # the report phase, after the scope closed
        assert not any(held is secrets for held in redaction._active)
        logger.info("after s3cr3t-value")
    finally:
        logger.removeHandler(handler)
    lines = stream.getvalue().splitlines()
    assert lines == [f"inner {MASK}", f"outer {MASK}", "after s3cr3t-value"]


def test_two_runs_with_equal_secret_sets_stay_registered_apart() -> None:
    first, second = {"same-secret"}, {"same-secret"}
    with redacting_logs(first):
        with redacting_logs(second):
            assert sum(held is first for held in redaction._active) == 1
            assert sum(held is second for held in redaction._active) == 1
        assert any(held is first for held in redaction._active)
