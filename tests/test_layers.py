"""Imports between the package's parts point down the layers.

The picture, top to bottom: cli/commands → api/deployments → flows → engine → documents + steps →
resolution of ids → blocks → the reference servers (agents, envs, viewer) → results → grading / runtime /
transcript → protocols / artifacts → exceptions, context and the other bottom modules. A module
may import its own part, a part of its own layer, or any lower layer; an import that points up
fails the test, whether at top level, inside a function or under ``TYPE_CHECKING``. The README's
development section draws the same list.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import prefect_agentenv

PACKAGE = Path(prefect_agentenv.__file__).parent

# Lowest first. Keys are module-name prefixes below ``prefect_agentenv``; the longest match wins.
LAYERS: list[tuple[str, ...]] = [
    # The run's context model and the exception tree know each other (a failed step's error
    # carries what it produced); context.py imports only pydantic and exceptions.
    ("exceptions", "exit_codes", "context", "problems", "settings", "redaction", "jsontypes", "attribute_docs",
     "prefect_defaults", "usage", "lazy"),
    ("protocols", "artifacts"),
    ("grading", "runtime", "transcript", "gateway"),
    # A benchmark run's results: task reports, the results store, statistics and comparisons.
    ("results",),
    # The reference envs and agents are servers built on the wire clients and the judges.
    ("agents", "envs", "viewer"),
    ("blocks",),
    # Resolution of env, agent and model ids to blocks or reference servers.
    ("resolution",),
    # ``plugin`` gathers for step authors what the step modules use (steps, runtime, grading, context).
    ("documents", "steps", "run_services", "plugin"),
    # Running steps, whatever runs them: no Prefect below the flows.
    ("engine",),
    ("flows", "session", "tasks"),
    ("api", "deployments"),
    ("cli", "commands", "demo", "__init__"),
]

RANK = {prefix: rank for rank, layer in enumerate(LAYERS) for prefix in layer}


def part(module: str) -> str:
    """The longest ``LAYERS`` prefix of a module name (without ``prefect_agentenv.``)."""
    pieces = module.split(".")
    for n in range(len(pieces), 0, -1):
        prefix = ".".join(pieces[:n])
        if prefix in RANK:
            return prefix
    raise LookupError(module)


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    pieces = list(rel.parts)
    if pieces[-1] == "__init__":
        pieces = pieces[:-1] or ["__init__"]
    return ".".join(pieces)


def imported_modules(path: Path) -> set[str]:
    """Every ``prefect_agentenv`` module the file imports, at top level or inside a function."""
    name = module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                targets = [".".join(["prefect_agentenv", *base, *([node.module] if node.module else [])])]
            else:
                targets = [node.module or ""]
            # `from prefect_agentenv.x import y` may name a module y.
            targets += [f"{targets[0]}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            if target.startswith("prefect_agentenv."):
                found.add(_existing(target.removeprefix("prefect_agentenv.")))
    return found


def _existing(module: str) -> str:
    """The longest prefix of a dotted name that is a module of the package."""
    pieces = module.split(".")
    for n in range(len(pieces), 0, -1):
        candidate = PACKAGE.joinpath(*pieces[:n])
        if candidate.with_suffix(".py").is_file() or (candidate / "__init__.py").is_file():
            return ".".join(pieces[:n])
    return module


def upward_imports() -> set[tuple[str, str]]:
    edges: set[tuple[str, str]] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        source = module_name(path)
        for target in imported_modules(path):
            if RANK[part(target)] > RANK[part(source)]:
                edges.add((source, target))
    return edges


def test_every_module_of_the_package_has_a_layer() -> None:
    unplaced = []
    for path in PACKAGE.rglob("*.py"):
        try:
            part(module_name(path))
        except LookupError:
            unplaced.append(module_name(path))
    assert not unplaced, f"add these to LAYERS in {Path(__file__).name}: {sorted(unplaced)}"


def test_no_import_points_up_a_layer() -> None:
    upward = upward_imports()
    assert not upward, "imports pointing up the layers:\n" + "\n".join(
        f"  {src} imports {dst} ({part(src)} is below {part(dst)})" for src, dst in sorted(upward))


def test_the_readme_draws_the_layers_as_they_are() -> None:
    """The development section of the README lists the layers top to bottom, names first."""
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    block = readme.split("The package is in layers", 1)[1].split("```", 2)[1]
    drawn = [tuple(re.split(r",\s*", re.split(r"\s{2,}", line.strip())[0]))
             for line in block.strip().splitlines()]
    expected = [tuple(p for p in layer if p != "__init__") for layer in reversed(LAYERS)]
    assert drawn == expected


@pytest.mark.parametrize(("source", "target", "upward"), [
    ("steps.deploy_env", "resolution.servers", False),
    ("resolution.servers", "blocks.agent", False),
    ("resolution.models", "blocks.model_endpoint", False),
    ("blocks.agent", "runtime.launch", False),
    ("runtime.launch", "resolution.servers", True),
    ("blocks.model_endpoint", "resolution.models", True),
    ("exceptions", "context", False),
    ("grading.judge", "results.task_report", True),
    ("engine.execute", "flows.task_runner", True),
    ("results.store", "engine.scheduler", True),
    ("flows.benchmark", "engine.scheduler", False),
])
def test_the_layer_order_reads_as_the_picture(source: str, target: str, upward: bool) -> None:
    assert (RANK[part(target)] > RANK[part(source)]) is upward


def test_the_engine_imports_no_prefect() -> None:
    """The engine runs steps for every path, Prefect's or not: Prefect stays in the flows."""
    found = []
    for path in sorted((PACKAGE / "engine").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{module_name(path)} imports {n}" for n in names if n == "prefect" or n.startswith("prefect.")]
    assert not found, "\n".join(found)
