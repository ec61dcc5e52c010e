"""deploy → load → tools over MCP → snapshot → outcome verifier → teardown, for both reference envs,
with both artifact stores (a local folder, and S3 on moto's server through an ArtifactStore block)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from artifacts.conftest import BUCKET, moto_endpoint, s3_client  # noqa: F401 (fixtures)
from prefect_agentenv.artifacts import get_artifact_store
from prefect_agentenv.settings import get_settings

from .helpers import EXAMPLES, publish_examples, run_doc

PIPELINES = {
    "email": {"artifact": "inbox", "tool_effect": ("emails", "m3"),
              "before": [{"id": "later", "type": "register_env_triggers", "env_id": "email",
                          "triggers": [{"at": "2026-10-02T11:00:00Z", "action": "deliver_email",
                                        "data": {"id": "m3", "from": "dana@northwind.example",
                                                 "to": ["sam@northwind.example"], "body": "Any update?"}}]},
                         {"id": "clock", "type": "sync_env_clock", "env_id": "email",
                          "time": "2026-10-02T12:00:00Z"}],
              "script": "verify-delivery"},
    "records": {"artifact": "clinic", "tool_effect": ("requests", "REQ-0001"), "before": [],
                "script": "verify-records"},
}


@pytest.fixture(params=["local", "s3"])
def store_kind(request: pytest.FixtureRequest, agentenv_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "s3":
        request.getfixturevalue("prefect_harness")
        endpoint = request.getfixturevalue("moto_endpoint")
        request.getfixturevalue("s3_client")
        from prefect_agentenv.blocks import ArtifactStore

        ArtifactStore(kind="s3", bucket=BUCKET, prefix=f"pipelines-{id(request)}", endpoint_url=endpoint,
                      region="us-east-1", aws_access_key_id="testing",
                      aws_secret_access_key="testing").save("pipeline-store", overwrite=True)
        monkeypatch.setenv("PREFECT_AGENTENV_ARTIFACT_STORE_BLOCK", "pipeline-store")
        get_settings.cache_clear()
    publish_examples()
    with get_artifact_store() as store:
        store.publish_files("verify-records", {"verify.py": EXAMPLES / "artifacts" / "verify_records.py"})
    yield request.param
    get_settings.cache_clear()


@pytest.mark.parametrize("env_id", ["email", "records"])
async def test_an_env_runs_its_whole_lifecycle_with_either_store(env_id: str, store_kind: str) -> None:
    p = PIPELINES[env_id]
    report = await run_doc([
        {"id": "env", "type": "deploy_env", "env_id": env_id, "depends_on": []},
        {"id": "load", "type": "load_artifact", "env_id": env_id, "artifact_id": p["artifact"]},
        *p["before"],
        {"id": "outcome", "type": "env_outcome_verifier", "env_id": env_id, "verifier_id": "outcome",
         "script_artifact_id": p["script"]},
        {"id": "snapshot", "type": "snapshot_env", "env_id": env_id, "artifact_id": f"{env_id}-pipeline"},
    ], f"{env_id}-{store_kind}")
    assert report.status == "completed", report.error
    assert report.context.metadata.verifications["outcome"].score == 1.0
    snap = report.context.metadata.env_snapshots["snapshot"]
    assert (snap.url or "").startswith("s3://" if store_kind == "s3" else "file://")
    with get_artifact_store() as store:
        state = json.loads(store.read_file(store.get_metadata(f"{env_id}-pipeline", snap.artifact.version),
                                           "state.json"))
    resource, key = p["tool_effect"]
    assert any(key in json.dumps(r) for r in state[resource]), f"the tool call's effect is in the snapshot: {state}"
    base = report.context.deployed_envs[env_id].base_url
    with pytest.raises(httpx.TransportError):
        httpx.get(base + "/.well-known/agent-env.json", timeout=2)


@pytest.mark.usefixtures("prefect_harness", "agentenv_home")
async def test_loading_data_into_an_mcp_only_env_fails_clearly_without_hanging() -> None:
    import sys

    from prefect_agentenv.blocks import AgentEnvironment

    publish_examples()
    await AgentEnvironment(command=[sys.executable, "-m", "prefect_agentenv.envs.email", "--host", "{host}",
                                    "--port", "{port}", "--no-data-plane"], version="mcp-only").save(
        "email-mcp-only", overwrite=True)
    with get_artifact_store() as store:
        store.publish_environment("mcp-only-inbox", "email", "inbox.json", EXAMPLES / "artifacts" / "inbox.json")
    report = await run_doc([
        {"id": "env", "type": "deploy_env", "env_id": "email-mcp-only", "depends_on": []},
        {"id": "load", "type": "load_artifact", "env_id": "email-mcp-only", "artifact_id": "mcp-only-inbox"},
    ])
    assert report.status == "failed"
    assert "data" in (report.error or "") and report.duration_s < 30
    steps = {s.id: s for s in report.steps}
    assert steps["env"].state == "completed" and (steps["load"].duration_s or 0) < 5
