"""``make demo``: run the example benchmark on the embedded defaults.

Publishes the example artifacts to the local store (once per content), runs
``examples/benchmark.yaml`` as a ``benchmark`` flow run (every task an ``agent_task`` subflow
against the reference envs and agents, judged by the built-in mock model), shows live progress
and the summary, and says where to look. Prefect's own line per flow and task run stays in the
Prefect UI; ``-v`` (``make demo DEMO_ARGS=-v``) prints those too.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

from prefect_agentenv.artifacts import ArtifactBackend, ArtifactNotFoundError, get_artifact_store
from prefect_agentenv.commands._prefect_server import local_server
from prefect_agentenv.prefect_defaults import quiet_engine_logs
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
    quiet_engine_logs(verbose=verbose)
    # Before anything imports Prefect's client: the server the runs are recorded on, the local one
    # started if need be (the demo ends in its UI), the temporary one in CI.
    from prefect_agentenv.commands._prefect_server import use_prefect_server

    api_url = use_prefect_server(ui_wanted=True)
    folder = Path(folders[0] if folders else "examples")
    settings = get_settings()
    print(f"prefect-agentenv demo: the example benchmark {folder / 'benchmark.yaml'} on the embedded defaults")
    print(f"  artifacts: local store in {settings.artifacts_dir}/; envs and agents: the reference ones; "
          "models: the built-in mock model (labelled mock)")
    for ref in publish_example_artifacts(folder):
        print(f"  published example artifact {ref}")
    # Imported here: Prefect and the benchmark flow load only when something runs.
    from prefect_agentenv.commands.progress import run_benchmark_with_progress

    started = time.time()
    reports = Path("reports")
    code = run_benchmark_with_progress(folder / "benchmark.yaml", run_id=None, overrides={}, epochs=None,
                                       concurrency=None, report_dir=reports)
    print("\nreports: reports/ (summary.md, one JSON report per task run); run folders (logs, sandboxes, "
          f"verifier output): {settings.runs_dir}/")
    print(f"HTML report: {(reports / 'html' / 'index.html').resolve().as_uri()}")
    print_where_to_look(api_url, _flow_run_id(reports / "summary.json", since=started))
    return code


def _flow_run_id(summary: Path, since: float) -> str | None:
    """The benchmark's flow run id: its run id, which is the flow run's when none is given (this run's
    summary only, not one an earlier demo left)."""
    try:
        if summary.stat().st_mtime < since:
            return None
        run_id = json.loads(summary.read_text(encoding="utf-8")).get("run_id")
    except (OSError, ValueError):
        return None
    return run_id if isinstance(run_id, str) else None


def print_where_to_look(api_url: str | None, flow_run_id: str | None) -> None:
    """The benchmark's flow run in the UI, and how to stop the local server when it is the one."""
    if api_url is None:
        print("the runs were recorded on Prefect's temporary server, now stopped; to see them in the Prefect UI: "
              "`prefect-agentenv server start`, then `make demo` again")
        return
    from prefect.settings import get_current_settings

    ui = get_current_settings().ui_url or api_url.removesuffix("/api")
    target = f"{ui}/runs/flow-run/{flow_run_id}" if flow_run_id else f"{ui}/runs"
    print(f"Prefect UI: {target} — the 'benchmark' flow run: its task runs, its 'agent-task' subflow runs (one "
          "task run per step, a transcript artifact each) and its artifacts (summary, task table, progress)")
    state = local_server().running()
    if state is not None and state.api_url == api_url:
        cli = Path(sys.executable).parent / "prefect-agentenv"
        shown = os.path.relpath(cli) if cli.is_relative_to(Path.cwd()) else "prefect-agentenv"
        print(f"the local Prefect server keeps running for the UI; stop it with: {shown} server stop")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
