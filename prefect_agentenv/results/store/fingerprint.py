"""The setup fingerprint of a benchmark's result: what the benchmark ran it with, and what its report shows.

The benchmark knows its slug and version, the effective overrides and the package it runs; the
task run's report knows which agents it deployed (their registry ids, the versions their cards
declare, their models), which models the agents' replies named and which models judged. A
result without a report (a crash, a timeout) keeps the benchmark's part. Overrides are recorded
by :meth:`RunOverrides.recorded` (free-form values by digest), and the report is already
redacted, so no secret reaches a result.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version

from prefect_agentenv.context import Confinement
from prefect_agentenv.grading.judge_records import judge_of
from prefect_agentenv.results import AgentSetup, SetupFingerprint
from prefect_agentenv.results.task_report import TaskReport
from prefect_agentenv.runtime.resources.overrides import RunOverrides

DISTRIBUTION = "prefect-agentenv"


def package_version() -> str | None:
    """The installed version of this package (``None`` when it runs from a tree that is not installed)."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return None


def benchmark_setup(*, benchmark: str, benchmark_version: str | None,
                    overrides: Mapping[str, str]) -> SetupFingerprint:
    """The part of every result's fingerprint the benchmark itself knows.

    Raises:
        ConfigurationError: an override key this runner does not know (the flow refuses those first).
    """
    return SetupFingerprint(benchmark=benchmark, benchmark_version=benchmark_version,
                            package_version=package_version(), overrides=RunOverrides.parse(overrides).recorded())


def _confinement(record: Confinement | None) -> str | None:
    """How a result names an agent's confinement (see ``AgentSetup.confinement``)."""
    if record is None:
        return None
    if not record.confined:
        return "unconfined"
    if record.mechanism.startswith("docker"):
        return "docker, host network" if record.network == "host" else "docker"
    return "confined, public network" if record.network == "public" else "confined"


def setup_from_report(report: TaskReport, base: SetupFingerprint) -> SetupFingerprint:
    """``base`` with what the task run's report shows: its agents, the models named, the judge models."""
    context = report.context
    agents = [AgentSetup(name=name, agent_id=agent.a2a_agent_id, version=agent.version, model=agent.model,
                         confinement=_confinement(agent.confinement))
              for name, agent in sorted(context.deployed_agents.items())]
    models = sorted({reply.model for reply in context.prompt_responses.values() if reply.model})
    judges = set()
    for verification in context.metadata.verifications.values():
        judge = judge_of(verification)
        if judge is not None and judge.model:
            judges.add(judge.model)
        # Every judge of a panel: its setup names each one's model.
        setup = (verification.model_extra or {}).get("judge_setup")
        members = (setup.get("judges") or []) if isinstance(setup, Mapping) else []
        judges |= {j["model"] for j in members if isinstance(j, Mapping) and isinstance(j.get("model"), str) and j["model"]}
    return base.model_copy(update={"agents": agents, "models": models, "judge_models": sorted(judges)})
