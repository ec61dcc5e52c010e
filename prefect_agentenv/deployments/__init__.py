"""Deployments of the flows: ``agent-task`` (one task document), ``agent-task-shard`` (several of a
benchmark's task runs in one flow run on a pool), ``benchmark/nightly``, ``rescore/rescore`` (a
benchmark run scored again from its kept submissions), ``label-judged-run/label`` and
``calibrate-judges/calibrate`` (a run's judges labelled by people and calibrated against them).

``prefect-agentenv serve`` serves them from one process for local use; ``prefect.yaml`` at the
repository root declares the same deployments for work pools (``prefect deploy --all``). They
load the flows by module path (``prefect_agentenv.flows...``), never by a file in a checkout.
"""

from __future__ import annotations

from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from prefect import serve
from prefect.deployments.runner import EntrypointType, RunnerDeployment
from prefect.schedules import Cron

from prefect_agentenv.engine.benchmark_source import published_ref_of
from prefect_agentenv.flows.agent_task import agent_task
from prefect_agentenv.flows.agent_task_shard import agent_task_shard
from prefect_agentenv.flows.benchmark import benchmark
from prefect_agentenv.flows.calibrate import calibrate_judges
from prefect_agentenv.flows.fleet.dispatch import SHARD_DEPLOYMENT as SHARD_DEPLOYMENT
from prefect_agentenv.flows.labelling import label_judged_run
from prefect_agentenv.flows.rescore import rescore

NIGHTLY_CRON = "0 2 * * *"
"""02:00 every night (UTC unless the schedule says otherwise)."""
AGENT_TASK_DEPLOYMENT = "agent-task/agent-task"
NIGHTLY_DEPLOYMENT = "benchmark/nightly"
RESCORE_DEPLOYMENT = "rescore/rescore"


AGENT_TASK_DESCRIPTION = """Run one agent-evaluation task document: deploy, prompt, grade, collect, tear down, report.

Example `task` (the Run form's task field takes the document, a list of steps, a path or an artifact id):

```json
{"id": "roundtrip", "tags": ["smoke"], "steps": [
  {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
  {"id": "inbox", "type": "load_artifact", "env_id": "email", "artifact_id": "inbox"},
  {"id": "snapshot", "type": "snapshot_env", "env_id": "email"}]}
```

From the command line: `prefect deployment run agent-task/agent-task --param task=reply-task@3`.
"""

SHARD_DESCRIPTION = """Run several of a benchmark's task runs in one flow run, each an `agent-task` subflow.

A benchmark started with `{"dispatch": "deployment", "tasks_per_flow_run": 16}` sends its task runs here sixteen at a
time, so a worker starts one process for sixteen task runs. By hand it takes a list of task runs, e.g.

Example `items`: `[{"task": "reply-task@3", "name": "reply · 1"}, {"task": "reply-task@3", "name": "reply · 2",
"overrides": {"a2a_agent_id": "llm"}}]`
"""


NIGHTLY_DESCRIPTION = """Run the benchmark {path} every night; **Run** triggers it any time, **Retry** resumes it.

Examples: `{{"dispatch": "deployment"}}` runs every task on the work pool (`{{"tasks_per_flow_run": 16}}` too: sixteen
task runs to a flow run, one process each);
`{{"overrides": {{"a2a_agent_id": "llm", "model": "gpt-4.1"}}, "epochs": 3}}` tries another agent three times;
`{{"matrix": {{"a2a_agent_id": ["scripted", "llm"]}}}}` sweeps two agents in one run, cell by cell;
`{{"run_id": "<an earlier run id>"}}` resumes that run;
`{{"fail_on_regression": true, "fail_under": 0.8}}` fails the flow run when the paired comparison with the previous
run (or `{{"baseline": "<run id>"}}`) marks it worse, or its mean score is under 0.8.
"""


RESCORE_DESCRIPTION = """Score a benchmark run again from its kept submissions, without deploying the agent.

Each task run's submission (its envs' state, its sandbox files, its replies) is restored into fresh envs and the
verifiers and judges run there; the scores are a new scoring version of the run, which its summary shows.

Examples: `{"run": "my-bench/<run id>"}` rescores with the run's frozen task documents;
`{"run": "my-bench", "benchmark": "<benchmark file on the worker>"}` with that file's current verifiers.
"""


