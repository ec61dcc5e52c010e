"""What ``agent install`` prints, and the harness rows of ``agent list``."""

from __future__ import annotations

import asyncio

import typer

from prefect_agentenv.agents.harnesses.catalog import HARNESSES
from prefect_agentenv.agents.harnesses.installed import HarnessManifest, harnesses_dir, installed_all
from prefect_agentenv.agents.harnesses.installer import InstallOutcome, install_harnesses
from prefect_agentenv.commands._registry import UsageProblem


def install(names: list[str], *, every: bool, force: bool) -> int:
    """Install the named harnesses (or all of them) at once; print one line each. Exit code 1 if any failed."""
    if every:
        names = list(HARNESSES)
    if not names:
        raise UsageProblem(f"name the harnesses to install ({', '.join(HARNESSES)}), or give --all")
    unknown = [name for name in names if name not in HARNESSES]
    if unknown:
        raise UsageProblem(f"no harness called {', '.join(map(repr, unknown))}: known are {', '.join(HARNESSES)}")
    typer.echo(f"installing into {harnesses_dir()}: {', '.join(names)}")
    outcomes = asyncio.run(install_harnesses(list(dict.fromkeys(names)), force=force))
    for outcome in outcomes:
        typer.echo(_line(outcome), err=outcome.status == "failed")
    return 1 if any(o.status == "failed" for o in outcomes) else 0


def _line(outcome: InstallOutcome) -> str:
    if outcome.status == "failed":
        return f"{outcome.name}: FAILED after {outcome.seconds:.1f}s: {outcome.error}"
    assert outcome.manifest is not None
    what = "installed" if outcome.status == "installed" else "already installed"
    line = f"{outcome.name}: {what} ({versions(outcome.manifest)}) in {outcome.seconds:.1f}s at {outcome.folder}"
    for missing in outcome.manifest.missing_tools:
        line += f"\n  warning: {missing}"
    return line


def versions(manifest: HarnessManifest) -> str:
    """The versions that make up an installed harness, in one phrase."""
    parts = [manifest.cli_version or manifest.cli or "", *(f"{k} {v}" for k, v in manifest.sdk.items()),
             manifest.framework, f"Python {manifest.python}", f"Node {manifest.node}" if manifest.node else ""]
    return ", ".join(part for part in parts if part)


def listing_rows() -> list[tuple[str, str, str, str]]:
    """(name, source, version, launch) of every known harness, installed or not."""
    rows = []
    for name, manifest in installed_all().items():
        if manifest is None:
            rows.append((name, "harness (not installed)", "-", f"prefect-agentenv agent install {name}"))
        else:
            version = manifest.cli.rsplit("@", 1)[-1] if manifest.cli else ", ".join(manifest.sdk.values())
            rows.append((name, "harness", version, versions(manifest)))
    return rows
