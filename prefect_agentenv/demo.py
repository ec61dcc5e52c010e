"""``make demo``: run the example benchmark on the embedded defaults.

Publishes the example artifacts to the local store (once per content), runs
``examples/benchmark.yaml`` as a ``benchmark`` flow run (every task an ``agent_task`` subflow
against the reference envs and agents, judged by the built-in mock model), shows live progress
and the summary, and says where to look. Prefect's own line per flow and task run stays in the
Prefect UI; ``-v`` (``make demo DEMO_ARGS=-v``) prints those too.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from prefect_agentenv.artifacts import ArtifactBackend, ArtifactNotFoundError, get_artifact_store
from prefect_agentenv.prefect_defaults import quiet_engine_logs, set_prefect_defaults
from prefect_agentenv.settings import get_settings

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


def main(argv: list[str]) -> int:
    """Run the demo over ``argv``: ``[-v|--verbose] [FOLDER]`` (the examples' folder, ``examples`` by default)."""
    verbose = any(a in ("-v", "--verbose") for a in argv)
    folders = [a for a in argv if a not in ("-v", "--verbose")]
    set_prefect_defaults()  # before anything imports Prefect
    quiet_engine_logs(verbose=verbose)
    folder = Path(folders[0] if folders else "examples")
    settings = get_settings()
    print(f"prefect-agentenv demo: the example benchmark {folder / 'benchmark.yaml'} on the embedded defaults")
    print(f"  artifacts: local store in {settings.artifacts_dir}/; envs and agents: the reference ones; "
          "models: the built-in mock model (labelled mock)")
    for ref in publish_example_artifacts(folder):
        print(f"  published example artifact {ref}")
    # Imported here: Prefect and the benchmark flow load only when something runs.
    from prefect_agentenv.commands.progress import run_benchmark_with_progress

    code = run_benchmark_with_progress(folder / "benchmark.yaml", run_id=None, overrides={}, epochs=None,
                                       concurrency=None, report_dir=Path("reports"))
    print("\nreports: reports/ (summary.md, one JSON report per task run, and the HTML report "
          f"reports/html/index.html); run folders (logs, sandboxes, verifier output): {settings.runs_dir}/")
    if os.environ.get("PREFECT_API_URL"):
        ui = os.environ["PREFECT_API_URL"].removesuffix("/api")
        print(f"Prefect UI: {ui}/runs → the 'benchmark' flow run (Artifacts: summary, task table, progress, "
              "a link to the HTML report) and its 'agent-task' subflow runs (one task run per step, a transcript "
              "artifact each)")
    else:
        print("to see the runs in the Prefect UI: `prefect server start`, then "
              "`PREFECT_API_URL=http://127.0.0.1:4200/api make demo` and open http://127.0.0.1:4200/runs")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