LABEL_DESCRIPTION = """Label a sample of a benchmark run's judged criteria, one paused form per task run.

The task runs are drawn stratified by the judge's verdict; each form asks pass or fail (and a note) per criterion,
below the prompt, the reply and the criteria; the answers are kept as versioned labels that `calibrate` reads.

Example: `{"run": "my-bench/<run id>", "reviewer": "ana", "n": 20}`.
"""

CALIBRATE_DESCRIPTION = """Compare a benchmark run's judges with its human labels and record the calibration.

Agreement, Cohen's kappa and TPR/TNR for each judge and the panel, per criterion and overall, keyed by the judge
setup's fingerprint; rubric scores from that setup are then marked calibrated and can pass a judge gate.

Example: `{"run": "my-bench/<run id>", "labels": "<labels.jsonl on the worker>", "reviewer": "ana"}`.
"""


def build_deployments(benchmark_path: str | Path = "examples/benchmark.yaml", *, cron: str | None = NIGHTLY_CRON,
                      timezone: str = "UTC") -> list[RunnerDeployment]:
    """The ``agent-task`` and ``agent-task-shard`` deployments, the ``nightly`` benchmark deployment
    (scheduled unless cron is None), the ``rescore`` deployment, and the judges' ``label`` and
    ``calibrate`` deployments.

    ``benchmark_path`` is a benchmark file, or a published version ``SLUG@VERSION`` (the nightly
    then runs that frozen copy, as ``prefect-agentenv publish`` stored it).
    """
    text = str(benchmark_path)
    if published_ref_of(text) is not None:
        parameters, shown = {"benchmark": text}, f"`{text}` (a published version)"
    else:
        path = str(Path(benchmark_path).resolve())
        parameters, shown = {"path": path}, f"at `{path}`"
    return [
        _built(agent_task.to_deployment(
            name="agent-task", tags=["agentenv"], entrypoint_type=EntrypointType.MODULE_PATH,
            description=AGENT_TASK_DESCRIPTION)),
        _built(agent_task_shard.to_deployment(
            name="agent-task-shard", tags=["agentenv"], entrypoint_type=EntrypointType.MODULE_PATH,
            description=SHARD_DESCRIPTION)),
        _built(benchmark.to_deployment(
            name="nightly", tags=["agentenv", "benchmark"], parameters=parameters,
            entrypoint_type=EntrypointType.MODULE_PATH,
            schedules=[Cron(cron, timezone=timezone)] if cron else None,
            description=NIGHTLY_DESCRIPTION.format(path=shown))),
        _built(rescore.to_deployment(
            name="rescore", tags=["agentenv", "rescore"], entrypoint_type=EntrypointType.MODULE_PATH,
            description=RESCORE_DESCRIPTION)),
        _built(label_judged_run.to_deployment(
            name="label", tags=["agentenv", "judges"], entrypoint_type=EntrypointType.MODULE_PATH,
            description=LABEL_DESCRIPTION)),
        _built(calibrate_judges.to_deployment(
            name="calibrate", tags=["agentenv", "judges"], entrypoint_type=EntrypointType.MODULE_PATH,
            description=CALIBRATE_DESCRIPTION)),
    ]


def _built(made: RunnerDeployment | Coroutine[Any, Any, RunnerDeployment]) -> RunnerDeployment:
    """``to_deployment`` gives a coroutine when it is called inside an event loop; the callers of
    :func:`build_deployments` (``serve``, the CLI) run outside one."""
    if isinstance(made, RunnerDeployment):
        return made
    made.close()
    raise RuntimeError("build_deployments() must be called outside an event loop")


def serve_all(benchmark_path: str | Path = "examples/benchmark.yaml", *, cron: str | None = NIGHTLY_CRON,
              limit: int | None = None) -> None:
    """Serve the deployments from this process until interrupted."""
    serve(*build_deployments(benchmark_path, cron=cron), limit=limit)
