"""``make demo``: run the example tasks on the embedded defaults.

Publishes the example artifacts to the local store (once per content), then runs every
example task whose steps this runner implements as a real ``agent_task`` flow run against the
reference envs and agents, and dry-runs the rest. Prints a summary and where to look.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
from pathlib import Path
from typing import Any

from prefect_agentenv.artifacts import ArtifactBackend, ArtifactNotFoundError, get_artifact_store
from prefect_agentenv.documents import validate_file
from prefect_agentenv.settings import get_settings
from prefect_agentenv.steps.registry import all_steps

ENV_ARTIFACTS = {"inbox": ("email", "inbox.json"), "clinic": ("records", "clinic.json")}
FILE_ARTIFACTS = {"verify-delivery": "verify_delivery.py"}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _current(store: ArtifactBackend, artifact_id: str, path: Path) -> bool:
    try:
        meta = store.get_metadata(artifact_id)
    except ArtifactNotFoundError:
        return False
    return [f.sha256 for f in meta.files] == [_sha(path)]


def publish_example_artifacts(folder: Path) -> list[str]:
    """Publish what the examples load, unless the latest version already has this content."""
    published = []
    with get_artifact_store() as store:
        for artifact_id, (env_name, name) in ENV_ARTIFACTS.items():
            path = folder / "artifacts" / name
            if not _current(store, artifact_id, path):
                meta = store.publish_environment(artifact_id, env_name, name, path)
                published.append(f"{artifact_id}@{meta.version}")
        for artifact_id, name in FILE_ARTIFACTS.items():
            path = folder / "artifacts" / name
            if not _current(store, artifact_id, path):
                meta = store.publish_files(artifact_id, {"verify.py": path})
                published.append(f"{artifact_id}@{meta.version}")
    return published


def _runnable(path: Path) -> tuple[Any, list[str]]:
    result = validate_file(path)
    pending = [p.message for p in result.problems if "not implemented yet" in p.message]
    other = [p.render() for p in result.problems if "not implemented yet" not in p.message]
    if other:
        raise SystemExit(f"{path}: invalid example:\n  " + "\n  ".join(other))
    return result.document, pending


def demo_overrides(folder: Path, task_id: str) -> dict[str, str]:
    """reply-to-dana names claude-code, which is not installed here: the demo runs it with the
    scripted reference agent and the plan in examples/plans (the same --override a user would give)."""
    plan = folder / "plans" / f"{task_id}.json"
    if not plan.exists():
        return {}
    return {"a2a_agent_id": "scripted", "assistant.agent_config": plan.read_text(encoding="utf-8")}


async def _run_all(docs: list[tuple[Path, Any]]) -> list[dict[str, Any]]:
    from prefect_agentenv.flows.agent_task import agent_task  # Prefect loads only when something runs

    reports = []
    for path, doc in docs:
        state = await agent_task(doc, overrides=demo_overrides(path.parent, doc.id),
                                 report_path=str(Path("reports") / f"{doc.id}.json"), return_state=True)
        report = await state.result(raise_on_failure=False)
        reports.append(report if isinstance(report, dict) else {"task_id": doc.id, "status": "crashed",
                                                                   "outcome": "FAILED", "score": 0.0,
                                                                   "error": str(report)})
    return reports


def main(argv: list[str]) -> int:
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    folder = Path(argv[0] if argv else "examples")
    settings = get_settings()
    print(f"prefect-agentenv demo: examples from {folder}/, local artifact store in {settings.artifacts_dir}/")
    implemented = sorted(t for t, d in all_steps().items() if d.implemented and not t.startswith("test_"))
    print(f"step types implemented: {', '.join(implemented)}")
    for ref in publish_example_artifacts(folder):
        print(f"published example artifact {ref}")
    to_run, planned = [], []
    for path in sorted(folder.glob("*.json")) + sorted(folder.glob("*.yaml")):
        doc, pending = _runnable(path)
        (planned if pending else to_run).append((path, doc, pending))
    for path, doc, pending in planned:
        print(f"\n{path.name}: dry run only ({len(pending)} step(s) not implemented yet)")
        for message in pending:
            print(f"  - {message}")
    reports = asyncio.run(_run_all([(p, d) for p, d, _ in to_run])) if to_run else []
    print("\n| task | outcome | score | status | seconds |\n|---|---|---|---|---|")
    for r in reports:
        score = "-" if r.get("score") is None else f"{r['score']:.2f}"
        print(f"| {r['task_id']} | {r['outcome']} | {score} | {r['status']} | {r.get('duration_s', 0):.1f} |")
    print("\nreports: reports/<task>.json; run folders (logs, verifier output): "
          f"{settings.runs_dir}/")
    if os.environ.get("PREFECT_API_URL"):
        print(f"Prefect UI: {os.environ['PREFECT_API_URL'].removesuffix('/api')} → Runs → flow 'agent-task' "
              "(each step is a task run; the Artifacts tab has the summary and the verifications)")
    else:
        print("tip: run `prefect server start` and set PREFECT_API_URL to see these runs in the Prefect UI")
    failed = [r for r in reports if r["status"] != "completed"]
    for r in failed:
        print(f"{r['task_id']} failed: {r.get('error')}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
