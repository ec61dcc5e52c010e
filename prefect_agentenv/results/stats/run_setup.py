"""What produced a run: its results' setups merged into one, and how two runs' setups differ.

Every result carries a :class:`SetupFingerprint` (agents and their card versions, models, judge
models, overrides, package and benchmark versions) and its frozen document's sha256. A run's
setup is their merge (:func:`run_setup`); a comparison names every way two runs' setups differ
(:func:`compare_setups`), so a drop is never read without knowing whether the agent changed.
Results recorded before results carried a setup read as *setup unknown*.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

from pydantic import Field

from prefect_agentenv.grading.judge_setup import named_judge_models
from prefect_agentenv.results.rows import (
    AgentSetup,
    PublishedVersion,
    SetupFingerprint,
    StatsModel,
    TaskResult,
    latest_per_run_key,
)

_SCALARS = ("benchmark", "benchmark_version", "package_version")
_LISTS = ("models", "judge_models")


class RunSetup(SetupFingerprint):
    """A run's setup: its results' fingerprints merged, and a digest of its frozen task documents.

    Lists (agents, models, judge models) are the union over the results; a single value that
    differs between results (a run resumed with another package version, say) is the latest
    result's, and its field is named in ``mixed``.
    """

    published: PublishedVersion | None = None
    """The published benchmark version the results came from (``None``: the benchmark's files)."""
    documents: int = 0
    """Distinct ``(task, seed)`` task documents frozen for the run."""
    documents_sha256: str | None = None
    """sha256 of the sorted ``task_id<TAB>seed_index<TAB>sha256`` lines of those documents: two runs
    with the same value ran the very same documents."""
    mixed: list[str] = Field(default_factory=list)
    """Fields whose value is not the same in every result of the run."""
    unknown: int = 0
    """Results recorded without a setup (before results carried one)."""


def run_setup(results: Sequence[TaskResult]) -> RunSetup | None:
    """The merged setup of a run's results (the last result of each run key), ``None`` when none
    of them carries one."""
    latest = latest_per_run_key(results)
    known = [r.setup for r in latest if r.setup is not None]
    if not known:
        return None
    last = known[-1]
    mixed = [name for name in (*_SCALARS, "overrides") if any(getattr(s, name) != getattr(last, name) for s in known)]
    published = {r.published for r in latest}
    mixed += ["published"] if len(published) > 1 else []
    agents = {(a.name, a.agent_id, a.version, a.model): a for s in known for a in s.agents}
    documents = sorted({f"{r.task_id}\t{r.seed_index}\t{r.snapshot.sha256}" for r in latest if r.snapshot})
    return RunSetup(
        benchmark=last.benchmark, benchmark_version=last.benchmark_version, package_version=last.package_version,
        overrides=dict(last.overrides), published=latest[-1].published,
        agents=[agents[key] for key in sorted(agents, key=lambda k: tuple(part or "" for part in k))],
        models=sorted({model for s in known for model in s.models}),
        judge_models=sorted({model for s in known for model in s.judge_models}),
        documents=len(documents),
        documents_sha256=hashlib.sha256("\n".join(documents).encode()).hexdigest() if documents else None,
        mixed=mixed, unknown=len(latest) - len(known))


class SetupDifference(StatsModel):
    """One way two runs' setups differ."""

    field: str
    """What differs: ``agent <name>``, ``overrides.<key>``, ``judge_models``, ``task documents``…"""
    previous: str | None = None
    """Its value in the baseline run (``None``: not set there)."""
    current: str | None = None
    note: str | None = None
    """For task documents: which shared tasks ran from another document."""

    def sentence(self) -> str:
        if self.note:
            return f"{self.field}: {self.note}"
        return f"{self.field}: {self.previous or '—'} → {self.current or '—'}"


class SetupComparison(StatsModel):
    """Whether two runs were produced the same way, and every difference when they were not."""

    known: bool
    """Both runs carry a setup (results from before setups were recorded do not)."""
    unknown_runs: list[str] = Field(default_factory=list)
    """``previous`` and/or ``current``: the runs recorded without a setup."""
    differences: list[SetupDifference] = Field(default_factory=list)

    @property
    def same(self) -> bool:
        return self.known and not self.differences

    def sentence(self) -> str:
        """``same setup``, ``setup unknown (…)`` or ``setup differs: …`` in one line."""
        if not self.known:
            which = " and ".join({"previous": "the baseline run", "current": "this run"}[r] for r in self.unknown_runs)
            verb = "were" if len(self.unknown_runs) > 1 else "was"
            return f"setup unknown ({which} {verb} recorded before results carried their setup)"
        if not self.differences:
            return "same setup"
        return "setup differs: " + "; ".join(d.sentence() for d in self.differences)


def _shown(name: str, values: list[str]) -> list[str]:
    """A list as a difference shows it: the mock judge model named for what its verdicts are worth."""
    return named_judge_models(values) if name == "judge_models" else values


def compare_setups(previous: Sequence[TaskResult], current: Sequence[TaskResult]) -> SetupComparison:
    """Every difference between the setups of two runs, the shared task documents included."""
    before, now = run_setup(previous), run_setup(current)
    unknown = [name for name, setup in (("previous", before), ("current", now)) if setup is None]
    if before is None or now is None:
        return SetupComparison(known=False, unknown_runs=unknown)
    differences = [SetupDifference(field=name, previous=getattr(before, name), current=getattr(now, name))
                   for name in _SCALARS if getattr(before, name) != getattr(now, name)]
    if before.published != now.published:
        differences.append(SetupDifference(field="published", previous=_published(before.published),
                                           current=_published(now.published)))
    differences += _agent_differences(before.agents, now.agents)
    differences += [SetupDifference(field=name, previous=", ".join(_shown(name, getattr(before, name))) or None,
                                    current=", ".join(_shown(name, getattr(now, name))) or None)
                    for name in _LISTS if getattr(before, name) != getattr(now, name)]
    differences += [SetupDifference(field=f"overrides.{key}", previous=before.overrides.get(key),
                                    current=now.overrides.get(key))
                    for key in sorted(before.overrides.keys() | now.overrides.keys())
                    if before.overrides.get(key) != now.overrides.get(key)]
    differences += _document_differences(previous, current)
    differences += [SetupDifference(field=name, note=f"not the same in every result of the {run} run")
                    for run, setup in (("baseline", before), ("current", now)) for name in setup.mixed]
    return SetupComparison(known=True, differences=differences)


def _published(version: PublishedVersion | None) -> str:
    return f"{version} (sha256 {version.hash[:12]})" if version else "the benchmark's files"


def _agent_differences(before: Iterable[AgentSetup], now: Iterable[AgentSetup]) -> list[SetupDifference]:
    """Agents matched by their name in the task: ``agent assistant: scripted 1.0.0 → llm 1.0.0 on mock``."""
    def labels(agents: Iterable[AgentSetup]) -> dict[str, str]:
        found: dict[str, list[str]] = {}
        for agent in agents:
            found.setdefault(agent.name, []).append(agent.label())
        return {name: " | ".join(sorted(set(values))) for name, values in found.items()}

    was, became = labels(before), labels(now)
    return [SetupDifference(field=f"agent {name}", previous=was.get(name), current=became.get(name))
            for name in sorted(was.keys() | became.keys()) if was.get(name) != became.get(name)]


def _document_differences(previous: Sequence[TaskResult], current: Sequence[TaskResult]) -> list[SetupDifference]:
    """The shared tasks whose frozen documents differ (a benchmark edited between the runs)."""
    def hashes(results: Sequence[TaskResult]) -> dict[tuple[str, int], str]:
        return {r.task_key: r.snapshot.sha256 for r in latest_per_run_key(results) if r.snapshot}

    was, became = hashes(previous), hashes(current)
    shared = sorted(was.keys() & became.keys())
    changed = [task if f"[seed={seed}]" in task else f"{task} [seed {seed}]"
               for task, seed in shared if was[(task, seed)] != became[(task, seed)]]
    if not changed:
        return []
    named = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    return [SetupDifference(field="task documents",
                            note=f"{len(changed)} of {len(shared)} shared tasks ran from another document ({named})")]
