"""One real task run on a real `prefect server start` (its UI on), shared by the transcript and browser tests.

The run is the CLI's: ``prefect-agentenv run`` in its own process against the server, with the
reference email env, the scripted agent and the mock judge, two snapshots of the mailbox, the
agent's file collected, and a secret in the prompt that must never come out.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect_agentenv.artifacts.local import LocalArtifactBackend
from prefect_agentenv.settings import AgentEnvSettings
from servers import LOOPBACK, PORT, Server

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SECRET = "hunter2-transcript-secret"
TASK_ID = "transcript-demo"
PLAN = json.loads((REPO / "examples" / "plans" / "reply-to-dana.json").read_text())["plan"]


def steps() -> list[dict[str, Any]]:
    return [
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "inbox", "type": "load_artifact", "env_id": "email", "artifact_id": "inbox", "depends_on": ["email"]},
        {"id": "before", "type": "snapshot_env", "env_id": "email", "depends_on": ["inbox"]},
        {"id": "assistant", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "assistant",
         "env_ids": ["email"], "depends_on": ["email"], "agent_config": {"plan": PLAN}},
        {"id": "reply", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "reply",
         "prompt": "Reply to Dana. The door code is ${TRANSCRIPT_SECRET}.", "depends_on": ["before", "assistant"]},
        {"id": "after", "type": "snapshot_env", "env_id": "email", "depends_on": ["reply"]},
        {"id": "files", "type": "collect_artifacts", "agent_name": "assistant", "depends_on": ["reply"]},
        {"id": "tone", "type": "rubrics_verifier", "prompt_id": "reply", "verifier_id": "tone", "depends_on": ["reply"],
         "criteria": [{"id": "polite", "criterion": "The email to Dana is polite.", "axis": "communication"}]},
    ]


@dataclass
class RealRun:
    """The finished run: its report, the server's URLs, the environment the CLI ran with."""

    report: dict[str, Any]
    report_path: Path
    server_url: str
    env: dict[str, str]

    @property
    def api_url(self) -> str:
        return f"{self.server_url}/api"


def prefect_server(home: Path) -> Server:
    """A real Prefect server with its UI, on a free loopback port (its UI calls the API on that port)."""
    env = {"PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_UI_ENABLED": "true",
           "PREFECT_API_URL": f"http://{LOOPBACK}:{PORT}/api", "PREFECT_UI_API_URL": f"http://{LOOPBACK}:{PORT}/api",
           "PREFECT_LOGGING_LEVEL": "WARNING"}
    return Server([str(BIN / "prefect"), "server", "start", "--host", LOOPBACK, "--port", PORT], ready="/api/health",
                  log=home / "server.log", env=env, name="prefect server", timeout=90, stop_timeout=20)


def run_task(server: Server, folder: Path) -> RealRun:
    """Publish the example artifacts and run the document with the CLI against ``server``."""
    env = {**server.environ, "PREFECT_AGENTENV_HOME": str(folder / "agentenv"), "TRANSCRIPT_SECRET": SECRET}
    doc, report = folder / "task.json", folder / "report.json"
    doc.write_text(json.dumps({"id": TASK_ID, "steps": steps()}))
    store = LocalArtifactBackend(AgentEnvSettings(home=folder / "agentenv").artifacts_dir)
    store.publish_environment("inbox", "email", "inbox.json", REPO / "examples" / "artifacts" / "inbox.json")
    done = subprocess.run([str(BIN / "prefect-agentenv"), "run", str(doc), "--report", str(report)], env=env,
                          capture_output=True, text=True, timeout=300, cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    return RealRun(report=json.loads(report.read_text()), report_path=report, server_url=server.base_url, env=env)
