"""A reviewer labels a judged run in the real Prefect UI.

The labelling flow runs in its own process against a real ``prefect server start`` (its UI on),
pauses on the form of its one sampled task run, and a headless Chromium opens the paused flow run,
presses Resume, fills the form the UI generates from the flow's RunInput model and submits it. The
answer must complete the flow run and become the run's ``ui`` labels in the artifact store.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from prefect.settings import PREFECT_API_URL, temporary_settings

from flows.test_labelling import judged_run, paused
from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.results.judges.labels import load_labels
from real_run import prefect_server
from servers import Server, stop_process
from viewer.browser import chromium, requires_browser

pytestmark = [requires_browser, pytest.mark.slow]

FLOW = ("import asyncio, sys\n"
        "from prefect_agentenv.flows.labelling import label_judged_run\n"
        "state = asyncio.run(label_judged_run(run=sys.argv[1], reviewer='ana', n=1, poll_interval_seconds=1,\n"
        "                                     timeout_seconds=600, return_state=True))\n"
        "print(state.type.value, state.message)\n"
        "sys.exit(0 if state.is_completed() else 1)\n")
"""The labelling flow as a worker would run it: in its own process, against the server."""


@pytest.fixture
def ui_server(tmp_path: Path) -> Iterator[Server]:
    """A real Prefect server with its UI, in a Prefect home of this test's own."""
    home = tmp_path / "prefect-home"
    home.mkdir()
    with prefect_server(home) as server:
        yield server


@dataclass
class LabellingFlow:
    """The labelling flow's process and the file its output goes to."""

    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text()


@pytest.fixture
def labelling(ui_server: Server, agentenv_home: Path, tmp_path: Path) -> Iterator[LabellingFlow]:
    """The labelling flow of a judged run of one task run, started against the server."""
    with temporary_settings({PREFECT_API_URL: f"{ui_server.base_url}/api"}):
        run = asyncio.run(judged_run(epochs=1))
    env = {**ui_server.environ, "PREFECT_AGENTENV_HOME": str(agentenv_home)}
    log = tmp_path / "flow.log"
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-c", FLOW, run], env=env, stdout=out, stderr=subprocess.STDOUT,
                                   cwd=tmp_path)
    try:
        yield LabellingFlow(process, log)
    finally:
        stop_process(process)  # a flow run still paused after a failure is stopped with its process


def test_a_reviewer_labels_a_task_run_through_the_prefect_ui(ui_server: Server, labelling: LabellingFlow) -> None:
    with temporary_settings({PREFECT_API_URL: f"{ui_server.base_url}/api"}):
        flow_run_id = asyncio.run(paused("label mail/r1 by ana", 1))
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{ui_server.base_url}/runs/flow-run/{flow_run_id}")
        page.get_by_role("button", name="Resume").first.click(timeout=60_000)
        page.get_by_text("I replied to Dana").wait_for(timeout=30_000)  # the task run's reply, above the form
        _choose(page, "rubric / k1", "pass")
        _field(page, "Note on rubric / k1").locator("textarea").fill("signed by Sam")
        _choose(page, "rubric / k2", "fail")
        _choose(page, "rubric / k4", "pass")  # k3 is left blank: not labelled
        page.get_by_role("button", name="Submit").click()
        assert labelling.process.wait(timeout=120) == 0, labelling.output()
        page.get_by_text("Completed").first.wait_for(timeout=30_000)

    assert labelling.output().startswith("COMPLETED 3 labels from ana on 1 task run of mail/r1")
    with get_artifact_store() as store:
        labels = load_labels(store, "mail", "r1")
    assert [(lb.criterion_id, lb.label, lb.note, lb.reviewer, lb.source) for lb in labels] == [
        ("k1", "pass", "signed by Sam", "ana", "ui"), ("k2", "fail", None, "ana", "ui"), ("k4", "pass", None, "ana", "ui")]


def _field(page: Any, title: str) -> Any:
    """The form's field under that visible label (the UI marks a field that has a default "(Optional)")."""
    return page.locator(".schema-form-property").filter(has=page.get_by_text(f"{title} (Optional)", exact=True))


def _choose(page: Any, title: str, verdict: str) -> None:
    """Pick the verdict in the field's select and see it chosen.

    The select opens from the keyboard (a synthetic click focuses it without opening it here).
    """
    select = _field(page, title).locator("button.p-select-button__control")
    select.press("ArrowDown")
    page.get_by_role("listbox").get_by_role("option", name=verdict, exact=True).click()
    expect(select).to_have_text(verdict)
