"""A run that used secrets (an env block's secret_env, a ${VAR} in a step) leaves none of them in
the report, the run folder, the JSONL results, the Prefect artifacts, states or logs."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import yaml
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterFlowRunId,
    FlowRunFilter,
    FlowRunFilterParentFlowRunId,
    LogFilter,
    LogFilterFlowRunId,
)

from prefect_agentenv.blocks import AgentEnvironment
from prefect_agentenv.envs.catalog import REFERENCE_ENVS
from prefect_agentenv.flows.benchmark import benchmark
from prefect_reads import flushed_logs, settled_task_runs

pytestmark = pytest.mark.usefixtures("prefect_harness")

BLOCK_SECRET = "blk-4f9e2a77c1"
VAR_SECRET = "var-81c3d0e5b2"


def files_holding(folder: Path, *secrets: str) -> list[str]:
    found = []
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path}: {s}" for s in secrets if s.encode() in data]
    return found


async def test_no_secret_reaches_any_output_of_a_benchmark_run(tmp_path: Path, agentenv_home: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTENV_SCAN_TOKEN", VAR_SECRET)
    env_id = f"scan-{uuid.uuid4().hex[:8]}"
    await AgentEnvironment(command=REFERENCE_ENVS["email"].command(),
                           secret_env={"MAIL_TOKEN": BLOCK_SECRET}).asave(env_id)
    steps = [{"id": "env", "type": "deploy_env", "env_id": env_id, "depends_on": []},
             {"id": "call", "type": "test_fail", "fail_task_on_error": False,
              "message": "the CRM refused token ${AGENTENV_SCAN_TOKEN}"},
             {"id": "grade", "type": "test_score", "score": 1.0}]
    bench = tmp_path / "bench.yaml"
    bench.write_text(yaml.safe_dump({"name": "Scan", "slug": "secret-scan", "tasks": [{"id": "scan", "steps": steps}]}))
    reports = tmp_path / "reports"
    state = await benchmark(path=str(bench), report_dir=str(reports), return_state=True)
    assert state.is_completed(), state.message

    (report_file,) = reports.glob("scan*epoch0.json")
    report = json.loads(report_file.read_text())
    call = next(s for s in report["steps"] if s["id"] == "call")
    assert call["state"] == "tolerated" and "the CRM refused token ***" in call["error"]  # it was there to leak
    assert report["context"]["deployed_envs"][env_id]["mcp_url"]
    assert files_holding(agentenv_home, BLOCK_SECRET, VAR_SECRET) == []  # run folders, store, JSONL results
    assert list(agentenv_home.rglob("results.jsonl")) and list(agentenv_home.rglob("submission.json"))
    assert files_holding(reports, BLOCK_SECRET, VAR_SECRET) == []

    bench_run_id = state.state_details.flow_run_id
    async with get_client() as client:
        children = await client.read_flow_runs(
            flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[bench_run_id])))
        run_ids = [bench_run_id, *(c.id for c in children)]
        flow_runs = [await client.read_flow_run(i) for i in run_ids]
        task_runs = await settled_task_runs(run_ids, client, at_least=3)
        artifacts = await client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=run_ids)))
        logs = await flushed_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=run_ids)), client)
    assert len(children) == 1 and artifacts and logs
    failed = next(t for t in task_runs if t.name == "call")
    assert failed.state and "***" in (failed.state.message or "")
    seen = json.dumps([*(r.model_dump(mode="json") for r in flow_runs), *(t.model_dump(mode="json") for t in task_runs),
                       *(a.model_dump(mode="json") for a in artifacts), *(lg.model_dump(mode="json") for lg in logs)])
    assert BLOCK_SECRET not in seen and VAR_SECRET not in seen
